//! The production store: one DynamoDB table, named by `HEARTH_TABLE`, holding every chain and
//! the rate counters. Appends are optimistic: a transactional write conditioned on the chain
//! head the caller read, so a half-written append cannot exist and a lost race is a
//! [`StoreError::Conflict`] recognised from the SDK's error variant.
//!
//! Item layout (`pk` and `sk` are strings; `expires_at` is the table's TTL attribute, in epoch
//! seconds, on every item that belongs to an expiring window):
//!
//! | Item | `pk` | `sk` | Attributes |
//! | --- | --- | --- | --- |
//! | chain head | `chain#<scope>#<name>` | `head` | the window: `window_started_ms`, `expires_at_ms`, `first_seq`, `last_seq`, `last_hash` and `anchor` (binary, 32 bytes; text in items written before; `anchor` absent until an eviction), `log_id` (the log the window names, absent before it has one), `log_base_size` and `log_base` (binary: the log's frontier just before the oldest retained record, so that `get_trace`'s proofs need no read of the hashes; absent for a window begun before it was kept); and the log's head: `log_head_id` (absent when it is `log_id`), `log_epoch`, `log_size`, `log_frontier` (binary, absent when empty), `log_checkpoint` (absent when none), `log_expires_at_ms` (absent for a log kept for good). `expires_at` is the log's (none for a household account's log, its window's end plus a week for a credential's) or, for a chain without a log, the window's; see `chain_head` |
//! | chain record | `chain#<scope>#<name>` | `rec#<seq, 10 digits>` | `seq`, `hash`, `body` (the sealed canonical JSON), `window_started_ms`, `expires_at` |
//! | log head, apart | `chain#<scope>#<name>` | `log` | tables written before the log head moved into the head item: `log_id`, `epoch`, `tree_size`, `frontier` (hex, absent when empty), `checkpoint` (absent when none), `expires_at_ms` and `expires_at` for a credential's. Read as before; the chain's next append moves it into the head item and deletes it |
//! | log hashes | `chain#<scope>#<name>` | `hash#<leaf, 20 digits>` | `hashes` (binary: the leaf's hash, then the interior hashes it completed, 32 bytes each; hex text in items written before, read as before); `expires_at` as its log head's |
//! | cosignature | `chain#<scope>#<name>` | `cosig#<witness key name>` | `origin`, `tree_size`, `line`: a witness's latest cosignature of the log, written with a condition that a smaller tree of the same origin never replaces a larger one; `expires_at_ms` and `expires_at` as its log head's. Sorts before `hash#` and `head`, so a chain's reads never see it; the MCP function reads them with one `Query` (`begins_with`) when a proof is handed out |
//! | scope registry | `scope#<scope>` | `registry` | `live` (map: chain name → its window's `expires_at_ms`, kept until its log retires), `version`, `expires_at` |
//! | rate counter | `rate#<counter key>` | `counter` | `hits`, `expires_at_ms`, `expires_at`; one conditional `UpdateItem` each, issued together |
//! | household account | `account#<household id>` | `account` | `revision`, `body` (the account as JSON: name, policy, generation, device keys, revoked families, and `signup_expires_at_ms` for a household made by sign-up and not yet linked); `expires_at` only for such a household (its first link writes the account without it) |
//! | account index | `accounts` | `<household id>` | `name`, `linked`, and for a sign-up not yet linked `signup_expires_at_ms` and `expires_at` as its account's; written in the same transaction as the account, so `household list` is one `Query` |
//! | OAuth client | `client#<client id>` | `client` | `revision`, `body` (the client as JSON; a secret only as its hash), `expires_at_ms` and `expires_at` for a registration not yet used |
//! | client index | `clients` | `<client id>` | the same attributes, written in the same transaction, so `client list` is one `Query` |
//! | linking record | `grant#<kind>#<key>` | `grant` | `revision`, `body`, `expires_at_ms`, `expires_at`; kind is `link`, `code`, `family`, `turn` (a host-key turn's ledger claim), `jti`, `docfail`, `signin` (a household page's sign-in challenge, 5 minutes), `session` (a household page's session, by its cookie's hash), `signup` (an operator's sign-up link, by its token's hash, 7 days) or `passkey` (a credential id's household and member; no TTL, kept until the household is deleted), key a hash, a family id or a credential id |
//!
//! Cost per call: a read is one strongly consistent `Query` of the chain's partition from
//! `head` on (the head and the records sort together; the log's hashes sort before `head` and
//! are never read with them). An append is that read plus one `TransactWriteItems` (the head
//! item, with the log's head in it, the record, the log's hashes and the evicted record;
//! appends landed together put each one's record, hashes and eviction in the same one); an
//! append that opens a new window adds one
//! `GetItem` of the scope registry, whose version guards the cap on live chains. DynamoDB
//! deletes expired items lazily (and emulators never do), so every read ignores expired heads
//! and records of earlier windows itself. A Query is read-committed rather than a snapshot, so
//! a read that races an append is checked against the head (`first_seq..=last_seq`, newest
//! hash) and read again when torn.

mod chain_head;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, Delete, KeySchemaElement, KeyType,
    KeysAndAttributes, Put, ScalarAttributeType, TimeToLiveSpecification, TransactWriteItem,
};

use super::{
    AccountItem, AccountStore, AccountSummary, Append, ChainKey, ChainStore, ClientItem,
    ClientStore, Cosigned, CosignedStore, Counter, CounterStore, GrantItem, GrantKind, GrantStore,
    Head, KEPT_UNTIL_REMOVED_MS, LOG_RETIREMENT_MS, LogAppend, LogHead, LogRead, Snapshot,
    StoreError, Taken, Winner, unchained,
};
use crate::chain::Sealed;
use chain_head::{HEAD_SK, LOG_APART_SK, LogPlace};

type Item = HashMap<String, AttributeValue>;

/// How long one DynamoDB operation may take, retries included, before it is reported as
/// storage unavailable (never as success).
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(5);

/// The TTL attribute the table enables.
pub const TTL_ATTRIBUTE: &str = "expires_at";

pub struct DynamoStore {
    client: Client,
    table: String,
    /// The chains (by `pk`) this process last read with their log head stored apart, as a
    /// table written before the merge holds it: their next append moves it (see
    /// [`chain_head::LogPlace`]). A wrong guess costs one refused write, after which the
    /// chain is read again and the guess corrected.
    logs_apart: Mutex<HashSet<String>>,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            logs_apart: Mutex::new(HashSet::new()),
        }
    }

    /// Notes where a chain's log head was read, for its next append.
    fn note_log_place(&self, pk: &str, place: LogPlace) {
        let mut apart = self
            .logs_apart
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match place {
            LogPlace::Apart => {
                apart.insert(pk.to_owned());
            }
            LogPlace::InHead => {
                apart.remove(pk);
            }
        }
    }

    fn log_place(&self, pk: &str) -> LogPlace {
        let apart = self
            .logs_apart
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match apart.contains(pk) {
            true => LogPlace::Apart,
            false => LogPlace::InHead,
        }
    }

    /// A client for the standard AWS environment (`AWS_REGION`, credentials,
    /// `AWS_ENDPOINT_URL_DYNAMODB` for an emulator) with Hearth's operation timeout. Throttling
    /// and 5xx answers get the SDK's standard retries inside that timeout.
    pub async fn client_from_environment() -> Client {
        let config = aws_sdk_dynamodb::config::Builder::from(crate::aws::sdk_config().await)
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .operation_timeout(OPERATION_TIMEOUT)
                    .build(),
            )
            .build();
        Client::from_conf(config)
    }

    /// Creates the table (on-demand, TTL on `expires_at`) if it does not exist. For local runs
    /// against an emulator; under Lambda the template owns the table and this is never called.
    pub async fn ensure_table(&self) -> Result<(), StoreError> {
        match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(_) => return Ok(()),
            Err(error) if error.code() == Some("ResourceNotFoundException") => {}
            Err(error) => return Err(sdk_unavailable(error)),
        }
        let key = |name: &str, key_type| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(key_type)
                .build()
                .map_err(unavailable)
        };
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(unavailable)
        };
        self.client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key("pk", KeyType::Hash)?)
            .key_schema(key("sk", KeyType::Range)?)
            .attribute_definitions(attribute("pk")?)
            .attribute_definitions(attribute("sk")?)
            .send()
            .await
            .map_err(sdk_unavailable)?;
        self.client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(TTL_ATTRIBUTE)
                    .build()
                    .map_err(unavailable)?,
            )
            .send()
            .await
            .map_err(sdk_unavailable)?;
        Ok(())
    }

    /// Checks that the table exists, without ever creating it: for `hearth admin`. A missing
    /// table is an error that names it.
    pub async fn require_table(&self) -> Result<(), StoreError> {
        match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if error.code() == Some("ResourceNotFoundException") => {
                Err(StoreError::Unavailable(format!(
                    "the DynamoDB table {} does not exist (deploy the template, or run the server once against an emulator)",
                    self.table
                )))
            }
            Err(error) => Err(sdk_unavailable(error)),
        }
    }

    async fn query_partition(&self, pk: &str) -> Result<Vec<Item>, StoreError> {
        self.query_items(pk, None).await
    }

    /// A partition's items, all of them or those whose `sk` is `from` or sorts after it.
    async fn query_items(&self, pk: &str, from: Option<&str>) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let query = self
                .client
                .query()
                .table_name(&self.table)
                .expression_attribute_values(":pk", s(pk));
            let query = match from {
                Some(from) => query
                    .key_condition_expression("pk = :pk AND sk >= :from")
                    .expression_attribute_values(":from", s(from)),
                None => query.key_condition_expression("pk = :pk"),
            };
            let page = query
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(sdk_unavailable)?;
            items.extend(page.items().iter().cloned());
            match page.last_evaluated_key() {
                // A chain's partition is far below one page (1 MB); this only guards the rule.
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => return Ok(items),
            }
        }
    }

    /// One item, read strongly consistently.
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        Ok(self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_of(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_unavailable)?
            .item)
    }

    /// The registry's live chains and version, for the cap check of a window-opening append.
    async fn registry(&self, scope: &str) -> Result<(HashMap<String, i64>, i64), StoreError> {
        let Some(item) = self.get(&registry_pk(scope), "registry").await? else {
            return Ok((HashMap::new(), 0));
        };
        let live = match item.get("live") {
            Some(AttributeValue::M(map)) => map
                .iter()
                .map(|(name, value)| Ok((name.clone(), number(Some(value), "live")?)))
                .collect::<Result<_, StoreError>>()?,
            _ => HashMap::new(),
        };
        Ok((live, number(item.get("version"), "version")?))
    }

    /// Writes an item and its index entry in one transaction: the item's condition failing is
    /// a [`StoreError::Conflict`].
    async fn put_with_index(&self, put: Put, index: Put, what: &str) -> Result<(), StoreError> {
        let items = vec![
            TransactWriteItem::builder().put(put).build(),
            TransactWriteItem::builder().put(index).build(),
        ];
        match self.transact(items).await {
            Ok(()) => Ok(()),
            Err(Cancelled::Codes { codes, .. }) if is_conflict(&codes) => Err(StoreError::Conflict),
            Err(Cancelled::Codes { .. }) => Err(StoreError::Unavailable(format!(
                "DynamoDB cancelled the {what} write"
            ))),
            Err(Cancelled::Failed(error)) => Err(error),
        }
    }

    /// Sends one transaction. When DynamoDB cancels it, the error carries each item's
    /// cancellation code (`None` for an item that was not the reason), in item order.
    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<(), Cancelled> {
        let error = match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => return Ok(()),
            Err(error) => error,
        };
        match error.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => {
                let reasons = cancelled.cancellation_reasons();
                Err(Cancelled::Codes {
                    codes: reasons
                        .iter()
                        .map(|reason| {
                            reason
                                .code()
                                .filter(|code| *code != "None")
                                .map(str::to_owned)
                        })
                        .collect(),
                    items: reasons
                        .iter()
                        .map(|reason| reason.item().cloned())
                        .collect(),
                })
            }
            _ => Err(Cancelled::Failed(sdk_unavailable(error))),
        }
    }
}

/// Why a transaction did not happen.
enum Cancelled {
    /// DynamoDB cancelled it: the code per item, and the item as it stood where a failed
    /// condition asked for it (`ReturnValuesOnConditionCheckFailure` `ALL_OLD`).
    Codes {
        codes: Vec<Option<String>>,
        items: Vec<Option<Item>>,
    },
    Failed(StoreError),
}

#[async_trait]
impl ChainStore for DynamoStore {
    async fn load(&self, key: &ChainKey, now_ms: i64) -> Result<Option<Snapshot>, StoreError> {
        // A Query is read-committed, not a snapshot: racing an append it can see the new head
        // without the new record, or the eviction without the new head. Such a torn read is
        // read again; what is still inconsistent after that is returned as found, for the
        // chain verification to name (a deleted record stays missing however often it is read).
        let mut attempt = 0;
        loop {
            attempt += 1;
            let items = self.query_items(&chain_pk(key), Some("head")).await?;
            let Some(read) = chain_from(&items, now_ms)? else {
                return Ok(None);
            };
            if read.consistent || attempt == TORN_READ_ATTEMPTS {
                return Ok(Some(read.snapshot));
            }
        }
    }

    async fn load_for_append(
        &self,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<(Option<Snapshot>, Option<LogHead>), StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let pk = chain_pk(key);
            let items = self.query_items(&pk, Some(HEAD_SK)).await?;
            let (log, place) = chain_head::log_among(&items)?;
            self.note_log_place(&pk, place);
            let log = log.filter(|log| log.is_kept(now_ms));
            match chain_from(&items, now_ms)? {
                None => return Ok((None, log)),
                Some(read) if read.consistent || attempt == TORN_READ_ATTEMPTS => {
                    return Ok((Some(read.snapshot), log));
                }
                Some(_) => {}
            }
        }
    }

    async fn log_head(&self, key: &ChainKey, now_ms: i64) -> Result<LogRead, StoreError> {
        // `head` and a log head stored apart (`log`) sort next to each other: one Query.
        let pk = chain_pk(key);
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :head AND :log")
            .expression_attribute_values(":pk", s(&pk))
            .expression_attribute_values(":head", s(HEAD_SK))
            .expression_attribute_values(":log", s(LOG_APART_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_unavailable)?;
        let (log, place) = chain_head::log_among(page.items())?;
        self.note_log_place(&pk, place);
        let named = match page
            .items()
            .iter()
            .find(|item| sort_key(item) == Some(HEAD_SK))
        {
            Some(item) => chain_head::window_from(item)?.and_then(|(head, _)| head.log_id),
            None => None,
        };
        Ok(LogRead {
            log: log.filter(|log| log.is_kept(now_ms)),
            named,
        })
    }

    async fn signed_log_heads(&self, now_ms: i64) -> Result<Vec<(ChainKey, LogHead)>, StoreError> {
        let mut heads = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression(
                    "(sk = :head AND attribute_exists(log_checkpoint)) OR (sk = :log AND attribute_exists(checkpoint))",
                )
                .expression_attribute_values(":head", s(HEAD_SK))
                .expression_attribute_values(":log", s(LOG_APART_SK))
                .set_exclusive_start_key(start)
                .consistent_read(true)
                .send()
                .await
                .map_err(sdk_unavailable)?;
            for item in page.items() {
                let key = string(item.get("pk"), "pk")?;
                let Some(key) = chain_key_of(&key) else {
                    continue;
                };
                let log = match sort_key(item) {
                    Some(HEAD_SK) => chain_head::log_in_head(item)?,
                    _ => Some(chain_head::log_apart_from(item)?),
                };
                if let Some(log) = log
                    .filter(|log| log.is_kept(now_ms))
                    .filter(|log| !log.checkpoint.is_empty())
                {
                    heads.push((key, log));
                }
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(heads);
            }
        }
    }

    async fn resign_log(
        &self,
        key: &ChainKey,
        expected: &LogHead,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        // The log head in the head item (its id stored once when the window names the same
        // log), or else, in a table written before the merge, apart: the same fields under
        // the names each place gives them.
        let places = [
            (
                HEAD_SK,
                "(#id = :log_id OR (attribute_not_exists(#id) AND log_id = :log_id))",
                ["log_head_id", "log_epoch", "log_size", "log_checkpoint"],
            ),
            (
                LOG_APART_SK,
                "#id = :log_id",
                ["log_id", "epoch", "tree_size", "checkpoint"],
            ),
        ];
        for (sk, named, [id, epoch, size, signed]) in places {
            let updated = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key_of(&chain_pk(key), sk)))
                .update_expression("SET #checkpoint = :new")
                .condition_expression(format!(
                    "{named} AND #epoch = :epoch AND #size = :size AND #checkpoint = :old"
                ))
                .expression_attribute_names("#id", id)
                .expression_attribute_names("#epoch", epoch)
                .expression_attribute_names("#size", size)
                .expression_attribute_names("#checkpoint", signed)
                .expression_attribute_values(":new", s(checkpoint))
                .expression_attribute_values(":old", s(&expected.checkpoint))
                .expression_attribute_values(":log_id", s(&expected.log_id))
                .expression_attribute_values(":epoch", n(expected.epoch as i64))
                .expression_attribute_values(":size", n(expected.size as i64))
                .send()
                .await;
            if conditional(updated)? {
                return Ok(());
            }
        }
        Err(StoreError::Conflict)
    }

    async fn log_hashes(
        &self,
        key: &ChainKey,
        leaves: &[u64],
    ) -> Result<HashMap<u64, Vec<[u8; 32]>>, StoreError> {
        let pk = chain_pk(key);
        let mut found = HashMap::with_capacity(leaves.len());
        let mut wanted: Vec<u64> = leaves.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        // BatchGetItem takes at most 100 keys; a proof needs about two per level of the tree.
        for chunk in wanted.chunks(TRANSACTION_ITEMS) {
            let keys: Vec<Item> = chunk
                .iter()
                .map(|leaf| key_of(&pk, &hash_sk(*leaf)))
                .collect();
            let mut request = KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build()
                .map_err(unavailable)?;
            for _ in 0..BATCH_READ_ATTEMPTS {
                let answer = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request.clone())
                    .send()
                    .await
                    .map_err(sdk_unavailable)?;
                for item in answer
                    .responses()
                    .and_then(|responses| responses.get(&self.table))
                    .into_iter()
                    .flatten()
                {
                    let leaf = sort_key(item)
                        .and_then(|sk| sk.strip_prefix("hash#"))
                        .and_then(|leaf| leaf.parse::<u64>().ok())
                        .ok_or_else(|| {
                            StoreError::Unavailable("a log hash item has no leaf".into())
                        })?;
                    found.insert(leaf, stored_hashes(item.get("hashes"), "hashes")?);
                }
                match answer
                    .unprocessed_keys()
                    .and_then(|unprocessed| unprocessed.get(&self.table))
                {
                    Some(rest) if !rest.keys().is_empty() => request = rest.clone(),
                    _ => break,
                }
            }
        }
        Ok(found)
    }

    /// One transaction, whatever the number of appends: the head item goes from the first's
    /// expected heads to the last's. The head's and the log's conditions ask for the item as
    /// it stands when they fail (`ALL_OLD`): a lost race then returns the winning heads in the
    /// same round trip, and the loser retries from them without reading the chain again.
    /// Across Lambda instances, where no process lock spares the store a collision, that
    /// halves a retry's round trips.
    async fn append_together(
        &self,
        key: &ChainKey,
        appends: Vec<Append>,
        now_ms: i64,
    ) -> Result<(), (StoreError, Option<Winner>)> {
        if let Some(error) = unchained(&appends) {
            return Err((error, None));
        }
        let pk = chain_pk(key);
        let place = self.log_place(&pk);
        let items = self
            .append_transaction(key, &appends, place, now_ms)
            .await
            .map_err(|error| (error, None))?;
        match self.transact(items).await {
            Ok(()) => {
                self.note_log_place(&pk, LogPlace::InHead);
                Ok(())
            }
            Err(Cancelled::Codes { codes, items }) if is_conflict(&codes) => {
                // A wrong guess of where the log is stored is corrected by the read the
                // caller makes next, so no winner is given while the log is apart.
                let winner = (place == LogPlace::InHead)
                    .then(|| winner_from(&items, appends[0].log.is_some()))
                    .flatten()
                    // A retired log's meaning is the reader's to decide: it reads again.
                    .filter(|winner| winner.log.as_ref().is_none_or(|log| log.is_kept(now_ms)));
                Err((StoreError::Conflict, winner))
            }
            Err(Cancelled::Codes { codes, .. }) => Err((
                StoreError::Unavailable(format!(
                    "DynamoDB cancelled the append: {}",
                    codes.into_iter().flatten().collect::<Vec<_>>().join(", ")
                )),
                None,
            )),
            Err(Cancelled::Failed(error)) => Err((error, None)),
        }
    }

    async fn remove(&self, key: &ChainKey) -> Result<usize, StoreError> {
        let pk = chain_pk(key);
        let items = self.query_partition(&pk).await?;
        let records = items
            .iter()
            .filter(|item| sort_key(item).is_some_and(|sk| sk.starts_with("rec#")))
            .count();
        // The head item goes first, so a removal cut short leaves records no read can see
        // (they belong to no head) rather than a head whose records are gone. The log's head
        // stays in it, emptied, with the next epoch: a log started again under this key gets a
        // new origin and never forks the old one.
        let (log, _) = chain_head::log_among(&items)?;
        match log {
            Some(mut retired) => {
                retired.epoch += 1;
                retired.size = 0;
                retired.frontier.clear();
                retired.checkpoint.clear();
                self.client
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(chain_head::log_only_item(&pk, &retired)))
                    .send()
                    .await
                    .map_err(sdk_unavailable)?;
            }
            None if items.iter().any(|item| sort_key(item) == Some(HEAD_SK)) => {
                self.delete_items(vec![key_of(&pk, HEAD_SK)]).await?;
            }
            None => {}
        }
        self.note_log_place(&pk, LogPlace::InHead);
        let keys: Vec<Item> = items
            .iter()
            .filter_map(sort_key)
            .filter(|sk| *sk != HEAD_SK)
            .map(|sk| key_of(&pk, sk))
            .collect();
        self.delete_items(keys).await?;
        self.unregister(key).await?;
        Ok(records)
    }

    async fn relocate(
        &self,
        from: &ChainKey,
        to: &ChainKey,
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        let Some(snapshot) = self.load(from, now_ms).await? else {
            return Ok(0);
        };
        if self.load(to, now_ms).await?.is_some() {
            return Err(StoreError::Conflict);
        }
        let pk = chain_pk(to);
        let head = &snapshot.head;
        // Records first, invisible until the head that names them lands; the head is written
        // on condition that no live window appeared meanwhile.
        for chunk in snapshot.records.chunks(TRANSACTION_ITEMS) {
            let mut items = Vec::with_capacity(chunk.len());
            for record in chunk {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(record_item(&pk, record, head)))
                    .build()
                    .map_err(unavailable)?;
                items.push(TransactWriteItem::builder().put(put).build());
            }
            self.transact_all(items, "a record copy").await?;
        }
        // The log moves with the window: its hashes, then its head, in the head item (id and
        // epoch unchanged, so the checkpoints already signed still name it). A household
        // account keeps its log for good.
        let from_items = self.query_items(&chain_pk(from), None).await?;
        let hash_items: Vec<Item> = from_items
            .iter()
            .filter(|item| sort_key(item).is_some_and(|sk| sk.starts_with("hash#")))
            .cloned()
            .map(|mut item| {
                item.insert("pk".into(), s(&pk));
                item.remove(TTL_ATTRIBUTE);
                item
            })
            .collect();
        for chunk in hash_items.chunks(TRANSACTION_ITEMS) {
            let mut items = Vec::with_capacity(chunk.len());
            for item in chunk {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item.clone()))
                    .build()
                    .map_err(unavailable)?;
                items.push(TransactWriteItem::builder().put(put).build());
            }
            self.transact_all(items, "a log copy").await?;
        }
        let (log, _) = chain_head::log_among(&from_items)?;
        let log = log.map(|log| LogHead {
            expires_at_ms: None,
            ..log
        });
        let first_seq = snapshot
            .records
            .first()
            .map_or(head.last_seq, |record| record.seq);
        let put_head = Put::builder()
            .table_name(&self.table)
            .set_item(Some(chain_head::merged_item(
                &pk,
                head,
                first_seq,
                log.as_ref(),
            )))
            .condition_expression("attribute_not_exists(expires_at_ms) OR expires_at_ms <= :now")
            .expression_attribute_values(":now", n(now_ms))
            .build()
            .map_err(unavailable)?;
        match self
            .transact(vec![TransactWriteItem::builder().put(put_head).build()])
            .await
        {
            Ok(()) => {}
            Err(Cancelled::Codes { codes, .. }) if is_conflict(&codes) => {
                return Err(StoreError::Conflict);
            }
            Err(Cancelled::Codes { .. }) => {
                return Err(StoreError::Unavailable(
                    "DynamoDB cancelled the head copy".into(),
                ));
            }
            Err(Cancelled::Failed(error)) => return Err(error),
        }
        // A log head the destination kept apart (a table written before the merge) is
        // replaced by the one just written.
        self.delete_items(vec![key_of(&pk, LOG_APART_SK)]).await?;
        self.note_log_place(&pk, LogPlace::InHead);
        // The moved chain is not entered in the new scope's registry: a household scope holds
        // one chain per toolset, so its cap never binds, and its next window registers itself.
        self.remove(from).await?;
        Ok(snapshot.records.len())
    }
}

impl DynamoStore {
    /// The items of one transaction landing `appends` (checked by [`unchained`]): the head
    /// item's update first (`winner_from` reads the winning heads there), from the first's
    /// expected heads to the last's; then each record, the evicted records, each record's log
    /// hashes, and, when the log head was stored apart (`place`), its deletion.
    async fn append_transaction(
        &self,
        key: &ChainKey,
        appends: &[Append],
        place: LogPlace,
        now_ms: i64,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let pk = chain_pk(key);
        let (first, last) = match appends {
            [first, .., last] => (first, last),
            [only] => (only, only),
            [] => return Err(StoreError::Unavailable("an append of nothing".into())),
        };
        // The head's one step: the first append's conditions, the last append's heads.
        let step = Append {
            expected: first.expected.clone(),
            log: last.log.as_ref().map(|log| LogAppend {
                expected: first.log.as_ref().and_then(|first| first.expected.clone()),
                head: log.head.clone(),
                hashes: Vec::new(),
            }),
            ..last.clone()
        };
        let first_seq = step.evict_below_seq.clamp(1, step.record.seq);
        let update_head =
            chain_head::append_update(&self.table, &pk, &step, first_seq, place, now_ms)?;
        let mut items = vec![TransactWriteItem::builder().update(update_head).build()];
        for append in appends {
            let put_record = Put::builder()
                .table_name(&self.table)
                .set_item(Some(record_item(&pk, &append.record, &append.head)))
                .build()
                .map_err(unavailable)?;
            items.push(TransactWriteItem::builder().put(put_record).build());
        }
        // Eviction advances one record per append (the window keeps a fixed number), so the
        // record just below each append's new bound is the only one it deletes; appends that
        // evict nothing name one deleted before, once.
        let evicted: std::collections::BTreeSet<u64> = appends
            .iter()
            .filter(|append| append.expected.is_some() && append.evict_below_seq > 1)
            .map(|append| append.evict_below_seq - 1)
            .collect();
        for seq in evicted {
            let delete = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key_of(&pk, &record_sk(seq))))
                .build()
                .map_err(unavailable)?;
            items.push(TransactWriteItem::builder().delete(delete).build());
        }
        for log in appends.iter().filter_map(|append| append.log.as_ref()) {
            let mut hashes = key_of(&pk, &hash_sk(log.head.size - 1));
            hashes.insert(
                "hashes".into(),
                AttributeValue::B(log.hashes.concat().into()),
            );
            if let Some(expires_at_ms) = log.head.expires_at_ms {
                hashes.insert(TTL_ATTRIBUTE.into(), n(ttl_seconds(expires_at_ms)));
            }
            let put_hashes = Put::builder()
                .table_name(&self.table)
                .set_item(Some(hashes))
                .build()
                .map_err(unavailable)?;
            items.push(TransactWriteItem::builder().put(put_hashes).build());
        }
        if let (Some(log), LogPlace::Apart) = (&first.log, place) {
            let (condition, values) =
                chain_head::log_apart_delete_condition(log.expected.as_ref(), now_ms);
            let delete_apart = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key_of(&pk, LOG_APART_SK)))
                .condition_expression(condition)
                .set_expression_attribute_values(Some(values))
                .build()
                .map_err(unavailable)?;
            items.push(TransactWriteItem::builder().delete(delete_apart).build());
        }
        if first.expected.is_none() {
            items.push(self.register(key, &step, now_ms).await?);
        }
        Ok(items)
    }
}

impl DynamoStore {
    /// Deletes items by key, in transactions of at most [`TRANSACTION_ITEMS`].
    async fn delete_items(&self, keys: Vec<Item>) -> Result<(), StoreError> {
        for chunk in keys.chunks(TRANSACTION_ITEMS) {
            let mut items = Vec::with_capacity(chunk.len());
            for key in chunk {
                let delete = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(key.clone()))
                    .build()
                    .map_err(unavailable)?;
                items.push(TransactWriteItem::builder().delete(delete).build());
            }
            self.transact_all(items, "a delete").await?;
        }
        Ok(())
    }

    /// Sends one transaction that has no conditions: any cancellation is a failure.
    async fn transact_all(
        &self,
        items: Vec<TransactWriteItem>,
        what: &str,
    ) -> Result<(), StoreError> {
        self.transact(items)
            .await
            .map_err(|cancelled| match cancelled {
                Cancelled::Codes { .. } => {
                    StoreError::Unavailable(format!("DynamoDB cancelled {what}"))
                }
                Cancelled::Failed(error) => error,
            })
    }

    /// Takes a removed chain out of its scope's registry, so it no longer counts against the
    /// cap on live chains. A scope without a registry has nothing to take out.
    async fn unregister(&self, key: &ChainKey) -> Result<(), StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_of(&registry_pk(&key.scope), "registry")))
            .update_expression("REMOVE live.#name SET version = version + :one")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#name", &key.name)
            .expression_attribute_values(":one", n(1))
            .send()
            .await;
        // No registry (the condition failed) is nothing to take out.
        conditional(result).map(|_| ())
    }

    /// The registry write of a window-opening append: the live chains of the scope (expired
    /// entries dropped) plus this one, guarded by the version read, or [`StoreError::ScopeFull`].
    async fn register(
        &self,
        key: &ChainKey,
        append: &Append,
        now_ms: i64,
    ) -> Result<TransactWriteItem, StoreError> {
        let (mut live, version) = self.registry(&key.scope).await?;
        // A chain keeps its place until its window ends (the cap on live chains) and, for
        // the cap on logs, until its log retires too.
        live.retain(|name, expires_at_ms| {
            expires_at_ms.saturating_add(LOG_RETIREMENT_MS) > now_ms && *name != key.name
        });
        let live_now = live.values().filter(|expires| **expires > now_ms).count();
        if live_now >= append.max_live_chains {
            return Err(StoreError::ScopeFull {
                limit: append.max_live_chains,
            });
        }
        if append.log.is_some() && live.len() >= append.max_logs {
            return Err(StoreError::LogsFull {
                limit: append.max_logs,
            });
        }
        live.insert(key.name.clone(), append.head.expires_at_ms);
        let latest = live
            .values()
            .copied()
            .max()
            .unwrap_or(append.head.expires_at_ms);
        let mut item = key_of(&registry_pk(&key.scope), "registry");
        item.insert(
            "live".into(),
            AttributeValue::M(live.into_iter().map(|(name, at)| (name, n(at))).collect()),
        );
        item.insert("version".into(), n(version + 1));
        item.insert(
            TTL_ATTRIBUTE.into(),
            n(ttl_seconds(latest.saturating_add(LOG_RETIREMENT_MS))),
        );
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk) OR version = :version")
            .expression_attribute_values(":version", n(version))
            .build()
            .map_err(unavailable)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }
}

#[async_trait]
impl AccountStore for DynamoStore {
    async fn account(&self, household_id: &str) -> Result<Option<AccountItem>, StoreError> {
        let item = self.get(&account_pk(household_id), "account").await?;
        item.map(|item| AccountItem::from_stored(&string(item.get("body"), "body")?))
            .transpose()
    }

    async fn accounts(&self) -> Result<Vec<AccountSummary>, StoreError> {
        let items = self.query_partition(ACCOUNT_INDEX_PK).await?;
        let mut summaries = items
            .iter()
            .map(|item| {
                Ok(AccountSummary {
                    household_id: sort_key(item)
                        .ok_or_else(|| StoreError::Unavailable("an index item has no sk".into()))?
                        .to_owned(),
                    name: string(item.get("name"), "name")?,
                    linked: matches!(item.get("linked"), Some(AttributeValue::Bool(true))),
                    signup_expires_at_ms: item
                        .get("signup_expires_at_ms")
                        .map(|value| number(Some(value), "signup_expires_at_ms"))
                        .transpose()?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        summaries.sort_by(|a, b| a.household_id.cmp(&b.household_id));
        Ok(summaries)
    }

    async fn put_account(
        &self,
        item: &AccountItem,
        expected: Option<u64>,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(item).map_err(unavailable)?;
        let mut account = key_of(&account_pk(&item.household_id), "account");
        account.insert("revision".into(), n(item.revision as i64));
        account.insert("body".into(), s(&body));
        // A sign-up not yet linked goes by itself when it expires; a put without it (the
        // first link) keeps the account for good.
        let ttl = item
            .signup_expires_at_ms
            .map(|expires_at_ms| n(ttl_seconds(expires_at_ms)));
        if let Some(ttl) = &ttl {
            account.insert(TTL_ATTRIBUTE.into(), ttl.clone());
        }
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(account));
        let put = match expected {
            None => put.condition_expression("attribute_not_exists(pk)"),
            Some(revision) => put
                .condition_expression("revision = :revision")
                .expression_attribute_values(":revision", n(revision as i64)),
        }
        .build()
        .map_err(unavailable)?;
        let mut index = key_of(ACCOUNT_INDEX_PK, &item.household_id);
        index.insert("name".into(), s(&item.name));
        index.insert("linked".into(), AttributeValue::Bool(item.is_linked()));
        if let (Some(expires_at_ms), Some(ttl)) = (item.signup_expires_at_ms, ttl) {
            index.insert("signup_expires_at_ms".into(), n(expires_at_ms));
            index.insert(TTL_ATTRIBUTE.into(), ttl);
        }
        let put_index = Put::builder()
            .table_name(&self.table)
            .set_item(Some(index))
            .build()
            .map_err(unavailable)?;
        self.put_with_index(put, put_index, "account").await
    }

    async fn delete_account(&self, household_id: &str, expected: u64) -> Result<bool, StoreError> {
        if self.account(household_id).await?.is_none() {
            return Ok(false);
        }
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_of(&account_pk(household_id), "account")))
            .condition_expression("revision = :revision")
            .expression_attribute_values(":revision", n(expected as i64))
            .build()
            .map_err(unavailable)?;
        let delete_index = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_of(ACCOUNT_INDEX_PK, household_id)))
            .build()
            .map_err(unavailable)?;
        let items = vec![
            TransactWriteItem::builder().delete(delete).build(),
            TransactWriteItem::builder().delete(delete_index).build(),
        ];
        match self.transact(items).await {
            Ok(()) => Ok(true),
            Err(Cancelled::Codes { codes, .. }) if is_conflict(&codes) => Err(StoreError::Conflict),
            Err(Cancelled::Codes { .. }) => Err(StoreError::Unavailable(
                "DynamoDB cancelled the account delete".into(),
            )),
            Err(Cancelled::Failed(error)) => Err(error),
        }
    }
}

#[async_trait]
impl ClientStore for DynamoStore {
    async fn client(&self, client_id: &str, now_ms: i64) -> Result<Option<ClientItem>, StoreError> {
        let Some(item) = self.get(&client_pk(client_id), "client").await? else {
            return Ok(None);
        };
        let client = ClientItem::from_stored(&string(item.get("body"), "body")?)?;
        // TTL deletes lazily; an expired client is gone as far as any reader is concerned.
        Ok(client.is_live(now_ms).then_some(client))
    }

    async fn clients(&self, now_ms: i64) -> Result<Vec<ClientItem>, StoreError> {
        let items = self.query_partition(CLIENT_INDEX_PK).await?;
        let mut clients = Vec::with_capacity(items.len());
        for item in &items {
            let client = ClientItem::from_stored(&string(item.get("body"), "body")?)?;
            if client.is_live(now_ms) {
                clients.push(client);
            }
        }
        clients.sort_by(|a, b| a.client_id.cmp(&b.client_id));
        Ok(clients)
    }

    async fn put_client(
        &self,
        item: &ClientItem,
        expected: Option<u64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(item).map_err(unavailable)?;
        let with_body = |mut stored: Item| {
            stored.insert("revision".into(), n(item.revision as i64));
            stored.insert("body".into(), s(&body));
            if let Some(expires_at_ms) = item.expires_at_ms {
                stored.insert("expires_at_ms".into(), n(expires_at_ms));
                stored.insert(TTL_ATTRIBUTE.into(), n(ttl_seconds(expires_at_ms)));
            }
            stored
        };
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(with_body(key_of(
                &client_pk(&item.client_id),
                "client",
            ))))
            .expression_attribute_values(":now", n(now_ms));
        let put = match expected {
            None => put.condition_expression(
                "attribute_not_exists(pk) OR (attribute_exists(expires_at_ms) AND expires_at_ms <= :now)",
            ),
            Some(revision) => put
                .condition_expression(
                    "revision = :revision AND (attribute_not_exists(expires_at_ms) OR expires_at_ms > :now)",
                )
                .expression_attribute_values(":revision", n(revision as i64)),
        }
        .build()
        .map_err(unavailable)?;
        // The index holds each client whole: clients are few, and a listing is one Query.
        let put_index = Put::builder()
            .table_name(&self.table)
            .set_item(Some(with_body(key_of(CLIENT_INDEX_PK, &item.client_id))))
            .build()
            .map_err(unavailable)?;
        self.put_with_index(put, put_index, "client").await
    }

    async fn delete_client(&self, client_id: &str) -> Result<bool, StoreError> {
        if self.get(&client_pk(client_id), "client").await?.is_none() {
            return Ok(false);
        }
        self.delete_items(vec![
            key_of(&client_pk(client_id), "client"),
            key_of(CLIENT_INDEX_PK, client_id),
        ])
        .await?;
        Ok(true)
    }
}

#[async_trait]
impl GrantStore for DynamoStore {
    async fn grant(
        &self,
        kind: GrantKind,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<GrantItem>, StoreError> {
        let Some(item) = self.get(&grant_pk(kind, key), "grant").await? else {
            return Ok(None);
        };
        let expires_at_ms = number(item.get("expires_at_ms"), "expires_at_ms")?;
        // TTL deletes lazily; an expired record is gone as far as any reader is concerned.
        if expires_at_ms <= now_ms {
            return Ok(None);
        }
        Ok(Some(GrantItem {
            kind,
            key: key.to_owned(),
            body: string(item.get("body"), "body")?,
            expires_at_ms,
            revision: number(item.get("revision"), "revision")? as u64,
        }))
    }

    async fn put_grant(
        &self,
        item: &GrantItem,
        expected: Option<u64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let stored = grant_attributes(item);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(stored))
            .expression_attribute_values(":now", n(now_ms));
        let put = match expected {
            None => put.condition_expression("attribute_not_exists(pk) OR expires_at_ms <= :now"),
            Some(revision) => put
                .condition_expression("revision = :revision AND expires_at_ms > :now")
                .expression_attribute_values(":revision", n(revision as i64)),
        };
        match conditional(put.send().await)? {
            true => Ok(()),
            false => Err(StoreError::Conflict),
        }
    }

    async fn claim_grant(&self, item: &GrantItem, now_ms: i64) -> Result<bool, StoreError> {
        let stored = grant_attributes(item);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(stored))
            .condition_expression(
                "attribute_not_exists(pk) OR expires_at_ms <= :now OR body = :body",
            )
            .expression_attribute_values(":now", n(now_ms))
            .expression_attribute_values(":body", s(&item.body))
            .send()
            .await;
        conditional(put)
    }

    async fn delete_grant(
        &self,
        kind: GrantKind,
        key: &str,
        expected: u64,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_of(&grant_pk(kind, key), "grant")))
            .condition_expression("revision = :revision AND expires_at_ms > :now")
            .expression_attribute_values(":revision", n(expected as i64))
            .expression_attribute_values(":now", n(now_ms))
            .send()
            .await;
        conditional(deleted)
    }
}

/// A grant record as stored: its key, revision, body and expiry, with the TTL attribute.
fn grant_attributes(item: &GrantItem) -> Item {
    let mut stored = key_of(&grant_pk(item.kind, &item.key), "grant");
    stored.insert("revision".into(), n(item.revision as i64));
    stored.insert("body".into(), s(&item.body));
    stored.insert("expires_at_ms".into(), n(item.expires_at_ms));
    // A record kept until removed (a passkey's owner) carries no TTL for DynamoDB to act on.
    if item.expires_at_ms < KEPT_UNTIL_REMOVED_MS {
        stored.insert(TTL_ATTRIBUTE.into(), n(ttl_seconds(item.expires_at_ms)));
    }
    stored
}

fn grant_pk(kind: GrantKind, key: &str) -> String {
    format!("grant#{}#{key}", kind.as_str())
}

/// The partition of the account index.
const ACCOUNT_INDEX_PK: &str = "accounts";
/// The partition of the client index.
const CLIENT_INDEX_PK: &str = "clients";

fn client_pk(client_id: &str) -> String {
    format!("client#{client_id}")
}

/// The most items one `TransactWriteItems` call takes.
const TRANSACTION_ITEMS: usize = 100;

fn account_pk(household_id: &str) -> String {
    format!("account#{household_id}")
}

/// The heads that won, from a cancelled append's items as `ALL_OLD` returned them: the head
/// item first, holding the window and, when the append grows a log (`with_log`), the log's
/// head. `None` when either is missing (the race was lost to a transaction still in flight,
/// or the window ended, say): the caller reads the chain again.
fn winner_from(items: &[Option<Item>], with_log: bool) -> Option<Winner> {
    let head_item = items.first()?.as_ref()?;
    let (head, first_seq) = chain_head::window_from(head_item).ok()??;
    let log = match with_log {
        true => Some(chain_head::log_in_head(head_item).ok()??),
        false => None,
    };
    Some(Winner {
        head,
        first_seq,
        log,
    })
}

fn is_conflict(codes: &[Option<String>]) -> bool {
    codes.iter().flatten().any(|code| {
        matches!(
            code.as_str(),
            "ConditionalCheckFailed" | "TransactionConflict"
        )
    })
}

#[async_trait]
impl CounterStore for DynamoStore {
    async fn take(
        &self,
        counters: &[Counter],
        expires_at_ms: i64,
        _now_ms: i64,
    ) -> Result<Taken, StoreError> {
        // One request per counter, all in flight at once: one round trip. A counted counter is
        // a conditional UpdateItem, a standard write each (a transaction would cost twice the
        // write units and order the counters behind one another), so the counters are not
        // all-or-nothing: see `CounterStore::take`. A watched one is a strongly consistent
        // GetItem of its hits, so that its limit holds exactly.
        let takes = counters.iter().map(|counter| async move {
            let key = key_of(&format!("rate#{}", counter.key), "counter");
            if !counter.counted {
                let read = self
                    .client
                    .get_item()
                    .table_name(&self.table)
                    .set_key(Some(key))
                    .projection_expression("hits")
                    .consistent_read(true)
                    .send()
                    .await
                    .map_err(sdk_unavailable)?;
                let hits = match read.item().and_then(|item| item.get("hits")) {
                    Some(hits) => number(Some(hits), "hits")?,
                    None => 0,
                };
                return Ok::<bool, StoreError>(hits < i64::from(counter.limit));
            }
            let update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key))
                .update_expression(
                    "SET hits = if_not_exists(hits, :zero) + :one, expires_at_ms = :expires, #ttl = :ttl",
                )
                .condition_expression("attribute_not_exists(hits) OR hits < :limit")
                .expression_attribute_names("#ttl", TTL_ATTRIBUTE)
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":expires", n(expires_at_ms))
                .expression_attribute_values(":ttl", n(ttl_seconds(expires_at_ms)))
                .expression_attribute_values(":limit", n(i64::from(counter.limit)))
                .send()
                .await;
            match update {
                Ok(_) => Ok(true),
                Err(error) if error.code() == Some("ConditionalCheckFailedException") => Ok(false),
                Err(error) => Err(sdk_unavailable(error)),
            }
        });
        let mut refused = None;
        for (index, below_limit) in futures_util::future::join_all(takes)
            .await
            .into_iter()
            .enumerate()
        {
            if !below_limit? {
                refused.get_or_insert(index);
            }
        }
        Ok(match refused {
            Some(index) => Taken::Refused { index },
            None => Taken::Granted,
        })
    }
}

/// How often a torn read is tried before it is returned as found.
const TORN_READ_ATTEMPTS: usize = 3;

struct ChainRead {
    snapshot: Snapshot,
    /// The records are exactly `first_seq..=last_seq` and the newest matches the head.
    consistent: bool,
}

/// The live chain in one partition's items, or `None` without a live head.
fn chain_from(items: &[Item], now_ms: i64) -> Result<Option<ChainRead>, StoreError> {
    let Some(head_item) = items.iter().find(|item| sort_key(item) == Some(HEAD_SK)) else {
        return Ok(None);
    };
    let Some((head, first_seq)) = chain_head::window_from(head_item)? else {
        return Ok(None);
    };
    if !head.is_live(now_ms) {
        return Ok(None);
    }
    let mut records = Vec::new();
    for item in items {
        if !sort_key(item).is_some_and(|sk| sk.starts_with("rec#")) {
            continue;
        }
        // Records of an earlier window wait for TTL; they are not part of this chain.
        if number(item.get("window_started_ms"), "window_started_ms")? != head.window_started_ms {
            continue;
        }
        let seq = number(item.get("seq"), "seq")? as u64;
        if seq > head.last_seq {
            continue;
        }
        records.push(Sealed {
            seq,
            hash: string(item.get("hash"), "hash")?,
            body: string(item.get("body"), "body")?,
        });
    }
    records.sort_by_key(|record| record.seq);
    let contiguous = records
        .iter()
        .map(|record| record.seq)
        .eq(first_seq..=head.last_seq);
    let consistent = contiguous
        && records
            .last()
            .is_some_and(|newest| newest.hash == head.last_hash);
    Ok(Some(ChainRead {
        snapshot: Snapshot { head, records },
        consistent,
    }))
}

/// A chain record item of the window `head` describes, expiring with it.
fn record_item(pk: &str, record: &Sealed, head: &Head) -> Item {
    let mut item = key_of(pk, &record_sk(record.seq));
    item.insert("seq".into(), n(record.seq as i64));
    item.insert("hash".into(), s(&record.hash));
    item.insert("body".into(), s(&record.body));
    item.insert("window_started_ms".into(), n(head.window_started_ms));
    item.insert(TTL_ATTRIBUTE.into(), n(ttl_seconds(head.expires_at_ms)));
    item
}

/// How often a batch read is repeated for the keys DynamoDB left unprocessed.
const BATCH_READ_ATTEMPTS: usize = 5;

fn hash_sk(leaf: u64) -> String {
    format!("hash#{leaf:020}")
}

/// Hashes stored 32 bytes each back to back: binary as this release writes a log's hash
/// items, or hex text as earlier releases did (twice the bytes, read as before and never
/// rewritten), and as a log head stored apart keeps its frontier.
fn stored_hashes(value: Option<&AttributeValue>, name: &str) -> Result<Vec<[u8; 32]>, StoreError> {
    match value {
        Some(AttributeValue::B(bytes)) => super::hashes_from(bytes.as_ref()),
        other => {
            let text = string(other, name)?;
            let bytes = hex::decode(text)
                .map_err(|_| StoreError::Unavailable("a stored log hash is not hex".into()))?;
            super::hashes_from(&bytes)
        }
    }
}

#[async_trait]
impl CosignedStore for DynamoStore {
    async fn cosigned(&self, key: &ChainKey, now_ms: i64) -> Result<Vec<Cosigned>, StoreError> {
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :cosig)")
            .expression_attribute_values(":pk", s(&chain_pk(key)))
            .expression_attribute_values(":cosig", s(COSIGNED_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_unavailable)?;
        let mut found = Vec::new();
        for item in page.items() {
            let expires_at_ms = item
                .get("expires_at_ms")
                .map(|value| number(Some(value), "expires_at_ms"))
                .transpose()?;
            // TTL deletes lazily; a retired log's cosignatures are gone for every reader.
            if expires_at_ms.is_some_and(|expires| expires <= now_ms) {
                continue;
            }
            let witness = sort_key(item)
                .and_then(|sk| sk.strip_prefix(COSIGNED_SK))
                .ok_or_else(|| {
                    StoreError::Unavailable("a cosignature item has no witness".into())
                })?;
            found.push(Cosigned {
                witness: witness.to_owned(),
                origin: string(item.get("origin"), "origin")?,
                size: number(item.get("tree_size"), "tree_size")? as u64,
                line: string(item.get("line"), "line")?,
                expires_at_ms,
            });
        }
        found.sort_by(|a, b| a.witness.cmp(&b.witness));
        Ok(found)
    }

    async fn keep_cosigned(&self, key: &ChainKey, cosigned: &Cosigned) -> Result<(), StoreError> {
        let mut item = key_of(
            &chain_pk(key),
            &format!("{COSIGNED_SK}{}", cosigned.witness),
        );
        item.insert("origin".into(), s(&cosigned.origin));
        item.insert("tree_size".into(), n(cosigned.size as i64));
        item.insert("line".into(), s(&cosigned.line));
        if let Some(expires_at_ms) = cosigned.expires_at_ms {
            item.insert("expires_at_ms".into(), n(expires_at_ms));
            item.insert(TTL_ATTRIBUTE.into(), n(ttl_seconds(expires_at_ms)));
        }
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            // Answers can arrive out of order: a smaller tree of the same origin never
            // replaces a larger one.
            .condition_expression(
                "attribute_not_exists(pk) OR origin <> :origin OR tree_size <= :size",
            )
            .expression_attribute_values(":origin", s(&cosigned.origin))
            .expression_attribute_values(":size", n(cosigned.size as i64));
        // A condition that fails means a larger tree is already kept: nothing to do.
        conditional(put.send().await).map(|_| ())
    }
}

/// The sort key prefix of a witness's cosignature in a chain's partition.
const COSIGNED_SK: &str = "cosig#";

fn chain_pk(key: &ChainKey) -> String {
    format!("chain#{}#{}", key.scope, key.name)
}

/// The chain a `chain#<scope>#<name>` key names. A scope never holds `#` (a hex digest and a
/// toolset's name), so the first `#` after the prefix ends it.
fn chain_key_of(pk: &str) -> Option<ChainKey> {
    let (scope, name) = pk.strip_prefix("chain#")?.split_once('#')?;
    Some(ChainKey {
        scope: scope.to_owned(),
        name: name.to_owned(),
    })
}

fn registry_pk(scope: &str) -> String {
    format!("scope#{scope}")
}

fn record_sk(seq: u64) -> String {
    format!("rec#{seq:010}")
}

fn key_of(pk: &str, sk: &str) -> Item {
    HashMap::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

fn sort_key(item: &Item) -> Option<&str> {
    item.get("sk")
        .and_then(|value| value.as_s().ok())
        .map(String::as_str)
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// Epoch seconds for the TTL attribute, rounded up so an item never expires early.
fn ttl_seconds(expires_at_ms: i64) -> i64 {
    (expires_at_ms + 999).div_euclid(1000)
}

fn number(value: Option<&AttributeValue>, name: &str) -> Result<i64, StoreError> {
    value
        .and_then(|value| value.as_n().ok())
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| StoreError::Unavailable(format!("stored item has no valid {name}")))
}

fn string(value: Option<&AttributeValue>, name: &str) -> Result<String, StoreError> {
    value
        .and_then(|value| value.as_s().ok())
        .cloned()
        .ok_or_else(|| StoreError::Unavailable(format!("stored item has no valid {name}")))
}

fn unavailable(error: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(error.to_string())
}

/// A conditional write's outcome: `Ok(true)` if it was made, `Ok(false)` if its condition did
/// not hold.
fn conditional<T, E: ProvideErrorMetadata, R>(
    result: Result<T, SdkError<E, R>>,
) -> Result<bool, StoreError> {
    match result {
        Ok(_) => Ok(true),
        Err(SdkError::ServiceError(service))
            if service.err().code() == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(error) => Err(sdk_unavailable(error)),
    }
}

/// An SDK failure as a store error that names what failed (the service's error code, a
/// timeout, a connection failure) and never echoes a request.
fn sdk_unavailable<E: ProvideErrorMetadata, R>(error: SdkError<E, R>) -> StoreError {
    let what = match &error {
        SdkError::ServiceError(service) => {
            service.err().code().unwrap_or("service error").to_owned()
        }
        SdkError::TimeoutError(_) => "timed out".to_owned(),
        SdkError::DispatchFailure(_) => "connection failed".to_owned(),
        SdkError::ResponseError(_) => "unreadable response".to_owned(),
        _ => "request failed".to_owned(),
    };
    StoreError::Unavailable(format!("DynamoDB: {what}"))
}
