//! What the logs of a whole session hold: one line per request with the method, a known tool
//! name, the status, the latency, a hashed subject and the request id, and nothing a caller
//! wrote or a credential. The logs are captured from the same subscriber production installs.

mod common;

use base64::Engine;
use common::capture::Captured;
use common::{CLIENT_ID, CLIENT_SECRET, JWT_SECRET, TOKEN, basic, harness, request};
use hearth_core::chain::sha256_hex;
use hearth_core::config::MetricDetail;
use serde_json::{Value, json};

const REASON: &str = "Grandma asked quietly for the blinds";
const INPUT: &str = "utterance: close them halfway";
const CLIENT_NAME: &str = "client-name-from-the-caller";
const SPOKEN: &str = "Read this sentence aloud please";

#[tokio::test]
async fn a_whole_session_logs_no_credential_and_nothing_the_caller_wrote() {
    // At `tool`, the most a line carries: every request metric, by function and by tool.
    let (captured, _default) = Captured::installed_with(MetricDetail::Tool);
    let h = harness(&[]);
    let form = "application/x-www-form-urlencoded";
    let client = basic(CLIENT_ID, CLIENT_SECRET);

    let issued = request(
        &h.router,
        "POST",
        "/oauth/token",
        &[("authorization", &client), ("content-type", form)],
        &format!(
            "grant_type=client_credentials&resource={}",
            common::RESOURCE
        ),
    )
    .await;
    let access = issued.body["access_token"].as_str().unwrap().to_owned();
    let judged = request(
        &h.router,
        "POST",
        "/oauth/judge",
        &[("content-type", form)],
        &format!("judge_token={TOKEN}"),
    )
    .await;
    let judge_access = judged.body["access_token"].as_str().unwrap().to_owned();

    let bearer = format!("Bearer {access}");
    let rpc = |body: Value| {
        let router = h.router.clone();
        let bearer = bearer.clone();
        async move {
            let headers = [
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ];
            request(&router, "POST", "/mcp", &headers, &body.to_string()).await
        }
    };
    rpc(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": CLIENT_NAME, "version": "1"}}}),
    )
    .await;
    rpc(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    rpc(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let recorded = rpc(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "record_decision", "arguments": {"household_id": "maple-house", "action": "close blinds",
        "reason": REASON, "inputs": {"heard": INPUT}, "approver": "Parent"}}}))
    .await;
    assert_eq!(
        recorded.body["result"]["isError"], false,
        "{}",
        recorded.raw
    );
    rpc(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "explain_why", "arguments": {"household_id": "maple-house", "action": "close blinds"}}}))
    .await;
    rpc(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "exfiltrate_everything", "arguments": {}}}),
    )
    .await;
    rpc(json!({"jsonrpc": "2.0", "id": 6, "method": "made/up", "params": {"x": INPUT}})).await;
    let refused = request(
        &h.router,
        "POST",
        "/mcp",
        &[
            ("authorization", "Bearer a-guessed-token"),
            ("content-type", "application/json"),
        ],
        "{}",
    )
    .await;
    assert_eq!(refused.status, 401);
    let spoken = request(
        &h.router,
        "POST",
        "/tts",
        &[
            ("authorization", &bearer),
            ("content-type", "application/json"),
        ],
        &json!({"text": SPOKEN}).to_string(),
    )
    .await;
    assert_eq!(
        spoken.status, 503,
        "no voice in the harness: {}",
        spoken.raw
    );

    let logs = captured.text();
    let lines: Vec<Value> = logs
        .lines()
        .map(|line| serde_json::from_str(line).expect("every log line is JSON"))
        .collect();
    let requests: Vec<&Value> = lines
        .iter()
        .filter(|line| line["target"] == "hearth::request")
        .collect();
    assert_eq!(requests.len(), 11, "one line per request: {logs}");
    for line in &requests {
        let mut fields: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        // The logged facts, then the embedded metrics (by tool for a known tool's call).
        let mut expected = vec![
            "Deployment",
            "Errors",
            "Function",
            "Latency",
            "Requests",
            "Throttled",
            "ToolErrors",
            "_aws",
            "latency_us",
            "level",
            "method",
            "request_id",
            "status",
            "subject",
            "target",
            "timestamp",
            "tool",
        ];
        if line["tool"] != "-" {
            expected.insert(6, "Tool");
        }
        // A refused call's line names why with a fixed code, and nothing the caller sent.
        if let Some(reason) = line.get("reason") {
            let code = reason.as_str().unwrap_or_default();
            assert!(
                !code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{line}"
            );
            expected.push("reason");
            expected.sort_unstable();
        }
        assert_eq!(fields, expected, "{line}");
        assert_eq!(line["_aws"]["CloudWatchMetrics"][0]["Namespace"], "Hearth");
    }
    let methods: Vec<&str> = requests
        .iter()
        .map(|line| line["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "oauth/token",
            "oauth/judge",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call",
            "tools/call",
            "other",
            "-",
            "tts"
        ]
    );
    let tools: Vec<&str> = requests
        .iter()
        .map(|line| line["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools[5..8], ["record_decision", "explain_why", "-"]);
    // The client's subject is logged only as a prefix of the hash of its hash.
    assert_eq!(requests[0]["subject"], sha256_hex(CLIENT_ID)[..16]);

    let basic_value =
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    let signature = access.rsplit('.').next().unwrap();
    let never = [
        CLIENT_SECRET,
        JWT_SECRET,
        TOKEN,
        &sha256_hex(TOKEN),
        &access,
        signature,
        &judge_access,
        &basic_value,
        REASON,
        INPUT,
        "close blinds",
        "maple-house",
        CLIENT_NAME,
        "exfiltrate_everything",
        "made/up",
        "a-guessed-token",
        SPOKEN,
    ];
    for secret in never {
        assert!(!logs.contains(secret), "the log holds {secret:?}:\n{logs}");
    }

    // A household's session: its token, device key and words stay out of the log too.
    captured.0.lock().unwrap().clear();
    household_session_logs_nothing_secret(&h, &captured).await;
}

async fn household_session_logs_nothing_secret(h: &common::Harness, captured: &Captured) {
    use hearth_core::accounts::{Accounts, new_household_id};
    use hearth_core::auth::attestation::{Attestation, sign};
    use hearth_core::auth::{Scopes, jwt::now_secs};
    use hearth_core::clock::Clock;
    use hearth_core::countersign::household::built_in_policy;
    use hearth_core::store::sqlite::SqliteStore;

    let store = std::sync::Arc::new(SqliteStore::open(&h.db_path()).unwrap());
    let accounts = Accounts::new(store, h.clock.clone());
    let id = new_household_id();
    let mut policy = built_in_policy();
    policy["household_id"] = id.clone().into();
    accounts
        .create(&id, "Log Test Home", Some(policy))
        .await
        .unwrap();
    let (key_id, key) = accounts.add_device_key(&id).await.unwrap();
    let config = common::config(&[("MCP_JWT_SECRET", JWT_SECRET)]);
    let token = config
        .jwt_keys()
        .unwrap()
        .issue_household(&id, 0, Scopes::DEFAULT, 600, now_secs())
        .access_token;
    let words = "buy a 4 pack of AA batteries for the smoke alarm";
    let attestation = Attestation {
        member_id: "dana".into(),
        turn_id: "log-turn-1".into(),
        utterances: vec![words.into()],
        issued_at: h.clock.now().unix_timestamp(),
        answering: None,
    }
    .encode();
    let signature = sign(key.expose(), &attestation);
    let bearer = format!("Bearer {token}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("x-countersign-attestation", attestation.as_str()),
        ("x-countersign-signature", signature.as_str()),
        ("x-countersign-key-id", key_id.as_str()),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "propose_purchase", "arguments": {"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}}});
    let placed = request(&h.router, "POST", "/mcp", &headers, &body.to_string()).await;
    assert_eq!(
        placed.body["result"]["structuredContent"]["outcome"], "placed",
        "{}",
        placed.raw
    );
    let logs = captured.text();
    assert!(logs.contains("propose_purchase"), "{logs}");
    for secret in [
        token.as_str(),
        key.expose(),
        words,
        attestation.as_str(),
        signature.as_str(),
    ] {
        assert!(!logs.contains(secret), "the log holds {secret:?}:\n{logs}");
    }
}

/// Account linking's secrets: the link code, the authorization code, the PKCE verifier and
/// challenge, the state, and both tokens never reach the log, on success or refusal.
#[tokio::test]
async fn a_linking_session_logs_no_code_token_or_state() {
    use hearth_core::accounts::{Accounts, new_household_id};
    use hearth_core::linking::Linking;
    use hearth_core::store::sqlite::SqliteStore;
    use std::sync::Arc;

    let (captured, _default) = Captured::installed();
    let redirect = "https://alexa.example/api/skill/link/LOGS";
    let h = harness(&[("MCP_REDIRECT_URIS", redirect)]);
    let store = Arc::new(SqliteStore::open(&h.db_path()).unwrap());
    let accounts = Arc::new(Accounts::new(store.clone(), h.clock.clone()));
    let household = new_household_id();
    accounts
        .create(&household, "Log Link Home", None)
        .await
        .unwrap();
    let linking = Linking::new(store, accounts, h.clock.clone());
    let (link_code, _) = linking.new_link_code(&household).await.unwrap();
    let state = "state-that-must-stay-private";
    let verifier = "verifier-that-must-stay-private-0123456789abcdef";
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(<sha2::Sha256 as sha2::Digest>::digest(verifier.as_bytes()));
    let query: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", CLIENT_ID),
            ("redirect_uri", redirect),
            ("state", state),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", common::RESOURCE),
        ])
        .finish();
    let page = request(
        &h.router,
        "GET",
        &format!("/oauth/authorize?{query}"),
        &[],
        "",
    )
    .await;
    let cookie = page
        .header("set-cookie")
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let csrf = page
        .raw
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let form = "application/x-www-form-urlencoded";
    let submit = |code: &str| {
        let body = format!("{query}&csrf={csrf}&decision=allow&link_code={code}");
        let (router, cookie) = (h.router.clone(), cookie.clone());
        async move {
            request(
                &router,
                "POST",
                "/oauth/authorize",
                &[("cookie", cookie.as_str()), ("content-type", form)],
                &body,
            )
            .await
        }
    };
    let wrong = submit("ZZZZ-ZZZZ-ZZZZ").await;
    assert_eq!(wrong.status, http::StatusCode::BAD_REQUEST);
    let linked = submit(&link_code).await;
    let location = url::Url::parse(linked.header("location")).unwrap();
    let code = location
        .query_pairs()
        .find(|(name, _)| name == "code")
        .unwrap()
        .1
        .into_owned();
    let client = basic(CLIENT_ID, CLIENT_SECRET);
    let token_form = |body: String| {
        let (router, client) = (h.router.clone(), client.clone());
        async move {
            request(
                &router,
                "POST",
                "/oauth/token",
                &[("authorization", client.as_str()), ("content-type", form)],
                &body,
            )
            .await
        }
    };
    let exchange = format!(
        "grant_type=authorization_code&code={code}&redirect_uri={}&code_verifier={verifier}&resource={}",
        form_urlencoded::byte_serialize(redirect.as_bytes()).collect::<String>(),
        common::RESOURCE
    );
    let tokens = token_form(exchange.clone()).await;
    let access = tokens.body["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens.body["refresh_token"].as_str().unwrap().to_owned();
    let replay = token_form(exchange).await;
    assert_eq!(replay.body["error"], "invalid_grant");
    let reused = token_form(format!("grant_type=refresh_token&refresh_token={refresh}")).await;
    assert_eq!(reused.body["error"], "invalid_grant");
    let logs = captured.text();
    assert!(logs.contains("oauth/authorize"), "{logs}");
    assert!(logs.contains("oauth/token"), "{logs}");
    for secret in [
        link_code.as_str(),
        &link_code.replace('-', ""),
        "ZZZZ-ZZZZ-ZZZZ",
        code.as_str(),
        state,
        verifier,
        challenge.as_str(),
        csrf.as_str(),
        &cookie,
        access.as_str(),
        refresh.as_str(),
        CLIENT_SECRET,
    ] {
        assert!(!logs.contains(secret), "the log holds {secret:?}:\n{logs}");
    }
}

/// Records a decision, then calls `record_decision` without what it needs (an `isError`
/// result).
async fn a_decision_then_a_failed_call(router: &axum::Router) {
    let record = json!({"household_id": "home", "action": "dim lights", "reason": "movie",
        "inputs": {}, "approver": "Parent"});
    common::call_tool(router, "record_decision", record).await;
    let failed =
        common::call_tool(router, "record_decision", json!({"household_id": "home"})).await;
    assert_eq!(failed["isError"], true, "{failed}");
}

/// At `HEARTH_METRICS=tool` each request line carries its metrics: a tool call's `isError`
/// result counts as a tool error, by function and tool; a refusal by the HTTP layer is counted
/// by function only.
#[tokio::test]
async fn at_tool_request_lines_count_tool_errors_by_tool() {
    let (captured, _logs) = Captured::installed_with(MetricDetail::Tool);
    let h = common::harness(&[]);
    a_decision_then_a_failed_call(&h.router).await;
    common::request(
        &h.router,
        "POST",
        "/mcp",
        &[("content-type", "application/json")],
        "{}",
    )
    .await;
    let lines = captured.request_lines();
    let metrics: Vec<(Value, Value, Value)> = lines
        .iter()
        .map(|l| {
            (
                l["Tool"].clone(),
                l["ToolErrors"].clone(),
                l["status"].clone(),
            )
        })
        .collect();
    assert_eq!(
        metrics,
        [
            (json!("record_decision"), json!(0), json!(200)),
            (json!("record_decision"), json!(1), json!(200)),
            (Value::Null, json!(0), json!(401)),
        ]
    );
    assert_eq!(
        lines[1]["_aws"]["CloudWatchMetrics"][1]["Dimensions"],
        json!([["Function"], ["Function", "Tool"]])
    );
}

/// By default (`HEARTH_METRICS=function`) a line carries a metric only when something
/// happened that an alarm reads and AWS's own metrics cannot count: a 429 from Hearth's
/// limiter, over the whole deployment (by its name alone). A tool error is marked on its line
/// for the dashboard's log query, and is no metric. A call that went well is a plain log line.
#[tokio::test]
async fn by_default_only_a_429_is_counted_over_the_deployment_and_a_tool_error_is_marked() {
    let (captured, _logs) = Captured::installed();
    let h = harness(&[("HEARTH_RATE_LIMIT_PER_SUBJECT", "2")]);
    a_decision_then_a_failed_call(&h.router).await;
    let explain = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "explain_why", "arguments": {"household_id": "home", "action": "dim lights"}}});
    assert_eq!(common::rpc(&h.router, &explain).await.status, 429);

    let lines = captured.request_lines();
    let counted: Vec<(&Value, Option<&Value>, Option<&Value>)> = lines
        .iter()
        .map(|l| (&l["status"], l.get("ToolErrors"), l.get("Throttled")))
        .collect();
    assert_eq!(
        counted,
        [
            (&json!(200), None, None),
            (&json!(200), Some(&json!(1)), None),
            (&json!(429), None, Some(&json!(1))),
        ]
    );
    assert!(lines[0].get("_aws").is_none(), "{}", lines[0]);
    assert!(lines[1].get("_aws").is_none(), "{}", lines[1]);
    assert_eq!(
        lines[2]["_aws"]["CloudWatchMetrics"],
        json!([{"Namespace": "Hearth", "Dimensions": [["Deployment"]],
            "Metrics": [{"Name": "Throttled", "Unit": "Count"}]}]),
        "{}",
        lines[2]
    );
    for line in &lines[1..] {
        for per_call in ["Requests", "Errors", "Latency", "Tool"] {
            assert!(line.get(per_call).is_none(), "{per_call}: {line}");
        }
    }
}

/// A line names no more than the request's verdict let Hearth learn: one refused after
/// admission (a body that is not JSON) names its subject; one the limiter refused names no
/// method, tool or subject, though its message was read beside the counters.
#[tokio::test]
async fn a_refused_requests_line_names_only_what_admission_let_in() {
    let (captured, _logs) = Captured::installed();
    let h = harness(&[("HEARTH_RATE_LIMIT_PER_SUBJECT", "2")]);
    let bearer = format!("Bearer {TOKEN}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    let not_json = request(&h.router, "POST", "/mcp", &headers, "{not json").await;
    assert_eq!(not_json.status, 400, "{}", not_json.raw);
    let explain = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "explain_why", "arguments": {"household_id": "home", "action": "dim lights"}}});
    assert_eq!(common::rpc(&h.router, &explain).await.status, 200);
    let limited = common::rpc(&h.router, &explain).await;
    assert_eq!(limited.status, 429, "{}", limited.raw);

    let lines = captured.request_lines();
    let subject = &sha256_hex(sha256_hex(TOKEN))[..16];
    let seen: Vec<[&Value; 4]> = lines
        .iter()
        .map(|l| [&l["status"], &l["method"], &l["tool"], &l["subject"]])
        .collect();
    assert_eq!(
        seen,
        [
            [&json!(400), &json!("-"), &json!("-"), &json!(subject)],
            [
                &json!(200),
                &json!("tools/call"),
                &json!("explain_why"),
                &json!(subject)
            ],
            [&json!(429), &json!("-"), &json!("-"), &json!("-")],
        ]
    );
    assert!(lines[2].get("Tool").is_none(), "{}", lines[2]);
}

/// A refused purchase call's line says why with the refusal's fixed code (`reason`), never
/// its spoken sentence or anything the caller sent; other lines have no `reason`.
#[tokio::test]
async fn a_refused_tool_calls_line_names_its_code() {
    let (captured, _logs) = Captured::installed();
    let h = common::harness(&[]);
    let refused = common::call_tool(
        &h.router,
        "propose_purchase",
        json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}),
    )
    .await;
    assert_eq!(refused["isError"], true, "{refused}");
    common::call_tool(&h.router, "search_products", json!({"query": "batteries"})).await;
    let lines = captured.request_lines();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0]["reason"], refused["_meta"]["hearth/code"],
        "{}",
        lines[0]
    );
    assert_eq!(lines[0]["ToolErrors"], 1);
    assert!(lines[1].get("reason").is_none(), "{}", lines[1]);
    let spoken = refused["content"][0]["text"].as_str().unwrap();
    assert!(!captured.text().contains(spoken));
}

/// A passkey session: invites, enrolments, a guardian's approval, an order approved on a phone. Nothing of
/// a link's token, a nonce, a statement or an assertion reaches the log.
#[tokio::test]
async fn a_passkey_session_logs_no_link_nonce_statement_or_assertion() {
    use hearth_core::store::Stores;
    use hearth_testkit::passkey::SoftPasskey;
    let (captured, _logs) = Captured::installed();
    let config = common::config_with(&[]);
    let mut shared = None;
    let h = common::harness_over(&config, |sqlite| {
        let stores = Stores::shared(sqlite);
        shared = Some(stores.clone());
        stores
    });
    let stores = shared.unwrap();
    let accounts = std::sync::Arc::new(hearth_core::accounts::Accounts::new(
        stores.accounts.clone(),
        h.clock.clone(),
    ));
    let passkeys = hearth_core::app::passkeys(
        &config,
        accounts.clone(),
        stores.grants.clone(),
        &hearth_core::app::household_data(&config).unwrap(),
    )
    .unwrap();
    let mut policy = hearth_core::countersign::household::built_in_policy();
    policy.as_object_mut().unwrap().remove("household_id");
    policy.as_object_mut().unwrap().remove("name");
    let household = hearth_core::accounts::new_household_id();
    accounts
        .create(&household, "Maple", Some(policy))
        .await
        .unwrap();

    let origin = "http://localhost:8790";
    let post = |path: String, body: Value| {
        let router = h.router.clone();
        async move {
            let headers = [("content-type", "application/json"), ("origin", origin)];
            request(&router, "POST", &path, &headers, &body.to_string()).await
        }
    };
    let mut secrets: Vec<String> = Vec::new();
    let enrol = |member: &'static str| {
        let passkeys = &passkeys;
        let household = household.clone();
        let post = &post;
        async move {
            let url = passkeys.invite(&household, member).await.unwrap().url;
            let path = url.strip_prefix(origin).unwrap().to_owned();
            let mut key = SoftPasskey::es256(origin, "localhost");
            let options = post(format!("{path}/options"), json!({})).await;
            let credential = key.register(&options.body);
            let reply = post(path.clone(), json!({"credential": credential})).await;
            assert_eq!(reply.status, http::StatusCode::CREATED, "{}", reply.raw);
            let token = path.rsplit('/').next().unwrap().to_owned();
            (
                key,
                vec![
                    token,
                    options.body["challenge"].as_str().unwrap().to_owned(),
                ],
            )
        }
    };
    let (mut dana, more) = enrol("dana").await;
    secrets.extend(more);
    let (mia, more) = enrol("mia").await;
    secrets.extend(more);
    let approval = passkeys
        .confirmation_link(&household, &mia.id())
        .await
        .unwrap();
    let page = approval.strip_prefix(origin).unwrap().to_owned();
    secrets.push(page.rsplit('/').next().unwrap().to_owned());
    let asked = post(format!("{page}/challenge"), json!({"decision": "approve"})).await;
    let statement = asked.body["statement"].as_str().unwrap().to_owned();
    let credential = dana.sign_request(&asked.body);
    for field in ["clientDataJSON", "authenticatorData", "signature"] {
        secrets.push(credential["response"][field].as_str().unwrap().to_owned());
    }
    secrets.push(statement.lines().last().unwrap().to_owned());
    let body = json!({"decision": "approve", "statement": statement, "credential": credential});
    assert_eq!(
        post(page.clone(), body.clone()).await.status,
        http::StatusCode::OK
    );
    // Replayed: refused.
    assert_eq!(post(page, body).await.status, http::StatusCode::GONE);

    // An order proposed without a device, approved with dana's passkey.
    let token = hearth_core::admin::Admin::new(
        hearth_core::accounts::Accounts::new(stores.accounts.clone(), h.clock.clone()),
        stores.chains.clone(),
        stores.grants.clone(),
        hearth_core::app::household_data(&config).unwrap(),
        config.jwt_keys(),
        h.clock.clone(),
    )
    .token(&household, 30)
    .await
    .unwrap()
    .access_token;
    let bearer = format!("Bearer {token}");
    let proposal = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "propose_purchase",
        "arguments": {"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}}});
    let proposed = request(
        &h.router,
        "POST",
        "/mcp",
        &[
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &proposal.to_string(),
    )
    .await;
    let url = proposed.body["result"]["structuredContent"]["approval_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = url.strip_prefix(origin).unwrap().to_owned();
    secrets.push(page.rsplit('/').next().unwrap().to_owned());
    let asked = post(format!("{page}/challenge"), json!({"decision": "approve"})).await;
    let statement = asked.body["statement"].as_str().unwrap().to_owned();
    secrets.push(statement.lines().last().unwrap().to_owned());
    let credential = dana.sign_request(&asked.body);
    secrets.push(
        credential["response"]["signature"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    let body = json!({"decision": "approve", "statement": statement, "credential": credential});
    let placed = post(page, body).await;
    assert_eq!(placed.body["status"], "placed", "{}", placed.raw);

    let logs = captured.text();
    assert!(logs.contains("a guardian approved a new passkey"), "{logs}");
    assert!(logs.contains("a passkey decided an order"), "{logs}");
    assert!(!logs.contains("hearth-approval/v1"), "{logs}");
    assert!(!logs.contains(token.as_str()));
    for secret in &secrets {
        assert!(secret.len() >= 16, "{secret}");
        assert!(
            !logs.contains(secret.as_str()),
            "the log holds {secret}:\n{logs}"
        );
    }
    assert!(!logs.contains("hearth-enrolment/v1"), "{logs}");
}

/// A sign-up: the names a person typed, the operator's link and the first guardian's invite
/// stay out of the log; the line says only that a household was made, and whether by a link.
#[tokio::test]
async fn a_sign_up_logs_no_name_or_link() {
    use hearth_core::household::signup::SignupLinks;
    use hearth_core::store::Stores;
    let (captured, _logs) = Captured::installed();
    let config = common::config_with(&[
        ("HEARTH_SIGNUP", "open"),
        (
            "MCP_REDIRECT_URIS",
            "https://alexa.example/api/skill/link/M2TEST",
        ),
    ]);
    let mut shared = None;
    let h = common::harness_over(&config, |sqlite| {
        let stores = Stores::shared(sqlite);
        shared = Some(stores.clone());
        stores
    });
    let stores = shared.unwrap();
    let origin = "http://localhost:8790";
    let link = SignupLinks::new(stores.grants.clone(), h.clock.clone(), origin.into())
        .create()
        .await
        .unwrap()
        .url;
    let token = link.split_once("#invite=").unwrap().1.to_owned();
    const HOUSEHOLD_NAME: &str = "household-name-from-the-caller";
    const MEMBER_NAME: &str = "member-name-from-the-caller";
    let made = request(
        &h.router,
        "POST",
        "/household/signup",
        &[("content-type", "application/json"), ("origin", origin)],
        &json!({"household_name": HOUSEHOLD_NAME, "member_name": MEMBER_NAME, "invite": token})
            .to_string(),
    )
    .await;
    assert_eq!(made.status, http::StatusCode::CREATED, "{}", made.raw);
    let enrolment = made.body["enrolment_url"].as_str().unwrap();
    let invite = enrolment.rsplit('/').next().unwrap();
    let logs = captured.text();
    assert!(logs.contains("a household was made by sign-up"), "{logs}");
    for secret in [HOUSEHOLD_NAME, MEMBER_NAME, token.as_str(), invite] {
        assert!(!logs.contains(secret), "the log holds {secret}:\n{logs}");
    }
}
