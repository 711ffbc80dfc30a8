//! Transparency logs through their own operations, on both stores:
//! - the log key rotated as the manual's steps say (docs/src/self-hosting/log-key-rotation.md: key
//!   one; the overlap, where only some households write; key one dropped and kept as a verify-only
//!   identity; `log-key re-sign`; the identity dropped too): every household, idle or not, keeps
//!   recording and proving, and receipts from before verify offline with the published keys;
//! - the host in `MCP_RESOURCE_URL` changed, with the earlier host's key name kept;
//! - a log head removed, blanked or swapped in the store: named as tampering, refused for
//!   appends and proofs, until the operator's `log reset` starts a new log whose first entry
//!   names the old one.

mod common;

use std::process::Command;
use std::sync::Arc;

use common::{Backend, Harness, harness_over, request, settings};
use hearth_core::admin::Admin;
use hearth_core::auth::household_scope;
use hearth_core::config::Config;
use hearth_core::store::dynamodb::DynamoStore;
use hearth_core::store::sqlite::SqliteStore;
use hearth_core::store::{ChainKey, Stores};
use hearth_core::transparency::{LogKind, Resigned};
use hearth_testkit::moto::{Moto, unique_name};
use http::StatusCode;
use serde_json::{Value, json};

struct World {
    stores: Stores,
    backend: Backend,
    table: Option<String>,
    _dir: tempfile::TempDir,
}

async fn world(backend: Backend) -> World {
    let dir = tempfile::tempdir().unwrap();
    let (stores, table) = match backend {
        Backend::Sqlite => (
            Stores::shared(Arc::new(
                SqliteStore::open(&dir.path().join("hearth.db")).unwrap(),
            )),
            None,
        ),
        Backend::Dynamo => {
            let table = unique_name("hearth-log-keys");
            let store = DynamoStore::new(Moto::shared().dynamodb_client(), table.clone());
            store.ensure_table().await.expect("create the table");
            (Stores::shared(Arc::new(store)), Some(table))
        }
    };
    World {
        stores,
        backend,
        table,
        _dir: dir,
    }
}

/// The server and `hearth admin` of one configuration, over the world's store.
struct Phase {
    h: Harness,
    admin: Admin,
    host: &'static str,
}

impl World {
    fn phase(&self, extra: &[(&str, &str)]) -> Phase {
        let vars = settings(extra);
        let borrowed: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let config = common::config(&borrowed);
        let stores = self.stores.clone();
        let h = harness_over(&config, |_| stores);
        let admin = admin(&config, &self.stores, &h);
        let host = if extra
            .iter()
            .any(|(name, value)| *name == "MCP_RESOURCE_URL" && value.contains("localhost"))
        {
            "localhost"
        } else {
            "127.0.0.1"
        };
        Phase { h, admin, host }
    }

    /// Deletes, blanks or swaps `household`'s decision log head, as a database writer could.
    async fn damage(&self, household: &str, damage: Damage) {
        let key = ChainKey {
            scope: format!("{}/why", household_scope(household)),
            name: household.to_owned(),
        };
        match self.backend {
            Backend::Sqlite => {
                let db = rusqlite::Connection::open(self._dir.path().join("hearth.db")).unwrap();
                let sql = match damage {
                    Damage::Delete => "DELETE FROM chain_logs WHERE scope = ?1 AND name = ?2",
                    Damage::Blank => {
                        "UPDATE chain_logs SET checkpoint = '' WHERE scope = ?1 AND name = ?2"
                    }
                    Damage::Swap => {
                        "UPDATE chain_logs SET log_id = 'another' WHERE scope = ?1 AND name = ?2"
                    }
                };
                assert_eq!(db.execute(sql, [&key.scope, &key.name]).unwrap(), 1);
            }
            Backend::Dynamo => {
                let client = Moto::shared().dynamodb_client();
                let table = self.table.as_deref().unwrap();
                let item = [
                    (
                        "pk".to_owned(),
                        aws_sdk_dynamodb::types::AttributeValue::S(format!(
                            "chain#{}#{}",
                            key.scope, key.name
                        )),
                    ),
                    (
                        "sk".to_owned(),
                        // The log's head is kept in the chain's head item.
                        aws_sdk_dynamodb::types::AttributeValue::S("head".into()),
                    ),
                ];
                let (expression, value) = match damage {
                    Damage::Delete => (
                        "REMOVE log_head_id, log_epoch, log_size, log_frontier, log_checkpoint, log_expires_at_ms",
                        None,
                    ),
                    Damage::Blank => ("REMOVE log_checkpoint", None),
                    // The log's own id, stored apart from the window's only when it differs.
                    Damage::Swap => ("SET log_head_id = :other", Some("another")),
                };
                let mut update = client
                    .update_item()
                    .table_name(table)
                    .set_key(Some(item.into()))
                    .update_expression(expression);
                if let Some(value) = value {
                    update = update.expression_attribute_values(
                        ":other",
                        aws_sdk_dynamodb::types::AttributeValue::S(value.into()),
                    );
                }
                update.send().await.unwrap();
            }
        }
        assert!(
            self.stores
                .chains
                .log_head(&key, 0)
                .await
                .unwrap()
                .named
                .is_some(),
            "the chain still names its log"
        );
    }
}

#[derive(Clone, Copy)]
enum Damage {
    Delete,
    Blank,
    Swap,
}

fn admin(config: &Config, stores: &Stores, h: &Harness) -> Admin {
    let clock: Arc<dyn hearth_core::clock::Clock> = h.clock.clone();
    Admin::new(
        hearth_core::accounts::Accounts::new(stores.accounts.clone(), clock.clone()),
        stores.chains.clone(),
        stores.grants.clone(),
        hearth_core::app::household_data(config).unwrap(),
        config.jwt_keys(),
        clock,
    )
    .with_log_keys(hearth_core::app::log_keys(config))
}

impl Phase {
    /// A new household account, and a token for it.
    async fn household(&self, name: &str) -> (String, String) {
        let household = self.admin.create(name, None).await.unwrap().household_id;
        let token = self.token(&household).await;
        (household, token)
    }

    async fn token(&self, household: &str) -> String {
        self.admin.token(household, 30).await.unwrap().access_token
    }

    /// Calls `tool` with `token`; returns the tool result.
    async fn call(&self, token: &str, tool: &str, arguments: Value) -> Value {
        let bearer = format!("Bearer {token}");
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let reply = request(
            &self.h.router,
            "POST",
            "/mcp",
            &[
                ("host", self.host),
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                ("accept", "application/json"),
            ],
            &body.to_string(),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        reply.body["result"].clone()
    }

    /// Records a decision; returns its (trace id, tlog_proof), or the refusal's text.
    async fn record(&self, token: &str, action: &str) -> Result<(String, String), String> {
        let result = self
            .call(
                token,
                "record_decision",
                json!({"action": action, "reason": "because", "inputs": {}, "approver": "Dana"}),
            )
            .await;
        if result["isError"] == true {
            return Err(result["content"][0]["text"].as_str().unwrap().to_owned());
        }
        let record = &result["structuredContent"];
        Ok((
            record["trace_id"].as_str().unwrap().to_owned(),
            record["tlog_proof"].as_str().unwrap().to_owned(),
        ))
    }

    /// `get_trace` and `prove_history` both answer for `token`'s household.
    async fn proves(&self, token: &str, trace_id: &str) -> Result<(), String> {
        for (tool, arguments) in [
            ("get_trace", json!({"trace_id": trace_id})),
            ("prove_history", json!({"from_size": 1})),
        ] {
            let result = self.call(token, tool, arguments).await;
            if result["isError"] == true {
                return Err(format!("{tool}: {}", result["content"][0]["text"]));
            }
        }
        Ok(())
    }

    async fn log_keys(&self) -> Value {
        let reply = request(
            &self.h.router,
            "GET",
            "/.well-known/hearth/log-keys",
            &[("host", self.host)],
            "",
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        reply.body
    }
}

/// `scripts/verify_log.py inclusion` with the published keys: its one-line verdict.
fn verify_offline(receipt: &str, entry: &str, keys: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let proof = dir.path().join("proof");
    let published = dir.path().join("keys.json");
    std::fs::write(&proof, receipt).unwrap();
    std::fs::write(&published, keys.to_string()).unwrap();
    let output = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/verify_log.py"
        ))
        .args(["inclusion", proof.to_str().unwrap(), "--vkey"])
        .arg(published.to_str().unwrap())
        .args(["--entry", entry])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

const KEY_ONE: (&str, &str) = ("HEARTH_LOG_KEY", "the first log key");
const KEY_TWO: (&str, &str) = ("HEARTH_LOG_KEY", "the second log key");
const VERSION_TWO: (&str, &str) = ("HEARTH_LOG_KEY_VERSION", "2");

async fn rotating_the_log_key_keeps_every_household_recording_and_proving(backend: Backend) {
    let world = world(backend).await;
    // Key one: three households record.
    let one = world.phase(&[KEY_ONE]);
    let mut tokens = Vec::new();
    let mut receipts = Vec::new();
    let mut households = Vec::new();
    for name in ["Busy", "Idle", "Asleep"] {
        let household = one.admin.create(name, None).await.unwrap().household_id;
        let token = one.token(&household).await;
        receipts.push(one.record(&token, "dim the lights").await.unwrap());
        tokens.push(token);
        households.push(household);
    }
    let key_one = one.log_keys().await["keys"][0]["vkey"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(key_one.starts_with("127.0.0.1/hearth-log/v1+"));

    // The overlap: key two signs, key one signs beside it; only Busy writes.
    let overlap = world.phase(&[
        KEY_TWO,
        VERSION_TWO,
        ("HEARTH_LOG_KEY_PREVIOUS", "the first log key"),
    ]);
    overlap.record(&tokens[0], "lock the door").await.unwrap();

    // Key one dropped without a trace: Idle's head, signed by key one only, no longer verifies.
    let forgotten = world.phase(&[KEY_TWO, VERSION_TWO]);
    let refused = forgotten
        .record(&tokens[1], "open the blinds")
        .await
        .unwrap_err();
    assert!(refused.contains("signature does not verify"), "{refused}");

    // Key one dropped and kept as a verify-only identity, as the manual's step 3 says
    // (docs/src/self-hosting/log-key-rotation.md).
    let dropped = world.phase(&[
        KEY_TWO,
        VERSION_TWO,
        ("HEARTH_LOG_KEY_NAMES_PREVIOUS", &key_one),
    ]);
    let published = dropped.log_keys().await;
    let keys = published["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2, "{published}");
    assert_eq!(keys[0]["verify_only"], false);
    assert!(
        keys[0]["vkey"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1/hearth-log/v2+")
    );
    assert_eq!(
        (keys[1]["vkey"].as_str(), &keys[1]["verify_only"]),
        (Some(key_one.as_str()), &json!(true))
    );
    // Idle records again (its head is re-signed by this append) and proves.
    let (entry, _) = dropped.record(&tokens[1], "open the blinds").await.unwrap();
    dropped.proves(&tokens[1], &entry).await.unwrap();
    // Asleep never writes: `log-key re-sign` signs its head with key two.
    let resigned = dropped.admin.resign_logs(None).await.unwrap();
    let asleep = &households[2];
    for household in &resigned.households {
        let expected = if household.household_id == *asleep {
            Resigned::Resigned
        } else {
            Resigned::Current
        };
        assert_eq!(household.decisions, expected, "{resigned:?}");
    }
    assert!(
        resigned
            .households
            .iter()
            .all(|h| h.ledger == Resigned::NoLog)
    );
    // Receipts from before the rotation still verify offline with the published keys.
    for (entry, receipt) in &receipts {
        assert_eq!(verify_offline(receipt, entry, &published), "OK");
    }

    // The identity dropped too: every household, idle or not, records and proves.
    let after = world.phase(&[KEY_TWO, VERSION_TWO]);
    for token in &tokens {
        let (entry, _) = after
            .record(token, "turn on the porch light")
            .await
            .unwrap();
        after.proves(token, &entry).await.unwrap();
    }
    assert_eq!(
        after
            .admin
            .resign_logs(None)
            .await
            .unwrap()
            .households
            .iter()
            .map(|h| h.decisions)
            .collect::<Vec<_>>(),
        [Resigned::Current; 3]
    );
}

async fn a_new_host_keeps_the_logs_when_the_earlier_host_is_named(backend: Backend) {
    let world = world(backend).await;
    let before = world.phase(&[]);
    let (household, token) = before.household("Moving").await;
    before.record(&token, "dim the lights").await.unwrap();

    let localhost = ("MCP_RESOURCE_URL", "http://localhost:8790/mcp");
    let unnamed = world.phase(&[localhost]);
    let token = unnamed.token(&household).await;
    let refused = unnamed.record(&token, "lock the door").await.unwrap_err();
    assert!(
        refused.contains("does not match its signed checkpoint"),
        "{refused}"
    );

    let named = world.phase(&[
        localhost,
        ("HEARTH_LOG_KEY_NAMES_PREVIOUS", "127.0.0.1/hearth-log/v1"),
    ]);
    let published = named.log_keys().await;
    assert_eq!(published["keys"][1]["verify_only"], true, "{published}");
    let (entry, receipt) = named.record(&token, "lock the door").await.unwrap();
    assert!(receipt.contains("\nlocalhost/hearth/"), "{receipt}");
    named.proves(&token, &entry).await.unwrap();
}

async fn a_removed_or_swapped_log_head_is_named_until_the_operator_resets_the_log(
    backend: Backend,
) {
    let world = world(backend).await;
    let phase = world.phase(&[]);
    for (damage, named) in [
        (Damage::Delete, "the log head was removed"),
        (Damage::Blank, "the log head was removed"),
        (Damage::Swap, "the log was replaced"),
    ] {
        let (household, token) = phase.household("Damaged").await;
        let (first, kept) = phase.record(&token, "dim the lights").await.unwrap();
        phase.record(&token, "lock the door").await.unwrap();
        world.damage(&household, damage).await;
        // Never a fresh log: the append is refused and named...
        let refused = phase.record(&token, "open the blinds").await.unwrap_err();
        assert!(refused.contains(named), "{refused}");
        // ...and so is every proof.
        let proved = phase.proves(&token, &first).await.unwrap_err();
        assert!(proved.contains(named), "{proved}");

        // The operator starts a new log; its first entry names the old one.
        let reset = phase
            .admin
            .reset_log(&household, Some(LogKind::Decisions))
            .await
            .unwrap();
        assert_eq!(reset.reset.len(), 1);
        let replaced = &reset.reset[0].replaced;
        assert!(replaced["previous_log_id"].is_string(), "{replaced}");
        let (entry, receipt) = phase.record(&token, "open the blinds").await.unwrap();
        assert!(
            receipt.starts_with("c2sp.org/tlog-proof@v1\nindex 1\n"),
            "{receipt}"
        );
        phase.proves(&token, &entry).await.unwrap();
        // The new log has a new origin: proofs kept from the old one name another log.
        let origin = |proof: &str| {
            proof
                .lines()
                .find(|line| line.contains("/hearth/"))
                .unwrap()
                .to_owned()
        };
        assert_ne!(origin(&kept), origin(&receipt));
    }
}

/// A household account's log goes on across windows for good; a judge token's household
/// label keeps its log with its window and retires it, hashes and all, a week after the
/// window ends.
async fn a_households_log_is_kept_and_a_labels_log_retires(backend: Backend) {
    let world = world(backend).await;
    let phase = world.phase(&[]);
    let (_, token) = phase.household("Lasting").await;
    let (_, first) = phase.record(&token, "dim the lights").await.unwrap();
    let label = json!({"household_id": "one-off", "action": "water the plants",
        "reason": "because", "inputs": {}, "approver": "Dana"});
    let labelled = phase
        .call(common::TOKEN, "record_decision", label.clone())
        .await;
    assert_ne!(labelled["isError"], true, "{labelled}");
    let scope = hearth_core::auth::Subject::of_judge_token(common::TOKEN)
        .caller()
        .scope;
    let label_key = hearth_core::why::service::chain_key_in(&scope, "one-off");
    let now = || hearth_core::clock::unix_ms(hearth_core::clock::Clock::now(&*phase.h.clock));
    let kept = |at| {
        let store = world.stores.chains.clone();
        let key = label_key.clone();
        async move { store.log_head(&key, at).await.unwrap().log.is_some() }
    };
    assert!(kept(now()).await);

    // 73 hours on, both windows have ended.
    phase.h.clock.advance(time::Duration::hours(73));
    let (_, later) = phase.record(&token, "lock the door").await.unwrap();
    let origin = |proof: &str| {
        proof
            .lines()
            .find(|line| line.contains("/hearth/"))
            .unwrap()
            .to_owned()
    };
    assert_eq!(origin(&first), origin(&later), "the same log");
    assert!(
        later.starts_with("c2sp.org/tlog-proof@v1\nindex 1\n"),
        "{later}"
    );
    // The label's log is kept a week after its window ended, then reads as gone.
    assert!(kept(now()).await);
    phase.h.clock.advance(time::Duration::days(7));
    assert!(!kept(now()).await, "retired");
    // A new entry starts the label's log afresh.
    let again = phase.call(common::TOKEN, "record_decision", label).await;
    let proof = again["structuredContent"]["tlog_proof"].as_str().unwrap();
    assert!(
        proof.starts_with("c2sp.org/tlog-proof@v1\nindex 0\n"),
        "{proof}"
    );
    // The household's log is kept still.
    let (entry, _) = phase.record(&token, "open the blinds").await.unwrap();
    phase.proves(&token, &entry).await.unwrap();
}

on_both_stores!(
    a_households_log_is_kept_and_a_labels_log_retires,
    rotating_the_log_key_keeps_every_household_recording_and_proving,
    a_new_host_keeps_the_logs_when_the_earlier_host_is_named,
    a_removed_or_swapped_log_head_is_named_until_the_operator_resets_the_log,
);
