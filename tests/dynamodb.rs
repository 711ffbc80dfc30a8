//! The DynamoDB store beyond the shared contract, against moto on loopback: what each
//! operation costs in SDK calls, item sizes at the largest arguments, tampering done directly
//! in the table, an emulator that stops and comes back, and the `hearth` binary run with
//! `HEARTH_TABLE`.

/// What each call costs, and each function's requests against its role.
#[path = "dynamodb/chain_heads.rs"]
mod chain_heads;
mod common;
#[path = "dynamodb/round_trips.rs"]
mod round_trips;

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use common::process::Server;
use common::{TOKEN, harness_over, settings};
use hearth_core::auth::Caller;
use hearth_core::chain::sha256_hex;
use hearth_core::clock::ManualClock;
use hearth_core::config::RateLimits;
use hearth_core::ratelimit::{Admission, RateLimiter};
use hearth_core::store::dynamodb::DynamoStore;
use hearth_core::store::{
    Append, ChainKey, ChainStore, LogHead, LogRead, Snapshot, StoreError, Stores, Winner,
};
use hearth_core::why::limits;
use hearth_core::why::record::NewDecision;
use hearth_core::why::service::Lookup;
use hearth_core::why::{WhyError, WhyService};
use hearth_testkit::CallCounter;
use hearth_testkit::moto::{Moto, unique_name};
use serde_json::{Map, Value, json};

/// A store over a fresh table, with every SDK call counted.
async fn counted_store(moto: &Moto) -> (Arc<DynamoStore>, CallCounter, String) {
    let (client, counter) = moto.counted_dynamodb_client();
    let table = unique_name("hearth-dynamodb");
    let store = DynamoStore::new(client, table.clone());
    store.ensure_table().await.expect("create the table");
    counter.take();
    (Arc::new(store), counter, table)
}

fn caller() -> Caller {
    Caller::unattested(sha256_hex("dynamodb-test-subject"))
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()))
}

fn decision<'a>(
    household: &'a str,
    action: &'a str,
    inputs: &'a Map<String, Value>,
) -> NewDecision<'a> {
    NewDecision {
        household_id: household,
        action,
        reason: "because the test says so",
        inputs,
        approver: "Tester",
    }
}

/// With the logs signed, an append still costs one read and one conditional write: the log
/// head comes with the window's Query and goes back in the same transaction.
#[tokio::test]
async fn a_signed_log_adds_no_call_to_an_append() {
    let (store, calls, _) = counted_store(Moto::shared()).await;
    let keys = hearth_core::transparency::LogKeys::new("hearth.example", &[(1, [7; 32])]).unwrap();
    let service = WhyService::new(store.clone(), clock()).with_log_keys(Some(Arc::new(keys)));
    let inputs = Map::new();
    let me = caller();
    service
        .record(&me, decision("home", "first", &inputs))
        .await
        .unwrap();
    assert_eq!(
        calls.take(),
        3,
        "opening a window: Query, registry GetItem, TransactWriteItems"
    );
    for n in 2..=30 {
        let record = service
            .record(&me, decision("home", &format!("decision {n}"), &inputs))
            .await
            .unwrap();
        assert!(record["tlog_proof"].is_string());
        assert_eq!(calls.take(), 2, "append {n}: Query, TransactWriteItems");
    }
    let trace = service
        .explain(&me, "home", &Lookup::Action("decision 29".into()))
        .await
        .unwrap();
    calls.take();
    let traced = service.trace(&me, "home", &trace.trace_id).await.unwrap();
    assert_eq!(traced.log.unwrap().proofs.len(), 25);
    assert_eq!(
        calls.take(),
        1,
        "get_trace: the Query alone, its proofs computed from the window's log base"
    );
    service
        .history(
            &me,
            "home",
            hearth_core::transparency::LogKind::Decisions,
            7,
        )
        .await
        .unwrap();
    assert_eq!(
        calls.take(),
        2,
        "prove_history: the log head, one BatchGetItem"
    );
}

#[tokio::test]
async fn each_operation_costs_a_fixed_number_of_calls() {
    let (store, calls, _) = counted_store(Moto::shared()).await;
    let service = WhyService::new(store.clone(), clock());
    let inputs = Map::new();
    let me = caller();

    service
        .record(&me, decision("home", "first", &inputs))
        .await
        .unwrap();
    assert_eq!(
        calls.take(),
        3,
        "opening a window: Query, registry GetItem, TransactWriteItems"
    );
    let second = service
        .record(&me, decision("home", "second", &inputs))
        .await
        .unwrap();
    assert_eq!(calls.take(), 2, "an append: Query, TransactWriteItems");
    for n in 3..=30 {
        service
            .record(&me, decision("home", &format!("decision {n}"), &inputs))
            .await
            .unwrap();
        assert_eq!(
            calls.take(),
            2,
            "an append that evicts: still Query, TransactWriteItems"
        );
    }

    service
        .explain(&me, "home", &Lookup::Action("decision 30".into()))
        .await
        .unwrap();
    assert_eq!(calls.take(), 1, "explain_why: one Query");
    let since = second["recorded_at"].as_str().unwrap();
    service.changes_since(&me, "home", since).await.unwrap();
    assert_eq!(calls.take(), 1, "whats_changed: one Query");
    let trace = service
        .explain(&me, "home", &Lookup::Action("decision 29".into()))
        .await
        .unwrap();
    calls.take();
    service.trace(&me, "home", &trace.trace_id).await.unwrap();
    assert_eq!(calls.take(), 1, "get_trace: one Query");

    let limits = RateLimits {
        per_subject: 60,
        per_ip: 120,
    };
    let limiter = RateLimiter::new(store, clock(), limits);
    let admitted = limiter
        .admit(Some("203.0.113.7".parse().unwrap()), Some(&me))
        .await;
    assert_eq!(admitted, Admission::Admitted);
    assert_eq!(
        calls.take(),
        2,
        "the rate limiter: the subject's conditional UpdateItem and the address's GetItem, sent together"
    );
}

/// A DynamoDB store over which, just before the first append it is asked for, a rival
/// instance (a service of its own, as another Lambda instance is) lands a decision: that
/// append loses its race exactly once.
struct RacedOnce {
    inner: Arc<DynamoStore>,
    calls: CallCounter,
    rival: tokio::sync::Mutex<Option<WhyService>>,
    /// The calls made before the rival's turn, which `calls` no longer holds.
    calls_before_rival: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl ChainStore for RacedOnce {
    async fn load(&self, key: &ChainKey, now_ms: i64) -> Result<Option<Snapshot>, StoreError> {
        self.inner.load(key, now_ms).await
    }

    async fn load_for_append(
        &self,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<(Option<Snapshot>, Option<LogHead>), StoreError> {
        self.inner.load_for_append(key, now_ms).await
    }

    async fn log_head(&self, key: &ChainKey, now_ms: i64) -> Result<LogRead, StoreError> {
        self.inner.log_head(key, now_ms).await
    }

    async fn signed_log_heads(&self, now_ms: i64) -> Result<Vec<(ChainKey, LogHead)>, StoreError> {
        self.inner.signed_log_heads(now_ms).await
    }

    async fn resign_log(
        &self,
        key: &ChainKey,
        expected: &LogHead,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        self.inner.resign_log(key, expected, checkpoint).await
    }

    async fn log_hashes(
        &self,
        key: &ChainKey,
        leaves: &[u64],
    ) -> Result<std::collections::HashMap<u64, Vec<[u8; 32]>>, StoreError> {
        self.inner.log_hashes(key, leaves).await
    }

    async fn append_together(
        &self,
        key: &ChainKey,
        appends: Vec<Append>,
        now_ms: i64,
    ) -> Result<(), (StoreError, Option<Winner>)> {
        if let Some(rival) = self.rival.lock().await.take() {
            self.calls_before_rival
                .store(self.calls.take(), std::sync::atomic::Ordering::SeqCst);
            let inputs = Map::new();
            rival
                .record(&caller(), decision("home", "the rival's", &inputs))
                .await
                .unwrap();
            self.calls.take();
        }
        self.inner.append_together(key, appends, now_ms).await
    }

    async fn remove(&self, key: &ChainKey) -> Result<usize, StoreError> {
        self.inner.remove(key).await
    }

    async fn relocate(
        &self,
        from: &ChainKey,
        to: &ChainKey,
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        self.inner.relocate(from, to, now_ms).await
    }
}

/// What the HTTP layer read ahead of an append (its window and log head, beside admission)
/// serves the append's first attempt. When another instance appended after that read, the
/// attempt is refused, naming the winner, and the retry lands after it: one refused write,
/// no second read, nothing lost.
#[tokio::test]
async fn a_stale_read_ahead_costs_one_refused_write_and_loses_nothing() {
    use hearth_core::clock::{Clock, unix_ms};
    use hearth_core::store::ChainRead;
    let (store, calls, _) = counted_store(Moto::shared()).await;
    let clock = clock();
    let inputs = Map::new();
    let service = WhyService::new(store.clone(), clock.clone());
    service
        .record(&caller(), decision("home", "first", &inputs))
        .await
        .unwrap();
    let mut me = caller();
    let key = hearth_core::why::service::chain_key_in(&me.scope, "home");
    let now_ms = unix_ms(clock.now());
    me.read_ahead = Some(Arc::new(
        ChainRead::read_with_log(store.as_ref(), key, now_ms).await,
    ));
    WhyService::new(store.clone(), clock.clone())
        .record(&caller(), decision("home", "the rival's", &inputs))
        .await
        .unwrap();
    calls.take();
    let ours = service
        .record(&me, decision("home", "ours", &inputs))
        .await
        .unwrap();
    let operations: Vec<String> = calls
        .take_calls()
        .into_iter()
        .map(|call| call.operation)
        .collect();
    assert_eq!(
        operations,
        ["TransactWriteItems", "TransactWriteItems"],
        "the refused write and the retry's, and no Query: the first attempt started from the read ahead"
    );
    assert_eq!(ours["seq"], 3, "after the rival's decision 2");
    let trace = service
        .trace(&caller(), "home", ours["trace_id"].as_str().unwrap())
        .await
        .unwrap();
    let actions: Vec<&str> = trace
        .records
        .iter()
        .map(|record| record["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["first", "the rival's", "ours"],
        "the chain verifies, in order"
    );
}

/// Across instances no process lock spares DynamoDB a collision: a lost append learns the
/// winning heads from its own refusal (`ALL_OLD`) and retries with one more
/// TransactWriteItems, never a second Query. Once it has lost a race, the chain is hot for
/// that instance: its next appends start from the heads its last one left, without a Query.
/// Nothing is lost, and the chain and its log hold every decision in order.
#[tokio::test]
async fn a_lost_race_is_retried_from_the_winning_heads_without_reading_again() {
    let (store, calls, _) = counted_store(Moto::shared()).await;
    let clock = clock();
    let inputs = Map::new();
    let me = caller();
    WhyService::new(store.clone(), clock.clone())
        .record(&me, decision("home", "first", &inputs))
        .await
        .unwrap();
    calls.take();
    // The rival's append lands inside our call, so on moto under a loaded test run the two
    // can take longer than a voice call's quarter second: what is tested is the retry, not
    // moto's speed.
    let budget = std::time::Duration::from_secs(10);
    let raced = Arc::new(RacedOnce {
        inner: store.clone(),
        calls: calls.clone(),
        rival: tokio::sync::Mutex::new(Some(
            WhyService::new(store.clone(), clock.clone()).with_append_budget(budget),
        )),
        calls_before_rival: Default::default(),
    });
    let our_instance = WhyService::new(raced.clone(), clock.clone()).with_append_budget(budget);
    let ours = our_instance
        .record(&me, decision("home", "ours", &inputs))
        .await
        .unwrap();
    let before = raced
        .calls_before_rival
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(before, 1, "the read the append was planned from: one Query");
    assert_eq!(
        calls.take(),
        2,
        "the lost TransactWriteItems, then the retry's, and no Query between them"
    );
    assert_eq!(ours["seq"], 3, "after the rival's decision 2");

    // The chain is hot for this instance now (it lost a race for it): its next append starts
    // from the heads its last one left, and learns of any newer ones from its refusal.
    our_instance
        .record(&me, decision("home", "ours again", &inputs))
        .await
        .unwrap();
    assert_eq!(
        calls.take(),
        1,
        "a hot chain: one TransactWriteItems, no Query"
    );
    WhyService::new(store.clone(), clock.clone())
        .record(&me, decision("home", "another rival's", &inputs))
        .await
        .unwrap();
    calls.take();
    let last = our_instance
        .record(&me, decision("home", "ours last", &inputs))
        .await
        .unwrap();
    assert_eq!(
        calls.take(),
        2,
        "refused (naming the rival's heads), then landed: still no Query"
    );
    assert_eq!(last["seq"], 6);

    let key = hearth_core::why::service::chain_key_in(&me.scope, "home");
    let now_ms = hearth_core::clock::unix_ms(time::OffsetDateTime::now_utc());
    let snapshot = store.load(&key, now_ms).await.unwrap().unwrap();
    hearth_core::chain::verify(
        &snapshot.records,
        snapshot.head.anchor.as_deref(),
        &snapshot.head.last_hash,
    )
    .unwrap();
    let actions: Vec<String> = snapshot
        .records
        .iter()
        .map(|record| {
            let body: Value = serde_json::from_str(&record.body).unwrap();
            body["action"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        actions,
        [
            "first",
            "the rival's",
            "ours",
            "ours again",
            "another rival's",
            "ours last"
        ]
    );
    let log = store.log_head(&key, now_ms).await.unwrap().log.unwrap();
    assert_eq!(log.size, 6, "every decision is in the log once");
}

#[tokio::test]
async fn items_stay_far_below_the_400_kb_item_limit_at_the_largest_arguments() {
    let moto = Moto::shared();
    let (store, _, table) = counted_store(moto).await;
    let service = WhyService::new(store, clock());
    // The worst case for size: every string at its limit in characters that canonical JSON
    // escapes to twelve bytes each, and inputs at their canonical byte limit.
    let household = "h".repeat(limits::HOUSEHOLD_ID_MAX);
    let action = "\u{1F600}".repeat(limits::ACTION_MAX);
    let reason = "\u{1F600}".repeat(limits::REASON_MAX);
    let approver = "\u{1F600}".repeat(limits::APPROVER_MAX);
    let mut inputs = Map::new();
    inputs.insert(
        "k".into(),
        Value::String("x".repeat(limits::INPUTS_MAX_BYTES - 8)),
    );
    let decision = NewDecision {
        household_id: &household,
        action: &action,
        reason: &reason,
        inputs: &inputs,
        approver: &approver,
    };
    service
        .record(&caller(), decision)
        .await
        .expect("the largest decision is accepted");
    let items = moto
        .dynamodb_client()
        .scan()
        .table_name(&table)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    let largest = items.iter().map(item_size).max().unwrap();
    assert!(
        largest > 20_000,
        "the worst case was really built: {largest} bytes"
    );
    assert!(
        largest < 100_000,
        "an item of {largest} bytes is too close to 400 KB"
    );
}

/// DynamoDB's item size: attribute names plus values (strings and numbers by length).
fn item_size(item: &std::collections::HashMap<String, AttributeValue>) -> usize {
    fn value_size(value: &AttributeValue) -> usize {
        match value {
            AttributeValue::S(text) | AttributeValue::N(text) => text.len(),
            AttributeValue::M(map) => map.iter().map(|(k, v)| k.len() + value_size(v)).sum(),
            _ => 8,
        }
    }
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

/// Three decisions to one household on a fresh table: the service, the table, the chain's
/// partition key and the store.
async fn three_decisions(moto: &Moto) -> (WhyService, String, String, Arc<DynamoStore>) {
    let (store, _, table) = counted_store(moto).await;
    let service = WhyService::new(store.clone(), clock());
    let inputs = Map::new();
    for action in ["one", "two", "three"] {
        service
            .record(&caller(), decision("home", action, &inputs))
            .await
            .unwrap();
    }
    let pk = format!("chain#{}/why#home", caller().scope);
    (service, table, pk, store)
}

fn record_key(pk: &str, seq: u64) -> std::collections::HashMap<String, AttributeValue> {
    std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
        ("sk".to_owned(), AttributeValue::S(format!("rec#{seq:010}"))),
    ])
}

async fn assert_tamper_named_at(service: &WhyService, position: usize) {
    let inputs = Map::new();
    let read = service
        .explain(&caller(), "home", &Lookup::Action("one".into()))
        .await;
    match read {
        Err(WhyError::Integrity(error)) => assert_eq!(error.position, position, "{error}"),
        other => panic!("expected an integrity error, got {other:?}"),
    }
    let write = service
        .record(&caller(), decision("home", "four", &inputs))
        .await;
    match write {
        Err(WhyError::Integrity(error)) => assert_eq!(error.position, position, "{error}"),
        other => panic!("expected the append to refuse a broken chain, got {other:?}"),
    }
}

#[tokio::test]
async fn tampering_in_the_table_is_named_by_position() {
    let moto = Moto::shared();
    let client = moto.dynamodb_client();

    // A field inside a stored record.
    let (service, table, pk, _) = three_decisions(moto).await;
    let stored = client
        .get_item()
        .table_name(&table)
        .set_key(Some(record_key(&pk, 2)))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    let body = stored["body"].as_s().unwrap().replace("two", "TWO");
    client
        .update_item()
        .table_name(&table)
        .set_key(Some(record_key(&pk, 2)))
        .update_expression("SET body = :body")
        .expression_attribute_values(":body", AttributeValue::S(body))
        .send()
        .await
        .unwrap();
    assert_tamper_named_at(&service, 2).await;

    // A stored hash.
    let (service, table, pk, _) = three_decisions(moto).await;
    client
        .update_item()
        .table_name(&table)
        .set_key(Some(record_key(&pk, 2)))
        .update_expression("SET #hash = :hash")
        .expression_attribute_names("#hash", "hash")
        .expression_attribute_values(":hash", AttributeValue::S("0".repeat(64)))
        .send()
        .await
        .unwrap();
    assert_tamper_named_at(&service, 2).await;

    // A deleted middle record.
    let (service, table, pk, _) = three_decisions(moto).await;
    client
        .delete_item()
        .table_name(&table)
        .set_key(Some(record_key(&pk, 2)))
        .send()
        .await
        .unwrap();
    assert_tamper_named_at(&service, 2).await;
}

/// A log's hash items are written as bytes; one written as hex text by an earlier release
/// reads as the same hashes, so a table is never migrated for it.
#[tokio::test]
async fn a_log_hash_item_written_as_hex_reads_as_before() {
    let moto = Moto::shared();
    let client = moto.dynamodb_client();
    let (_, table, pk, store) = three_decisions(moto).await;
    let key = ChainKey {
        scope: format!("{}/why", caller().scope),
        name: "home".into(),
    };
    let written = store.log_hashes(&key, &[0, 1, 2]).await.unwrap();
    assert_eq!(written.len(), 3);
    let hash_key = std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk)),
        (
            "sk".to_owned(),
            AttributeValue::S(format!("hash#{:020}", 1)),
        ),
    ]);
    let stored = client
        .get_item()
        .table_name(&table)
        .set_key(Some(hash_key.clone()))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    let bytes = stored["hashes"]
        .as_b()
        .expect("written as bytes")
        .as_ref()
        .to_vec();
    assert_eq!(bytes, written[&1].concat());
    client
        .update_item()
        .table_name(&table)
        .set_key(Some(hash_key))
        .update_expression("SET hashes = :hex")
        .expression_attribute_values(":hex", AttributeValue::S(hex::encode(&bytes)))
        .send()
        .await
        .unwrap();
    assert_eq!(store.log_hashes(&key, &[0, 1, 2]).await.unwrap(), written);
}

fn record_call(household: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "record_decision",
        "arguments": {"household_id": household, "action": "dim lights", "reason": "Movie time",
        "inputs": {}, "approver": "Parent"}}})
}

#[tokio::test]
async fn a_stopped_emulator_is_storage_unavailable_and_service_recovers() {
    let mut moto = Moto::start_own();
    let table = unique_name("hearth-outage");
    let store = DynamoStore::new(moto.dynamodb_client(), table.clone());
    store.ensure_table().await.unwrap();
    let store = Arc::new(store);
    let vars = settings(&[]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    // The chains are on the emulator; the counters stay reachable here, so the tool's own
    // answer is what this test sees (the next test covers counters on the emulator too).
    let chains: Arc<dyn ChainStore> = store.clone();
    let h = harness_over(&common::config(&vars), |sqlite| Stores {
        cosigned: sqlite.clone(),
        grants: sqlite.clone(),
        clients: sqlite.clone(),
        chains,
        accounts: sqlite.clone(),
        counters: sqlite,
    });
    let call = |body: Value| {
        let router = h.router.clone();
        async move { common::rpc(&router, &body).await }
    };
    let before = call(record_call("home")).await;
    assert_eq!(before.body["result"]["isError"], false, "{}", before.raw);

    moto.stop();
    let during = call(record_call("home")).await;
    assert_eq!(
        during.status, 200,
        "a tool error, not an HTTP failure: {}",
        during.raw
    );
    assert_eq!(during.body["result"]["isError"], true);
    assert!(during.raw.contains("storage unavailable"), "{}", during.raw);

    moto.restart();
    store.ensure_table().await.unwrap();
    let after = call(record_call("home")).await;
    assert_eq!(after.body["result"]["isError"], false, "{}", after.raw);
}

#[tokio::test]
async fn a_counter_outage_counts_locally_and_the_table_takes_over_when_it_returns() {
    let mut moto = Moto::start_own();
    let (client, counter) = moto.counted_dynamodb_client();
    let store = Arc::new(DynamoStore::new(
        client,
        unique_name("hearth-counter-outage"),
    ));
    store.ensure_table().await.unwrap();
    let vars = settings(&[]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let counters = store.clone();
    let h = harness_over(&common::config(&vars), |sqlite| Stores {
        cosigned: sqlite.clone(),
        grants: sqlite.clone(),
        clients: sqlite.clone(),
        chains: sqlite.clone(),
        accounts: sqlite,
        counters,
    });
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    counter.take();
    assert_eq!(common::rpc(&h.router, &ping).await.status, 200);
    assert_eq!(
        counter.take(),
        2,
        "in the table: the subject counted, the address read"
    );

    moto.stop();
    for _ in 0..3 {
        assert_eq!(
            common::rpc(&h.router, &ping).await.status,
            200,
            "counted here meanwhile"
        );
    }
    assert!(counter.take() >= 1, "the table was tried");

    moto.restart();
    store.ensure_table().await.unwrap();
    counter.take();
    h.clock.advance(time::Duration::milliseconds(
        hearth_core::ratelimit::RETRY_STORE_MS,
    ));
    assert_eq!(common::rpc(&h.router, &ping).await.status, 200);
    assert_eq!(counter.take(), 2, "the table counts again, by itself");
}

/// A server over one new table on the shared emulator, every store on it, with `extra`
/// settings, and the counter of its DynamoDB requests and round trips.
async fn counted_on_dynamodb(
    table: &str,
    extra: &[(&str, &str)],
) -> (common::Harness, CallCounter) {
    let (client, counter) = Moto::shared().counted_dynamodb_client();
    let store = Arc::new(DynamoStore::new(client, unique_name(table)));
    store.ensure_table().await.unwrap();
    let vars = settings(extra);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let h = harness_over(&common::config(&vars), |_| Stores {
        cosigned: store.clone(),
        grants: store.clone(),
        clients: store.clone(),
        chains: store.clone(),
        accounts: store.clone(),
        counters: store.clone(),
    });
    (h, counter)
}

#[tokio::test]
async fn a_read_only_call_is_one_round_trip_and_a_refused_one_returns_nothing_it_read() {
    let (captured, _logs) = common::capture::Captured::installed();
    let (h, counter) = counted_on_dynamodb(
        "hearth-one-round",
        &[("HEARTH_RATE_LIMIT_PER_SUBJECT", "3")],
    )
    .await;
    let recorded = common::rpc(&h.router, &record_call("home")).await;
    assert_eq!(
        recorded.body["result"]["isError"], false,
        "{}",
        recorded.raw
    );
    let explain = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "explain_why", "arguments": {"household_id": "home", "action": "dim lights"}}});

    counter.take();
    let explained = common::rpc(&h.router, &explain).await;
    assert!(explained.raw.contains("Movie time"), "{}", explained.raw);
    assert_eq!(
        counter.take_with_rounds(),
        (3, 1),
        "the rate limiter's subject counter and address read and the window's Query, sent together"
    );

    // The subject's third request this minute is its last: the fourth is refused, though its
    // window was read beside the counters, and nothing read reaches the answer.
    assert_eq!(common::rpc(&h.router, &explain).await.status, 200);
    let refused = common::rpc(&h.router, &explain).await;
    assert_eq!(refused.status, 429, "{}", refused.raw);
    assert!(!refused.raw.contains("Movie time"), "{}", refused.raw);
    assert!(!refused.raw.contains("dim lights"), "{}", refused.raw);
    let (calls, rounds) = counter.take_with_rounds();
    assert_eq!(rounds, 2, "each request one round trip ({calls} calls)");
    // Nor does its log line name what was read of the message beside the counters.
    let refused_line = captured.request_lines().pop().unwrap();
    assert_eq!(refused_line["status"], 429, "{refused_line}");
    assert_eq!(
        (&refused_line["method"], &refused_line["tool"]),
        (&json!("-"), &json!("-")),
        "{refused_line}"
    );
}

/// A history proof from any size a device kept is one round trip, as every read-only call is:
/// the log head and the stored hashes a proof from that size may need are read beside the
/// request's admission. Each proof shows the kept tree a prefix of today's.
#[tokio::test]
async fn a_history_proof_from_any_kept_size_is_one_round_trip() {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    let (h, counter) = counted_on_dynamodb("hearth-history", &[]).await;
    let prove = |from_size: u64| json!({"household_id": "home", "log": "decisions", "from_size": from_size});
    // (size, root) of a signed checkpoint's text.
    let tree = |checkpoint: &Value| -> (u64, [u8; 32]) {
        let lines: Vec<&str> = checkpoint.as_str().unwrap().lines().collect();
        let root = STANDARD.decode(lines[2]).unwrap().try_into().unwrap();
        (lines[1].parse().unwrap(), root)
    };
    let mut kept = Vec::new();
    for n in 1..=13u64 {
        let arguments = json!({"household_id": "home", "action": format!("step {n}"),
            "reason": "because", "inputs": {}, "approver": "Dana"});
        let recorded = common::call_tool(&h.router, "record_decision", arguments).await;
        assert_eq!(recorded["isError"], false, "{recorded}");
        let answer = common::call_tool(&h.router, "prove_history", prove(n)).await;
        let (size, root) = tree(&answer["structuredContent"]["checkpoint"]);
        assert_eq!(size, n);
        kept.push((size, root));
    }
    let (today, today_root) = *kept.last().unwrap();
    for (size, root) in [(0, [0; 32])].into_iter().chain(kept) {
        counter.take();
        let answer = common::call_tool(&h.router, "prove_history", prove(size)).await;
        let (calls, rounds) = counter.take_with_rounds();
        assert_eq!(rounds, 1, "from {size}: {calls} requests");
        assert_eq!(
            tree(&answer["structuredContent"]["checkpoint"]),
            (today, today_root)
        );
        let proof: Vec<[u8; 32]> = answer["structuredContent"]["consistency"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hash| {
                STANDARD
                    .decode(hash.as_str().unwrap())
                    .unwrap()
                    .try_into()
                    .unwrap()
            })
            .collect();
        assert!(
            size == 0
                || hearth_core::tlog::tree::verify_consistency(
                    size,
                    &root,
                    today,
                    &today_root,
                    &proof
                ),
            "from {size}"
        );
    }
}

#[tokio::test]
async fn hearth_table_serves_the_product_from_dynamodb() {
    let moto = Moto::shared();
    let table = unique_name("hearth-binary");
    let data = tempfile::tempdir().unwrap();
    let mut vars = moto.environment();
    vars.push(("HEARTH_TABLE", table.clone()));
    vars.push(("MCP_JUDGE_TOKEN_HASHES", sha256_hex(TOKEN)));
    let server = Server::start(data.path(), &vars);
    let (status, recorded) = server.rpc(TOKEN, &record_call("home"));
    assert_eq!(status, 200);
    assert_eq!(recorded["result"]["isError"], false, "{recorded}");
    let explain = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "explain_why", "arguments": {"household_id": "home", "action": "dim lights"}}});
    let (_, explained) = server.rpc(TOKEN, &explain);
    assert!(
        explained["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Movie time")
    );
    assert!(
        !data.path().join("hearth.db").exists(),
        "nothing stored in SQLite"
    );

    // The server created the table, with TTL on `expires_at`.
    let ttl = moto
        .dynamodb_client()
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let description = ttl.time_to_live_description.unwrap();
    assert_eq!(description.attribute_name.as_deref(), Some("expires_at"));
    assert_eq!(description.time_to_live_status.unwrap().as_str(), "ENABLED");
}

#[tokio::test]
async fn an_unreachable_table_at_start_is_reported_not_fatal() {
    let data = tempfile::tempdir().unwrap();
    let closed = common::process::free_port();
    let vars = vec![
        ("HEARTH_TABLE", "hearth-nowhere".to_owned()),
        ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{closed}")),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
        ("MCP_JUDGE_TOKEN_HASHES", sha256_hex(TOKEN)),
    ];
    let mut server = Server::start(data.path(), &vars);
    let (status, _) = common::process::http(server.port, "GET", "/healthz", &[], "");
    assert_eq!(status, 200);
    // The rate counters live in the same table. An unreachable table is an outage, not a
    // misconfiguration: the limiter counts in this process, what needs no store keeps
    // working, and the store-backed tools say storage is unavailable.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for _ in 0..3 {
        let (status, body) = server.rpc(TOKEN, &ping);
        assert_eq!(status, 200, "{body}");
    }
    let (status, listed) = server.rpc(
        TOKEN,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(status, 200);
    assert!(listed["result"]["tools"].as_array().unwrap().len() > 10);
    let catalog = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "scholia_catalog", "arguments": {}}});
    let (_, catalog) = server.rpc(TOKEN, &catalog);
    assert_eq!(catalog["result"]["isError"], false, "{catalog}");
    let (status, recorded) = server.rpc(TOKEN, &record_call("home"));
    assert_eq!(status, 200);
    assert_eq!(recorded["result"]["isError"], true);
    assert!(
        recorded.to_string().contains("storage unavailable"),
        "{recorded}"
    );
    assert!(server.is_running());
    let log = server.stop();
    assert!(
        log.contains("the DynamoDB table could not be checked or created"),
        "{log}"
    );
    assert_eq!(
        log.matches("rate-limit counters unreachable").count(),
        1,
        "six requests, one line for the outage: {log}"
    );
}
