//! The web demo's server side: the page and its assets (no inline code, a strict CSP), and
//! the simulated device endpoint, which exists only with `HEARTH_DEMO_DEVICE=1`, needs a
//! token like every endpoint, keeps the attestation contract's bounds, and signs what `/mcp`
//! accepts. The page itself is tested in headless Chromium (tests/browser).

mod common;

use common::device::HOST_KEY;
use common::{TOKEN, harness, request};
use http::StatusCode;
use serde_json::{Value, json};

async fn sign(router: &axum::Router, body: &Value, bearer: Option<&str>) -> common::Reply {
    demo_post(router, "/demo/device", &body.to_string(), bearer).await
}

fn heard(member: &str, utterances: Value) -> Value {
    json!({"member_id": member, "turn_id": "t-1", "utterances": utterances, "answering": null})
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_a_strict_policy() {
    let h = harness(&[]);
    let page = request(&h.router, "GET", "/demo", &[], "").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    let policy = page.header("content-security-policy");
    assert!(
        policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
        "{policy}"
    );
    assert!(page.raw.contains("not Amazon's product"));
    assert!(!page.raw.contains("<script>"), "no inline script");
    for (asset, kind) in [
        ("app.js", "text/javascript"),
        ("canonical.js", "text/javascript"),
        ("style.css", "text/css"),
    ] {
        let reply = request(&h.router, "GET", &format!("/demo/{asset}"), &[], "").await;
        assert_eq!(reply.status, StatusCode::OK, "{asset}");
        assert!(reply.header("content-type").starts_with(kind), "{asset}");
    }
    let missing = request(&h.router, "GET", "/demo/secrets.json", &[], "").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_device_endpoint_exists_only_when_asked_for() {
    let h = harness(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)]);
    // Without it, /demo/device is only a name the asset route does not know: no POST route
    // (405, GET only) and no such asset (404).
    let reply = sign(&h.router, &heard("dana", json!(["hi"])), Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    let get = request(&h.router, "GET", "/demo/device", &[], "").await;
    assert_eq!(get.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_device_signs_what_mcp_accepts_and_only_for_a_token_holder() {
    let h = harness(&[
        ("COUNTERSIGN_HOST_KEY", HOST_KEY),
        ("HEARTH_DEMO_DEVICE", "1"),
    ]);
    let words = json!(["order two packs of double A batteries"]);
    let anonymous = sign(&h.router, &heard("dana", words.clone()), None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);

    let signed = sign(&h.router, &heard("dana", words), Some(TOKEN)).await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.raw);
    assert_eq!(signed.header("cache-control"), "no-store");
    let attestation = signed.body["attestation"].as_str().unwrap();
    let signature = signed.body["signature"].as_str().unwrap();
    let device = common::device::Device::new(h.router.clone(), h.clock.clone());
    let result = device
        .call_with(
            &[
                ("x-countersign-attestation", attestation),
                ("x-countersign-signature", signature),
            ],
            "propose_purchase",
            json!({"product_id": "aa-batteries", "variant_id": "12-pack", "quantity": 2}),
        )
        .await;
    assert_eq!(common::device::ok(&result)["outcome"], "placed");
}

#[tokio::test]
async fn the_device_keeps_the_attestation_bounds() {
    let h = harness(&[
        ("COUNTERSIGN_HOST_KEY", HOST_KEY),
        ("HEARTH_DEMO_DEVICE", "1"),
    ]);
    let three = json!(["a".repeat(500), "b", "c"]);
    assert_eq!(
        sign(&h.router, &heard("mia", three), Some(TOKEN))
            .await
            .status,
        StatusCode::OK
    );
    for (body, problem) in [
        (
            heard("mia", json!(["a", "b", "c", "d"])),
            "at most 3 utterances",
        ),
        (heard("mia", json!(["a".repeat(501)])), "longer than 500"),
        (heard("mallory", json!(["hi"])), "not a household member"),
        (
            json!({"member_id": "mia", "turn_id": "t".repeat(65), "utterances": [], "answering": null}),
            "1 to 64 characters",
        ),
        (
            json!({"member_id": "mia", "utterances": []}),
            "the body must be",
        ),
    ] {
        let reply = sign(&h.router, &body, Some(TOKEN)).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{problem}");
        assert!(
            reply.body["error"].as_str().unwrap().contains(problem),
            "{}",
            reply.raw
        );
    }
    let turn_at_limit = json!({"member_id": "mia", "turn_id": "t".repeat(64), "utterances": [], "answering": "r".repeat(64)});
    assert_eq!(
        sign(&h.router, &turn_at_limit, Some(TOKEN)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn without_a_host_key_the_device_cannot_sign() {
    let h = harness(&[("HEARTH_DEMO_DEVICE", "1")]);
    let reply = sign(&h.router, &heard("dana", json!(["hi"])), Some(TOKEN)).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn the_device_names_the_speakers_it_knows_to_a_token_holder() {
    let h = harness(&[
        ("COUNTERSIGN_HOST_KEY", HOST_KEY),
        ("HEARTH_DEMO_DEVICE", "1"),
    ]);
    let anonymous = request(&h.router, "GET", "/demo/device", &[], "").await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let bearer = format!("Bearer {TOKEN}");
    let known = request(
        &h.router,
        "GET",
        "/demo/device",
        &[("authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(known.status, StatusCode::OK, "{}", known.raw);
    assert_eq!(
        known.body["members"][0],
        json!({"id": "dana", "name": "Dana"})
    );
    assert_eq!(known.body["members"].as_array().unwrap().len(), 5);
    // Roles and limits come only from the rules resource, which needs a signed speaker.
    assert!(!known.raw.contains("role"), "{}", known.raw);
}

/// `POST /demo/assistant`, the page's assistant option, in a `hearth` process whose Bedrock
/// endpoint is the scripted Converse stand-in: a fooled assistant's turn comes back with
/// Countersign's `say` and the question to remember; bad input is 400, a failing model 502.
#[test]
fn the_assistant_option_answers_what_the_device_should_say() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let scripts =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/assistant/scripts.json");
    let (converse_url, _) = runtime.block_on(hearth_testkit::converse::start(
        hearth_testkit::converse::Scripts::load(&scripts),
    ));
    let data = tempfile::tempdir().unwrap();
    let vars = [
        (
            "MCP_JUDGE_TOKEN_HASHES",
            hearth_core::chain::sha256_hex(TOKEN),
        ),
        ("HEARTH_DEMO_DEVICE", "1".to_owned()),
        ("COUNTERSIGN_HOST_KEY", HOST_KEY.to_owned()),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", converse_url),
        ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
    ];
    let server = common::process::Server::start(data.path(), &vars);
    let bearer = format!("Bearer {TOKEN}");
    let ask = |body: Value| {
        let (status, text) = common::process::http(
            server.port,
            "POST",
            "/demo/assistant",
            &[
                ("authorization", &bearer),
                ("content-type", "application/json"),
            ],
            &body.to_string(),
        );
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
        )
    };
    let (status, turn) = ask(
        json!({"member_id": "dana", "words": "Get two tubes of kids toothpaste", "answering": null}),
    );
    assert_eq!(status, 200, "{turn}");
    assert_eq!(turn["tool_calls"][1]["arguments"]["quantity"], 20);
    assert!(
        turn["say"].as_str().unwrap().contains("Should I order 20"),
        "{turn}"
    );
    assert_eq!(turn["question"]["kind"], "asked");
    let request = turn["question"]["request_id"].as_str().unwrap().to_owned();
    let (status, answer) =
        ask(json!({"member_id": "dana", "words": "Cancel it", "answering": request}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["question"], json!({"kind": "settled"}));

    let (status, refused) = ask(json!({"member_id": "nobody", "words": "hi", "answering": null}));
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("member_id is not a household member"))
    );
    let (status, refused) =
        ask(json!({"member_id": "dana", "words": "a".repeat(501), "answering": null}));
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("cannot sign"));
    let (status, refused) = ask(json!({"member_id": "dana"}));
    assert_eq!(status, 400, "{refused}");
    // The body is read up to 4,096 bytes: at the limit it is judged (the words are too long
    // to sign), one past it is 413.
    let sized = |total: usize| {
        let frame = json!({"member_id": "dana", "words": "", "answering": null})
            .to_string()
            .len();
        json!({"member_id": "dana", "words": "a".repeat(total - frame), "answering": null})
    };
    assert_eq!(sized(4096).to_string().len(), 4096);
    assert_eq!(ask(sized(4096)).0, 400);
    assert_eq!(ask(sized(4097)).0, 413);
    let (status, failed) =
        ask(json!({"member_id": "dana", "words": "throttle", "answering": null}));
    assert_eq!(status, 502, "{failed}");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("ThrottlingException"),
        "{failed}"
    );
    let (status, _) = common::process::http(
        server.port,
        "POST",
        "/demo/assistant",
        &[("content-type", "application/json")],
        "{}",
    );
    assert_eq!(status, 401);
    let log = server.stop();
    assert!(
        !log.contains("toothpaste") && !log.contains("Cancel it"),
        "the words stay out of the log"
    );
    assert!(log.contains("demo_assistant"), "{log}");
    // Without HEARTH_DEMO_DEVICE there is no assistant endpoint either: only the asset
    // route, which takes GET (405) and has no such asset.
    let plain = common::process::Server::start(data.path(), &vars[..1]);
    let (status, _) = common::process::http(
        plain.port,
        "POST",
        "/demo/assistant",
        &[
            ("authorization", &bearer),
            ("content-type", "application/json"),
        ],
        "{}",
    );
    assert_eq!(status, 405);
    plain.stop();
}

/// A POST to one of the demo's routes with `body`, as the page sends it.
async fn demo_post(
    router: &axum::Router,
    path: &str,
    body: &str,
    bearer: Option<&str>,
) -> common::Reply {
    let authorization = bearer.map(|token| format!("Bearer {token}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(authorization) = &authorization {
        headers.push(("authorization", authorization));
    }
    request(router, "POST", path, &headers, body).await
}

/// `POST /demo/phone` for `member`, with the page's session token.
async fn invite_for(router: &axum::Router, member: &str) -> common::Reply {
    let body = json!({ "member_id": member }).to_string();
    demo_post(router, "/demo/phone", &body, Some(TOKEN)).await
}

/// The household an invite URL enrols into: the part of its token before the dot.
fn invited_household(reply: &common::Reply) -> String {
    let url = reply.body["url"].as_str().expect("an invite url");
    let token = url.rsplit('/').next().unwrap();
    token.split('.').next().unwrap().to_owned()
}

#[tokio::test]
async fn the_phone_routes_exist_only_beside_the_demo_device() {
    let h = harness(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)]);
    for path in ["/demo/host", "/demo/phone"] {
        let reply = demo_post(&h.router, path, "{}", Some(TOKEN)).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{path}");
    }
}

#[tokio::test]
async fn the_demo_phone_invites_members_of_one_host_household_found_again_after_a_restart() {
    let config = common::config_with(&[
        ("COUNTERSIGN_HOST_KEY", HOST_KEY),
        ("HEARTH_DEMO_DEVICE", "1"),
    ]);
    let mut kept = None;
    let h = common::harness_over(&config, |sqlite| {
        let stores = hearth_core::store::Stores::shared(sqlite);
        kept = Some(stores.clone());
        stores
    });
    let anonymous = demo_post(&h.router, "/demo/phone", r#"{"member_id":"dana"}"#, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);

    // The first passkey must be a guardian's, as with `hearth admin passkey invite`.
    let child = invite_for(&h.router, "mia").await;
    assert_eq!(child.status, StatusCode::FORBIDDEN, "{}", child.raw);
    assert!(
        child.body["error"].as_str().unwrap().contains("guardian"),
        "{}",
        child.raw
    );
    let stranger = invite_for(&h.router, "zed").await;
    assert_eq!(stranger.status, StatusCode::BAD_REQUEST, "{}", stranger.raw);
    let shapeless = demo_post(
        &h.router,
        "/demo/phone",
        r#"{"member":"dana"}"#,
        Some(TOKEN),
    )
    .await;
    assert_eq!(shapeless.status, StatusCode::BAD_REQUEST);

    let first = invite_for(&h.router, "dana").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.raw);
    assert_eq!(first.header("cache-control"), "no-store");
    assert!(first.body["expires_at"].is_string());
    let household = invited_household(&first);
    let second = invite_for(&h.router, "chris").await;
    assert_eq!(invited_household(&second), household, "one host household");

    // A restarted server (a new router over the same store) finds it by its name.
    let stores = kept.expect("the harness's stores");
    let (backing, _dir, _clock) = common::backing_with(&config, |_| stores.clone(), None);
    let restarted = hearth_core::app::local_router_with(&config, &backing);
    let again = invite_for(&restarted, "dana").await;
    assert_eq!(
        invited_household(&again),
        household,
        "found again after a restart"
    );

    // Deleted by an operator, it is made anew on the next call.
    let accounts = hearth_core::accounts::Accounts::new(stores.accounts.clone(), h.clock.clone());
    accounts.delete(&household).await.unwrap();
    let anew = invite_for(&restarted, "dana").await;
    assert_eq!(anew.status, StatusCode::OK, "{}", anew.raw);
    assert_ne!(invited_household(&anew), household, "a new host household");
}

#[tokio::test]
async fn the_demo_phone_reads_a_body_up_to_1_kib() {
    let h = harness(&[
        ("COUNTERSIGN_HOST_KEY", HOST_KEY),
        ("HEARTH_DEMO_DEVICE", "1"),
    ]);
    let framing = r#"{"member_id":""}"#.len();
    let at_limit = format!(r#"{{"member_id":"{}"}}"#, "x".repeat(1024 - framing));
    assert_eq!(at_limit.len(), 1024);
    let read = demo_post(&h.router, "/demo/phone", &at_limit, Some(TOKEN)).await;
    assert_eq!(
        read.status,
        StatusCode::BAD_REQUEST,
        "read, and not a member: {}",
        read.raw
    );
    let past = format!(r#"{{"member_id":"{}"}}"#, "x".repeat(1025 - framing));
    let refused = demo_post(&h.router, "/demo/phone", &past, Some(TOKEN)).await;
    assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn the_demo_host_holds_a_household_token_and_its_orders_wait_for_a_phone() {
    let h = harness(&[
        ("COUNTERSIGN_HOST_KEY", HOST_KEY),
        ("HEARTH_DEMO_DEVICE", "1"),
    ]);
    let anonymous = demo_post(&h.router, "/demo/host", "{}", None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let minted = demo_post(&h.router, "/demo/host", "{}", Some(TOKEN)).await;
    assert_eq!(minted.status, StatusCode::OK, "{}", minted.raw);
    assert_eq!(minted.header("cache-control"), "no-store");
    assert_eq!(minted.body["expires_in"], 3600);
    let token = minted.body["access_token"].as_str().unwrap();
    // The household token it minted cannot mint more, nor invite.
    for (path, body) in [
        ("/demo/host", "{}"),
        ("/demo/phone", r#"{"member_id":"dana"}"#),
    ] {
        let refused = demo_post(&h.router, path, body, Some(token)).await;
        assert_eq!(
            refused.status,
            StatusCode::FORBIDDEN,
            "{path}: {}",
            refused.raw
        );
    }

    // A household token and no attestation: with no passkey yet, the order is refused and the
    // refusal says what to do; the household's records read without a device.
    let propose = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "propose_purchase",
        "arguments": {"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}}});
    let bearer = format!("Bearer {token}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let refused = request(&h.router, "POST", "/mcp", &headers, &propose.to_string()).await;
    let result = &refused.body["result"];
    assert_eq!(result["isError"], true, "{}", refused.raw);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("passkey invite"),
        "{}",
        refused.raw
    );
    let activity = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "household_activity", "arguments": {}}});
    let read = request(&h.router, "POST", "/mcp", &headers, &activity.to_string()).await;
    assert_eq!(read.body["result"]["isError"], false, "{}", read.raw);
}
