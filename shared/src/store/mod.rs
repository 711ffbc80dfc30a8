//! Chain storage and rate counters. The store keeps sealed records and one head per chain and
//! knows nothing of toolsets: it compares and swaps chain heads, evicts old records and
//! enforces a cap on live chains per scope, all in one atomic step per append. Beside the
//! chains it keeps fixed-window counters for the rate limiter ([`CounterStore`]).
//!
//! Two implementations pass the same contract suite (`shared/tests/store_contract.rs`):
//! [`sqlite::SqliteStore`], the embedded default, and the DynamoDB store for production.
//! Which one runs is configuration; no code path falls back to volatile memory.

pub mod account;
pub mod client;
pub mod cosigned;
#[cfg(feature = "aws")]
pub mod dynamodb;
pub mod grant;
pub mod sqlite;
pub mod sqlite_files;
pub mod unconfigured;

use std::sync::Arc;

use std::collections::HashMap;

use async_trait::async_trait;

pub use account::{
    AccountItem, AccountStore, AccountSummary, ApprovalLinkItem, DeviceKeyItem, LinkItem,
    MAX_LINKS_KEPT, MAX_TOKENS_PER_LINK, NonceItem, PasskeyInviteItem, PasskeyItem,
    PendingEnrolmentItem, PushGrantItem, PushSubscriptionItem, RevokedFamily, token_hash,
};
pub use client::{AssertionKeys, ClientItem, ClientOrigin, ClientStore, KeptDocument};
pub use cosigned::{Cosigned, CosignedStore};
pub use grant::{GrantItem, GrantKind, GrantStore, KEPT_UNTIL_REMOVED_MS};

use crate::chain::Sealed;

/// Identifies one chain: `scope` is the hashed owner of the data (never a raw credential) and
/// `name` the chain within that scope, e.g. a household.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChainKey {
    pub scope: String,
    pub name: String,
}

/// A chain's head: its retention window, its newest record and its anchor.
///
/// Times are Unix milliseconds. A head whose `expires_at_ms` has passed is dead: reads treat
/// the chain as empty, and the next append replaces the whole window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub window_started_ms: i64,
    pub expires_at_ms: i64,
    pub last_seq: u64,
    pub last_hash: String,
    /// Hash of the last evicted record, `None` while nothing has been evicted.
    pub anchor: Option<String>,
    /// The log this chain's records go into, once one has: kept with the window so that a log
    /// head removed or swapped behind the chain's back is named as tampering, never taken for
    /// a chain that has no log yet. `None` for a window written before logs existed.
    pub log_id: Option<String>,
    /// The log's frontier just before the window's oldest retained record, kept with the
    /// window so that the retained records' inclusion proofs need no read of the log's stored
    /// hashes (see `transparency::window_base`). `None` for a window begun before it was kept,
    /// or whose log started over: proofs then read the stored hashes.
    pub log_base: Option<LogBase>,
}

/// The frontier of a chain's log just before the window's oldest retained record: `size`
/// leaves, whose maximal complete subtrees' roots are `frontier`, largest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogBase {
    pub size: u64,
    pub frontier: Vec<[u8; 32]>,
}

impl Head {
    pub fn is_live(&self, now_ms: i64) -> bool {
        now_ms < self.expires_at_ms
    }
}

/// A chain's transparency log (see `tlog`), kept beside its window: its opaque id and epoch
/// (both name it in checkpoints), its size and frontier, the newest signed checkpoint, and when
/// it retires. A household account's log has no expiry: when a window is replaced the log goes
/// on growing, and it ends only when the chain is removed, which leaves the id with the next
/// epoch. A credential's log (a judge token's or a client's household label) lives with one
/// window and retires with its hashes [`LOG_RETIREMENT_MS`] after that window ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogHead {
    pub log_id: String,
    pub epoch: u64,
    pub size: u64,
    /// The roots of the tree's maximal complete subtrees, largest first.
    pub frontier: Vec<[u8; 32]>,
    /// The signed note of the tree of `size`; empty when none was signed (no signing key, or
    /// a removed log's placeholder).
    pub checkpoint: String,
    /// Unix ms from which the log and its hashes read as absent and may be deleted (DynamoDB's
    /// TTL, or a sweep locally); `None` for a log kept for good.
    pub expires_at_ms: Option<i64>,
}

impl LogHead {
    /// Whether the log is still kept at `now_ms`.
    pub fn is_kept(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_none_or(|expires| now_ms < expires)
    }
}

/// How long a credential's log is kept after its window ends: a week in which a kept proof
/// can still be checked against it, after which the log and its hashes are deleted.
pub const LOG_RETIREMENT_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// The log's part of an append: the log head the caller read (`None`: the chain has no log
/// yet), the head after this leaf, and the hashes the leaf stores (its leaf hash and the
/// interior hashes it completes, in stored order). Leaf `head.size - 1` is the new record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppend {
    pub expected: Option<LogHead>,
    pub head: LogHead,
    pub hashes: Vec<[u8; 32]>,
}

/// A chain's log head and what its window says of it, as [`ChainStore::log_head`] reads them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogRead {
    pub log: Option<LogHead>,
    /// The log id the chain's window head names ([`Head::log_id`]).
    pub named: Option<String>,
}

/// 32-byte hashes stored back to back, as both stores keep a log's frontier and hashes.
pub(crate) fn hashes_from(bytes: &[u8]) -> Result<Vec<[u8; 32]>, StoreError> {
    if !bytes.len().is_multiple_of(32) {
        return Err(StoreError::Unavailable(
            "a stored log hash is not 32 bytes".into(),
        ));
    }
    Ok(bytes
        .chunks_exact(32)
        .map(|chunk| chunk.try_into().expect("32-byte chunks"))
        .collect())
}

/// A live chain as read: the head and the retained records, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub head: Head,
    pub records: Vec<Sealed>,
}

/// What an append starts from ([`ChainStore::load_for_append`]): the live window, if any, and
/// the chain's log head, if kept.
pub type AppendStart = (Option<Snapshot>, Option<LogHead>);

/// A chain's live window, read ahead of the one tool call that needs it: the HTTP layer reads
/// it beside the request's rate counters and account check (see `mcp::layers`), so that a
/// read-only call makes one round trip on its critical path, and an append two (the read, then
/// its conditional write). It serves only the call it was read for, and only under the key it
/// was read under; a refused request drops it unread.
#[derive(Clone, PartialEq, Eq)]
pub struct ChainRead {
    pub key: ChainKey,
    /// What [`ChainStore::load`] answered.
    pub window: Result<Option<Arc<Snapshot>>, StoreError>,
    /// The chain's log head, when it was read with the window ([`ChainRead::read_with_log`]):
    /// `None` for a read of the window alone.
    pub log: Option<Option<LogHead>>,
    /// Whether a call has started from the read with its log head: it serves one attempt, as
    /// a second append of the same call would find it stale.
    pub spent: Spent,
    /// Stored hashes of the chain's log read beside the window, by leaf, before the log's size
    /// was known ([`ChainRead::read_for_history`]); `None` when none were read, or the read
    /// failed.
    pub hashes: Option<LeafHashes>,
}

/// A log's stored hashes by leaf, as [`ChainStore::log_hashes`] answers: each leaf's hash and
/// the interior hashes its append completed.
pub type LeafHashes = HashMap<u64, Vec<[u8; 32]>>;

/// A flag set once, shared by every clone of the caller that holds the read (they share its
/// `Arc`); two reads are equal by what they read, whether spent or not.
#[derive(Debug, Default)]
pub struct Spent(std::sync::atomic::AtomicBool);

impl Spent {
    /// Sets the flag, answering whether it was already set.
    fn spend(&self) -> bool {
        self.0.swap(true, std::sync::atomic::Ordering::SeqCst)
    }
}

impl Clone for Spent {
    fn clone(&self) -> Self {
        Self(std::sync::atomic::AtomicBool::new(
            self.0.load(std::sync::atomic::Ordering::SeqCst),
        ))
    }
}

impl PartialEq for Spent {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Spent {}

impl ChainRead {
    /// Reads `key`'s live window ahead of the call that will read it.
    pub async fn read(store: &dyn ChainStore, key: ChainKey, now_ms: i64) -> Self {
        let window = store
            .load(&key, now_ms)
            .await
            .map(|window| window.map(Arc::new));
        Self {
            key,
            window,
            log: None,
            spent: Spent::default(),
            hashes: None,
        }
    }

    /// Reads `key`'s window and log head ([`ChainStore::load_for_append`], one request) ahead
    /// of the call that starts from both: an append, or a trace with its proofs. A stale read
    /// costs an append one refused conditional write, which names the current heads, never a
    /// wrong chain.
    pub async fn read_with_log(store: &dyn ChainStore, key: ChainKey, now_ms: i64) -> Self {
        let (window, log) = match store.load_for_append(&key, now_ms).await {
            Ok((window, log)) => (Ok(window.map(Arc::new)), Some(log)),
            Err(error) => (Err(error), None),
        };
        Self {
            key,
            window,
            log,
            spent: Spent::default(),
            hashes: None,
        }
    }

    /// Reads `key`'s window and log head as [`ChainRead::read_with_log`] does and, at the same
    /// time, the log's stored hashes at `leaves`: what a proof from a size the caller kept may
    /// need, read before the log's current size is known (see
    /// `tlog::tree::consistency_candidates`). Leaves past the log read as absent.
    pub async fn read_for_history(
        store: &dyn ChainStore,
        key: ChainKey,
        now_ms: i64,
        leaves: &[u64],
    ) -> Self {
        let (read, hashes) = futures_util::future::join(
            Self::read_with_log(store, key.clone(), now_ms),
            store.log_hashes(&key, leaves),
        )
        .await;
        Self {
            hashes: hashes.ok(),
            ..read
        }
    }

    /// The window and log head read ahead, if this read was made with the log head
    /// ([`ChainRead::read_with_log`]), answered, and nothing has started from it yet: it
    /// serves one use. A read that failed serves none, and the call reads again.
    pub fn with_log(&self) -> Option<AppendStart> {
        match (&self.window, &self.log) {
            (Ok(window), Some(log)) if !self.spent.spend() => {
                Some((window.as_deref().cloned(), log.clone()))
            }
            _ => None,
        }
    }

    /// The live window, its log head and the stored hashes read with them
    /// ([`ChainRead::read_for_history`]), if all three were read and nothing has started from
    /// them yet. A chain without a live window serves none: only its window names the log it
    /// should have, which a proof checks.
    pub fn for_history(&self) -> Option<(Arc<Snapshot>, Option<LogHead>, LeafHashes)> {
        match (&self.window, &self.log, &self.hashes) {
            (Ok(Some(window)), Some(log), Some(hashes)) if !self.spent.spend() => {
                Some((window.clone(), log.clone(), hashes.clone()))
            }
            _ => None,
        }
    }

    /// `key`'s live window: `ahead` if the window was read ahead under that key (see
    /// `Caller::read_ahead_of`), else read now.
    pub async fn or_load(
        ahead: Option<Result<Option<Arc<Snapshot>>, StoreError>>,
        store: &dyn ChainStore,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<Option<Arc<Snapshot>>, StoreError> {
        match ahead {
            Some(window) => window,
            None => Ok(store.load(key, now_ms).await?.map(Arc::new)),
        }
    }
}

/// Never the records: a caller (which carries a read-ahead) may be formatted for a test's
/// message or a log, and records hold what households said.
impl std::fmt::Debug for ChainRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let window = match &self.window {
            Ok(Some(snapshot)) => format!("{} records", snapshot.records.len()),
            Ok(None) => "no live window".to_owned(),
            Err(error) => error.to_string(),
        };
        f.debug_struct("ChainRead")
            .field("key", &self.key)
            .field("window", &window)
            .field("with_log", &self.log.is_some())
            .field("hashes", &self.hashes.as_ref().map(HashMap::len))
            .finish()
    }
}

/// One atomic append.
#[derive(Debug, Clone)]
pub struct Append {
    /// The head the caller read, or `None` if it saw no live window (the append then opens a
    /// new window, replacing any expired one). A mismatch is a [`StoreError::Conflict`].
    pub expected: Option<Head>,
    /// The head after this append.
    pub head: Head,
    /// The new record.
    pub record: Sealed,
    /// Retained records with `seq` below this are evicted in the same step.
    pub evict_below_seq: u64,
    /// The hashes of the records this append evicts, oldest first: what moves the window's
    /// log base on.
    pub evicted: Vec<String>,
    /// When opening a new window: the most live chains the scope may hold, this one included.
    pub max_live_chains: usize,
    /// When opening a new window: the most logs the scope may keep, this one included (a
    /// chain whose window ended keeps its place until its log retires).
    pub max_logs: usize,
    /// The chain's log grown by the new record, written in the same step on condition that the
    /// log is still as read (a mismatch is a [`StoreError::Conflict`]); `None` leaves it alone.
    pub log: Option<LogAppend>,
}

/// The heads that won a race an append lost, as the store refused the append with them
/// (DynamoDB's `ReturnValuesOnConditionCheckFailure`): a retry can build on them without
/// reading the chain again ([`Append::after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Winner {
    pub head: Head,
    /// The oldest retained record's `seq` under `head`.
    pub first_seq: u64,
    /// The chain's log head as the winner left it; `None` for a chain appended without a log.
    pub log: Option<LogHead>,
}

/// How a chain keeps its records: a window lasts `window_ms` from its first record, holds the
/// newest `capacity` records (older ones are evicted into the anchor), and a scope may hold at
/// most `max_live_chains` live windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub window_ms: i64,
    pub capacity: usize,
    pub max_live_chains: usize,
    /// The most logs a scope keeps, live windows' and those retiring: what opening a window
    /// for a new log checks, beside `max_live_chains`.
    pub max_logs: usize,
}

impl Append {
    /// The append of one more record after the live window read (`head` and its `retained`
    /// records, oldest first; `None` when no window is live, which opens one at `now_ms`).
    /// `seal` builds the record from its `seq` and `prev`; toolsets own the record's shape,
    /// this owns linking, windows and eviction.
    pub fn next(
        head: Option<&Head>,
        retained: &[Sealed],
        retention: Retention,
        now_ms: i64,
        seal: impl FnOnce(u64, Option<&str>) -> Sealed,
    ) -> Self {
        let (seq, prev, window_started_ms, expires_at_ms) = match head {
            Some(head) => (
                head.last_seq + 1,
                Some(head.last_hash.as_str()),
                head.window_started_ms,
                head.expires_at_ms,
            ),
            None => (1, None, now_ms, now_ms + retention.window_ms),
        };
        let record = seal(seq, prev);
        // Keep the newest `capacity` records, the new one included.
        let evicted = (retained.len() + 1).saturating_sub(retention.capacity);
        let anchor = match evicted {
            0 => head.and_then(|head| head.anchor.clone()),
            n => Some(retained[n - 1].hash.clone()),
        };
        let evict_below_seq = retained.get(evicted).map_or(seq, |r| r.seq);
        let evicted = retained[..evicted]
            .iter()
            .map(|record| record.hash.clone())
            .collect();
        Self {
            expected: head.cloned(),
            head: Head {
                window_started_ms,
                expires_at_ms,
                last_seq: seq,
                last_hash: record.hash.clone(),
                anchor,
                log_id: head.and_then(|head| head.log_id.clone()),
                log_base: head.and_then(|head| head.log_base.clone()),
            },
            record,
            evict_below_seq,
            evicted,
            max_live_chains: retention.max_live_chains,
            max_logs: retention.max_logs,
            log: None,
        }
    }
}

impl Append {
    /// The append of one more record after `winner`, the heads that beat this caller's last
    /// attempt, without reading the chain again. `known` is what this caller read before; the
    /// only record it needs is the one an eviction moves into the anchor. `None` when that
    /// record is not among them (or belongs to another window: seqs start again at 1 in each)
    /// or the winner's window has ended: read the chain again.
    pub fn after(
        winner: &Winner,
        known: Option<&KnownWindow>,
        retention: Retention,
        now_ms: i64,
        seal: impl FnOnce(u64, Option<&str>) -> Sealed,
    ) -> Option<Self> {
        let head = &winner.head;
        if !head.is_live(now_ms) || winner.first_seq > head.last_seq + 1 {
            return None;
        }
        let retained = (head.last_seq + 1 - winner.first_seq) as usize;
        // Keep the newest `capacity` records, the new one included (as [`Append::next`]).
        let evicted = (retained + 1).saturating_sub(retention.capacity) as u64;
        let evicted_hashes = match evicted {
            0 => Vec::new(),
            n => {
                let known =
                    known.filter(|known| known.head.window_started_ms == head.window_started_ms)?;
                (winner.first_seq..winner.first_seq + n)
                    .map(|seq| {
                        let (_, hash) = known.records.iter().find(|(known, _)| *known == seq)?;
                        Some(hash.clone())
                    })
                    .collect::<Option<Vec<String>>>()?
            }
        };
        let anchor = match evicted_hashes.last() {
            None => head.anchor.clone(),
            Some(hash) => Some(hash.clone()),
        };
        let seq = head.last_seq + 1;
        let record = seal(seq, Some(&head.last_hash));
        let evict_below_seq = match retained {
            0 => seq,
            _ => winner.first_seq + evicted,
        };
        Some(Self {
            expected: Some(head.clone()),
            head: Head {
                last_seq: seq,
                last_hash: record.hash.clone(),
                anchor,
                ..head.clone()
            },
            record,
            evict_below_seq,
            evicted: evicted_hashes,
            max_live_chains: retention.max_live_chains,
            max_logs: retention.max_logs,
            log: None,
        })
    }

    /// The same append growing the chain's log: the log's head, written in the same step, and
    /// the log's id kept with the window's head.
    pub fn with_log(mut self, log: LogAppend) -> Self {
        self.head.log_id = Some(log.head.log_id.clone());
        self.log = Some(log);
        self
    }
}

/// What a process knows of a chain's window without reading it: the head, and the hash of
/// each retained record it has seen by `seq` (oldest first; records other writers appended
/// are missing until a read brings them). Enough for [`Append::after`], which needs only the
/// hash an eviction moves into the anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownWindow {
    pub head: Head,
    pub records: Vec<(u64, String)>,
}

/// What a read of the window shows: its head and hashes, moved out of the read (an append
/// plans from the read first, then keeps only this, so nothing is copied).
impl From<Snapshot> for KnownWindow {
    fn from(snapshot: Snapshot) -> Self {
        Self {
            head: snapshot.head,
            records: snapshot
                .records
                .into_iter()
                .map(|record| (record.seq, record.hash))
                .collect(),
        }
    }
}

/// A hot chain as this process's last append to it left it (see [`HotChains`]): the heads a
/// winner would name, what was known of the window, and when this process last lost a race
/// for the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    pub heads: Winner,
    pub known: KnownWindow,
    pub last_lost: std::time::Instant,
    /// Until when this process's next append to the chain waits before it starts (see
    /// [`Landed::making_way`]).
    pub make_way_until: Option<tokio::time::Instant>,
}

impl Landed {
    /// What `append`, planned from `known`, left once it landed; `last_lost` is when this
    /// process last lost a race for the chain.
    pub fn after(
        append: &Append,
        known: Option<&KnownWindow>,
        last_lost: std::time::Instant,
    ) -> Self {
        let mut records: Vec<(u64, String)> = known
            .filter(|known| known.head.window_started_ms == append.head.window_started_ms)
            .map(|known| {
                known
                    .records
                    .iter()
                    .filter(|(seq, _)| *seq >= append.evict_below_seq)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        records.push((append.record.seq, append.record.hash.clone()));
        Self {
            heads: Winner {
                head: append.head.clone(),
                first_seq: append.evict_below_seq,
                log: append.log.as_ref().map(|log| log.head.clone()),
            },
            known: KnownWindow {
                head: append.head.clone(),
                records,
            },
            last_lost,
            make_way_until: None,
        }
    }

    /// The same, with this process's next append to the chain waiting [`MAKE_WAY`] times as
    /// long as the landing attempt took before it starts. On a hot chain the writer whose
    /// append just landed holds the newest heads and would otherwise send its next append at
    /// once, ahead of every writer it beat, which learn those heads one refusal later: it
    /// would land again and again while their calls ran out of budget (one writer landing 40
    /// appends in a row was seen). The pause leaves a gap in which the calls that have
    /// waited longest, asking again most often (see [`ConflictRetry::pause`]), land first.
    /// Scaled to the attempt, so it is a few milliseconds on moto as on DynamoDB, and at most
    /// [`LONGEST_MAKE_WAY`], so that one slow landing does not spend the next call's budget.
    pub fn making_way(mut self, landing_took: std::time::Duration) -> Self {
        let pause = (landing_took * MAKE_WAY).min(LONGEST_MAKE_WAY);
        self.make_way_until = Some(tokio::time::Instant::now() + pause);
        self
    }
}

/// How many landing attempts' time a writer that landed on a hot chain leaves the others
/// before its next append there (see [`Landed::making_way`]). With 8 instances on moto, three
/// runs each: 2 gave 95.9-97.8% accepted, 3 to 6 gave 98.1-99.7%; 4, over ten runs, 96.9-98.1%
/// (Measurements, Contention).
pub const MAKE_WAY: u32 = 4;
/// The longest a writer makes way: a fifth of an append's budget.
pub const LONGEST_MAKE_WAY: std::time::Duration =
    std::time::Duration::from_millis(APPEND_BUDGET.as_millis() as u64 / 5);

/// The chains other writers are appending to as well, as far as this process can tell: those
/// an append from here lost a race for in the last [`HOT_FOR`]. An
/// append to a hot chain starts from where this process's last one left it instead of
/// reading: under contention a read is the costliest step (on moto a window's Query takes
/// about four times a transaction) and is stale by the time the write arrives, while a
/// refused write names the current heads anyway. A quiet chain is read, and its window
/// verified, before every append, as always; the conditional write keeps the chain linear
/// either way. Bounded; forgetting a chain costs its next append one read.
#[derive(Default)]
pub struct HotChains {
    chains: std::sync::Mutex<std::collections::HashMap<ChainKey, Landed>>,
}

/// How long a chain stays hot after this process last lost a race for it.
pub const HOT_FOR: std::time::Duration = std::time::Duration::from_secs(1);
/// How many hot chains are remembered: each is a head and up to a window's hashes (a few
/// kilobytes).
const REMEMBERED_HOT_CHAINS: usize = 64;

impl HotChains {
    /// Where this process's last append left `key`, if the chain is still hot.
    pub fn get(&self, key: &ChainKey) -> Option<Landed> {
        self.chains
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .filter(|landed| landed.last_lost.elapsed() < HOT_FOR)
            .cloned()
    }

    pub fn remember(&self, key: &ChainKey, landed: Landed) {
        let mut chains = self
            .chains
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if chains.len() >= REMEMBERED_HOT_CHAINS && !chains.contains_key(key) {
            chains.retain(|_, landed| landed.last_lost.elapsed() < HOT_FOR);
            if chains.len() >= REMEMBERED_HOT_CHAINS {
                // Any one will do: a forgotten chain costs its next append one read.
                if let Some(forgotten) = chains.keys().next().cloned() {
                    chains.remove(&forgotten);
                }
            }
        }
        chains.insert(key.clone(), landed);
    }

    pub fn forget(&self, key: &ChainKey) {
        self.chains
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

/// How long an append may go on retrying lost races before it reports the chain busy. Alexa+
/// gives a whole tool call under 500 ms; an append is a read and a conditional write (two
/// DynamoDB round trips of a few milliseconds each), so a quarter of a second of retries
/// leaves the rest of the call (authentication, the rate limiter, a judge) its share.
pub const APPEND_BUDGET: std::time::Duration = std::time::Duration::from_millis(250);
/// The smallest ceiling of a pause after a lost race, and the largest.
const SHORTEST_CEILING: std::time::Duration = std::time::Duration::from_millis(2);
const LONGEST_CEILING: std::time::Duration = std::time::Duration::from_millis(100);
/// The smallest ceiling once a call is past half its budget.
const SHORTEST_LATE_CEILING: std::time::Duration = std::time::Duration::from_micros(500);

/// Retries of an append that lost to a concurrent writer: jittered exponential backoff within
/// a time budget rather than a fixed count. Each pause is random ("full jitter") up to a
/// ceiling that starts at how long the lost attempt took (a read and a write: the time another
/// writer needs to land its own append) and doubles with each loss. Scaling to the store's
/// observed latency spreads competing writers out on a slow store as on a fast one, and the
/// budget makes a call give up on time whatever that latency is.
pub struct ConflictRetry {
    budget: std::time::Duration,
    deadline: tokio::time::Instant,
    attempt_started: tokio::time::Instant,
    losses: u32,
    /// Whether [`ConflictRetry::turn`] found the chain's turn taken and waited for it.
    waited_for_turn: bool,
}

impl Default for ConflictRetry {
    fn default() -> Self {
        Self::within(APPEND_BUDGET)
    }
}

impl ConflictRetry {
    /// Retries until `budget` from now has passed; the first attempt starts now.
    pub fn within(budget: std::time::Duration) -> Self {
        let now = tokio::time::Instant::now();
        Self {
            budget,
            deadline: now + budget,
            attempt_started: now,
            losses: 0,
            waited_for_turn: false,
        }
    }

    /// Retries until `deadline` (an append's budget, counted from when its call began); the
    /// first attempt starts now.
    pub fn until(deadline: tokio::time::Instant) -> Self {
        Self {
            budget: APPEND_BUDGET,
            deadline,
            attempt_started: tokio::time::Instant::now(),
            losses: 0,
            waited_for_turn: false,
        }
    }

    /// Waits for this process's turn at `key` (see [`AppendLocks`]) within the same budget;
    /// `None` if the budget ran out first (report the chain busy).
    pub async fn turn(
        &mut self,
        locks: &AppendLocks,
        key: &ChainKey,
    ) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        let (guard, waited) = tokio::time::timeout_at(self.deadline, locks.turn(key))
            .await
            .ok()?;
        self.waited_for_turn = waited;
        self.attempt_started = tokio::time::Instant::now();
        Some(guard)
    }

    /// Whether the turn was another call's first: what this call read before it waited (a
    /// read ahead of its admission) is then likely stale, the other call having appended.
    pub fn waited_for_turn(&self) -> bool {
        self.waited_for_turn
    }

    /// Waits until `until` (a winner making way, see [`Landed::making_way`]), or until the
    /// budget runs out if that comes first; the next attempt starts then.
    pub async fn make_way(&mut self, until: tokio::time::Instant) {
        tokio::time::sleep_until(until.min(self.deadline)).await;
        self.attempt_started = tokio::time::Instant::now();
    }

    /// How long the attempt under way has taken so far (since the turn, the last pause, or
    /// making way).
    pub fn attempt_took(&self) -> std::time::Duration {
        self.attempt_started.elapsed()
    }

    /// After a lost race: pauses, and returns whether to try again (`false` once the budget
    /// is spent: report the chain busy).
    ///
    /// A call past half its budget stops backing off: its pause is at most one attempt's
    /// time. Exponential backoff alone favours the newest calls (their ceilings are lowest)
    /// while the oldest wait longest between tries; asking most often is how the oldest calls
    /// find the gap a winner leaves (see [`Landed::making_way`]) before their budget runs out.
    pub async fn pause(&mut self) -> bool {
        use rand::RngExt;
        let now = tokio::time::Instant::now();
        if now >= self.deadline {
            return false;
        }
        let attempt = now - self.attempt_started;
        let ceiling = if self.deadline - now < self.budget / 2 {
            attempt.clamp(SHORTEST_LATE_CEILING, LONGEST_CEILING)
        } else {
            attempt
                .saturating_mul(1 << self.losses.min(16))
                .clamp(SHORTEST_CEILING, LONGEST_CEILING)
        };
        let pause = ceiling
            .mul_f64(rand::rng().random_range(0.0..=1.0))
            .min(self.deadline - now);
        self.losses += 1;
        tokio::time::sleep(pause).await;
        self.attempt_started = tokio::time::Instant::now();
        true
    }
}

/// The most appends [`ChainStore::append_together`] takes: DynamoDB's transaction holds at
/// most 100 items, and each append is up to three (its record, its log hashes and the record
/// it evicts) beside the head, the scope registry and a log head stored apart.
pub const MOST_APPENDS_TOGETHER: usize = 24;

/// Appends that are not one chain's steps in order, each after the one before: a bug in the
/// caller, refused before anything is sent.
pub(crate) fn unchained(appends: &[Append]) -> Option<StoreError> {
    let refused = |why: &str| {
        Some(StoreError::Unavailable(format!(
            "appends landed together {why}"
        )))
    };
    if appends.is_empty() || appends.len() > MOST_APPENDS_TOGETHER {
        return refused("must number 1 to 24");
    }
    for pair in appends.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        let log_follows = match (&before.log, &after.log) {
            (None, None) => true,
            (Some(before), Some(after)) => after.expected.as_ref() == Some(&before.head),
            _ => false,
        };
        if after.expected.as_ref() != Some(&before.head) || !log_follows {
            return refused("must each follow the one before");
        }
        if after.evict_below_seq > appends[0].record.seq {
            return refused("must not evict a record written with them");
        }
    }
    None
}

/// One lock per chain, so that the appends one process makes to a chain take turns instead of
/// racing each other through the store: a lost race costs a read and a write, and under
/// contention most of them would be lost. Other processes (other Lambda instances) still
/// race through the store's conditional writes, which stay the guarantee; this only spares
/// the store the collisions it can see coming.
#[derive(Default)]
pub struct AppendLocks {
    locks: std::sync::Mutex<
        std::collections::HashMap<ChainKey, std::sync::Weak<tokio::sync::Mutex<()>>>,
    >,
}

/// How many chains' locks are remembered before the ones nobody holds are forgotten.
const REMEMBERED_LOCKS: usize = 1024;

impl AppendLocks {
    /// Waits for the chain's turn; the turn lasts as long as the guard. Says whether it had to
    /// wait (another call held the turn).
    pub async fn turn(&self, key: &ChainKey) -> (tokio::sync::OwnedMutexGuard<()>, bool) {
        let lock = {
            let mut locks = self
                .locks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match locks.get(key).and_then(std::sync::Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    if locks.len() >= REMEMBERED_LOCKS {
                        locks.retain(|_, lock| lock.strong_count() > 0);
                    }
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    locks.insert(key.clone(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        match lock.clone().try_lock_owned() {
            Ok(guard) => (guard, false),
            Err(_) => (lock.lock_owned().await, true),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Another writer moved the head first; read again and retry.
    #[error("the chain changed while this write was prepared")]
    Conflict,
    /// Opening this chain would exceed the scope's cap on live chains.
    #[error("at most {limit} chains may be live in one scope")]
    ScopeFull { limit: usize },
    /// Opening this chain would exceed the scope's cap on kept logs.
    #[error("at most {limit} logs may be kept in one scope")]
    LogsFull { limit: usize },
    /// The backend could not be reached or failed; nothing was written.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait ChainStore: Send + Sync + 'static {
    /// The live window of `key`, or `None` if the chain is empty or its window has expired.
    /// Expired data is hidden, never deleted, by a read.
    async fn load(&self, key: &ChainKey, now_ms: i64) -> Result<Option<Snapshot>, StoreError>;

    /// The live window (as [`ChainStore::load`]) and the chain's log head, live window or not
    /// (while the log is kept), in one read: what an append starts from.
    async fn load_for_append(
        &self,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<(Option<Snapshot>, Option<LogHead>), StoreError>;

    /// The chain's log head, if it has a log still kept at `now_ms`, and the id of the log its
    /// window's head names (live window or expired), in one read.
    async fn log_head(&self, key: &ChainKey, now_ms: i64) -> Result<LogRead, StoreError>;

    /// Every log head still kept at `now_ms` that holds a signed checkpoint, with its chain:
    /// what the local server checks its log key against before it serves, and `hearth doctor`
    /// counts. It reads the whole store (a Scan on DynamoDB), so nothing on a request's path
    /// calls it.
    async fn signed_log_heads(&self, now_ms: i64) -> Result<Vec<(ChainKey, LogHead)>, StoreError>;

    /// Replaces the log head's signed checkpoint (the same tree, signed again: after a key
    /// rotation or a change of host), on condition that the head is still exactly `expected`.
    /// Anything else is a [`StoreError::Conflict`] and changes nothing.
    async fn resign_log(
        &self,
        key: &ChainKey,
        expected: &LogHead,
        checkpoint: &str,
    ) -> Result<(), StoreError>;

    /// The hashes the appends of `leaves` stored (each leaf's hash, then the interior hashes
    /// it completed), by leaf index, in one read. A leaf the log does not hold is absent.
    async fn log_hashes(&self, key: &ChainKey, leaves: &[u64]) -> Result<LeafHashes, StoreError>;

    /// Applies `append` atomically: either the record, the new head, every eviction and the
    /// log's growth are stored together, or nothing changes.
    async fn append(&self, key: &ChainKey, append: Append, now_ms: i64) -> Result<(), StoreError> {
        self.append_or_winner(key, append, now_ms)
            .await
            .map_err(|(error, _)| error)
    }

    /// [`ChainStore::append`], telling with a lost race ([`StoreError::Conflict`]) what won,
    /// when the store can say so in the same round trip (see [`Winner`]); `None` otherwise,
    /// and the caller reads the chain again. One append landed by itself.
    async fn append_or_winner(
        &self,
        key: &ChainKey,
        append: Append,
        now_ms: i64,
    ) -> Result<(), (StoreError, Option<Winner>)> {
        self.append_together(key, vec![append], now_ms).await
    }

    /// Applies `appends` as one: each planned after the one before it (its `expected` heads
    /// are the heads the one before leaves, as sequential appends would have them), and
    /// either all of them are stored or nothing changes. The first's expected heads decide a
    /// lost race, which names the winner as [`ChainStore::append_or_winner`] does. At most
    /// [`MOST_APPENDS_TOGETHER`], and fewer than the chain's window holds, so that no record
    /// is written and evicted in the same step.
    async fn append_together(
        &self,
        key: &ChainKey,
        appends: Vec<Append>,
        now_ms: i64,
    ) -> Result<(), (StoreError, Option<Winner>)>;

    /// Removes the chain whole: its head and every record, live or expired, and its log's
    /// hashes. The log head stays as a placeholder of size 0 with the next epoch, so a log
    /// started again under the same key never forks the old one. Returns how many records it
    /// held (0 for a chain that never existed).
    async fn remove(&self, key: &ChainKey) -> Result<usize, StoreError>;

    /// Moves the live window of `from` to `to` exactly as stored (head, anchor, records and
    /// their hashes, and the log with its id, so its checkpoints still name it; the moved log
    /// is kept for good, as a household account's is), then removes
    /// `from`. `to` must hold no live window, or this is a
    /// [`StoreError::Conflict`] and nothing moves. Returns how many records moved (0 when
    /// `from` has no live window, which leaves it alone).
    async fn relocate(
        &self,
        from: &ChainKey,
        to: &ChainKey,
        now_ms: i64,
    ) -> Result<usize, StoreError>;
}

/// One counter a request must find below its limit: `key` names the counter and its window,
/// and `limit` is the most requests the window allows. A `counted` counter also counts the
/// request (a write); one that is not is only read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    pub key: String,
    pub limit: u32,
    pub counted: bool,
}

/// The fixed counting window of some length that contains an instant. Each window names its
/// counters with its own start, so a counter from an earlier window is never counted again
/// (and its store item expires at [`Window::end_ms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ms: i64,
    pub end_ms: i64,
}

impl Window {
    /// The window of `length_ms` that contains `now_ms`; windows start at multiples of it.
    pub fn containing(now_ms: i64, length_ms: i64) -> Self {
        let start_ms = now_ms - now_ms.rem_euclid(length_ms);
        Self {
            start_ms,
            end_ms: start_ms + length_ms,
        }
    }

    /// The counter `name` in this window, allowing `limit`. `name` must not hold raw
    /// identities (hash them): it is stored.
    pub fn counter(&self, name: &str, limit: u32) -> Counter {
        Counter {
            key: format!("{name}/{}", self.start_ms),
            limit,
            counted: true,
        }
    }

    /// The same counter, only read: a request must find it below `limit`, and is not counted
    /// by it.
    pub fn watched(&self, name: &str, limit: u32) -> Counter {
        Counter {
            counted: false,
            ..self.counter(name, limit)
        }
    }
}

/// What [`CounterStore::take`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Every counter was below its limit and now counts this request.
    Granted,
    /// `counters[index]` is at its limit and was left unchanged; the counters below their
    /// limits still count this request (see [`CounterStore::take`]).
    Refused { index: usize },
}

#[async_trait]
pub trait CounterStore: Send + Sync + 'static {
    /// Counts one request against each counted counter that is below its limit, reads each
    /// counter that is not, and names the first counter, if any, that already holds its
    /// limit (a counted one is then left unchanged, so no counter ever passes its limit,
    /// however takes interleave). The counters are **not** all-or-nothing: a request refused
    /// by one counter is still counted by the others; in exchange each counter is one
    /// independent conditional write (or read), issued together. A counter lives until
    /// `expires_at_ms`, after which the backend may remove it (a TTL); callers name each
    /// window with its own key, so an expired counter is never counted again.
    async fn take(
        &self,
        counters: &[Counter],
        expires_at_ms: i64,
        now_ms: i64,
    ) -> Result<Taken, StoreError>;
}

/// The store behind every toolset, the household accounts, account linking and the rate
/// limiter. Usually one backend serves them all.
#[derive(Clone)]
pub struct Stores {
    pub chains: Arc<dyn ChainStore>,
    pub counters: Arc<dyn CounterStore>,
    pub accounts: Arc<dyn AccountStore>,
    pub grants: Arc<dyn GrantStore>,
    pub clients: Arc<dyn ClientStore>,
    pub cosigned: Arc<dyn CosignedStore>,
}

impl Stores {
    /// Every role served by one backend.
    pub fn shared<
        S: ChainStore + CounterStore + AccountStore + GrantStore + ClientStore + CosignedStore,
    >(
        store: Arc<S>,
    ) -> Self {
        Self {
            chains: store.clone(),
            counters: store.clone(),
            accounts: store.clone(),
            grants: store.clone(),
            clients: store.clone(),
            cosigned: store,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn says whether another call held it first: the read made before waiting is then
    /// set aside (see `ConflictRetry::waited_for_turn`).
    #[tokio::test]
    async fn a_turn_says_whether_it_waited_for_another() {
        let locks = Arc::new(AppendLocks::default());
        let key = ChainKey {
            scope: "scope".into(),
            name: "kitchen".into(),
        };
        let (first, waited) = locks.turn(&key).await;
        assert!(!waited, "a free turn is taken at once");
        let second = tokio::spawn({
            let (locks, key) = (locks.clone(), key.clone());
            async move { locks.turn(&key).await.1 }
        });
        tokio::task::yield_now().await;
        drop(first);
        assert!(
            second.await.unwrap(),
            "the second call waited for the first's turn"
        );
        let mut retry = ConflictRetry::default();
        let _turn = retry.turn(&locks, &key).await.unwrap();
        assert!(!retry.waited_for_turn());
    }

    /// Building on a winner's heads with what was read before it plans the same append as
    /// reading the whole chain again would, evictions and anchors included, for any capacity
    /// and a winner any number of records ahead; it declines when the record an eviction needs
    /// was never read, was read in another window, or the winner's window has ended.
    #[test]
    fn an_append_after_a_winner_is_the_append_a_fresh_read_would_plan() {
        for capacity in [1, 2, 3, 5] {
            let retention = retention_of(capacity);
            let mut head: Option<Head> = None;
            let mut retained: Vec<Sealed> = Vec::new();
            for _ in 0..9 {
                let fresh = Append::next(head.as_ref(), &retained, retention, 10, seal);
                if let Some(head) = &head {
                    let winner = Winner {
                        head: head.clone(),
                        first_seq: retained.first().map_or(head.last_seq + 1, |r| r.seq),
                        log: None,
                    };
                    for ahead in 1..=3.min(retained.len()) {
                        // Read before the winner's last `ahead` records.
                        let known = Snapshot {
                            head: Head {
                                last_seq: head.last_seq - ahead as u64,
                                ..head.clone()
                            },
                            records: retained[..retained.len() - ahead].to_vec(),
                        };
                        let evicts = fresh.evict_below_seq > winner.first_seq;
                        let known = KnownWindow::from(known);
                        let after = Append::after(&winner, Some(&known), retention, 10, seal);
                        assert_eq!(after.is_some(), !evicts || !known.records.is_empty());
                        if let Some(after) = after {
                            assert_eq!(after.expected, fresh.expected);
                            assert_eq!(after.head, fresh.head);
                            assert_eq!(after.record, fresh.record);
                            assert_eq!(after.evict_below_seq, fresh.evict_below_seq);
                            assert_eq!(after.evicted, fresh.evicted);
                        }
                        let other_window = KnownWindow {
                            head: Head {
                                window_started_ms: head.window_started_ms - 1,
                                ..known.head.clone()
                            },
                            records: known.records.clone(),
                        };
                        let elsewhere =
                            Append::after(&winner, Some(&other_window), retention, 10, seal);
                        assert_eq!(elsewhere.is_some(), !evicts, "capacity {capacity}");
                        let ended = Append::after(
                            &winner,
                            Some(&known),
                            retention,
                            head.expires_at_ms,
                            seal,
                        );
                        assert!(ended.is_none(), "the winner's window has ended");
                    }
                }
                retained.push(fresh.record.clone());
                retained.retain(|record| record.seq >= fresh.evict_below_seq);
                head = Some(fresh.head);
            }
            assert_eq!(retained.len(), capacity);
            assert_eq!(head.unwrap().last_seq, 9);
        }
    }

    /// A record that is only its place in the chain.
    fn seal(seq: u64, prev: Option<&str>) -> Sealed {
        Sealed::new(seq, &serde_json::json!({"seq": seq, "prev": prev}))
    }

    /// A long window holding `capacity` records.
    fn retention_of(capacity: usize) -> Retention {
        Retention {
            window_ms: 1_000_000,
            capacity,
            max_live_chains: 8,
            max_logs: 8,
        }
    }

    /// What an append leaves for the next one to start from is what a fresh read would show,
    /// as far as planning goes: each next append planned from it is the one planned from the
    /// read, through windows filling, evicting and (capacity 1) anchoring on every append.
    #[test]
    fn an_append_from_where_the_last_one_landed_is_the_append_a_fresh_read_would_plan() {
        let lost = std::time::Instant::now();
        for capacity in [1, 2, 3, 5] {
            let retention = retention_of(capacity);
            let mut read: Option<Snapshot> = None;
            let mut landed: Option<Landed> = None;
            for _ in 0..9 {
                let fresh = Append::next(
                    read.as_ref().map(|snapshot| &snapshot.head),
                    read.as_ref().map_or(&[], |snapshot| &snapshot.records),
                    retention,
                    10,
                    seal,
                );
                let from_landed = landed.as_ref().map(|landed| {
                    Append::after(&landed.heads, Some(&landed.known), retention, 10, seal)
                        .expect("everything it needs was kept")
                });
                if let Some(from_landed) = from_landed {
                    assert_eq!(from_landed.expected, fresh.expected);
                    assert_eq!(from_landed.head, fresh.head);
                    assert_eq!(from_landed.record, fresh.record);
                    assert_eq!(from_landed.evict_below_seq, fresh.evict_below_seq);
                }
                let known = read.clone().map(KnownWindow::from);
                landed = Some(Landed::after(&fresh, known.as_ref(), lost));
                let mut records = read.map_or_else(Vec::new, |snapshot| snapshot.records);
                records.push(fresh.record.clone());
                records.retain(|record| record.seq >= fresh.evict_below_seq);
                read = Some(Snapshot {
                    head: fresh.head,
                    records,
                });
                let kept = landed.as_ref().unwrap();
                assert_eq!(kept.known, KnownWindow::from(read.clone().unwrap()));
                assert_eq!(kept.heads.first_seq, read.as_ref().unwrap().records[0].seq);
            }
        }
    }

    /// A chain of one record, as an append from here that lost its last race at `last_lost`
    /// left it.
    fn one_record_landed(last_lost: std::time::Instant) -> Landed {
        let head = Head {
            window_started_ms: 0,
            expires_at_ms: 10,
            last_seq: 1,
            last_hash: "h".into(),
            anchor: None,
            log_id: None,
            log_base: None,
        };
        Landed {
            heads: Winner {
                head: head.clone(),
                first_seq: 1,
                log: None,
            },
            known: KnownWindow {
                head,
                records: vec![(1, "h".into())],
            },
            last_lost,
            make_way_until: None,
        }
    }

    #[test]
    fn a_hot_chain_cools_and_the_remembered_chains_stay_bounded() {
        let chains = HotChains::default();
        let key = |n: usize| ChainKey {
            scope: "s".into(),
            name: format!("c{n}"),
        };
        let landed = one_record_landed;
        let now = std::time::Instant::now();
        chains.remember(&key(0), landed(now - HOT_FOR));
        assert_eq!(chains.get(&key(0)), None, "cooled exactly at HOT_FOR");
        chains.remember(&key(0), landed(now));
        assert!(chains.get(&key(0)).is_some());
        chains.forget(&key(0));
        assert_eq!(chains.get(&key(0)), None);
        for n in 0..=REMEMBERED_HOT_CHAINS {
            chains.remember(&key(n), landed(now));
        }
        let remembered = (0..=REMEMBERED_HOT_CHAINS)
            .filter(|n| chains.get(&key(*n)).is_some())
            .count();
        assert_eq!(
            remembered, REMEMBERED_HOT_CHAINS,
            "one past the bound forgets one"
        );
        assert!(
            chains.get(&key(REMEMBERED_HOT_CHAINS)).is_some(),
            "the newest is kept"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_call_backs_off_until_half_its_budget_is_spent_then_asks_every_attempt() {
        use tokio::time::{Duration, Instant};
        let attempt = Duration::from_millis(10);
        // Long beside the longest pause (100 ms), so that whatever the random pauses, the
        // second half holds many tries: the first comes at most 110 ms into it.
        let budget = Duration::from_millis(1000);
        let started = Instant::now();
        let mut retry = ConflictRetry::within(budget);
        let mut ceiling = attempt;
        let mut late = 0;
        loop {
            tokio::time::advance(attempt).await;
            let asked = Instant::now();
            if !retry.pause().await {
                break;
            }
            let paused = asked.elapsed();
            if asked - started > budget / 2 {
                late += 1;
                assert!(paused <= attempt, "{paused:?} late in the budget");
            } else {
                assert!(paused <= ceiling.min(LONGEST_CEILING), "{paused:?}");
                ceiling *= 2;
            }
        }
        assert!(
            late >= 19,
            "at most one attempt and one pause apart: {late} tries late"
        );
        assert!(
            Instant::now() - started >= budget,
            "gave up only at the deadline"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn making_way_waits_as_many_landings_as_it_says_and_never_past_the_budget() {
        use tokio::time::{Duration, Instant};
        let landed = || one_record_landed(std::time::Instant::now());
        let now = Instant::now();
        assert_eq!(
            landed().making_way(Duration::from_millis(5)).make_way_until,
            Some(now + Duration::from_millis(5) * MAKE_WAY)
        );
        assert_eq!(
            landed().making_way(Duration::from_secs(1)).make_way_until,
            Some(now + LONGEST_MAKE_WAY),
            "one slow landing does not spend the next call's budget"
        );

        let started = Instant::now();
        let mut retry = ConflictRetry::within(Duration::from_millis(250));
        retry.make_way(started + Duration::from_secs(3600)).await;
        assert_eq!(
            Instant::now() - started,
            Duration::from_millis(250),
            "a call makes way only within its own budget"
        );
    }

    #[test]
    fn a_window_holds_its_start_and_not_its_end() {
        let minute = 60_000;
        assert_eq!(
            Window::containing(120_000, minute),
            Window {
                start_ms: 120_000,
                end_ms: 180_000
            }
        );
        assert_eq!(Window::containing(179_999, minute).start_ms, 120_000);
        assert_eq!(Window::containing(180_000, minute).start_ms, 180_000);
        let counter = Window::containing(179_999, minute).counter("rate/ip/ab", 7);
        assert_eq!(
            counter,
            Counter {
                key: "rate/ip/ab/120000".into(),
                limit: 7,
                counted: true,
            }
        );
        assert!(
            !Window::containing(0, minute)
                .watched("rate/ip/ab", 7)
                .counted
        );
    }
}
