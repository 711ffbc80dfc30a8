//! Replays the API Gateway events in `events/mcp/` and `events/oauth/` through the Lambda
//! handler path: the event JSON is decoded as the runtime would, adapted by `lambda_http`,
//! served by that function's router, and the Lambda response is checked for status, headers
//! and body. The credentials are `events/credentials.json`, in the shape of the Secrets
//! Manager secret a deployment reads.

mod common;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hearth_core::auth::Credentials;
use hearth_core::speech::polly::Voice;
use hearth_core::store::GrantStore;
use hearth_testkit::moto::Moto;
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Context, LambdaEvent, Service};
use serde_json::{Value, json};

#[derive(Clone, Copy)]
enum Function {
    Mcp,
    OAuth,
    Tts,
}

fn fixture(relative: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The household the passkey fixtures act on (written with them by
/// scripts/passkey_fixtures.py): a guardian with an Ed25519 passkey, a later passkey waiting
/// for a guardian with a statement nonce given out, an open invite whose page was given a
/// challenge, and an order proposed without a device whose approval page was given a nonce.
/// The challenge and the nonces are dated now, as if the pages had just asked. Returns the
/// order's proposal entry hash.
async fn seed_passkey_household(
    db: &std::path::Path,
    keys: Option<std::sync::Arc<hearth_core::transparency::LogKeys>>,
) -> String {
    use hearth_core::store::{
        AccountItem, AccountStore, NonceItem, PasskeyInviteItem, PasskeyItem, PendingEnrolmentItem,
        sqlite::SqliteStore,
    };
    let spec: Value = serde_json::from_str(&fixture("events/passkey-household.json")).unwrap();
    let text = |value: &Value| value.as_str().unwrap().to_owned();
    let now = hearth_core::clock::unix_ms(time::OffsetDateTime::now_utc());
    let passkey = |key: &Value, pending: Option<PendingEnrolmentItem>| PasskeyItem {
        credential_id: text(&key["credential_id"]),
        member_id: text(&key["member_id"]),
        algorithm: text(&key["algorithm"]),
        public_key_spki: text(&key["public_key_spki"]),
        sign_count: 0,
        backup_eligible: false,
        created_at_ms: now - 60_000,
        last_used_at_ms: None,
        revoked_at_ms: None,
        suspect_at_ms: None,
        pending,
        push: None,
        push_grant: None,
    };
    let waiting = PendingEnrolmentItem {
        approval_token_hashes: vec![hearth_core::store::token_hash(&text(
            &spec["pending"]["approval_token"],
        ))],
        generation: 0,
        challenged_at_ms: Vec::new(),
        nonce: Some(NonceItem {
            nonce: text(&spec["pending"]["nonce"]),
            decision: "approve".into(),
            created_at_ms: now,
        }),
    };
    // The built-in household's rules, under this account's id.
    let mut policy = hearth_core::countersign::household::built_in_policy();
    policy.as_object_mut().unwrap().remove("household_id");
    let mut guardian = passkey(&spec["guardian"], None);
    guardian.push_grant = Some(hearth_core::store::PushGrantItem {
        token_hash: text(&spec["push_grant"]["token_sha256"]),
        expires_at_ms: now + 60_000,
    });
    let account = AccountItem {
        household_id: text(&spec["household_id"]),
        name: "The Fixture Household".into(),
        policy: Some(policy),
        generation: 0,
        tokens_issued: 0,
        device_keys: Vec::new(),
        revoked_families: Vec::new(),
        passkeys: vec![guardian, passkey(&spec["pending"], Some(waiting))],
        passkey_invites: vec![PasskeyInviteItem {
            invite_hash: text(&spec["invite"]["token_sha256"]),
            member_id: text(&spec["invite"]["member_id"]),
            generation: 0,
            expires_at_ms: now + 60_000,
            challenge: Some(text(&spec["invite"]["challenge"])),
            challenge_at_ms: Some(now),
            challenged_at_ms: vec![now],
        }],
        approval_links: vec![hearth_core::store::ApprovalLinkItem {
            token_hashes: vec![hearth_core::store::token_hash(&text(
                &spec["approval"]["token"],
            ))],
            request_id: text(&spec["approval"]["request_id"]),
            expires_at_ms: now + 60_000,
            generation: 0,
            challenged_at_ms: Vec::new(),
            nonce: Some(NonceItem {
                nonce: text(&spec["approval"]["nonce"]),
                decision: "approve".into(),
                created_at_ms: now,
            }),
        }],
        links: Vec::new(),
        links_complete: true,
        signup_expires_at_ms: None,
        created_at_ms: now - 120_000,
        revision: 1,
    };
    let store = std::sync::Arc::new(SqliteStore::open(db).unwrap());
    store.put_account(&account, None).await.unwrap();
    seed_household_page(&*store, &spec, now).await;
    waiting_order(
        store,
        keys,
        &account,
        &text(&spec["approval"]["request_id"]),
    )
    .await
}

/// What the household page's fixtures act on: the guardian's passkey in the sign-in index, a
/// sign-in challenge given out now, and the guardian's session, whose page asked to sign a new
/// device key just now.
async fn seed_household_page(store: &dyn GrantStore, spec: &Value, now: i64) {
    use hearth_core::household::sessions::{Asked, Session};
    use hearth_core::store::{GrantItem, GrantKind, KEPT_UNTIL_REMOVED_MS, token_hash};
    let text = |value: &Value| value.as_str().unwrap().to_owned();
    let household_id = text(&spec["household_id"]);
    let guardian = text(&spec["guardian"]["credential_id"]);
    let records = [
        GrantItem {
            kind: GrantKind::PasskeyOwner,
            key: guardian.clone(),
            body: json!({"household_id": household_id, "member_id": "dana"}).to_string(),
            expires_at_ms: KEPT_UNTIL_REMOVED_MS,
            revision: 1,
        },
        GrantItem {
            kind: GrantKind::SignInChallenge,
            key: hearth_core::chain::sha256_hex(
                URL_SAFE_NO_PAD
                    .decode(text(&spec["sign_in"]["challenge"]))
                    .unwrap(),
            ),
            body: String::new(),
            expires_at_ms: now + 5 * 60 * 1000,
            revision: 1,
        },
        {
            let session = Session {
                household_id: household_id.clone(),
                member_id: "dana".into(),
                credential_id: guardian,
                role: "parent".into(),
                generation: 0,
                created_at_ms: now,
                seen_at_ms: now,
                csrf: text(&spec["session"]["csrf"]),
                asked: Some(Asked {
                    action: "add-device-key".into(),
                    target: "new".into(),
                    statement: text(&spec["session"]["asked"]),
                    asked_at_ms: now,
                }),
            };
            GrantItem {
                kind: GrantKind::HouseholdSession,
                key: token_hash(&text(&spec["session"]["id"])),
                body: serde_json::to_string(&session).unwrap(),
                expires_at_ms: session.expires_at_ms(),
                revision: 1,
            }
        },
    ];
    for record in &records {
        store.put_grant(record, None, now).await.unwrap();
    }
}

/// Appends an order of AA batteries proposed without a device, as the purchase guard writes
/// it; the proposal entry's hash.
async fn waiting_order(
    store: std::sync::Arc<hearth_core::store::sqlite::SqliteStore>,
    keys: Option<std::sync::Arc<hearth_core::transparency::LogKeys>>,
    account: &hearth_core::store::AccountItem,
    request_id: &str,
) -> String {
    use hearth_core::accounts::Standing;
    use hearth_core::auth::Caller;
    use hearth_core::countersign::household::HouseholdData;
    use hearth_core::countersign::judge::Verdict;
    use hearth_core::countersign::ledger::{
        Event, IntentRecord, Ledger, NewEntry, ProposalEvent, Step, UNATTESTED,
    };
    use hearth_core::countersign::policy::Outcome;
    let data = HouseholdData::built_in().unwrap();
    let home = HouseholdData::for_account(
        account.policy.as_ref().unwrap(),
        &account.household_id,
        &data.catalogue,
    )
    .unwrap();
    let caller = Caller::of_household(&account.household_id, Standing::Current);
    let proposal = ProposalEvent {
        words: Vec::new(),
        product_id: "aa-batteries".into(),
        variant_id: "4-pack".into(),
        title: "PowerCell AA Alkaline Batteries".into(),
        variant: "4 pack".into(),
        merchant_id: "corner-electrics".into(),
        merchant: "Corner Electrics".into(),
        unit_price_cents: 549,
        quantity: 1,
        total_cents: 549,
        intent: IntentRecord {
            judge: "none".into(),
            verdict: Verdict::Unclear,
            codes: Vec::new(),
            reasons: Vec::new(),
        },
        outcome: Outcome::NeedsApproval,
        reasons: Vec::new(),
        order_id: None,
    };
    let (_, appended) = Ledger::new(store, std::sync::Arc::new(hearth_core::clock::SystemClock))
        .with_log_keys(keys)
        .transition(&caller, &account.household_id, &home.weeks, |_, _| {
            Step::Append(
                NewEntry {
                    request_id: request_id.to_owned(),
                    member_id: UNATTESTED.into(),
                    turn_id: "call-F1X7URE001".into(),
                    event: Event::Proposal(Box::new(proposal.clone())),
                },
                (),
            )
        })
        .await
        .unwrap();
    appended.unwrap().receipt.entry_hash
}

/// Fills a fixture body's `{{statement}}` and `{{credential}}`: the approval of the seeded
/// order (whose hash the statement names) signed with the guardian's Ed25519 passkey, as the
/// page and the phone would.
fn sign_placeholders(event: &mut Value, proposal_hash: &str) {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use ed25519_dalek::Signer;
    use sha2::{Digest, Sha256};
    let Some(body) = event["body"]
        .as_str()
        .filter(|body| body.contains("{{statement}}"))
    else {
        return;
    };
    let mut body: Value = serde_json::from_str(body).unwrap();
    let spec: Value = serde_json::from_str(&fixture("events/passkey-household.json")).unwrap();
    let text = |value: &Value| value.as_str().unwrap().to_owned();
    let statement = hearth_core::passkeys::statement::approval(
        &text(&spec["household_id"]),
        &text(&spec["approval"]["request_id"]),
        proposal_hash,
        "approve",
        &text(&spec["approval"]["nonce"]),
    );
    let host = "abc123xyz.execute-api.us-east-1.amazonaws.com";
    let mut auth = Sha256::digest(host.as_bytes()).to_vec();
    auth.push(0x05);
    auth.extend_from_slice(&0u32.to_be_bytes());
    let client_data = serde_json::to_vec(&json!({
        "type": "webauthn.get",
        "challenge": URL_SAFE_NO_PAD.encode(Sha256::digest(statement.as_bytes())),
        "origin": format!("https://{host}"),
        "crossOrigin": false,
    }))
    .unwrap();
    let key =
        ed25519_dalek::SigningKey::from_bytes(&Sha256::digest(b"fixture guardian key").into());
    let mut signed = auth.clone();
    signed.extend_from_slice(&Sha256::digest(&client_data));
    let id = text(&spec["guardian"]["credential_id"]);
    body["statement"] = json!(statement);
    body["credential"] = json!({
        "id": id,
        "rawId": id,
        "type": "public-key",
        "response": {
            "clientDataJSON": URL_SAFE_NO_PAD.encode(&client_data),
            "authenticatorData": URL_SAFE_NO_PAD.encode(&auth),
            "signature": URL_SAFE_NO_PAD.encode(key.sign(&signed).to_bytes()),
            "userHandle": null,
        },
    });
    event["body"] = json!(body.to_string());
}

/// Replays one fixture through `lambda_http`'s adapter and returns the Lambda response JSON.
async fn replay_to(function: Function, file: &str) -> Value {
    // REST API (v1) events carry the stage in the path; deployments set this variable so the
    // function sees the same `/mcp` path as under an HTTP API. Every test sets the same value,
    // so concurrent tests cannot observe a different one.
    unsafe { std::env::set_var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true") };
    let folder = match function {
        Function::Mcp => "events/mcp",
        Function::OAuth => "events/oauth",
        Function::Tts => "events/tts",
    };
    let mut event: Value =
        serde_json::from_str(&fixture(&format!("{folder}/{file}"))).expect("API Gateway event");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lambda.db");

    let mut vars = vec![
        ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
        ("HEARTH_DB", db.to_str().unwrap()),
        (
            "MCP_RESOURCE_URL",
            "https://abc123xyz.execute-api.us-east-1.amazonaws.com/mcp",
        ),
        // As the template sets it while AionBackendUrl is empty: the fixtures list ask_aion.
        ("MOCK_AION_BACKEND", "true"),
    ];
    // The OAuth function's fixtures include the consent page, which needs linking configured;
    // the MCP fixtures keep the client-credentials token reaching every tool.
    if let Function::OAuth = function {
        vars.push((
            "MCP_REDIRECT_URIS",
            "https://pitangui.amazon.com/api/skill/link/MFIXTURE",
        ));
    }
    // The sign-up fixtures replay a deployment with sign-up open, which needs linking.
    if file.starts_with("v2-household-signup") {
        vars.push(("HEARTH_SIGNUP", "open"));
        vars.push((
            "MCP_REDIRECT_URIS",
            "https://pitangui.amazon.com/api/skill/link/MFIXTURE",
        ));
    }
    // As a deployment with witnesses configured (the template's WitnessPolicy): the policy is
    // published, and appends try its one witness, which nobody runs.
    let policy = fixture("events/witness-policy.txt");
    vars.push(("HEARTH_WITNESS_POLICY", &policy));
    let mut config = common::config(&vars);
    // What `app::load_credentials` reads from Secrets Manager in a deployment.
    let (credentials, problems) =
        Credentials::from_secret_json(&fixture("events/credentials.json")).unwrap();
    assert!(problems.is_empty());
    config.credentials = credentials;
    if file.starts_with("v2-passkey-") {
        let keys = hearth_core::app::log_keys(&config);
        let proposal_hash = seed_passkey_household(&db, keys).await;
        sign_placeholders(&mut event, &proposal_hash);
    }
    let request: LambdaRequest = serde_json::from_value(event).expect("API Gateway event");
    let router = match function {
        Function::Mcp => hearth_core::app::mcp_router(&config).await.expect("router"),
        Function::OAuth => hearth_core::app::oauth_router(&config)
            .await
            .expect("router"),
        Function::Tts => {
            // Polly is moto on loopback; everything else is as the function builds it.
            let mut backing = hearth_core::app::open_backing(&config)
                .await
                .expect("store");
            backing.voice = Some(std::sync::Arc::new(Voice::with_client(
                Moto::shared().polly_client(),
                "Ruth",
                "generative",
            )));
            hearth_core::app::tts_router_with(&config, &backing)
        }
    };
    let mut adapter = Adapter::from(router);
    let response = adapter
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .expect("handler answers");
    serde_json::to_value(&response).expect("Lambda response JSON")
}

async fn replay(file: &str) -> Value {
    replay_to(Function::Mcp, file).await
}

/// A response header from a v2 (single-value) or v1 (multi-value) Lambda response.
fn header<'a>(response: &'a Value, name: &str) -> Option<&'a str> {
    response["headers"][name]
        .as_str()
        .or_else(|| response["multiValueHeaders"][name][0].as_str())
}

fn status(response: &Value) -> u64 {
    response["statusCode"].as_u64().expect("statusCode")
}

fn body(response: &Value) -> Value {
    let text = response["body"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or(Value::Null)
}

async fn each_version(name: &str, check: impl Fn(&Value)) {
    for version in ["v2", "v1"] {
        let response = replay(&format!("{version}-{name}.json")).await;
        check(&response);
    }
}

#[tokio::test]
async fn initialize_echoes_the_alexa_protocol_version() {
    each_version("initialize", |response| {
        assert_eq!(status(response), 200, "{response}");
        let body = body(response);
        assert_eq!(body["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(body["result"]["serverInfo"]["name"], "hearth");
    })
    .await;
}

#[tokio::test]
async fn a_notification_gets_an_empty_202() {
    each_version("notification-initialized", |response| {
        assert_eq!(status(response), 202, "{response}");
        assert!(response["body"].as_str().unwrap_or_default().is_empty());
    })
    .await;
}

#[tokio::test]
async fn tools_list_names_the_decision_tools() {
    each_version("tools-list", |response| {
        assert_eq!(status(response), 200, "{response}");
        let names: Vec<String> = body(response)["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "record_decision",
                "explain_why",
                "whats_changed",
                "get_trace",
                "prove_history",
                "scholia_catalog",
                "scholia_lookup",
                "scholia_lint_snippet",
                "scholia_lint_trace",
                "ask_aion",
                "search_products",
                "propose_purchase",
                "confirm_purchase",
                "decide_request",
                "list_waiting",
                "household_activity",
                "verify_ledger",
                "check_receipt"
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn record_decision_returns_the_stored_record() {
    each_version("record-decision", |response| {
        assert_eq!(status(response), 200, "{response}");
        let result = &body(response)["result"];
        assert_eq!(result["isError"], false);
        let record = &result["structuredContent"];
        assert_eq!(record["seq"], 1);
        assert_eq!(record["action"], "dim lights");
        assert_eq!(record["trace_id"].as_str().unwrap().len(), 64);
    })
    .await;
}

#[tokio::test]
async fn get_is_405() {
    each_version("get-mcp", |response| {
        assert_eq!(status(response), 405, "{response}");
        assert_eq!(body(response)["error"]["code"], -32000);
    })
    .await;
}

#[tokio::test]
async fn a_call_without_a_token_is_401() {
    each_version("unauthenticated", |response| {
        assert_eq!(status(response), 401, "{response}");
        let challenge = header(response, "www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer"), "{response}");
        assert!(
            challenge.contains(r#"resource_metadata="https://abc123xyz.execute-api.us-east-1.amazonaws.com/.well-known/oauth-protected-resource/mcp""#),
            "{challenge}"
        );
        assert!(body(response)["result"].is_null());
    })
    .await;
}

fn oauth_error(response: &Value) -> String {
    body(response)["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_token_issued_by_the_oauth_function_opens_the_mcp_function() {
    for file in ["v2-token.json", "v1-token.json"] {
        let response = replay_to(Function::OAuth, file).await;
        assert_eq!(status(&response), 200, "{response}");
        assert_eq!(header(&response, "cache-control"), Some("no-store"));
        let issued = body(&response);
        assert_eq!(issued["token_type"], "Bearer");
        assert_eq!(issued["expires_in"], 3600);
        assert_eq!(issued["scope"], "mcp:tools");
        let access_token = issued["access_token"].as_str().unwrap();

        // The same event Alexa+ sends to /mcp, now with the issued access token.
        let mut event: Value =
            serde_json::from_str(&fixture("events/mcp/v2-tools-list.json")).unwrap();
        event["headers"]["authorization"] = format!("Bearer {access_token}").into();
        let request: LambdaRequest = serde_json::from_value(event).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut config = common::config(&[
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("HEARTH_DB", dir.path().join("db").to_str().unwrap()),
            (
                "MCP_RESOURCE_URL",
                "https://abc123xyz.execute-api.us-east-1.amazonaws.com/mcp",
            ),
            ("MOCK_AION_BACKEND", "true"),
        ]);
        config.credentials = Credentials::from_secret_json(&fixture("events/credentials.json"))
            .unwrap()
            .0;
        let mut adapter = Adapter::from(hearth_core::app::mcp_router(&config).await.unwrap());
        let response = adapter
            .call(LambdaEvent::new(request, Context::default()))
            .await
            .unwrap();
        let response = serde_json::to_value(&response).unwrap();
        assert_eq!(status(&response), 200, "{response}");
        assert_eq!(
            body(&response)["result"]["tools"].as_array().unwrap().len(),
            18
        );
    }
}

#[tokio::test]
async fn token_request_errors_follow_rfc_6749() {
    let cases = [
        ("v2-token-wrong-resource.json", 400, "invalid_target"),
        ("v2-token-bad-secret.json", 401, "invalid_client"),
        (
            "v2-token-password-grant.json",
            400,
            "unsupported_grant_type",
        ),
        ("v2-token-bad-scope.json", 400, "invalid_scope"),
        ("v2-judge-wrong.json", 400, "invalid_grant"),
        ("v2-token-get.json", 405, "invalid_request"),
    ];
    for (file, expected_status, expected_error) in cases {
        let response = replay_to(Function::OAuth, file).await;
        assert_eq!(status(&response), expected_status, "{file}: {response}");
        assert_eq!(oauth_error(&response), expected_error, "{file}");
        if expected_error == "invalid_client" {
            assert!(header(&response, "www-authenticate").is_some_and(|c| c.starts_with("Basic")));
        }
        assert!(!response.to_string().contains("fixture-client-secret"));
    }
}

#[tokio::test]
async fn a_judge_token_is_exchanged_for_an_access_token() {
    let response = replay_to(Function::OAuth, "v2-judge.json").await;
    assert_eq!(status(&response), 200, "{response}");
    assert_eq!(body(&response)["scope"], "mcp:service");
}

#[tokio::test]
async fn both_discovery_documents_are_served() {
    let base = "https://abc123xyz.execute-api.us-east-1.amazonaws.com";
    for file in ["v2-discovery.json", "v1-discovery.json"] {
        let response = replay_to(Function::OAuth, file).await;
        assert_eq!(status(&response), 200, "{response}");
        let metadata = body(&response);
        assert_eq!(metadata["issuer"], base);
        assert_eq!(metadata["token_endpoint"], format!("{base}/oauth/token"));
        assert_eq!(
            metadata["code_challenge_methods_supported"],
            json!(["S256"])
        );
    }
    each_version("protected-resource", |response| {
        assert_eq!(status(response), 200, "{response}");
        let metadata = body(response);
        assert_eq!(metadata["resource"], format!("{base}/mcp"));
        assert_eq!(metadata["authorization_servers"], json!([base]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    })
    .await;
}

#[tokio::test]
async fn the_speech_function_answers_with_mp3_and_refuses_what_it_must() {
    for file in ["v2-tts.json", "v1-tts.json"] {
        let response = replay_to(Function::Tts, file).await;
        assert_eq!(status(&response), 200, "{file}: {response}");
        assert_eq!(header(&response, "content-type"), Some("audio/mpeg"));
        assert_eq!(header(&response, "cache-control"), Some("no-store"));
        assert_eq!(
            response["isBase64Encoded"], true,
            "audio travels base64-encoded"
        );
        assert!(!response["body"].as_str().unwrap_or_default().is_empty());
    }
    let empty = replay_to(Function::Tts, "v2-tts-empty.json").await;
    assert_eq!(status(&empty), 400, "{empty}");
    assert_eq!(body(&empty)["error"], "the text is empty");
    let anonymous = replay_to(Function::Tts, "v2-tts-unauthenticated.json").await;
    assert_eq!(status(&anonymous), 401, "{anonymous}");
}

/// Every fixture under `events/<function>/`, as (function, file name).
fn all_fixtures() -> Vec<(Function, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events");
    let mut fixtures = Vec::new();
    for (function, folder) in [
        (Function::Mcp, "mcp"),
        (Function::OAuth, "oauth"),
        (Function::Tts, "tts"),
    ] {
        let mut names: Vec<String> = std::fs::read_dir(root.join(folder))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".json"))
            .collect();
        names.sort();
        fixtures.extend(names.into_iter().map(|name| (function, name)));
    }
    fixtures
}

fn folder(function: Function) -> &'static str {
    match function {
        Function::Mcp => "mcp",
        Function::OAuth => "oauth",
        Function::Tts => "tts",
    }
}

fn expectations() -> serde_json::Map<String, Value> {
    let mut all: serde_json::Map<String, Value> =
        serde_json::from_str(&fixture("events/expectations.json")).unwrap();
    all.remove("_comment");
    all
}

#[tokio::test]
async fn every_fixture_meets_the_expectation_written_beside_it() {
    let mut expectations = expectations();
    for (function, name) in all_fixtures() {
        let key = format!("{}/{name}", folder(function));
        let expected = expectations
            .remove(&key)
            .unwrap_or_else(|| panic!("events/expectations.json has no entry for {key}"));
        let response = replay_to(function, &name).await;
        assert_eq!(
            Some(status(&response)),
            expected["status"].as_u64(),
            "{key}: {response}"
        );
        if expected["empty"] == true {
            assert_eq!(response["body"].as_str().unwrap_or_default(), "", "{key}");
        }
        if let Some(content_type) = expected["content_type"].as_str() {
            assert_eq!(
                header(&response, "content-type"),
                Some(content_type),
                "{key}"
            );
            if content_type.starts_with("audio/") {
                assert_eq!(response["isBase64Encoded"], true, "{key}");
            }
        }
        let json = body(&response);
        for pointer in expected["json"].as_array().into_iter().flatten() {
            let pointer = pointer.as_str().unwrap();
            assert!(
                json.pointer(pointer).is_some(),
                "{key}: the body has no {pointer}: {json}"
            );
        }
    }
    assert!(
        expectations.is_empty(),
        "expectations without a fixture: {:?}",
        expectations.keys().collect::<Vec<_>>()
    );
}

#[test]
fn every_route_has_api_gateway_v2_fixtures_for_success_and_failure() {
    let expectations = expectations();
    // The local server's own routes are never routed to a function.
    for route in hearth_core::app::ROUTES.iter().filter(|route| route.lambda) {
        let mut statuses = Vec::new();
        for (function, name) in all_fixtures() {
            if !name.starts_with("v2-") || folder(function) != route.function {
                continue;
            }
            let event: Value =
                serde_json::from_str(&fixture(&format!("events/{}/{name}", folder(function))))
                    .unwrap();
            let method = event["requestContext"]["http"]["method"].as_str().unwrap();
            let path = event["rawPath"].as_str().unwrap();
            if path_matches(route.path, path) && (route.method == "ANY" || route.method == method) {
                let key = format!("{}/{name}", folder(function));
                statuses.push(expectations[&key]["status"].as_u64().unwrap());
            }
        }
        assert!(
            statuses.iter().any(|s| *s < 400),
            "no v2 success fixture for {} {}",
            route.method,
            route.path
        );
        // A GET-only route's failures (other methods) are answered by API Gateway itself.
        if route.method == "ANY" {
            assert!(
                statuses.iter().any(|s| *s >= 400),
                "no v2 failure fixture for {} {}",
                route.method,
                route.path
            );
        }
    }
}

/// Whether a concrete path fits a route path, where `{name}` stands for one segment.
fn path_matches(route: &str, path: &str) -> bool {
    let (route, path): (Vec<&str>, Vec<&str>) =
        (route.split('/').collect(), path.split('/').collect());
    route.len() == path.len()
        && route
            .iter()
            .zip(&path)
            .all(|(r, p)| r == p || (r.starts_with('{') && r.ends_with('}') && !p.is_empty()))
}
