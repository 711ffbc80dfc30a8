//! Households as accounts, through MCP: two households side by side, each with its own token
//! and device key, on the SQLite store and on DynamoDB (moto). Neither can read, write, spend
//! against, verify or attest for the other; a revoked key attests nothing; an unlink revokes
//! every token within the stated minute; adopting a credential's household moves its chains
//! with their hashes intact.

mod common;

use common::Backend;

use std::sync::Arc;

use common::{Harness, Reply, TOKEN, request};
use hearth_core::accounts::GENERATION_CACHE_MS;
use hearth_core::admin::Admin;
use hearth_core::auth::attestation::{Attestation, sign};
use hearth_core::auth::{Scopes, jwt::now_secs};
use hearth_core::chain::sha256_hex;
use hearth_core::clock::Clock;
use hearth_core::config::Config;
use hearth_core::countersign::household::built_in_policy;
use hearth_core::store::Stores;
use hearth_core::store::unconfigured::Unconfigured;
use hearth_testkit::moto::Moto;
use http::StatusCode;
use serde_json::{Value, json};

const HOST_KEY: &str = "household-test-host-key";
const BATTERIES: &str = "buy a 4 pack of AA batteries";

/// A server and the operator's `hearth admin` over the same store.
struct World {
    h: Harness,
    admin: Admin,
}

fn config() -> Config {
    common::config_with(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)])
}

/// Spends the three requests a minute [`three_requests_a_minute`] allows `token`, each answered.
async fn spend_the_minute(world: &World, token: &str) {
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for _ in 0..3 {
        assert_eq!(world.post(token, &ping, &[]).await.status, StatusCode::OK);
    }
}

/// [`config`] with each household limited to three requests a minute.
fn three_requests_a_minute() -> Config {
    common::config_with(&[
        ("COUNTERSIGN_HOST_KEY", HOST_KEY),
        ("HEARTH_RATE_LIMIT_PER_SUBJECT", "3"),
    ])
}

async fn world(backend: Backend) -> World {
    world_over(backend, Moto::shared().dynamodb_client()).await
}

async fn world_over(backend: Backend, client: aws_sdk_dynamodb::Client) -> World {
    world_with(config(), backend, client).await
}

async fn world_with(config: Config, backend: Backend, client: aws_sdk_dynamodb::Client) -> World {
    let (h, admin) = common::operated(&config, backend, client, "hearth-households").await;
    World { h, admin }
}

/// The demo household's policy as an account's: no id (the server chose one) and no name.
fn policy() -> Value {
    let mut policy = built_in_policy();
    let fields = policy.as_object_mut().unwrap();
    fields.remove("household_id");
    fields.remove("name");
    policy
}

/// A household with the demo policy, a token and a device key.
struct Household {
    id: String,
    token: String,
    key_id: String,
    key: String,
}

async fn household(world: &World, name: &str) -> Household {
    let created = world.admin.create(name, Some(policy())).await.unwrap();
    let token = world.admin.token(&created.household_id, 30).await.unwrap();
    let key = world
        .admin
        .add_device_key(&created.household_id)
        .await
        .unwrap();
    Household {
        id: created.household_id,
        token: token.access_token,
        key_id: key.key_id,
        key: key.key,
    }
}

/// Dana speaking `words`, signed with `key` and naming `key_id`.
fn spoken(key_id: &str, key: &str, words: &str, now: i64) -> Vec<(String, String)> {
    let attestation = Attestation {
        member_id: "dana".into(),
        turn_id: format!("turn-{}", rand_turn()),
        utterances: vec![words.into()],
        issued_at: now,
        answering: None,
    };
    let encoded = attestation.encode();
    vec![
        ("x-countersign-signature".into(), sign(key, &encoded)),
        ("x-countersign-attestation".into(), encoded),
        ("x-countersign-key-id".into(), key_id.into()),
    ]
}

fn rand_turn() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static TURNS: AtomicU64 = AtomicU64::new(0);
    TURNS.fetch_add(1, Ordering::Relaxed)
}

impl World {
    fn now(&self) -> i64 {
        self.h.clock.now().unix_timestamp()
    }

    async fn post(&self, token: &str, body: &Value, extra: &[(String, String)]) -> Reply {
        let bearer = format!("Bearer {token}");
        let mut headers: Vec<(&str, &str)> = vec![
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        headers.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        request(&self.h.router, "POST", "/mcp", &headers, &body.to_string()).await
    }

    async fn call(
        &self,
        token: &str,
        tool: &str,
        arguments: Value,
        extra: &[(String, String)],
    ) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let reply = self.post(token, &body, extra).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        reply.body["result"].clone()
    }

    /// Dana's order of a 4 pack of AA batteries, with `token` and exactly these attestation
    /// headers.
    async fn buy_batteries(&self, token: &str, headers: &[(String, String)]) -> Value {
        let order = json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1});
        self.call(token, "propose_purchase", order, headers).await
    }

    /// A tool called by Dana on `household`'s device.
    async fn speak(
        &self,
        household: &Household,
        tool: &str,
        arguments: Value,
        words: &str,
    ) -> Value {
        let headers = spoken(&household.key_id, &household.key, words, self.now());
        self.call(&household.token, tool, arguments, &headers).await
    }
}

fn ok(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "tool failed: {result}");
    &result["structuredContent"]
}

fn refusal(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected a refusal: {result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The technical reason of a Countersign refusal (its `_meta`), for developers.
fn reason(result: &Value) -> String {
    refusal(result);
    result["_meta"]["hearth/reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no refusal reason: {result}"))
        .to_owned()
}

fn record(action: &str) -> Value {
    json!({"action": action, "reason": "Movie time", "inputs": {}, "approver": "Dana"})
}

async fn two_households_stay_apart(backend: Backend) {
    let world = world(backend).await;
    let a = household(&world, "The Adams").await;
    let b = household(&world, "The Bakers").await;

    // Decisions: A's token names A; B sees none of them.
    let recorded = world
        .call(&a.token, "record_decision", record("dim lights"), &[])
        .await;
    assert_eq!(ok(&recorded)["household_id"], a.id.as_str());
    let trace_id = ok(&recorded)["trace_id"].as_str().unwrap().to_owned();
    let repeated = json!({"household_id": a.id, "trace_id": trace_id});
    assert_eq!(
        ok(&world.call(&a.token, "get_trace", repeated, &[]).await)["records"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "repeating its own household id is fine"
    );
    let foreign = refusal(
        &world
            .call(&b.token, "get_trace", json!({"trace_id": trace_id}), &[])
            .await,
    );
    assert!(foreign.contains("no decisions"), "{foreign}");
    let changed = world
        .call(
            &b.token,
            "whats_changed",
            json!({"since": "2000-01-01T00:00:00Z"}),
            &[],
        )
        .await;
    assert!(refusal(&changed).contains("no decisions"), "{changed}");

    // A token naming A with a household_id of B is refused, reading or writing.
    for (tool, arguments) in [
        (
            "record_decision",
            json!({"household_id": b.id, "action": "x", "reason": "y", "inputs": {}, "approver": "z"}),
        ),
        (
            "explain_why",
            json!({"household_id": b.id, "question": "why?"}),
        ),
        (
            "get_trace",
            json!({"household_id": b.id, "trace_id": trace_id}),
        ),
    ] {
        let refused = refusal(&world.call(&a.token, tool, arguments, &[]).await);
        assert!(
            refused.contains("names another household"),
            "{tool}: {refused}"
        );
    }

    // Spending: A's order counts against A's week only.
    let order = json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1});
    let placed = world
        .speak(
            &a,
            "propose_purchase",
            order.clone(),
            "buy a 4 pack of AA batteries",
        )
        .await;
    assert_eq!(ok(&placed)["outcome"], "placed", "{placed}");
    let receipt = ok(&placed)["placed"]["receipt"].clone();
    assert_eq!(receipt["household_id"], a.id.as_str());
    let a_week = world
        .speak(&a, "household_activity", json!({}), "what did we buy")
        .await;
    assert_eq!(ok(&a_week)["spent_cents"], 549);
    let b_week = world
        .speak(&b, "household_activity", json!({}), "what did we buy")
        .await;
    assert_eq!(ok(&b_week)["spent_cents"], 0, "{b_week}");
    assert_eq!(ok(&b_week)["household_id"], b.id.as_str());

    // Verifying: each ledger is its own.
    let a_ledger = world
        .speak(&a, "verify_ledger", json!({}), "check the ledger")
        .await;
    let b_ledger = world
        .speak(&b, "verify_ledger", json!({}), "check the ledger")
        .await;
    assert_eq!(ok(&a_ledger)["check"]["entries"], 1, "{a_ledger}");
    assert_eq!(ok(&b_ledger)["check"]["entries"], 0, "{b_ledger}");
    let checked = world
        .speak(
            &b,
            "check_receipt",
            json!({"receipt": receipt}),
            "check this receipt",
        )
        .await;
    assert_eq!(ok(&checked)["valid"], false, "{checked}");
    let own = world
        .speak(
            &a,
            "check_receipt",
            json!({"receipt": receipt}),
            "check this receipt",
        )
        .await;
    assert_eq!(ok(&own)["valid"], true, "{own}");

    // Attesting: A's device key speaks for nobody in B, even naming its own key id.
    let crossed = spoken(&a.key_id, &a.key, BATTERIES, world.now());
    let refused = reason(&world.buy_batteries(&b.token, &crossed).await);
    assert!(refused.contains("not one of this household's"), "{refused}");
    let forged = spoken(&b.key_id, &a.key, BATTERIES, world.now());
    let refused = reason(&world.buy_batteries(&b.token, &forged).await);
    assert!(refused.contains("signature does not match"), "{refused}");
    // Nor does the deployment's host key, which only credentials' tokens use.
    let hosted = spoken(&b.key_id, HOST_KEY, BATTERIES, world.now());
    let refused = reason(&world.buy_batteries(&b.token, &hosted).await);
    assert!(refused.contains("signature does not match"), "{refused}");

    // The rules resource is the household's own.
    let read = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
        "params": {"uri": "countersign://household/rules"}});
    let reply = world
        .post(
            &b.token,
            &read,
            &spoken(&b.key_id, &b.key, "what are the rules", world.now()),
        )
        .await;
    let rules: Value = serde_json::from_str(
        reply.body["result"]["contents"][0]["text"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rules["household_id"], b.id.as_str());
    assert_eq!(rules["name"], "The Bakers");
}

async fn revoked_and_missing_device_keys_attest_nothing(backend: Backend) {
    let world = world(backend).await;
    let a = household(&world, "The Adams").await;
    let order = json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1});
    let mut unnamed = spoken(
        &a.key_id,
        &a.key,
        "buy a 4 pack of AA batteries",
        world.now(),
    );
    unnamed.retain(|(name, _)| name != "x-countersign-key-id");
    let refused = reason(
        &world
            .call(&a.token, "propose_purchase", order.clone(), &unnamed)
            .await,
    );
    assert!(refused.contains("names no device key"), "{refused}");
    // Key ids are at most 64 bytes: one at the limit is merely unknown, one past it malformed.
    for (length, expected) in [
        (64, "not one of this household's"),
        (65, "1 to 64 visible ASCII"),
    ] {
        let mut named = spoken(
            &a.key_id,
            &a.key,
            "buy a 4 pack of AA batteries",
            world.now(),
        );
        named.retain(|(name, _)| name != "x-countersign-key-id");
        named.push(("x-countersign-key-id".into(), "k".repeat(length)));
        let refused = reason(
            &world
                .call(&a.token, "propose_purchase", order.clone(), &named)
                .await,
        );
        assert!(refused.contains(expected), "{length}: {refused}");
    }
    // A household holds 10 device keys, and not 11.
    for _ in 1..hearth_core::accounts::MAX_DEVICE_KEYS {
        world.admin.add_device_key(&a.id).await.unwrap();
    }
    let full = world
        .admin
        .add_device_key(&a.id)
        .await
        .unwrap_err()
        .to_string();
    assert!(full.contains("already has 10 device keys"), "{full}");
    let keys = world.admin.device_keys(&a.id).await.unwrap().device_keys;
    assert_eq!(keys.len(), 10);
    for key in &keys[1..] {
        world
            .admin
            .revoke_device_key(&a.id, &key.key_id)
            .await
            .unwrap();
    }
    let second = world.admin.add_device_key(&a.id).await.unwrap();
    world
        .admin
        .revoke_device_key(&a.id, &a.key_id)
        .await
        .unwrap();
    let revoked = spoken(&a.key_id, &a.key, BATTERIES, world.now());
    let refused = reason(&world.buy_batteries(&a.token, &revoked).await);
    assert!(refused.contains("or it was revoked"), "{refused}");
    let fresh = spoken(
        &second.key_id,
        &second.key,
        "buy a 4 pack of AA batteries",
        world.now(),
    );
    let placed = world
        .call(&a.token, "propose_purchase", order, &fresh)
        .await;
    assert_eq!(ok(&placed)["outcome"], "placed", "{placed}");
}

async fn an_unlink_revokes_every_token_within_a_minute(backend: Backend) {
    let world = world(backend).await;
    let a = household(&world, "The Adams").await;
    let second = world.admin.token(&a.id, 1).await.unwrap().access_token;
    for token in [&a.token, &second] {
        let recorded = world
            .call(token, "record_decision", record("lock the door"), &[])
            .await;
        ok(&recorded);
    }
    let unlinked = world.admin.unlink(&a.id).await.unwrap();
    assert_eq!(unlinked.revoked["access_tokens"], 2);
    // This instance read the generation less than a minute ago and may still trust it...
    world
        .h
        .clock
        .advance(time::Duration::milliseconds(GENERATION_CACHE_MS));
    // ...but not past the minute.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for token in [&a.token, &second] {
        let reply = world.post(token, &ping, &[]).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{}", reply.raw);
        assert!(reply.header("www-authenticate").contains("invalid_token"));
    }
    // A token minted after the unlink works.
    let renewed = world.admin.token(&a.id, 1).await.unwrap().access_token;
    assert_eq!(
        world.post(&renewed, &ping, &[]).await.status,
        StatusCode::OK
    );
    assert!(world.admin.show(&a.id).await.unwrap().linked);
    // Deleting the household revokes its tokens too.
    world.admin.delete(&a.id).await.unwrap();
    world
        .h
        .clock
        .advance(time::Duration::milliseconds(GENERATION_CACHE_MS));
    assert_eq!(
        world.post(&renewed, &ping, &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
}

async fn adopting_moves_a_credentials_household_with_its_hashes(backend: Backend) {
    let world = world(backend).await;
    let judge = |tool: &str, arguments: Value, extra: Vec<(String, String)>| {
        let world = &world;
        let tool = tool.to_owned();
        async move { world.call(TOKEN, &tool, arguments, &extra).await }
    };
    // Today: the judge token keeps decisions under its own label and the configured ledger.
    for action in ["dim lights", "lock the door"] {
        let mut arguments = record(action);
        arguments["household_id"] = "maple-house".into();
        ok(&judge("record_decision", arguments, vec![]).await);
    }
    let hosted = |words: &str| {
        let attestation = Attestation {
            member_id: "dana".into(),
            turn_id: format!("turn-{}", rand_turn()),
            utterances: vec![words.into()],
            issued_at: world.now(),
            answering: None,
        };
        let encoded = attestation.encode();
        vec![
            (
                "x-countersign-signature".to_owned(),
                sign(HOST_KEY, &encoded),
            ),
            ("x-countersign-attestation".to_owned(), encoded),
        ]
    };
    let order = json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1});
    let placed = judge(
        "propose_purchase",
        order,
        hosted("buy a 4 pack of AA batteries"),
    )
    .await;
    assert_eq!(ok(&placed)["outcome"], "placed", "{placed}");
    let trace_before = ok(&judge(
        "explain_why",
        json!({"household_id": "maple-house", "action": "dim lights"}),
        vec![],
    )
    .await)
    .clone();

    // The judge token's data scope is the SHA-256 of its subject, the token's own hash.
    let scope = sha256_hex(sha256_hex(TOKEN));
    let adopted = world
        .admin
        .adopt(&scope, "maple-house", Some("Maple Street"))
        .await
        .unwrap();
    assert_eq!(adopted.moved["decision_records"], 2);
    assert_eq!(adopted.moved["ledger_entries"], 1);
    let id = adopted.household_id;
    let shown = world.admin.show(&id).await.unwrap();
    assert_eq!(shown.name, "Maple Street");
    assert_eq!(
        shown.policy.as_ref().unwrap()["household_id"],
        id.as_str(),
        "the configured policy came along"
    );

    // The judge token's household is empty now; the account holds the same records.
    let gone = refusal(
        &judge(
            "explain_why",
            json!({"household_id": "maple-house", "action": "dim lights"}),
            vec![],
        )
        .await,
    );
    assert!(gone.contains("no decisions"), "{gone}");
    let token = world.admin.token(&id, 1).await.unwrap().access_token;
    let trace_id = trace_before["trace_id"].as_str().unwrap();
    let trace = world
        .call(&token, "get_trace", json!({"trace_id": trace_id}), &[])
        .await;
    let trace = ok(&trace).clone();
    assert_eq!(trace["records"].as_array().unwrap().len(), 2);
    assert_eq!(
        trace["records"][0], trace_before["record"],
        "the record, hash and all, is unchanged"
    );
    // The standard-library verifier agrees.
    let verdict = verify_chain_py(&trace);
    assert_eq!(verdict.trim(), "OK");
    let key = world.admin.add_device_key(&id).await.unwrap();
    let household = Household {
        id: id.clone(),
        token,
        key_id: key.key_id,
        key: key.key,
    };
    let ledger = world
        .speak(&household, "verify_ledger", json!({}), "check the ledger")
        .await;
    assert_eq!(ok(&ledger)["check"]["entries"], 1, "{ledger}");
    assert_eq!(ok(&ledger)["check"]["intact"], true, "{ledger}");
    let week = world
        .speak(
            &household,
            "household_activity",
            json!({}),
            "what did we buy",
        )
        .await;
    assert_eq!(
        ok(&week)["spent_cents"],
        549,
        "the week's spending moved with the ledger"
    );
}

#[tokio::test]
async fn a_household_token_costs_one_read_a_minute_and_one_per_attested_call() {
    let (client, counter) = Moto::shared().counted_dynamodb_client();
    let world = world_over(Backend::Dynamo, client).await;
    let a = household(&world, "The Adams").await;
    ok(&world
        .call(&a.token, "record_decision", record("warm up"), &[])
        .await);
    counter.take();
    ok(&world
        .call(&a.token, "record_decision", record("dim lights"), &[])
        .await);
    assert_eq!(
        counter.take(),
        4,
        "the rate limiter's subject counter and address read with the window's Query, then TransactWriteItems: the generation is cached"
    );
    world
        .h
        .clock
        .advance(time::Duration::milliseconds(GENERATION_CACHE_MS));
    ok(&world
        .call(&a.token, "record_decision", record("lock the door"), &[])
        .await);
    assert_eq!(
        counter.take(),
        5,
        "once a minute, one GetItem for the generation"
    );
    // A read-only call's reads go out together: one round trip on its critical path.
    ok(&world
        .call(&a.token, "explain_why", json!({"action": "warm up"}), &[])
        .await);
    assert_eq!(
        counter.take_with_rounds(),
        (3, 1),
        "the rate limiter's subject counter and address read and the window's Query, in one round trip"
    );
    world
        .h
        .clock
        .advance(time::Duration::milliseconds(GENERATION_CACHE_MS));
    ok(&world
        .call(
            &a.token,
            "explain_why",
            json!({"action": "dim lights"}),
            &[],
        )
        .await);
    assert_eq!(
        counter.take_with_rounds(),
        (4, 1),
        "the rate limiter's subject counter and address read, the generation's GetItem and the window's Query, in one round trip"
    );
    let order = |product: &str, variant: &str| json!({"product_id": product, "variant_id": variant, "quantity": 1});
    ok(&world
        .speak(
            &a,
            "propose_purchase",
            order("aa-batteries", "4-pack"),
            "buy a 4 pack of AA batteries",
        )
        .await);
    counter.take();
    ok(&world
        .speak(
            &a,
            "propose_purchase",
            order("paper-towels", "6-rolls"),
            "buy 6 rolls of paper towels",
        )
        .await);
    assert_eq!(
        counter.take_with_rounds(),
        (6, 3),
        "the rate limiter's subject counter and address read, one GetItem of the account (device key and policy) and the ledger's Query together, then the acting-call counter, then TransactWriteItems"
    );
    // An attested read of the ledger: the counters, the account the attestation is checked
    // against and the ledger's window, all in one round trip.
    let week = world
        .speak(&a, "household_activity", json!({}), "what did we buy")
        .await;
    assert_eq!(ok(&week)["ledger"]["intact"], true, "{week}");
    assert!(ok(&week)["ledger"]["entries"].as_u64() >= Some(2), "{week}");
    assert_eq!(
        counter.take_with_rounds(),
        (4, 1),
        "the rate limiter's subject counter and address read, the account's GetItem and the ledger's Query, in one round trip"
    );
    let checked = world
        .speak(&a, "verify_ledger", json!({}), "check the ledger")
        .await;
    assert_eq!(ok(&checked)["check"]["intact"], true, "{checked}");
    assert_eq!(counter.take_with_rounds(), (4, 1), "verify_ledger too");
}

/// Runs `scripts/verify_chain.py` on a trace and returns what it printed.
fn verify_chain_py(trace: &Value) -> String {
    use std::io::Write;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = std::process::Command::new("python3")
        .arg(root.join("scripts/verify_chain.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs the verifier");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(trace.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn an_unreadable_account_store_keeps_what_needs_no_household() {
    let config = config();
    let h = common::harness_over(&config, |sqlite| Stores {
        cosigned: sqlite.clone(),
        grants: sqlite.clone(),
        chains: sqlite.clone(),
        clients: sqlite.clone(),
        counters: sqlite,
        accounts: Arc::new(Unconfigured),
    });
    // A well-signed household token whose standing nobody can check.
    let token = config
        .jwt_keys()
        .unwrap()
        .issue_household(
            "hh-0123456789abcdef0123456789abcdef",
            0,
            Scopes::DEFAULT,
            600,
            now_secs(),
        )
        .access_token;
    let bearer = format!("Bearer {token}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let post = |body: Value| {
        let router = h.router.clone();
        async move { request(&router, "POST", "/mcp", &headers, &body.to_string()).await }
    };
    let initialize = post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
    .await;
    assert_eq!(initialize.status, StatusCode::OK, "{}", initialize.raw);
    let listed = post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert!(listed.body["result"]["tools"].as_array().unwrap().len() > 10);
    let call = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
    };
    let catalog = post(call("scholia_catalog", json!({}))).await;
    assert_eq!(catalog.body["result"]["isError"], false, "{}", catalog.raw);
    let recorded = post(call("record_decision", record("dim lights"))).await;
    assert_eq!(recorded.body["result"]["isError"], true);
    assert!(
        recorded.raw.contains("storage unavailable"),
        "{}",
        recorded.raw
    );
    // A Countersign tool starts from the household's rules: the account read beside admission
    // fails, and the call refuses, saying to try again, rather than acting without rules.
    let week = post(call("household_activity", json!({}))).await;
    assert_eq!(week.status, StatusCode::OK, "{}", week.raw);
    assert_eq!(week.body["result"]["isError"], true, "{}", week.raw);
    let said = week.body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("again"), "{said}");
}

#[tokio::test]
async fn each_household_has_its_own_rate_limit() {
    let world = world_with(
        three_requests_a_minute(),
        Backend::Sqlite,
        Moto::shared().dynamodb_client(),
    )
    .await;
    let a = household(&world, "The Adams").await;
    let b = household(&world, "The Bakers").await;
    spend_the_minute(&world, &a.token).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(
        world.post(&a.token, &ping, &[]).await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "A's fourth request this minute"
    );
    assert_eq!(
        world.post(&b.token, &ping, &[]).await.status,
        StatusCode::OK,
        "B counts alone"
    );
}

#[tokio::test]
async fn a_refused_household_request_returns_nothing_of_the_account_or_ledger_read_beside_it() {
    let (client, counter) = Moto::shared().counted_dynamodb_client();
    let world = world_with(three_requests_a_minute(), Backend::Dynamo, client).await;
    let a = household(&world, "The Adams").await;
    spend_the_minute(&world, &a.token).await;
    counter.take();
    // The fourth request this minute, attested: its account and ledger are read beside the
    // counters, and dropped unread when the counters refuse it.
    let week = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "household_activity", "arguments": {}}});
    let headers = spoken(&a.key_id, &a.key, "what did we buy", world.now());
    let refused = world.post(&a.token, &week, &headers).await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        refused.raw
    );
    assert_eq!(
        counter.take_with_rounds(),
        (4, 1),
        "the rate limiter's subject counter and address read, the account's GetItem and the ledger's Query, sent together"
    );
    for read in ["The Adams", a.id.as_str(), "ledger", "entries"] {
        assert!(!refused.raw.contains(read), "{read} in {}", refused.raw);
    }
}

#[tokio::test]
async fn a_credentials_token_still_names_its_own_households() {
    let world = world(Backend::Sqlite).await;
    let missing = refusal(
        &world
            .call(TOKEN, "record_decision", record("dim lights"), &[])
            .await,
    );
    assert!(missing.contains("`household_id` is required"), "{missing}");
    let mut labelled = record("dim lights");
    labelled["household_id"] = "kitchen".into();
    assert_eq!(
        ok(&world.call(TOKEN, "record_decision", labelled, &[]).await)["household_id"],
        "kitchen"
    );
    // A household account is out of a credential's reach, even by its id.
    let a = household(&world, "The Adams").await;
    ok(&world
        .call(&a.token, "record_decision", record("dim lights"), &[])
        .await);
    let probe = refusal(
        &world
            .call(
                TOKEN,
                "explain_why",
                json!({"household_id": a.id, "action": "dim lights"}),
                &[],
            )
            .await,
    );
    assert!(probe.contains("no decisions"), "{probe}");
}

/// `countersign:read`: a household token that holds it (as `hearth admin token` grants, and
/// linking asks for) reads its own activity, the ledger's check, a receipt and the rules
/// without a device; a token without it, and a judge's or client's token, still need one.
async fn countersign_read_opens_the_households_own_records_without_a_device(backend: Backend) {
    let world = world(backend).await;
    let home = household(&world, "The Bakers").await;
    let other = household(&world, "The Carters").await;
    let placed = world
        .speak(
            &home,
            "propose_purchase",
            json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}),
            BATTERIES,
        )
        .await;
    let receipt = ok(&placed)["placed"]["receipt"].clone();

    let activity = world
        .call(&home.token, "household_activity", json!({}), &[])
        .await;
    assert_eq!(ok(&activity)["spent_cents"], 549, "{activity}");
    let verified = world
        .call(&home.token, "verify_ledger", json!({}), &[])
        .await;
    assert_eq!(ok(&verified)["check"]["entries"], 1, "{verified}");
    let checked = world
        .call(
            &home.token,
            "check_receipt",
            json!({"receipt": receipt}),
            &[],
        )
        .await;
    assert_eq!(ok(&checked)["valid"], true, "{checked}");
    let read = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
        "params": {"uri": "countersign://household/rules"}});
    let rules = world.post(&home.token, &read, &[]).await;
    assert!(
        rules.body["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("The Bakers")),
        "{}",
        rules.raw
    );
    // Its own household only: the other household's receipt does not check here.
    let crossed = world
        .call(
            &other.token,
            "check_receipt",
            json!({"receipt": receipt}),
            &[],
        )
        .await;
    assert_eq!(ok(&crossed)["valid"], false, "{crossed}");
    // Acting still needs a device: reading is all the scope opens.
    let unattested = world.buy_batteries(&home.token, &[]).await;
    assert_eq!(unattested["isError"], true, "{unattested}");

    // A household token without the scope needs a device for every read.
    let config = config();
    let keys = config.jwt_keys().unwrap();
    // Generation 0: the household was never unlinked.
    let plain = keys
        .issue_household(&home.id, 0, Scopes::DEFAULT, 3600, now_secs())
        .access_token;
    for tool in ["household_activity", "verify_ledger"] {
        let refused = world.call(&plain, tool, json!({}), &[]).await;
        assert_eq!(refused["isError"], true, "{tool}: {refused}");
    }
    let refused = world.post(&plain, &read, &[]).await;
    assert!(refused.body["error"].is_object(), "{}", refused.raw);
    // A judge's token, which names no household, keeps today's rule.
    let judged = world
        .call(
            TOKEN,
            "household_activity",
            json!({"household_id": home.id}),
            &[],
        )
        .await;
    assert_eq!(judged["isError"], true, "{judged}");
}

on_both_stores!(
    countersign_read_opens_the_households_own_records_without_a_device,
    two_households_stay_apart,
    revoked_and_missing_device_keys_attest_nothing,
    an_unlink_revokes_every_token_within_a_minute,
    adopting_moves_a_credentials_household_with_its_hashes,
);
