//! Landing the decisions one call took from a chain's queue (see [`super::queue`]): sealed in
//! order, each after the one before, into one step of the store (one DynamoDB transaction, one
//! SQLite transaction), with the log grown by all of them and signed once. Each call is
//! answered its own record and its receipt against that one checkpoint. A lost race is retried
//! for the whole batch from the heads that won; a call whose budget runs out before its
//! decision lands is answered busy, and nothing is written for it.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{OnceCell, OwnedMutexGuard, oneshot};
use tokio::time::Instant;

use super::error::WhyError;
use super::limits::RETENTION;
use super::queue::ChainQueue;
use super::record::{self, HASH_FIELD, QueuedDecision, RecordView, verified_window};
use crate::chain::{Sealed, VerifiedBodies};
use crate::clock::{Clock, timestamp, unix_ms};
use crate::store::{
    Append, AppendStart, ChainKey, ChainStore, ConflictRetry, HotChains, KnownWindow, Landed,
    MOST_APPENDS_TOGETHER, StoreError, Winner,
};
use crate::transparency::{Lifetime, LogError, LogGrowth, LogKeys, LogKind, logged};
use crate::witnessing::Signed;

/// The most decisions one step lands: what the store takes at once, and fewer than a window
/// keeps, so that no record of a batch is evicted by the same batch.
pub const MOST_TOGETHER: usize = if MOST_APPENDS_TOGETHER < RETENTION.capacity {
    MOST_APPENDS_TOGETHER
} else {
    RETENTION.capacity - 1
};

/// Whether an append grows the chain's log or starts it over (`hearth admin log reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStep {
    Grow,
    StartOver,
}

/// One call's decision, queued for its chain's turn.
pub struct Pending {
    pub decision: QueuedDecision,
    pub step: LogStep,
    /// Whether the chain is a household account's, whose log is kept for good (see
    /// [`Lifetime`]); the same for every decision of one chain.
    pub kept: bool,
    /// When the call's budget runs out.
    pub deadline: Instant,
    pub answer: oneshot::Sender<Result<Appended, WhyError>>,
}

impl Pending {
    /// A log reset lands by itself: it starts the log that the decisions after it grow.
    pub fn alone(&self) -> bool {
        self.step == LogStep::StartOver
    }

    fn answer(self, answer: Result<Appended, WhyError>) {
        // A call that is gone (its client left) needs no answer.
        let _ = self.answer.send(answer);
    }
}

/// A landed decision, as its call hands it out: the stored record with its receipt, and the
/// checkpoint the receipt ends in, to be witnessed once for the whole batch.
pub struct Appended {
    pub record: Value,
    pub witnessing: Option<Arc<Witnessing>>,
}

/// A batch's signed checkpoint and the cosignature lines the witnesses return for it, asked
/// for by the first of its calls to want them and shared by the rest.
pub struct Witnessing {
    pub signed: Signed,
    pub lines: OnceCell<String>,
}

/// What a batch lands with: the service's parts it needs, owned, so that landing runs on its
/// own task and finishes even when the call that started it goes away (its client left):
/// the other calls' answers depend on it.
pub struct Committer {
    pub store: Arc<dyn ChainStore>,
    pub clock: Arc<dyn Clock>,
    pub log_keys: Option<Arc<LogKeys>>,
    pub hot_chains: Arc<HotChains>,
    pub verified_bodies: Arc<VerifiedBodies<RecordView>>,
}

/// Where a batch's first append starts from.
enum Start {
    /// Heads this process knows without reading: a winner's, or those it left.
    Heads(Winner, Option<KnownWindow>),
    /// The chain as read.
    Read(AppendStart),
}

/// A batch planned: the appends (as many of the batch as the log has room for), each call's
/// receipt, the signed checkpoint, and what was known before and after.
struct Planned {
    appends: Vec<Append>,
    receipts: Vec<Option<String>>,
    signed: Option<Signed>,
    /// What was known of the window before the batch: what a retry from a winner builds on.
    known_before: Option<KnownWindow>,
    /// What was known before the batch's last append, for [`Landed::after`].
    known_before_last: Option<KnownWindow>,
    /// The log's most entries, when the batch's last decisions did not fit (they are answered
    /// that the log is full).
    full_at: Option<u64>,
}

impl Committer {
    /// Lands `batch` (taken in order from `queue`, holding the chain's `turn`), answers each
    /// call, then gives the turn up. `read_ahead` is what the leading call read before it
    /// queued, when no other call held the turn then.
    pub async fn land(
        self,
        key: ChainKey,
        mut batch: Vec<Pending>,
        read_ahead: Option<AppendStart>,
        queue: Arc<ChainQueue<Pending>>,
        turn: OwnedMutexGuard<()>,
    ) {
        let Some(deadline) = batch.iter().map(|pending| pending.deadline).max() else {
            return;
        };
        let step = batch[0].step;
        let mut retry = ConflictRetry::until(deadline);
        let left = queue.take_left();
        // The heads to build on without reading the chain: on a hot chain, those this
        // process's last append left (see `HotChains`); soon after a batch this process
        // landed, those it left (see `queue::Left`); after a lost race, those the store named
        // while refusing (see `ChainStore::append_or_winner`); each with what was known of the
        // window before. A decision's record depends on nothing in the chain but its place,
        // so nothing known is stale but the heads, and a stale head only costs a refused write
        // that names the current one. Records this process did not read are not verified
        // before it appends after them, as another instance's appends never are by this one:
        // every read verifies the whole window, a quiet chain is read before every append,
        // and the conditional write keeps the chain linear whatever was assumed.
        let hot = match step {
            LogStep::Grow => self.hot_chains.get(&key),
            LogStep::StartOver => None,
        };
        if let Some(until) = hot.as_ref().and_then(|landed| landed.make_way_until) {
            retry.make_way(until).await;
        }
        let mut last_lost = hot.as_ref().map(|landed| landed.last_lost);
        let mut start = match (hot, left, step) {
            (Some(hot), _, _) => Some(Start::Heads(hot.heads, Some(hot.known))),
            (None, Some(left), LogStep::Grow) => Some(Start::Heads(left.heads, Some(left.known))),
            _ => read_ahead.map(Start::Read),
        };
        loop {
            // Calls out of time are answered busy; nothing is written for them.
            let now = Instant::now();
            let (late, on_time): (Vec<_>, Vec<_>) = batch
                .into_iter()
                .partition(|pending| pending.deadline <= now);
            late.into_iter()
                .for_each(|pending| pending.answer(Err(WhyError::Busy)));
            batch = on_time;
            if batch.is_empty() {
                return;
            }
            let read = start.is_none();
            let planned = match start.take() {
                Some(start) => self.plan(&batch, start),
                None => self.read_and_plan(&key, &batch).await,
            };
            let planned = match planned {
                Ok(Some(planned)) => planned,
                // The heads known could not be built on: read the chain (after a pause, when
                // what was just read could not be built on either: its window ended meanwhile).
                Ok(None) => {
                    if read && !retry.pause().await {
                        return answer_all(batch, WhyError::Busy);
                    }
                    continue;
                }
                Err(error) => return answer_all(batch, error),
            };
            let last = planned.appends.last().expect("a plan holds an append");
            let landed = last_lost.map(|last_lost| {
                Landed::after(last, planned.known_before_last.as_ref(), last_lost)
            });
            let left = Landed::after(
                last,
                planned.known_before_last.as_ref(),
                std::time::Instant::now(),
            );
            let now_ms = unix_ms(self.clock.now());
            let landing = Instant::now();
            let records: Vec<Sealed> = planned
                .appends
                .iter()
                .map(|append| append.record.clone())
                .collect();
            let landing_result = match self
                .store
                .append_together(&key, planned.appends, now_ms)
                .await
            {
                // The winner is this very batch: it landed, and the store's answer was lost and
                // the request sent again (the SDK's retries reuse the request's idempotency
                // token, so DynamoDB itself answers a retried success; an emulator may not).
                Err((StoreError::Conflict, Some(winner)))
                    if winner.head.last_seq == left.heads.head.last_seq
                        && winner.head.last_hash == left.heads.head.last_hash =>
                {
                    Ok(())
                }
                result => result,
            };
            match landing_result {
                Ok(()) => {
                    tracing::debug!(
                        target: "hearth::why::commit",
                        decisions = records.len(),
                        landing_ms = landing.elapsed().as_millis() as u64,
                        "decisions landed together"
                    );
                    match landed {
                        Some(landed) => self
                            .hot_chains
                            .remember(&key, landed.making_way(retry.attempt_took())),
                        None => self.hot_chains.forget(&key),
                    }
                    queue.leave(left.heads, left.known);
                    answer_landed(
                        batch,
                        records,
                        planned.receipts,
                        planned.signed,
                        planned.full_at,
                    );
                    drop(turn);
                    return;
                }
                Err((StoreError::Conflict, winner)) => {
                    last_lost = Some(std::time::Instant::now());
                    // Starting over takes the log's state as read; only growth builds on a
                    // winner.
                    if step == LogStep::Grow {
                        start = winner.map(|winner| Start::Heads(winner, planned.known_before));
                    }
                    if !retry.pause().await {
                        return answer_all(batch, WhyError::Busy);
                    }
                }
                Err((error, _)) => {
                    self.hot_chains.forget(&key);
                    return answer_all(batch, error.into());
                }
            }
        }
    }

    /// Reads the chain and plans the batch after it.
    async fn read_and_plan(
        &self,
        key: &ChainKey,
        batch: &[Pending],
    ) -> Result<Option<Planned>, WhyError> {
        let read = self
            .store
            .load_for_append(key, unix_ms(self.clock.now()))
            .await?;
        self.plan(batch, Start::Read(read))
    }

    /// Seals the batch's decisions in order after `start` and grows the log by them; `None`
    /// when the heads known could not be built on (read the chain and plan again).
    fn plan(&self, batch: &[Pending], start: Start) -> Result<Option<Planned>, WhyError> {
        let now = self.clock.now();
        let now_ms = unix_ms(now);
        let recorded_at = timestamp(now);
        let recorded_at = recorded_at.as_str();
        fn sealing<'a>(
            pending: &'a Pending,
            recorded_at: &'a str,
        ) -> impl FnOnce(u64, Option<&str>) -> Sealed + 'a {
            move |seq, prev| {
                Sealed::new(
                    seq,
                    &record::build(&pending.decision.as_new(), seq, recorded_at, prev),
                )
            }
        }
        let seal = |pending| sealing(pending, recorded_at);
        let (first, named, log, known_before) = match start {
            Start::Heads(winner, known) => {
                let Some(append) =
                    Append::after(&winner, known.as_ref(), RETENTION, now_ms, seal(&batch[0]))
                else {
                    return Ok(None);
                };
                (append, winner.head.log_id, winner.log, known)
            }
            Start::Read((current, log)) => {
                if let Some(snapshot) = &current {
                    verified_window(snapshot, &self.verified_bodies)?;
                }
                let append = Append::next(
                    current.as_ref().map(|snapshot| &snapshot.head),
                    current.as_ref().map_or(&[], |snapshot| &snapshot.records),
                    RETENTION,
                    now_ms,
                    seal(&batch[0]),
                );
                let named = current
                    .as_ref()
                    .and_then(|snapshot| snapshot.head.log_id.clone());
                (append, named, log, current.map(KnownWindow::from))
            }
        };
        // A household account's log is kept for good; a credential's lives with its window
        // (see `transparency::Lifetime`).
        let lifetime = match batch[0].kept {
            true => Lifetime::Kept,
            false => Lifetime::Window {
                window_ends_ms: first.head.expires_at_ms,
            },
        };
        let keys = self.log_keys.as_deref();
        let mut growth = match (batch[0].step, keys) {
            (LogStep::StartOver, Some(keys)) => {
                LogGrowth::start_over(keys, LogKind::Decisions, log.as_ref(), lifetime)?
            }
            _ => LogGrowth::grow(
                keys,
                LogKind::Decisions,
                named.as_deref(),
                log.as_ref(),
                lifetime,
            )?,
        };
        let mut appends: Vec<Append> = Vec::with_capacity(batch.len());
        let mut known = known_before.clone();
        let mut known_before_last = known.clone();
        let mut next = Some(first);
        let mut full_at = None;
        for pending in batch {
            let append = match next.take() {
                Some(first) => first,
                None => {
                    let before = appends.last().expect("the first append is planned");
                    let winner = Winner {
                        head: before.head.clone(),
                        first_seq: before.evict_below_seq,
                        log: before.log.as_ref().map(|log| log.head.clone()),
                    };
                    match Append::after(&winner, known.as_ref(), RETENTION, now_ms, seal(pending)) {
                        Some(append) => append,
                        None => return Ok(None),
                    }
                }
            };
            let log_append = match growth.add(&append.record.hash) {
                Ok(log_append) => log_append,
                // The log is full after the decisions before this one: they land, and the
                // rest are answered that it is full.
                Err(LogError::Full(most)) if !appends.is_empty() => {
                    full_at = Some(most);
                    break;
                }
                Err(error) => return Err(error.into()),
            };
            let append = logged(append, log_append);
            known_before_last = known.clone();
            known = Some(Landed::after(&append, known.as_ref(), std::time::Instant::now()).known);
            appends.push(append);
        }
        let last = appends.last_mut().expect("the first append is planned");
        let last_log = last
            .log
            .as_mut()
            .expect("every planned append grows the log");
        let receipts = growth.sign(last_log);
        let signed = Signed::of(&last_log.head);
        Ok(Some(Planned {
            appends,
            receipts,
            signed,
            known_before,
            known_before_last,
            full_at,
        }))
    }
}

/// Answers each call its landed record with its receipt, and the calls whose decisions did not
/// fit in the log that it is full.
fn answer_landed(
    batch: Vec<Pending>,
    records: Vec<Sealed>,
    receipts: Vec<Option<String>>,
    signed: Option<Signed>,
    full_at: Option<u64>,
) {
    let witnessing = signed.map(|signed| {
        Arc::new(Witnessing {
            signed,
            lines: OnceCell::new(),
        })
    });
    let mut batch = batch.into_iter();
    // The landed records first: zipping takes from the left until one side ends, and a call
    // taken from `batch` past the last record would be dropped unanswered.
    for ((sealed, receipt), pending) in records.into_iter().zip(receipts).zip(batch.by_ref()) {
        let answer = sealed
            .to_json(HASH_FIELD)
            .map_err(|_| WhyError::Unavailable)
            .map(|mut record| {
                if let Some(receipt) = receipt {
                    record["tlog_proof"] = receipt.into();
                }
                Appended {
                    record,
                    witnessing: witnessing.clone(),
                }
            });
        pending.answer(answer);
    }
    for pending in batch {
        pending.answer(Err(WhyError::LogFull(full_at.unwrap_or(0))));
    }
}

fn answer_all(batch: Vec<Pending>, error: WhyError) {
    for pending in batch {
        pending.answer(Err(error.clone()));
    }
}
