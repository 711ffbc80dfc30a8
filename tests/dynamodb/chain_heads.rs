//! The chain's head item holds its log's head: what a table written before that reads as, how
//! the next append moves a log head stored apart, and how the merged item expires.

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use hearth_core::accounts::{Standing, new_household_id};
use hearth_core::auth::{Caller, household_scope};
use hearth_core::clock::{Clock, ManualClock, unix_ms};
use hearth_core::store::{ChainKey, ChainStore, LogHead, StoreError};
use hearth_core::transparency::{LogKeys, LogKind};
use hearth_core::why::service::Lookup;
use hearth_core::why::{WhyService, limits};
use hearth_testkit::moto::Moto;
use serde_json::Map;

use super::{counted_store, decision};

type Item = HashMap<String, AttributeValue>;

/// The log head's attributes in the head item.
const MERGED_LOG: [&str; 6] = [
    "log_head_id",
    "log_epoch",
    "log_size",
    "log_frontier",
    "log_checkpoint",
    "log_expires_at_ms",
];

struct Household {
    service: WhyService,
    store: Arc<hearth_core::store::dynamodb::DynamoStore>,
    clock: Arc<ManualClock>,
    table: String,
    id: String,
    caller: Caller,
}

impl Household {
    async fn new(moto: &Moto) -> Self {
        let (store, _, table) = counted_store(moto).await;
        let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
        let keys = LogKeys::new("hearth.example", &[(1, [7; 32])]).unwrap();
        let service =
            WhyService::new(store.clone(), clock.clone()).with_log_keys(Some(Arc::new(keys)));
        let id = new_household_id();
        let caller = Caller::of_household(&id, Standing::Current);
        Self {
            service,
            store,
            clock,
            table,
            id,
            caller,
        }
    }

    async fn record(&self, action: &str) {
        let inputs = Map::new();
        self.service
            .record(&self.caller, decision(&self.id, action, &inputs))
            .await
            .unwrap();
    }

    fn key(&self) -> ChainKey {
        ChainKey {
            scope: format!("{}/why", household_scope(&self.id)),
            name: self.id.clone(),
        }
    }

    fn pk(&self) -> String {
        let key = self.key();
        format!("chain#{}#{}", key.scope, key.name)
    }

    async fn item(&self, sk: &str) -> Option<Item> {
        Moto::shared()
            .dynamodb_client()
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(self.pk()))
            .key("sk", AttributeValue::S(sk.into()))
            .send()
            .await
            .unwrap()
            .item
    }

    /// The checkpoint and proofs `get_trace` hands out for `action`, as text.
    async fn trace(&self, action: &str) -> (String, String) {
        let found = self
            .service
            .explain(&self.caller, &self.id, &Lookup::Action(action.into()))
            .await
            .unwrap();
        let traced = self
            .service
            .trace(&self.caller, &self.id, &found.trace_id)
            .await
            .unwrap();
        let log = traced.log.expect("a signed log");
        (log.checkpoint, format!("{:?}", log.proofs))
    }

    /// Signs `log`'s head again with the checkpoint it has (what a log key rotation does,
    /// with a new signature), expecting `outcome`.
    async fn resign(&self, log: &LogHead, outcome: Result<(), StoreError>) {
        let resigned = self
            .store
            .resign_log(&self.key(), log, &log.checkpoint)
            .await;
        assert_eq!(resigned, outcome, "{log:?}");
    }

    /// Rewrites the chain's items as a table written before the merge held them: the log's
    /// head in an item of its own (`sk` `log`, frontier in hex), the head item with the
    /// window's TTL and its newest record's hash in hex.
    async fn store_the_log_apart(&self) {
        let client = Moto::shared().dynamodb_client();
        let head = self.item("head").await.unwrap();
        let mut apart: Item = HashMap::from([
            ("pk".into(), AttributeValue::S(self.pk())),
            ("sk".into(), AttributeValue::S("log".into())),
            // The log's id is stored once, as the window's, when the two are the same.
            (
                "log_id".into(),
                head.get("log_head_id").unwrap_or(&head["log_id"]).clone(),
            ),
            ("epoch".into(), head["log_epoch"].clone()),
            ("tree_size".into(), head["log_size"].clone()),
            ("checkpoint".into(), head["log_checkpoint"].clone()),
        ]);
        if let Some(AttributeValue::B(frontier)) = head.get("log_frontier") {
            apart.insert(
                "frontier".into(),
                AttributeValue::S(hex::encode(frontier.as_ref())),
            );
        }
        client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(apart))
            .send()
            .await
            .unwrap();
        let window_ends: i64 = head["expires_at_ms"].as_n().unwrap().parse().unwrap();
        client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(self.pk()))
            .key("sk", AttributeValue::S("head".into()))
            .update_expression(format!(
                "SET expires_at = :ttl, last_hash = :hash REMOVE {}",
                MERGED_LOG.join(", ")
            ))
            .expression_attribute_values(
                ":ttl",
                AttributeValue::N((window_ends / 1000).to_string()),
            )
            // The newest record's hash as text, as tables written before held it.
            .expression_attribute_values(
                ":hash",
                AttributeValue::S(hex::encode(head["last_hash"].as_b().unwrap())),
            )
            .send()
            .await
            .unwrap();
    }
}

fn number(item: &Item, name: &str) -> i64 {
    item[name].as_n().unwrap().parse().unwrap()
}

/// A table written before the merge is read as it stands, and the chain's next append moves
/// its log head into the head item, deleting the item apart in the same transaction: proofs
/// handed out before and after verify against the same log.
#[tokio::test]
async fn a_log_head_stored_apart_is_read_and_the_next_append_moves_it() {
    let household = Household::new(Moto::shared()).await;
    for action in ["one", "two", "three"] {
        household.record(action).await;
    }
    let before = household.trace("two").await;
    household.store_the_log_apart().await;
    assert!(household.item("log").await.is_some());
    assert!(
        !household
            .item("head")
            .await
            .unwrap()
            .contains_key("log_epoch")
    );

    // Read as it stands: the same checkpoint and proofs.
    assert_eq!(household.trace("two").await, before);
    let read = household
        .store
        .log_head(&household.key(), unix_ms(household.clock.now()))
        .await
        .unwrap();
    assert_eq!(read.log.as_ref().map(|log| log.size), Some(3));
    assert_eq!(read.named, read.log.as_ref().map(|log| log.log_id.clone()));
    // A re-signing (log key rotation) finds it there too, and only as read.
    let log = read.log.unwrap();
    household.resign(&log, Ok(())).await;
    let stale = LogHead {
        size: 2,
        ..log.clone()
    };
    household.resign(&stale, Err(StoreError::Conflict)).await;

    // The next append moves it.
    household.record("four").await;
    assert!(
        household.item("log").await.is_none(),
        "the item apart is gone"
    );
    let head = household.item("head").await.unwrap();
    assert_eq!(number(&head, "log_size"), 4);
    assert_eq!(number(&head, "last_seq"), 4);
    assert_eq!(
        head["last_hash"].as_b().map(|hash| hash.as_ref().len()),
        Ok(32)
    );
    assert!(
        !head.contains_key("expires_at"),
        "a household's log is kept for good: its head item has no TTL"
    );
    let moved = household
        .store
        .log_head(&household.key(), unix_ms(household.clock.now()))
        .await
        .unwrap()
        .log
        .unwrap();
    household.resign(&moved, Ok(())).await;
    household.resign(&log, Err(StoreError::Conflict)).await;
    let (checkpoint, proofs) = household.trace("four").await;
    assert!(checkpoint.contains("\n4\n"), "{checkpoint}");
    assert_ne!((checkpoint, proofs), before);
    household
        .service
        .history(&household.caller, &household.id, LogKind::Decisions, 3)
        .await
        .expect("the tree of three is a prefix of the tree of four");
}

/// A household's window ends by its `expires_at_ms`, which reads compare with the clock: the
/// head item carries no TTL, so its log head outlives the window, and the next window's first
/// append grows the same log.
#[tokio::test]
async fn a_households_window_ends_by_the_clock_and_its_log_head_outlives_it() {
    let household = Household::new(Moto::shared()).await;
    household.record("one").await;
    household.record("two").await;
    let head = household.item("head").await.unwrap();
    assert!(!head.contains_key("expires_at"), "{head:?}");
    assert!(
        !head.contains_key("log_head_id"),
        "stored once, as the window's log_id"
    );
    let log_id = head["log_id"].clone();

    household
        .clock
        .advance(time::Duration::milliseconds(limits::WINDOW_MS + 1));
    let now_ms = unix_ms(household.clock.now());
    let key = household.key();
    assert!(household.store.load(&key, now_ms).await.unwrap().is_none());
    let read = household.store.log_head(&key, now_ms).await.unwrap();
    assert_eq!(read.log.as_ref().map(|log| log.size), Some(2));

    household.record("three").await;
    let head = household.item("head").await.unwrap();
    assert_eq!(head["log_id"], log_id, "the same log");
    assert_eq!(number(&head, "log_size"), 3);
    assert_eq!(number(&head, "last_seq"), 1, "a new window");
    assert!(!head.contains_key("expires_at"));
}

/// A credential's log lives with its window and retires a week after it: the head item's TTL
/// is the log's, never the window's, which would delete the log head with the window.
#[tokio::test]
async fn a_credentials_head_item_expires_with_its_log_not_its_window() {
    let (store, _, table) = counted_store(Moto::shared()).await;
    let keys = LogKeys::new("hearth.example", &[(1, [7; 32])]).unwrap();
    let service = WhyService::new(store, super::clock()).with_log_keys(Some(Arc::new(keys)));
    let inputs = Map::new();
    service
        .record(&super::caller(), decision("home", "one", &inputs))
        .await
        .unwrap();
    let head = Moto::shared()
        .dynamodb_client()
        .get_item()
        .table_name(&table)
        .key(
            "pk",
            AttributeValue::S(format!("chain#{}/why#home", super::caller().scope)),
        )
        .key("sk", AttributeValue::S("head".into()))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    let window_ends = number(&head, "expires_at_ms");
    let log_retires = number(&head, "log_expires_at_ms");
    assert_eq!(
        log_retires - window_ends,
        hearth_core::store::LOG_RETIREMENT_MS
    );
    // In whole seconds, rounded up: the TTL never falls before the log retires.
    assert_eq!(number(&head, "expires_at"), (log_retires + 999) / 1000);
}
