//! Signed checkpoints and Merkle receipts through MCP, checked the way a household would
//! check them: with nothing but the published verifier key. Every receipt proves its entry;
//! a kept checkpoint plus `prove_history` proves nothing before it changed; the log outlives
//! the 72-hour window; and each tamper is named, by the server and by the proofs. Eight
//! concurrent writers on both stores never produce two inconsistent checkpoints.

mod common;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::device::{Device, HOST_KEY, Turn, ok};
use common::{Backend, call_tool, harness, request};
use hearth_core::auth::Caller;
use hearth_core::clock::SystemClock;
use hearth_core::store::dynamodb::DynamoStore;
use hearth_core::store::sqlite::SqliteStore;
use hearth_core::store::{ChainStore, Stores};
use hearth_core::tlog::checkpoint::{Checkpoint, parse_proof};
use hearth_core::tlog::note::{self, NoteVerifier};
use hearth_core::tlog::tree::{Hash, leaf_hash, root_from_inclusion, verify_consistency};
use hearth_core::transparency::{LogKeys, LogKind, history};
use hearth_core::why::WhyService;
use hearth_core::why::record::NewDecision;
use hearth_testkit::moto::{Moto, unique_name};
use rusqlite::Connection;
use serde_json::{Map, Value, json};

/// The verifier key the MCP function publishes.
async fn published_key(router: &axum::Router) -> NoteVerifier {
    let reply = request(router, "GET", "/.well-known/hearth/log-keys", &[], "").await;
    assert_eq!(reply.status, http::StatusCode::OK, "{}", reply.raw);
    NoteVerifier::parse(reply.body["keys"][0]["vkey"].as_str().unwrap()).unwrap()
}

/// A signed checkpoint, verified and parsed.
fn read_checkpoint(signed: &str, key: &NoteVerifier) -> Checkpoint {
    let text = note::verify(signed, std::slice::from_ref(key)).expect("signed by the log key");
    Checkpoint::parse(text).unwrap()
}

/// Checks a tlog-proof text for the entry whose record hash is `entry`; returns its index
/// and checkpoint.
fn check_receipt(receipt: &str, entry: &str, key: &NoteVerifier) -> (u64, Checkpoint) {
    let proof = parse_proof(receipt).unwrap();
    let checkpoint = read_checkpoint(proof.checkpoint, key);
    let leaf = leaf_hash(&hex::decode(entry).unwrap());
    assert_eq!(
        root_from_inclusion(proof.index, checkpoint.size, &leaf, &proof.path),
        Some(checkpoint.root),
        "the receipt proves its entry"
    );
    (proof.index, checkpoint)
}

fn hashes(list: &Value) -> Vec<Hash> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| {
            STANDARD
                .decode(item.as_str().unwrap())
                .unwrap()
                .try_into()
                .unwrap()
        })
        .collect()
}

fn decision(action: &str) -> Value {
    json!({"household_id": "home", "action": action, "reason": "because", "inputs": {}, "approver": "Dana"})
}

async fn prove(router: &axum::Router, log: &str, from_size: u64) -> Value {
    call_tool(
        router,
        "prove_history",
        json!({"household_id": "home", "log": log, "from_size": from_size}),
    )
    .await
}

#[tokio::test]
async fn decisions_carry_receipts_and_a_kept_checkpoint_proves_the_history_after_it() {
    let h = harness(&[]);
    let key = published_key(&h.router).await;
    let mut entries = Vec::new();
    let mut kept: Option<Checkpoint> = None;
    for n in 0..5u64 {
        let recorded =
            call_tool(&h.router, "record_decision", decision(&format!("step {n}"))).await;
        let record = &recorded["structuredContent"];
        let trace_id = record["trace_id"].as_str().unwrap().to_owned();
        let (index, checkpoint) =
            check_receipt(record["tlog_proof"].as_str().unwrap(), &trace_id, &key);
        assert_eq!((index, checkpoint.size), (n, n + 1));
        assert!(checkpoint.origin.starts_with("127.0.0.1/hearth/"));
        assert!(checkpoint.origin.ends_with("/decisions/1"));
        assert!(
            !checkpoint.origin.contains("home"),
            "the origin hides the household"
        );
        if n == 1 {
            kept = Some(checkpoint);
        }
        entries.push(trace_id);
    }
    // The trace carries the checkpoint and a proof of every retained record.
    let trace = call_tool(
        &h.router,
        "get_trace",
        json!({"household_id": "home", "trace_id": entries[0]}),
    )
    .await;
    let trace = &trace["structuredContent"];
    let checkpoint = read_checkpoint(trace["checkpoint"].as_str().unwrap(), &key);
    assert_eq!(checkpoint.size, 5);
    let proofs = trace["inclusion_proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 5);
    for (index, proof) in proofs.iter().enumerate() {
        assert_eq!(proof["index"], index as u64);
        assert_eq!(proof["entry"], entries[index].as_str());
        let leaf = leaf_hash(&hex::decode(&entries[index]).unwrap());
        assert_eq!(
            root_from_inclusion(index as u64, 5, &leaf, &hashes(&proof["path"])),
            Some(checkpoint.root)
        );
    }
    // The kept checkpoint of 2 and today's of 5: consistent.
    let kept = kept.unwrap();
    let history = prove(&h.router, "decisions", 2).await;
    assert_eq!(history["isError"], false, "{history}");
    let now = read_checkpoint(
        history["structuredContent"]["checkpoint"].as_str().unwrap(),
        &key,
    );
    assert!(verify_consistency(
        2,
        &kept.root,
        now.size,
        &now.root,
        &hashes(&history["structuredContent"]["consistency"])
    ));
    // A size beyond the log is named: a kept checkpoint larger than the log.
    let beyond = prove(&h.router, "decisions", 6).await;
    assert_eq!(beyond["isError"], true);
    assert!(
        beyond["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("truncated or forked")
    );
    // A judge token's household label keeps its log with its window: when the window
    // expires, the next entry starts the log's next epoch (a household account's log goes on
    // across windows: tests/log_keys.rs).
    h.clock.advance(time::Duration::hours(73));
    let later = call_tool(&h.router, "record_decision", decision("after the window")).await;
    let record = &later["structuredContent"];
    assert_eq!(record["seq"], 1, "a new window");
    let (index, grown) = check_receipt(
        record["tlog_proof"].as_str().unwrap(),
        record["trace_id"].as_str().unwrap(),
        &key,
    );
    assert_eq!((index, grown.size), (0, 1));
    assert!(grown.origin.ends_with("/decisions/2"), "{}", grown.origin);
}

#[tokio::test]
async fn a_kept_checkpoint_beyond_the_log_is_named() {
    let h = harness(&[]);
    for n in 0..3 {
        call_tool(&h.router, "record_decision", decision(&format!("step {n}"))).await;
    }
    let beyond = prove(&h.router, "decisions", 7).await;
    assert_eq!(beyond["isError"], true);
    assert!(
        beyond["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("truncated or forked")
    );
}

#[tokio::test]
async fn a_log_head_edited_in_the_database_is_refused_and_never_signed_over() {
    let h = harness(&[]);
    for n in 0..3 {
        call_tool(&h.router, "record_decision", decision(&format!("step {n}"))).await;
    }
    let db = Connection::open(h.db_path()).unwrap();
    // A database-only attacker recomputes nothing it cannot sign: an edited frontier no longer
    // matches the signed checkpoint.
    db.execute(
        "UPDATE chain_logs SET frontier = zeroblob(length(frontier)) WHERE scope LIKE '%/why'",
        [],
    )
    .unwrap();
    let refused = call_tool(&h.router, "record_decision", decision("next")).await;
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("does not match its signed checkpoint"),
        "{refused}"
    );
    let trace = call_tool(
        &h.router,
        "get_trace",
        json!({"household_id": "home", "trace_id": "00000000"}),
    )
    .await;
    assert_eq!(trace["isError"], true);
}

#[tokio::test]
async fn a_deleted_newest_decision_is_caught_by_the_signed_log() {
    let h = harness(&[]);
    let mut traces = Vec::new();
    for n in 0..3 {
        let recorded =
            call_tool(&h.router, "record_decision", decision(&format!("step {n}"))).await;
        traces.push(
            recorded["structuredContent"]["trace_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    // Delete the newest record and point the head at the one before: the chain alone is
    // consistent, but the log's last leaf is not the window's newest record any more.
    let db = Connection::open(h.db_path()).unwrap();
    db.execute(
        "DELETE FROM chain_records WHERE scope LIKE '%/why' AND seq = 3",
        [],
    )
    .unwrap();
    db.execute(
        "UPDATE chain_heads SET last_seq = 2, last_hash = ?1 WHERE scope LIKE '%/why'",
        [&traces[1]],
    )
    .unwrap();
    let trace = call_tool(
        &h.router,
        "get_trace",
        json!({"household_id": "home", "trace_id": traces[0]}),
    )
    .await;
    assert_eq!(trace["isError"], true, "{trace}");
    assert!(
        trace["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("is not leaf"),
        "{trace}"
    );
}

#[tokio::test]
async fn ledger_tools_hand_out_proofs_that_check_receipt_accepts_and_tampering_breaks() {
    let h = harness(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)]);
    let device = Device::new(h.router.clone(), h.clock.clone());
    let key = published_key(&h.router).await;
    let mut proofs = Vec::new();
    for words in [
        "order a 4 pack of AA batteries",
        "order 6 rolls of paper towels",
    ] {
        let (product, variant) = if words.contains("AA") {
            ("aa-batteries", "4-pack")
        } else {
            ("paper-towels", "6-rolls")
        };
        let placed = device
            .call(
                Turn::new("dana", &[words]),
                "propose_purchase",
                json!({"product_id": product, "variant_id": variant, "quantity": 1}),
            )
            .await;
        let placed = ok(&placed);
        let entry = placed["placed"]["receipt"]["entry_hash"].as_str().unwrap();
        let receipt = placed["tlog_proof"].as_str().unwrap().to_owned();
        let (_, checkpoint) = check_receipt(&receipt, entry, &key);
        assert!(checkpoint.origin.ends_with("/ledger/1"));
        proofs.push(receipt);
    }
    let check = |receipt: &str| {
        let device = &device;
        let receipt = receipt.to_owned();
        async move {
            let result = device
                .call(
                    Turn::new("dana", &["check my receipt"]),
                    "check_receipt",
                    json!({"receipt": receipt}),
                )
                .await;
            ok(&result).clone()
        }
    };
    let held = check(&proofs[1]).await;
    assert_eq!(held["verdict"], "matches", "{held}");
    assert_eq!(held["valid"], true);
    // Delete the newest ledger entry behind the log's back: the kept proof now shows the
    // ledger no longer matches its signed log.
    let db = Connection::open(h.db_path()).unwrap();
    let second: String = db
        .query_row(
            "SELECT hash FROM chain_records WHERE scope LIKE '%/countersign' AND seq = 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    db.execute(
        "DELETE FROM chain_records WHERE scope LIKE '%/countersign' AND seq = 2",
        [],
    )
    .unwrap();
    db.execute(
        "UPDATE chain_heads SET last_seq = 1, last_hash = ?1 WHERE scope LIKE '%/countersign'",
        [&second],
    )
    .unwrap();
    let deleted = check(&proofs[1]).await;
    assert_eq!(deleted["verdict"], "history_deleted", "{deleted}");
    assert_eq!(deleted["valid"], false);
    // A proof from another server's key is no proof here.
    let foreign = proofs[0].replace("\u{2014} 127.0.0.1/hearth-log/v1 ", "\u{2014} other/v1 ");
    let refused = device
        .call(
            Turn::new("dana", &["check my receipt"]),
            "check_receipt",
            json!({"receipt": foreign}),
        )
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
    // A proof whose checkpoint has no signature line at all: refused, never a crash.
    let unsigned = "c2sp.org/tlog-proof@v1\nindex 0\n\no\n1\nAAAA\n\n";
    let refused = device
        .call(
            Turn::new("dana", &["check my receipt"]),
            "check_receipt",
            json!({"receipt": unsigned}),
        )
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
}

/// Eight writers at once on one household's log: every receipt proves its entry, and every
/// checkpoint handed out is a prefix of the final tree (no two are inconsistent).
async fn concurrent_writers_never_sign_a_fork(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ChainStore> = match backend {
        Backend::Sqlite => Arc::new(SqliteStore::open(&dir.path().join("t.db")).unwrap()),
        Backend::Dynamo => {
            let store =
                DynamoStore::new(Moto::shared().dynamodb_client(), unique_name("hearth-tlog"));
            store.ensure_table().await.unwrap();
            Stores::shared(Arc::new(store)).chains
        }
    };
    let keys = Arc::new(LogKeys::new("hearth.example", &[(1, [5; 32])]).unwrap());
    // Each writer is its own service (its own per-chain lock), as separate Lambda instances
    // are: their appends really race through the store's conditional writes. A writer told
    // the chain is busy tries again, as a client would.
    let writers: Vec<_> = (0..8)
        .map(|n| {
            let service = WhyService::new(store.clone(), Arc::new(SystemClock))
                .with_log_keys(Some(keys.clone()));
            tokio::spawn(async move {
                let inputs = Map::new();
                let action = format!("writer {n}");
                loop {
                    let decision = NewDecision {
                        household_id: "home",
                        action: &action,
                        reason: "racing",
                        inputs: &inputs,
                        approver: "Dana",
                    };
                    match service
                        .record(&Caller::unattested("race-scope"), decision)
                        .await
                    {
                        Ok(record) => return record,
                        Err(hearth_core::why::WhyError::Busy) => continue,
                        Err(error) => panic!("writer {n}: {error}"),
                    }
                }
            })
        })
        .collect();
    let verifier = keys.verifiers()[0].clone();
    let mut checkpoints = Vec::new();
    for writer in writers {
        let record = writer.await.unwrap();
        let (_, checkpoint) = check_receipt(
            record["tlog_proof"].as_str().unwrap(),
            record["trace_id"].as_str().unwrap(),
            &verifier,
        );
        checkpoints.push(checkpoint);
    }
    let mut sizes: Vec<u64> = checkpoints.iter().map(|c| c.size).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, (1..=8).collect::<Vec<_>>(), "one leaf per writer");
    let key =
        hearth_core::why::service::chain_key_in(&Caller::unattested("race-scope").scope, "home");
    for checkpoint in &checkpoints {
        let (signed, proof) = history(
            store.as_ref(),
            &keys,
            LogKind::Decisions,
            &key,
            checkpoint.size,
            hearth_core::clock::unix_ms(time::OffsetDateTime::now_utc()),
            None,
        )
        .await
        .unwrap();
        let last = read_checkpoint(&signed, &verifier);
        let proof: Vec<Hash> = proof
            .iter()
            .map(|item| STANDARD.decode(item).unwrap().try_into().unwrap())
            .collect();
        assert!(
            verify_consistency(
                checkpoint.size,
                &checkpoint.root,
                last.size,
                &last.root,
                &proof
            ),
            "the checkpoint of {} is a prefix of the final tree",
            checkpoint.size
        );
    }
}

on_both_stores!(concurrent_writers_never_sign_a_fork);

/// Dana orders AA batteries, which the demo household's rules place at once; returns the
/// tool's structured result.
async fn place_batteries(device: &Device) -> Value {
    let placed = device
        .call(
            Turn::new("dana", &["order a 4 pack of AA batteries"]),
            "propose_purchase",
            json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}),
        )
        .await;
    ok(&placed).clone()
}

/// The ledger's history, like every other ledger read, is for a signed speaker: without one
/// `prove_history` refuses for the ledger, and still answers for the decisions.
#[tokio::test]
async fn proving_the_ledgers_history_needs_a_signed_speaker() {
    let h = harness(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)]);
    let device = Device::new(h.router.clone(), h.clock.clone());
    let placed = place_batteries(&device).await;
    let household = placed["placed"]["receipt"]["household_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let arguments = json!({"household_id": household, "log": "ledger", "from_size": 0});
    let unsigned = call_tool(&h.router, "prove_history", arguments.clone()).await;
    assert_eq!(unsigned["isError"], true, "{unsigned}");
    assert!(
        unsigned["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("without knowing who is speaking"),
        "{unsigned}"
    );
    let signed = device
        .call(
            Turn::new("dana", &["prove what we bought"]),
            "prove_history",
            arguments,
        )
        .await;
    assert_eq!(
        ok(&signed)["checkpoint"].as_str().unwrap().lines().nth(1),
        Some("1")
    );
    call_tool(&h.router, "record_decision", decision("dim the lights")).await;
    let decisions = prove(&h.router, "decisions", 0).await;
    assert_ne!(decisions["isError"], true, "{decisions}");
}

/// After the operator starts a household's ledger log anew (`hearth admin log reset`), a
/// proof kept from the old log checks as "the log was replaced", never as another
/// household's, and the new log's proofs hold.
#[tokio::test]
async fn a_ledger_proof_from_before_a_log_reset_checks_as_replaced() {
    let h = harness(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)]);
    let device = Device::new(h.router.clone(), h.clock.clone());
    let placed = place_batteries(&device).await;
    let kept = placed["tlog_proof"].as_str().unwrap().to_owned();
    let household = placed["placed"]["receipt"]["household_id"]
        .as_str()
        .unwrap();

    let vars = common::settings(&[]);
    let borrowed: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let config = common::config(&borrowed);
    let store = Arc::new(SqliteStore::open(&h.db_path()).unwrap());
    let ledger = hearth_core::countersign::ledger::Ledger::new(store, Arc::new(SystemClock))
        .with_log_keys(hearth_core::app::log_keys(&config));
    let caller = hearth_core::auth::Subject::of_judge_token(common::TOKEN).caller();
    let weeks = hearth_core::countersign::household::Weeks::new("UTC", "monday").unwrap();
    let reset = ledger.reset_log(&caller, household, &weeks).await.unwrap();
    assert!(
        reset
            .tlog_proof
            .unwrap()
            .starts_with("c2sp.org/tlog-proof@v1\nindex 0\n")
    );

    let check = |receipt: String| {
        let device = &device;
        async move {
            let result = device
                .call(
                    Turn::new("dana", &["check my receipt"]),
                    "check_receipt",
                    json!({"receipt": receipt}),
                )
                .await;
            ok(&result).clone()
        }
    };
    let old = check(kept).await;
    assert_eq!(old["verdict"], "log_replaced", "{old}");
    assert!(
        old["say"]
            .as_str()
            .unwrap()
            .contains("the log was replaced"),
        "{old}"
    );
    let again = device
        .call(
            Turn::new("dana", &["and two packs of paper towels"]),
            "propose_purchase",
            json!({"product_id": "paper-towels", "variant_id": "6-rolls", "quantity": 2}),
        )
        .await;
    let fresh = ok(&again)["tlog_proof"].as_str().unwrap().to_owned();
    assert!(
        fresh.starts_with("c2sp.org/tlog-proof@v1\nindex 1\n"),
        "{fresh}"
    );
    assert_eq!(check(fresh).await["verdict"], "matches");
}
