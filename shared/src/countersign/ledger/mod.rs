//! The household ledger: every proposal, reading-aloud, confirmation and guardian decision is
//! an entry in one hash chain per household, sealed by the same canonical-JSON/SHA-256 engine
//! and kept in the same [`ChainStore`] as the decision memory.
//!
//! Nothing else is stored. What is waiting, what was bought this week and what is left of
//! the budget are all rebuilt from the verified entries, so no counter can drift from the
//! record. A state change (placing a waiting order, say) is an append conditional on the
//! chain head the decision was made from: when two calls race, one append wins and the other
//! re-reads the ledger, sees the request already decided, and does nothing.

mod entry;
mod error;
mod verify;
mod view;

pub use entry::*;
pub use error::LedgerError;
pub use verify::Check;
pub use view::{LedgerView, window_label};

use std::sync::Arc;

use rand::RngExt;
use time::{Duration, OffsetDateTime};

use super::household::Weeks;
use crate::auth::Caller;
use crate::chain::Sealed;
use crate::clock::{Clock, timestamp, unix_ms};
use crate::store::{
    Append, AppendLocks, ChainKey, ChainRead, ChainStore, ConflictRetry, LogRead, Retention,
    Snapshot, StoreError,
};
use crate::transparency::{
    self, Lifetime, LogKeys, LogKind, ProofCheck, ProofError, ProvenWindow, check_proof,
    check_window, grow, logged,
};
use crate::witnessing::{Signed, Witnesses};

use verify::{broken, verified, verify};

pub const FORMAT: &str = "hearth.ledger/1";
/// The field a returned entry carries its own hash in.
pub const HASH_FIELD: &str = "entry_hash";
/// A ledger window lasts this long from its first entry (the TTL of every item in it).
pub const WINDOW_MS: i64 = 400 * 24 * 60 * 60 * 1000;
/// Entries retained per window; older ones are evicted into the anchor.
pub const CAPACITY: usize = 1000;
/// Live household ledgers per credential.
pub const MAX_HOUSEHOLDS: usize = 8;
/// Ledger logs a credential keeps, its live ledgers' and those retiring (a log is kept for
/// [`crate::store::LOG_RETIREMENT_MS`] after its 400-day window ends).
pub const MAX_LOGS: usize = 16;
/// The four above, as the store applies them.
const RETENTION: Retention = Retention {
    window_ms: WINDOW_MS,
    capacity: CAPACITY,
    max_live_chains: MAX_HOUSEHOLDS,
    max_logs: MAX_LOGS,
};
/// A waiting request can be answered for this long after it was proposed.
pub const WAITING_FOR: Duration = Duration::hours(24);
/// A request proposed without a device waits this long for a passkey approval.
pub const APPROVAL_WAIT: Duration = Duration::minutes(30);
/// Proposals one member may make in one attested turn (each for a different product).
pub const MAX_PROPOSALS_PER_TURN: usize = 3;
/// An answer may be dated this much before the question was read: the device dates it in
/// whole seconds on its own clock, the ledger in milliseconds on the server's.
pub const ANSWER_CLOCK_SKEW_SECS: i64 = 5;
/// An answer counts only if the device dated it at most this long after the question.
pub const ANSWER_WITHIN_SECS: i64 = 120;

/// A new entry, before it is linked and sealed.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub request_id: String,
    pub member_id: String,
    pub turn_id: String,
    pub event: Event,
}

/// What a transition decided: append an entry and report `T`, or leave the ledger alone.
pub enum Step<T> {
    Append(NewEntry, T),
    Leave(T),
}

/// The entry a transition appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub receipt: Receipt,
    /// The entry's inclusion proof in the newly signed ledger log, when a log key is
    /// configured.
    pub tlog_proof: Option<String>,
}

pub struct Ledger {
    store: Arc<dyn ChainStore>,
    clock: Arc<dyn Clock>,
    retention: Retention,
    /// This process's appends to one ledger take turns (see [`AppendLocks`]).
    turns: AppendLocks,
    /// The transparency logs' signing keys; without them the log grows unsigned.
    log_keys: Option<Arc<LogKeys>>,
    /// The witnesses each newly signed checkpoint goes to, when a policy names some.
    witnesses: Option<Arc<Witnesses>>,
}

impl Ledger {
    pub fn new(store: Arc<dyn ChainStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            retention: RETENTION,
            turns: AppendLocks::default(),
            log_keys: None,
            witnesses: None,
        }
    }

    /// The same ledger signing each household's ledger log with `keys`.
    pub fn with_log_keys(mut self, keys: Option<Arc<LogKeys>>) -> Self {
        self.log_keys = keys;
        self
    }

    /// The same ledger submitting each new checkpoint to `witnesses`, and adding the
    /// cosignatures that come back in time to the entry's `tlog_proof`.
    pub fn with_witnesses(mut self, witnesses: Option<Arc<Witnesses>>) -> Self {
        self.witnesses = witnesses;
        self
    }

    /// The same ledger keeping only the newest `capacity` entries per window instead of
    /// [`CAPACITY`]: for showing eviction without a thousand appends.
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.retention.capacity = capacity.max(1);
        self
    }

    pub fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    /// The household's ledger, verified; a ledger that fails its check is an error.
    pub async fn read(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Result<LedgerView, LedgerError> {
        let snapshot = self.load(caller, household_id).await?;
        verified(household_id, snapshot)
    }

    /// The household's verified ledger, every entry with its inclusion proof against the
    /// ledger's signed checkpoint (cosigned by the witnesses that answered): what the
    /// household page's phone checks for itself. `None` before the first entry.
    pub async fn proven_window(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Result<Option<ProvenWindow>, LedgerError> {
        let key = chain_key(caller, household_id);
        let (snapshot, log) = self
            .store
            .load_for_append(&key, unix_ms(self.clock.now()))
            .await?;
        let Some(snapshot) = snapshot else {
            return Ok(None);
        };
        let records = verified(household_id, Some(snapshot.clone()))?
            .records
            .iter()
            .map(|sealed| sealed.to_json(HASH_FIELD))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| {
                LedgerError::LogTampered(format!("an entry is unreadable: {error}"))
            })?;
        let proved = transparency::prove_window(
            self.store.as_ref(),
            self.log_keys.as_deref(),
            LogKind::Ledger,
            &key,
            &snapshot,
            log,
        )
        .await;
        let log = match proved {
            Ok(Some(mut proofs)) => {
                if let Some(witnesses) = &self.witnesses {
                    proofs.checkpoint = witnesses.attach(&key, &proofs.checkpoint).await;
                }
                Some(proofs)
            }
            Ok(None) => None,
            Err(ProofError::Store(error)) => return Err(error.into()),
            Err(error) => return Err(LedgerError::LogTampered(error.to_string())),
        };
        Ok(Some(ProvenWindow {
            anchor: snapshot.head.anchor.clone(),
            records,
            log,
        }))
    }

    /// The household's ledger and its check, without failing on a broken chain: for the
    /// tools whose job is to report the check.
    pub async fn inspect(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Result<(Option<Snapshot>, Check), LedgerError> {
        let snapshot = self.load(caller, household_id).await?;
        let check = match &snapshot {
            None => Check::Intact,
            Some(snapshot) => match verify(snapshot) {
                Ok(_) => Check::Intact,
                Err(error) => broken(snapshot, &error),
            },
        };
        Ok((snapshot, check))
    }

    /// Reads the verified ledger, lets `decide` choose a step from it, and appends the
    /// step's entry conditionally on the head it read, with the week's tally counted in the
    /// household's `weeks`. On a conflict the ledger is read again and `decide` runs again,
    /// so it always decides from the latest state.
    pub async fn transition<T>(
        &self,
        caller: &Caller,
        household_id: &str,
        weeks: &Weeks,
        decide: impl FnMut(&LedgerView, OffsetDateTime) -> Step<T>,
    ) -> Result<(T, Option<Appended>), LedgerError> {
        self.transition_logged(caller, household_id, weeks, decide, false)
            .await
    }

    /// `hearth admin log reset`: starts the household's ledger log anew, the only way a
    /// chain that has a log gets another. The new log's first entry is a `log_reset` entry by
    /// the operator that names the log it replaces (its id, and its origin and size while its
    /// head was still there), so every kept proof of the old log is explained.
    pub async fn reset_log(
        &self,
        caller: &Caller,
        household_id: &str,
        weeks: &Weeks,
    ) -> Result<Appended, LedgerError> {
        let keys = self.log_keys.clone().ok_or(LedgerError::Unavailable)?;
        let key = chain_key(caller, household_id);
        let read = self.store.log_head(&key, unix_ms(self.clock.now())).await?;
        let replaced = transparency::replaced(
            &keys,
            LogKind::Ledger,
            read.named.as_deref(),
            read.log.as_ref(),
        );
        let event = Event::LogReset {
            previous_log_id: replaced.log_id,
            previous_origin: replaced.origin,
            previous_size: replaced.size,
        };
        self.append_by_operator(caller, household_id, weeks, event, true)
            .await
    }

    /// Records in the ledger that the operator started the household's decision log anew,
    /// replacing `replaced`, as the log of `origin` (see [`Event::DecisionLogReset`]).
    pub async fn record_decision_log_reset(
        &self,
        caller: &Caller,
        household_id: &str,
        weeks: &Weeks,
        replaced: &transparency::Replaced,
        origin: String,
    ) -> Result<Appended, LedgerError> {
        let event = Event::DecisionLogReset(Box::new(DecisionLogReset {
            previous_log_id: replaced.log_id.clone(),
            previous_origin: replaced.origin.clone(),
            previous_size: replaced.size,
            origin,
        }));
        self.append_by_operator(caller, household_id, weeks, event, false)
            .await
    }

    /// Appends `event` as the operator's (no member spoke), starting the log over with it when
    /// `start_over`.
    async fn append_by_operator(
        &self,
        caller: &Caller,
        household_id: &str,
        weeks: &Weeks,
        event: Event,
        start_over: bool,
    ) -> Result<Appended, LedgerError> {
        let entry = NewEntry {
            request_id: fresh_id("RESET-"),
            member_id: OPERATOR.into(),
            turn_id: OPERATOR.into(),
            event,
        };
        let ((), appended) = self
            .transition_logged(
                caller,
                household_id,
                weeks,
                |_, _| Step::Append(entry.clone(), ()),
                start_over,
            )
            .await?;
        appended.ok_or(LedgerError::Busy)
    }

    /// [`Self::transition`], growing the log, or starting it over (`start_over`); the new
    /// checkpoint goes to the witnesses once the ledger's turn is over.
    async fn transition_logged<T>(
        &self,
        caller: &Caller,
        household_id: &str,
        weeks: &Weeks,
        decide: impl FnMut(&LedgerView, OffsetDateTime) -> Step<T>,
        start_over: bool,
    ) -> Result<(T, Option<Appended>), LedgerError> {
        let key = chain_key(caller, household_id);
        let (outcome, appended) = self
            .transition_in_turn(&key, caller, household_id, weeks, decide, start_over)
            .await?;
        let Some((mut appended, signed)) = appended else {
            return Ok((outcome, None));
        };
        if let (Some(witnesses), Some(signed), Some(receipt)) =
            (&self.witnesses, signed, appended.tlog_proof.as_ref())
        {
            let receipt = receipt.clone();
            appended.tlog_proof = Some(witnesses.cosign_receipt(&key, &signed, receipt).await);
        }
        Ok((outcome, Some(appended)))
    }

    /// [`Self::transition_logged`] within this process's turn at the ledger: the outcome, and
    /// the entry appended with the checkpoint it signed.
    async fn transition_in_turn<T>(
        &self,
        key: &ChainKey,
        caller: &Caller,
        household_id: &str,
        weeks: &Weeks,
        mut decide: impl FnMut(&LedgerView, OffsetDateTime) -> Step<T>,
        start_over: bool,
    ) -> Result<(T, Option<(Appended, Option<Signed>)>), LedgerError> {
        let mut retry = ConflictRetry::default();
        let Some(_turn) = retry.turn(&self.turns, key).await else {
            return Err(LedgerError::Busy);
        };
        // What the HTTP layer read ahead serves the first attempt, and only it: a stale read
        // costs one refused conditional write, after which the ledger is read again. After
        // waiting for another call's turn it is likely stale, and the ledger is read anew.
        let mut read_ahead = if retry.waited_for_turn() {
            None
        } else {
            caller.read_ahead_with_log_of(key)
        };
        loop {
            let now = self.clock.now();
            let now_ms = unix_ms(now);
            let (snapshot, log) = match read_ahead.take() {
                Some(read) => read,
                None => self.store.load_for_append(key, now_ms).await?,
            };
            let view = verified(household_id, snapshot)?;
            let (entry, outcome) = match decide(&view, now) {
                Step::Leave(outcome) => return Ok((outcome, None)),
                Step::Append(entry, outcome) => (entry, outcome),
            };
            let week = view.tally_after(&entry, weeks.start_of(now));
            let append = Append::next(
                view.head.as_ref(),
                &view.records,
                self.retention,
                now_ms,
                |seq, prev| seal(entry, week, seq, prev, now),
            );
            let lifetime = lifetime(caller, &append);
            let growth = match self.log_keys.as_deref() {
                Some(keys) if start_over => transparency::start_over(
                    keys,
                    LogKind::Ledger,
                    log.as_ref(),
                    &append.record.hash,
                    lifetime,
                ),
                keys => grow(
                    keys,
                    LogKind::Ledger,
                    view.head.as_ref().and_then(|head| head.log_id.as_deref()),
                    log.as_ref(),
                    &append.record.hash,
                    lifetime,
                ),
            }
            .map_err(LedgerError::from_log)?;
            let signed = Signed::of(&growth.append.head);
            let append = logged(append, growth.append);
            let receipt = Receipt {
                household_id: view.household_id.clone(),
                window: window_label(&append.head),
                seq: append.record.seq,
                entry_hash: append.record.hash.clone(),
            };
            match self.store.append(key, append, now_ms).await {
                Ok(()) => {
                    let appended = Appended {
                        receipt,
                        tlog_proof: growth.receipt,
                    };
                    return Ok((outcome, Some((appended, signed))));
                }
                Err(StoreError::Conflict) => {
                    if !retry.pause().await {
                        return Err(LedgerError::Busy);
                    }
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Checks a kept tlog-proof against the household's ledger log; `None` when the server has
    /// no log key to check it with.
    pub async fn check_tlog_proof(
        &self,
        caller: &Caller,
        household_id: &str,
        text: &str,
    ) -> Result<Option<ProofCheck>, LedgerError> {
        let Some(keys) = &self.log_keys else {
            return Ok(None);
        };
        let key = chain_key(caller, household_id);
        let now_ms = unix_ms(self.clock.now());
        match check_proof(
            self.store.as_ref(),
            keys,
            LogKind::Ledger,
            &key,
            text,
            now_ms,
        )
        .await
        {
            Ok(ProofCheck::Holds { index, size }) => {
                // The log still holds the entry; the ledger itself must still agree with the
                // log, or entries were removed from the chain behind the log's back.
                let now_ms = unix_ms(self.clock.now());
                let (retained, log) = self.store.load_for_append(&key, now_ms).await?;
                let hashes: Vec<&str> = retained
                    .as_ref()
                    .map(|snapshot| snapshot.records.iter().map(|r| r.hash.as_str()).collect())
                    .unwrap_or_default();
                let read = LogRead {
                    log,
                    named: retained
                        .as_ref()
                        .and_then(|snapshot| snapshot.head.log_id.clone()),
                };
                let base = retained
                    .as_ref()
                    .and_then(|snapshot| snapshot.head.log_base.as_ref());
                let window = check_window(
                    self.store.as_ref(),
                    keys,
                    LogKind::Ledger,
                    &key,
                    read,
                    base,
                    &hashes,
                );
                match window.await {
                    Ok(_) => Ok(Some(ProofCheck::Holds { index, size })),
                    Err(ProofError::Store(error)) => Err(error.into()),
                    Err(error) => Ok(Some(ProofCheck::Truncated(format!(
                        "the ledger no longer matches its signed log ({error})"
                    )))),
                }
            }
            Ok(check) => Ok(Some(check)),
            Err(ProofError::NoLog) => Ok(Some(ProofCheck::Truncated(
                "the household's ledger has no signed log any more".into(),
            ))),
            Err(ProofError::Store(error)) => Err(error.into()),
            Err(error) => Err(LedgerError::LogTampered(error.to_string())),
        }
    }

    /// The household's ledger as stored: the window the HTTP layer read ahead for this call
    /// under the same key (see [`Self::read_ahead`]), else read now.
    async fn load(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Result<Option<Snapshot>, LedgerError> {
        let key = chain_key(caller, household_id);
        let now_ms = unix_ms(self.clock.now());
        let window = ChainRead::or_load(
            caller.read_ahead_of(&key),
            self.store.as_ref(),
            &key,
            now_ms,
        )
        .await?;
        // A window read ahead is also held by the caller, so this copies it: microseconds,
        // where reading it again would be a round trip.
        Ok(window.map(Arc::unwrap_or_clone))
    }

    /// Reads `household_id`'s ledger for `caller` ahead of a call that reads it and nothing
    /// else (see [`crate::toolset::Toolset::read_ahead`]); [`Self::load`] takes it from the
    /// caller.
    pub async fn read_ahead(&self, caller: &Caller, household_id: &str) -> ChainRead {
        let key = chain_key(caller, household_id);
        ChainRead::read(self.store.as_ref(), key, unix_ms(self.clock.now())).await
    }

    /// Reads `household_id`'s ledger and its log head for `caller` ahead of a call that
    /// appends to it; the first attempt of [`Self::transition`] starts from it.
    pub async fn read_ahead_for_append(&self, caller: &Caller, household_id: &str) -> ChainRead {
        let key = chain_key(caller, household_id);
        ChainRead::read_with_log(self.store.as_ref(), key, unix_ms(self.clock.now())).await
    }
}

/// One ledger per household per credential; the suffix keeps the household cap apart from
/// the decision memory's chains in the same credential scope.
/// How long the log of `caller`'s ledger is kept: a household account's for good, a
/// credential's with the window `append` writes into (see `transparency::Lifetime`).
fn lifetime(caller: &Caller, append: &Append) -> Lifetime {
    match caller.household {
        Some(_) => Lifetime::Kept,
        None => Lifetime::Window {
            window_ends_ms: append.head.expires_at_ms,
        },
    }
}

fn chain_key(caller: &Caller, household_id: &str) -> ChainKey {
    chain_key_in(&caller.scope, household_id)
}

/// The ledger of `household_id` in data scope `scope`: what `hearth admin` moves and removes.
pub fn chain_key_in(scope: &str, household_id: &str) -> ChainKey {
    ChainKey {
        scope: format!("{scope}/countersign"),
        name: household_id.to_owned(),
    }
}

/// `entry` linked in at `seq` after `prev`, with the week's running total, and sealed.
fn seal(
    entry: NewEntry,
    week: Option<WeekTally>,
    seq: u64,
    prev: Option<&str>,
    now: OffsetDateTime,
) -> Sealed {
    let entry = Entry {
        format: FORMAT.to_owned(),
        seq,
        prev: prev.map(str::to_owned),
        at: timestamp(now),
        request_id: entry.request_id,
        member_id: entry.member_id,
        turn_id: entry.turn_id,
        event: entry.event,
        week,
    };
    Sealed::new(
        seq,
        &serde_json::to_value(&entry).expect("ledger entries serialise"),
    )
}

/// A fresh identifier: `prefix` and ten upper-case hex digits.
pub fn fresh_id(prefix: &str) -> String {
    let bytes: [u8; 5] = rand::rng().random();
    format!("{prefix}{}", hex::encode_upper(bytes))
}

#[cfg(test)]
mod tests;
