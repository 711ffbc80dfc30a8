//! Hearth submitting its checkpoints to witnesses (`HEARTH_WITNESS_POLICY`), each witness a
//! real `hearth witness` router on a loopback port with its own SQLite state:
//! - receipts, traces and history proofs carry the quorum's cosignatures;
//! - a restored backup (a rolled-back history) is refused by every witness, whose evidence
//!   names it, and the receipt it produces no longer meets the policy;
//! - a witness that is down costs nothing but its cosignature; one slower than the timeout is
//!   not waited for, and its cosignature is attached to later proofs; a restarted witness
//!   keeps its state.
//!
//! On both stores: SQLite, and DynamoDB on moto.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Backend, call_tool, request};
use hearth_core::store::Stores;
use hearth_core::store::dynamodb::DynamoStore;
use hearth_core::tlog::checkpoint::parse_proof;
use hearth_core::tlog::cosignature::Cosigner;
use hearth_core::tlog::policy::{Policy, QuorumError};
use hearth_core::witness::http as witness_http;
use hearth_core::witness::key::default_name;
use hearth_core::witness::{DEFAULT_MAX_LOGS, Trust, Witness, WitnessState};
use hearth_testkit::moto::{Moto, unique_name};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// One witness served on loopback, restartable on the same port and state.
struct RunningWitness {
    dir: tempfile::TempDir,
    seed: [u8; 32],
    port: u16,
    /// Added before each answer (a slow witness).
    delay: Duration,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningWitness {
    async fn start(seed: u8, delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut witness = Self {
            dir: tempfile::tempdir().unwrap(),
            seed: [seed; 32],
            port,
            delay,
            task: None,
        };
        witness.serve(listener);
        witness
    }

    fn cosigner(&self) -> Cosigner {
        Cosigner::from_seed(&default_name(&self.seed), &self.seed).unwrap()
    }

    fn state(&self) -> WitnessState {
        WitnessState::open(&self.dir.path().join("witness.db")).unwrap()
    }

    fn serve(&mut self, listener: TcpListener) {
        let witness = Arc::new(Witness::new(self.cosigner(), self.state()));
        let delay = self.delay;
        let router = witness_http::router(witness).layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| async move {
                tokio::time::sleep(delay).await;
                next.run(request).await
            },
        ));
        self.task = Some(tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        }));
    }

    fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    async fn restart(&mut self) {
        self.stop();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.serve(listener);
    }

    fn trust(&self, log_vkey: &str) {
        self.state()
            .trust(&Trust {
                vkey: log_vkey.into(),
                origin_prefix: "127.0.0.1/hearth/".into(),
                max_logs: DEFAULT_MAX_LOGS,
            })
            .unwrap();
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Evidence the witness kept, across every log.
    fn evidence(&self) -> Vec<String> {
        self.state()
            .logs()
            .unwrap()
            .iter()
            .flat_map(|log| {
                let log_id = hearth_core::witness::log_of(&log.origin).0.to_owned();
                self.state().evidence(&log_id).unwrap()
            })
            .map(|(reason, _)| reason)
            .collect()
    }
}

/// The deployment's current log verifier key, as `hearth admin log-key` prints it.
fn log_vkey() -> String {
    let config = common::config_with(&[]);
    hearth_core::app::log_keys(&config).unwrap().published()[0]
        .vkey
        .clone()
}

fn policy_text(witnesses: &[(&str, &RunningWitness)], quorum: &str) -> String {
    let mut text = format!("log {}\n", log_vkey());
    for (name, witness) in witnesses {
        text.push_str(&format!(
            "witness {name} {} {}\n",
            witness.cosigner().vkey(),
            witness.url()
        ));
    }
    text.push_str(quorum);
    text.push('\n');
    text
}

fn decision(action: &str) -> Value {
    json!({"household_id": "home", "action": action, "reason": "because", "inputs": {}, "approver": "Dana"})
}

async fn record(router: &axum::Router, action: &str) -> String {
    let recorded = call_tool(router, "record_decision", decision(action)).await;
    recorded["structuredContent"]["tlog_proof"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Whether a receipt's checkpoint meets `policy`, and who cosigned it.
fn quorum(receipt: &str, policy: &Policy) -> Result<Vec<String>, QuorumError> {
    let proof = parse_proof(receipt).unwrap();
    policy
        .verify(proof.checkpoint)
        .map(|witnessed| witnessed.cosigned_by)
}

/// A router with `policy` over `backend`'s store, and the DynamoDB table's name.
async fn hearth(backend: Backend, policy: &str, timeout_ms: &str) -> (common::Harness, String) {
    let config = common::config_with(&[
        ("HEARTH_WITNESS_POLICY", policy),
        ("HEARTH_WITNESS_TIMEOUT_MS", timeout_ms),
    ]);
    let table = unique_name("hearth-witnessing");
    let harness = match backend {
        Backend::Sqlite => common::harness_with(&config),
        Backend::Dynamo => {
            let store = Arc::new(DynamoStore::new(
                Moto::shared().dynamodb_client(),
                table.clone(),
            ));
            store.ensure_table().await.unwrap();
            common::harness_over(&config, move |_| Stores::shared(store))
        }
    };
    (harness, table)
}

/// Everything a backup holds: every row of the SQLite file, or every item of the table.
enum Backup {
    Sqlite(tempfile::TempDir),
    Dynamo(
        String,
        Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>>,
    ),
}

async fn back_up(backend: Backend, h: &common::Harness, table: &str) -> Backup {
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let copy = dir.path().join("backup.db");
            rusqlite::Connection::open(h.db_path())
                .unwrap()
                .execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
                .unwrap();
            Backup::Sqlite(dir)
        }
        Backend::Dynamo => {
            let table = table.to_owned();
            let items = Moto::shared()
                .dynamodb_client()
                .scan()
                .table_name(&table)
                .send()
                .await
                .unwrap()
                .items()
                .to_vec();
            Backup::Dynamo(table, items)
        }
    }
}

/// Puts a backup back over the live store, as an operator restoring it would.
async fn restore(h: &common::Harness, backup: &Backup) {
    match backup {
        Backup::Sqlite(dir) => {
            let live = rusqlite::Connection::open(h.db_path()).unwrap();
            live.execute(
                "ATTACH DATABASE ?1 AS backup",
                [dir.path().join("backup.db").to_str().unwrap()],
            )
            .unwrap();
            for table in [
                "chain_heads",
                "chain_records",
                "chain_logs",
                "log_hashes",
                "cosigned",
            ] {
                live.execute_batch(&format!(
                    "DELETE FROM main.{table}; INSERT INTO main.{table} SELECT * FROM backup.{table};"
                ))
                .unwrap();
            }
        }
        Backup::Dynamo(table, items) => {
            let client = Moto::shared().dynamodb_client();
            let live = client.scan().table_name(table).send().await.unwrap();
            for item in live.items() {
                client
                    .delete_item()
                    .table_name(table)
                    .key("pk", item["pk"].clone())
                    .key("sk", item["sk"].clone())
                    .send()
                    .await
                    .unwrap();
            }
            for item in items {
                client
                    .put_item()
                    .table_name(table)
                    .set_item(Some(item.clone()))
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
}

async fn a_restored_backup_is_refused_by_every_witness_and_fails_the_policy(backend: Backend) {
    let one = RunningWitness::start(11, Duration::ZERO).await;
    let two = RunningWitness::start(12, Duration::ZERO).await;
    for witness in [&one, &two] {
        witness.trust(&log_vkey());
    }
    let text = policy_text(
        &[("home-hub", &one), ("neighbour", &two)],
        "group both all home-hub neighbour\nquorum both",
    );
    let policy = Policy::parse(&text).unwrap();
    let (h, table) = hearth(backend, &text, "2000").await;
    // The policy is published beside the log keys.
    let published = request(
        &h.router,
        "GET",
        "/.well-known/hearth/witness-policy",
        &[],
        "",
    )
    .await;
    assert_eq!(
        (published.status, published.raw.as_str()),
        (http::StatusCode::OK, text.as_str())
    );

    for n in 0..2 {
        let receipt = record(&h.router, &format!("step {n}")).await;
        assert_eq!(
            quorum(&receipt, &policy).unwrap(),
            ["home-hub", "neighbour"]
        );
    }
    let backup = back_up(backend, &h, &table).await;
    let third = record(&h.router, "step 2").await;
    assert!(quorum(&third, &policy).is_ok());

    // The operator (or whoever holds the database) restores the backup: the household's log
    // is at 2 entries again, and the next append makes a different tree of 3.
    restore(&h, &backup).await;
    let forked = record(&h.router, "another step 2").await;
    assert_ne!(
        parse_proof(&forked).unwrap().checkpoint.lines().nth(2),
        parse_proof(&third).unwrap().checkpoint.lines().nth(2),
        "the restored log grew a different tree"
    );
    assert_eq!(quorum(&forked, &policy), Err(QuorumError::NotMet(vec![])));
    // Each witness kept the forked checkpoint as evidence.
    for witness in [&one, &two] {
        assert!(
            witness.evidence().contains(&"inconsistent".to_owned()),
            "{:?}",
            witness.evidence()
        );
    }
    // The trace and the history hand out the checkpoint with what was cosigned of it: nothing.
    let history = call_tool(
        &h.router,
        "prove_history",
        json!({"household_id": "home", "log": "decisions", "from_size": 0}),
    )
    .await;
    let checkpoint = history["structuredContent"]["checkpoint"].as_str().unwrap();
    assert!(policy.verify(checkpoint).is_err());
}

async fn a_slow_witness_is_not_waited_for_and_a_down_one_costs_its_cosignature(backend: Backend) {
    let quick = RunningWitness::start(21, Duration::ZERO).await;
    let slow = RunningWitness::start(22, Duration::from_millis(600)).await;
    let mut down = RunningWitness::start(23, Duration::ZERO).await;
    for witness in [&quick, &slow, &down] {
        witness.trust(&log_vkey());
    }
    down.stop();
    let text = policy_text(
        &[("quick", &quick), ("slow", &slow), ("down", &down)],
        "group any-two 2 quick slow down\nquorum any-two",
    );
    let policy = Policy::parse(&text).unwrap();
    let (h, _) = hearth(backend, &text, "150").await;
    let receipt = record(&h.router, "lights off").await;
    // Only the quick one answered in time (had the call waited for the slow one, its
    // cosignature would be here): one of two needed.
    assert_eq!(
        quorum(&receipt, &policy),
        Err(QuorumError::NotMet(vec!["quick".into()]))
    );
    // The slow one's cosignature arrives later, is kept, and rides on the next proof of the
    // same tree.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let history = call_tool(
        &h.router,
        "prove_history",
        json!({"household_id": "home", "log": "decisions", "from_size": 1}),
    )
    .await;
    let checkpoint = history["structuredContent"]["checkpoint"].as_str().unwrap();
    assert_eq!(
        policy.verify(checkpoint).unwrap().cosigned_by,
        ["quick", "slow"]
    );

    // The down witness comes back (restarted, with its state): it is sent the tree from 0,
    // cosigns, and every later receipt meets the quorum without the slow one.
    down.restart().await;
    let receipt = record(&h.router, "lights on").await;
    assert_eq!(quorum(&receipt, &policy).unwrap(), ["down", "quick"]);
    // Restarted again, it still knows the size it cosigned: the next proof starts there.
    down.restart().await;
    let receipt = record(&h.router, "heating down").await;
    assert_eq!(quorum(&receipt, &policy).unwrap(), ["down", "quick"]);
    assert!(down.evidence().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_a_restored_backup_is_refused_by_every_witness_and_fails_the_policy() {
    a_restored_backup_is_refused_by_every_witness_and_fails_the_policy(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_a_restored_backup_is_refused_by_every_witness_and_fails_the_policy() {
    a_restored_backup_is_refused_by_every_witness_and_fails_the_policy(Backend::Dynamo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_a_slow_witness_is_not_waited_for_and_a_down_one_costs_its_cosignature() {
    a_slow_witness_is_not_waited_for_and_a_down_one_costs_its_cosignature(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_a_slow_witness_is_not_waited_for_and_a_down_one_costs_its_cosignature() {
    a_slow_witness_is_not_waited_for_and_a_down_one_costs_its_cosignature(Backend::Dynamo).await;
}

#[tokio::test]
async fn a_policy_that_does_not_name_this_deployments_log_key_stops_the_start() {
    let witness = Cosigner::from_seed("w.example/1", &[3; 32]).unwrap();
    let stranger =
        hearth_core::tlog::note::NoteSigner::from_seed("other/hearth-log/v1", &[4; 32]).unwrap();
    let text = format!(
        "log {}\nwitness w {} http://127.0.0.1:9\nquorum w\n",
        stranger.vkey(),
        witness.vkey()
    );
    let config = common::config_with(&[("HEARTH_WITNESS_POLICY", &text)]);
    let dir = tempfile::tempdir().unwrap();
    let store =
        Arc::new(hearth_core::store::sqlite::SqliteStore::open(&dir.path().join("h.db")).unwrap());
    let error = hearth_core::app::witnesses(
        &config,
        &Stores::shared(store),
        Arc::new(hearth_core::clock::SystemClock),
    )
    .err()
    .expect("refused");
    assert!(error.to_string().contains(&log_vkey()), "{error}");
    // Without witnesses the published policy is still true: the log key, and no quorum, which
    // verify_log.py reads like any other policy.
    let h = common::harness(&[]);
    let reply = request(
        &h.router,
        "GET",
        "/.well-known/hearth/witness-policy",
        &[],
        "",
    )
    .await;
    assert_eq!(reply.status, http::StatusCode::OK);
    let policy = Policy::parse(&reply.raw).unwrap();
    assert!(!policy.requires_witnesses());
    assert_eq!(policy.logs[0].verifier.vkey(), log_vkey());
}

/// The ledger's receipts are witnessed like the decisions': a placed order's `tlog_proof`
/// carries the quorum's cosignatures.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_placed_orders_receipt_is_cosigned() {
    use common::device::{Device, HOST_KEY, Turn, ok};
    let witness = RunningWitness::start(31, Duration::ZERO).await;
    witness.trust(&log_vkey());
    let text = policy_text(&[("hub", &witness)], "quorum hub");
    let policy = Policy::parse(&text).unwrap();
    let config = common::config_with(&[
        ("HEARTH_WITNESS_POLICY", &text),
        ("HEARTH_WITNESS_TIMEOUT_MS", "2000"),
        ("COUNTERSIGN_HOST_KEY", HOST_KEY),
    ]);
    let h = common::harness_with(&config);
    let device = Device::new(h.router.clone(), h.clock.clone());
    let placed = device
        .call(
            Turn::new("dana", &["buy a 4 pack of AA batteries"]),
            "propose_purchase",
            json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}),
        )
        .await;
    let receipt = ok(&placed)["tlog_proof"].as_str().unwrap();
    let checkpoint = parse_proof(receipt).unwrap().checkpoint;
    assert!(checkpoint.lines().next().unwrap().ends_with("/ledger/1"));
    assert_eq!(quorum(receipt, &policy).unwrap(), ["hub"]);
}

/// Two appends submitted at once can reach a witness out of order: the later checkpoint first.
/// The earlier one is then behind, not refused: a warning, never a `WitnessRefusals` error.
/// (One thread, so the submissions' log lines reach this test's capture.)
#[tokio::test]
async fn a_witness_ahead_by_a_later_append_is_no_refusal() {
    use common::capture::Captured;
    use hearth_core::store::ChainKey;
    use hearth_core::store::sqlite::SqliteStore;
    use hearth_core::witnessing::Witnesses;

    let sink = Captured::default();
    let _logs = tracing::subscriber::set_default(hearth_core::telemetry::subscriber(
        {
            let sink = sink.clone();
            move || sink.clone()
        },
        hearth_core::config::MetricDetail::default(),
    ));
    let witness = RunningWitness::start(41, Duration::ZERO).await;
    witness.trust(&log_vkey());
    let text = policy_text(&[("hub", &witness)], "quorum hub");
    let (h, _) = hearth(Backend::Sqlite, &text, "2000").await;
    let first = record(&h.router, "one").await;
    record(&h.router, "two").await;

    // The first checkpoint, submitted now, as if its submission had been overtaken.
    let (scope, name): (String, String) = rusqlite::Connection::open(h.db_path())
        .unwrap()
        .query_row(
            "SELECT scope, name FROM chain_logs WHERE scope LIKE '%/why'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    let stores = Stores::shared(Arc::new(SqliteStore::open(&h.db_path()).unwrap()));
    let config = common::config_with(&[("HEARTH_WITNESS_POLICY", &text)]);
    let submission = config.witnesses.unwrap();
    let witnesses = Witnesses::new(
        &submission,
        stores.chains.clone(),
        stores.cosigned.clone(),
        Arc::new(hearth_core::clock::SystemClock),
    )
    .unwrap();
    let note = parse_proof(&first).unwrap().checkpoint;
    let cosigned = witnesses
        .witness(&ChainKey { scope, name }, note, None)
        .await;
    assert_eq!(cosigned, "");
    let logs = sink.text();
    assert!(logs.contains("already holds a later checkpoint"), "{logs}");
    assert!(!logs.contains("a witness refused"), "{logs}");
    assert!(witness.evidence().is_empty());
}
