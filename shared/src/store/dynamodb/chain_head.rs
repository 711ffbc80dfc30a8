//! A chain's head item (`sk` `head`): its window's head and, since the log heads moved into it,
//! its log's head too, so that an append writes one item for both. Tables written before then
//! keep the log's head in an item of its own (`sk` `log`, "apart"); reads take either, and the
//! next append of such a chain moves the log into the head item and deletes the `log` item in
//! the same transaction (see [`LogPlace`]).
//!
//! The merged item's TTL is the log's, never the window's: a household's log is kept for good,
//! so its head item has no `expires_at` at all, and a credential's log retires a week after its
//! window ends. A window's own end is `expires_at_ms`, which every read and every condition
//! compares with the clock, as it always did (DynamoDB's TTL deletes lazily, so no read ever
//! relied on it); a window that has ended reads as no window, and the next append replaces its
//! attributes. A chain without a log keeps the window's TTL.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure, Update};

use super::{
    Item, StoreError, TTL_ATTRIBUTE, key_of, n, number, s, string, ttl_seconds, unavailable,
};
use crate::store::{Append, Head, LogHead};

/// The sort key of a chain's head item.
pub(super) const HEAD_SK: &str = "head";
/// The sort key of a log head stored apart, as tables written before the merge hold it.
pub(super) const LOG_APART_SK: &str = "log";

/// Where a chain's log head is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LogPlace {
    /// In the head item, or nowhere yet: an append writes the log into the head item.
    InHead,
    /// In the `log` item of a table written before the merge: the chain's next append moves it.
    Apart,
}

/// The window in a head item, with its oldest retained record's `seq`; `None` when the item
/// holds no window (a removed chain's item keeps only its retired log).
pub(super) fn window_from(item: &Item) -> Result<Option<(Head, u64)>, StoreError> {
    if !item.contains_key("window_started_ms") {
        return Ok(None);
    }
    let first_seq = number(item.get("first_seq"), "first_seq")? as u64;
    Ok(Some((head_from(item)?, first_seq)))
}

fn head_from(item: &Item) -> Result<Head, StoreError> {
    Ok(Head {
        window_started_ms: number(item.get("window_started_ms"), "window_started_ms")?,
        expires_at_ms: number(item.get("expires_at_ms"), "expires_at_ms")?,
        last_seq: number(item.get("last_seq"), "last_seq")? as u64,
        last_hash: string(item.get("last_hash"), "last_hash")?,
        anchor: item
            .get("anchor")
            .and_then(|value| value.as_s().ok())
            .cloned(),
        log_id: item
            .get("log_id")
            .and_then(|value| value.as_s().ok())
            .cloned(),
    })
}

/// The log head among a chain's items (its head item and, in an unmigrated table, its `log`
/// item), and where it is stored. Kept or not: the caller decides what a retired log means.
pub(super) fn log_among(items: &[Item]) -> Result<(Option<LogHead>, LogPlace), StoreError> {
    let find = |sk: &str| items.iter().find(|item| super::sort_key(item) == Some(sk));
    if let Some(log) = find(HEAD_SK).map(log_in_head).transpose()?.flatten() {
        return Ok((Some(log), LogPlace::InHead));
    }
    match find(LOG_APART_SK) {
        Some(item) => Ok((Some(log_apart_from(item)?), LogPlace::Apart)),
        None => Ok((None, LogPlace::InHead)),
    }
}

/// The log head merged into a head item, if it holds one.
pub(super) fn log_in_head(item: &Item) -> Result<Option<LogHead>, StoreError> {
    if !item.contains_key("log_epoch") {
        return Ok(None);
    }
    let frontier = match item.get("log_frontier") {
        Some(AttributeValue::B(bytes)) => crate::store::hashes_from(bytes.as_ref())?,
        Some(_) => {
            return Err(StoreError::Unavailable(
                "stored item has no valid log_frontier".into(),
            ));
        }
        None => Vec::new(),
    };
    Ok(Some(LogHead {
        log_id: string(item.get("log_head_id"), "log_head_id")?,
        epoch: number(item.get("log_epoch"), "log_epoch")? as u64,
        size: number(item.get("log_size"), "log_size")? as u64,
        frontier,
        checkpoint: optional_string(item, "log_checkpoint")?.unwrap_or_default(),
        expires_at_ms: optional_number(item, "log_expires_at_ms")?,
    }))
}

/// A log head stored apart (`sk` `log`), as tables written before the merge hold it.
pub(super) fn log_apart_from(item: &Item) -> Result<LogHead, StoreError> {
    let frontier = optional_string(item, "frontier")?.unwrap_or_default();
    Ok(LogHead {
        log_id: string(item.get("log_id"), "log_id")?,
        epoch: number(item.get("epoch"), "epoch")? as u64,
        size: number(item.get("tree_size"), "tree_size")? as u64,
        frontier: super::hex_hashes(&frontier)?,
        checkpoint: optional_string(item, "checkpoint")?.unwrap_or_default(),
        expires_at_ms: optional_number(item, "expires_at_ms")?,
    })
}

fn optional_string(item: &Item, name: &str) -> Result<Option<String>, StoreError> {
    item.get(name)
        .map(|value| string(Some(value), name))
        .transpose()
}

fn optional_number(item: &Item, name: &str) -> Result<Option<i64>, StoreError> {
    item.get(name)
        .map(|value| number(Some(value), name))
        .transpose()
}

/// A head item holding a log and no window: a removed chain's retired log, or a moved one's.
pub(super) fn log_only_item(pk: &str, log: &LogHead) -> Item {
    let mut item = key_of(pk, HEAD_SK);
    let mut write = HeadWrite::default();
    write.log(log);
    write.ttl(log.expires_at_ms);
    for (name, value) in write.sets {
        item.insert(name.to_owned(), value);
    }
    item
}

/// A head item holding `head`'s window (oldest retained record `first_seq`) and `log`.
pub(super) fn merged_item(pk: &str, head: &Head, first_seq: u64, log: Option<&LogHead>) -> Item {
    let mut item = key_of(pk, HEAD_SK);
    let mut write = HeadWrite::default();
    write.window(head, first_seq);
    match log {
        Some(log) => {
            write.log(log);
            write.ttl(log.expires_at_ms.map(|at| at.max(head.expires_at_ms)));
        }
        None => write.ttl(Some(head.expires_at_ms)),
    }
    for (name, value) in write.sets {
        item.insert(name.to_owned(), value);
    }
    item
}

/// The head item's update for one append: the new window head and, when the append grows a
/// log, the log head, on condition that both are as the caller read them. `place` is where the
/// caller found the log: when apart, the update also requires that the head item holds no log,
/// and the caller deletes the `log` item in the same transaction ([`log_apart_delete_condition`]).
pub(super) fn append_update(
    table: &str,
    pk: &str,
    append: &Append,
    first_seq: u64,
    place: LogPlace,
    now_ms: i64,
) -> Result<Update, StoreError> {
    let mut write = HeadWrite::default();
    write.window(&append.head, first_seq);
    write.value(":now", n(now_ms));
    match &append.expected {
        Some(expected) => {
            write.value(":e_seq", n(expected.last_seq as i64));
            write.value(":e_hash", s(&expected.last_hash));
            write.value(":e_started", n(expected.window_started_ms));
            write.condition(
                "last_seq = :e_seq AND last_hash = :e_hash AND window_started_ms = :e_started AND expires_at_ms > :now",
            );
        }
        None => write.condition("(attribute_not_exists(expires_at_ms) OR expires_at_ms <= :now)"),
    }
    match (&append.log, place) {
        // A chain without a log keeps its window's TTL, which must never fall on a log.
        (None, _) => {
            write.condition("attribute_not_exists(log_epoch)");
            write.ttl(Some(append.head.expires_at_ms));
        }
        (Some(log), place) => {
            write.log(&log.head);
            write.ttl(
                log.head
                    .expires_at_ms
                    .map(|at| at.max(append.head.expires_at_ms)),
            );
            match (place, &log.expected) {
                (LogPlace::Apart, _) => write.condition("attribute_not_exists(log_epoch)"),
                (LogPlace::InHead, Some(expected)) => {
                    write.value(":e_log_id", s(&expected.log_id));
                    write.value(":e_epoch", n(expected.epoch as i64));
                    write.value(":e_size", n(expected.size as i64));
                    write.condition(
                        "log_head_id = :e_log_id AND log_epoch = :e_epoch AND log_size = :e_size",
                    );
                }
                // A retired log's attributes may linger until the TTL deletes the item.
                (LogPlace::InHead, None) => write
                    .condition("(attribute_not_exists(log_epoch) OR log_expires_at_ms <= :now)"),
            }
        }
    }
    write.update(table, pk)
}

/// The condition (and its values) on deleting a log head stored apart, as an append that moves
/// it into the head item expects it: as the caller read it, or absent (or retired) when the
/// caller read none.
pub(super) fn log_apart_delete_condition(
    expected: Option<&LogHead>,
    now_ms: i64,
) -> (&'static str, Item) {
    match expected {
        None => (
            "attribute_not_exists(pk) OR expires_at_ms <= :now",
            HashMap::from([(":now".to_owned(), n(now_ms))]),
        ),
        Some(expected) => (
            "log_id = :log_id AND epoch = :epoch AND tree_size = :size",
            HashMap::from([
                (":log_id".to_owned(), s(&expected.log_id)),
                (":epoch".to_owned(), n(expected.epoch as i64)),
                (":size".to_owned(), n(expected.size as i64)),
            ]),
        ),
    }
}

/// The attributes an update sets and removes, its conditions and their values.
#[derive(Default)]
struct HeadWrite {
    sets: Vec<(&'static str, AttributeValue)>,
    removes: Vec<&'static str>,
    conditions: Vec<&'static str>,
    values: Item,
}

impl HeadWrite {
    fn set(&mut self, name: &'static str, value: AttributeValue) {
        self.sets.push((name, value));
    }

    fn set_or_remove(&mut self, name: &'static str, value: Option<AttributeValue>) {
        match value {
            Some(value) => self.set(name, value),
            None => self.removes.push(name),
        }
    }

    fn condition(&mut self, condition: &'static str) {
        self.conditions.push(condition);
    }

    fn value(&mut self, name: &str, value: AttributeValue) {
        self.values.insert(name.to_owned(), value);
    }

    fn window(&mut self, head: &Head, first_seq: u64) {
        self.set("window_started_ms", n(head.window_started_ms));
        self.set("expires_at_ms", n(head.expires_at_ms));
        self.set("last_seq", n(head.last_seq as i64));
        self.set("last_hash", s(&head.last_hash));
        self.set("first_seq", n(first_seq as i64));
        self.set_or_remove("anchor", head.anchor.as_deref().map(s));
        self.set_or_remove("log_id", head.log_id.as_deref().map(s));
    }

    /// The log head's attributes. Its frontier is binary: a hex frontier of a large tree would
    /// take the merged item past 1 KB, and with it each append's write units from two to four.
    fn log(&mut self, log: &LogHead) {
        self.set("log_head_id", s(&log.log_id));
        self.set("log_epoch", n(log.epoch as i64));
        self.set("log_size", n(log.size as i64));
        self.set_or_remove(
            "log_frontier",
            (!log.frontier.is_empty()).then(|| AttributeValue::B(log.frontier.concat().into())),
        );
        self.set_or_remove(
            "log_checkpoint",
            (!log.checkpoint.is_empty()).then(|| s(&log.checkpoint)),
        );
        self.set_or_remove("log_expires_at_ms", log.expires_at_ms.map(n));
    }

    /// The item's TTL: `None` keeps it for good.
    fn ttl(&mut self, expires_at_ms: Option<i64>) {
        self.set_or_remove(TTL_ATTRIBUTE, expires_at_ms.map(|at| n(ttl_seconds(at))));
    }

    fn update(self, table: &str, pk: &str) -> Result<Update, StoreError> {
        let mut names = HashMap::new();
        let mut values = self.values;
        let mut assignments = Vec::with_capacity(self.sets.len());
        // Every attribute by placeholder: no stored name can collide with a reserved word.
        for (index, (name, value)) in self.sets.into_iter().enumerate() {
            names.insert(format!("#s{index}"), name.to_owned());
            values.insert(format!(":s{index}"), value);
            assignments.push(format!("#s{index} = :s{index}"));
        }
        let mut expression = format!("SET {}", assignments.join(", "));
        if !self.removes.is_empty() {
            let removes: Vec<String> = self
                .removes
                .iter()
                .enumerate()
                .map(|(index, name)| {
                    names.insert(format!("#r{index}"), (*name).to_owned());
                    format!("#r{index}")
                })
                .collect();
            expression.push_str(&format!(" REMOVE {}", removes.join(", ")));
        }
        // Each condition that holds an OR brings its own parentheses: DynamoDB refuses
        // redundant ones.
        let condition = self.conditions.join(" AND ");
        Update::builder()
            .table_name(table)
            .set_key(Some(key_of(pk, HEAD_SK)))
            .update_expression(expression)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(unavailable)
    }
}
