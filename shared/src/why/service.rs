//! The decision memory's behaviour, independent of MCP: recording, explaining, listing changes
//! and returning verified traces, each scoped to one caller and one household.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use time::format_description::well_known::{Iso8601, Rfc3339};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::commit::{Committer, LogStep, MOST_TOGETHER, Pending};
pub use super::error::WhyError;
use super::limits::*;
use super::matching::best_match;
use super::queue::{AppendQueues, Turn};
use super::record::{HASH_FIELD, NewDecision, QueuedDecision, RecordView, verified_window};
use crate::auth::Caller;
use crate::auth::attestation::HostClaim;
use crate::chain::{self, IntegrityError, Sealed};
use crate::clock::{Clock, unix_ms};
use crate::store::{
    APPEND_BUDGET, ChainKey, ChainRead, ChainStore, HotChains, LogHead, LogRead, Snapshot,
};
use crate::transparency::{
    self, LogKeys, LogKind, ProofError, ProvenWindow, WindowProofs, history, history_leaves,
};
use crate::witnessing::Witnesses;

/// What `explain_why` looks for.
#[derive(Debug, Clone)]
pub enum Lookup {
    TraceId(String),
    Action(String),
    Question(String),
}

impl Lookup {
    pub fn label(&self) -> &'static str {
        match self {
            Lookup::TraceId(_) => "trace_id",
            Lookup::Action(_) => "action",
            Lookup::Question(_) => "question",
        }
    }
}

/// A record found by a lookup, with the answer a voice assistant can read aloud.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub record: Value,
    pub trace_id: String,
    pub answer: String,
}

/// A verified retained chain and the record it was asked for.
#[derive(Debug, Clone)]
pub struct Trace {
    pub trace_id: String,
    pub anchor: Option<String>,
    pub records: Vec<Value>,
    /// The retained records' inclusion proofs against the household's signed decision log,
    /// when the server has a log key and the log a checkpoint.
    pub log: Option<WindowProofs>,
}

pub struct WhyService {
    /// The transparency logs' signing keys; without them the log grows unsigned.
    log_keys: Option<Arc<LogKeys>>,
    /// The witnesses each newly signed checkpoint goes to, when a policy names some.
    witnesses: Option<Arc<Witnesses>>,
    store: Arc<dyn ChainStore>,
    clock: Arc<dyn Clock>,
    /// This process's appends to one chain queue for its turn and land together (see
    /// [`super::queue`]).
    queues: AppendQueues<Pending>,
    /// The chains this process's appends had to race others for, lately (see [`HotChains`]).
    hot_chains: Arc<HotChains>,
    /// Bodies this process has already hashed (see [`chain::VerifiedBodies`]).
    verified_bodies: Arc<chain::VerifiedBodies<RecordView>>,
    /// How long an append may wait and retry before the chain is reported busy.
    append_budget: std::time::Duration,
}

/// How many verified record bodies the service remembers: 40 households' whole windows.
pub const REMEMBERED_BODIES: usize = 1_000;

impl WhyService {
    pub fn new(store: Arc<dyn ChainStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            queues: AppendQueues::default(),
            hot_chains: Arc::default(),
            log_keys: None,
            witnesses: None,
            verified_bodies: Arc::new(chain::VerifiedBodies::new(REMEMBERED_BODIES)),
            append_budget: APPEND_BUDGET,
        }
    }

    /// Verifies the whole retained chain and returns each record's view, parsed once.
    fn verified(&self, snapshot: &Snapshot) -> Result<Vec<Arc<RecordView>>, WhyError> {
        Ok(verified_window(snapshot, &self.verified_bodies)?)
    }

    /// The same service signing each household's decision log with `keys`.
    /// The same service giving each append `budget` instead of [`APPEND_BUDGET`] (what a
    /// voice call affords): for a store known to be slower than DynamoDB, such as an emulator
    /// on a loaded test machine, where a race's retries would otherwise run out of time.
    pub fn with_append_budget(mut self, budget: std::time::Duration) -> Self {
        self.append_budget = budget;
        self
    }

    pub fn with_log_keys(mut self, keys: Option<Arc<LogKeys>>) -> Self {
        self.log_keys = keys;
        self
    }

    /// The same service submitting each new checkpoint to `witnesses` and adding their
    /// cosignatures to the checkpoints it hands out.
    pub fn with_witnesses(mut self, witnesses: Option<Arc<Witnesses>>) -> Self {
        self.witnesses = witnesses;
        self
    }

    /// Appends a decision to the household's chain and its log, and returns the stored record
    /// with `tlog_proof`: the new entry's inclusion proof in the newly signed tree (when a log
    /// key is configured).
    pub async fn record(
        &self,
        caller: &Caller,
        decision: NewDecision<'_>,
    ) -> Result<Value, WhyError> {
        let key = chain_key(caller, decision.household_id)?;
        check_text("action", decision.action, ACTION_MAX)?;
        check_text("reason", decision.reason, REASON_MAX)?;
        check_text("approver", decision.approver, APPROVER_MAX)?;
        let inputs_bytes =
            chain::to_canonical_string(&Value::Object(decision.inputs.clone())).len();
        if inputs_bytes > INPUTS_MAX_BYTES {
            return Err(WhyError::Invalid(format!(
                "`inputs` is {inputs_bytes} bytes as canonical JSON; the limit is {INPUTS_MAX_BYTES}."
            )));
        }
        self.append(&key, &decision, LogStep::Grow, caller).await
    }

    /// `hearth admin log reset`: starts the household's decision log anew, the only way a
    /// chain that has a log gets another. The new log's first entry is a decision by the
    /// operator that names the log it replaces (its id, and its origin and size while its head
    /// was still there), so that every kept proof of the old log is explained, never silently
    /// taken for another household's.
    pub async fn reset_log(&self, caller: &Caller, household_id: &str) -> Result<Value, WhyError> {
        let key = chain_key(caller, household_id)?;
        let keys = self.log_keys.as_ref().ok_or_else(|| {
            WhyError::NotFound("This server has no log key, so it keeps no signed log.".into())
        })?;
        let (current, log) = self
            .store
            .load_for_append(&key, unix_ms(self.clock.now()))
            .await?;
        let named = current
            .as_ref()
            .and_then(|snapshot| snapshot.head.log_id.as_deref());
        let replaced = transparency::replaced(keys, LogKind::Decisions, named, log.as_ref());
        let mut inputs = Map::new();
        inputs.insert("previous_log_id".into(), json!(replaced.log_id));
        inputs.insert("previous_origin".into(), json!(replaced.origin));
        inputs.insert("previous_size".into(), json!(replaced.size));
        let reason = match (&replaced.log_id, replaced.size) {
            (Some(id), Some(size)) => format!(
                "An operator started a new decision log; it replaces log {id}, which held {size} entries."
            ),
            (Some(id), None) => format!(
                "An operator started a new decision log; it replaces log {id}, whose head was removed."
            ),
            (None, _) => "An operator started a new decision log.".to_owned(),
        };
        let decision = NewDecision {
            household_id,
            action: "start a new decision log",
            reason: &reason,
            inputs: &inputs,
            approver: "the operator",
        };
        self.append(&key, &decision, LogStep::StartOver, caller)
            .await
    }

    /// Appends `decision` to the chain `key` and its log (grown, or started over), and returns
    /// the stored record with `tlog_proof` when a log key is configured: cosigned by the
    /// witnesses that answered in time, asked once the chain's turn is over.
    ///
    /// The decision queues for the chain's turn in this process (see [`super::queue`]): the
    /// call that gets the turn lands every decision queued then in one step (see
    /// [`super::commit`]), and each call is answered its own record. Within
    /// [`APPEND_BUDGET`] from now, or the chain is reported busy and nothing is written.
    async fn append(
        &self,
        key: &ChainKey,
        decision: &NewDecision<'_>,
        step: LogStep,
        caller: &Caller,
    ) -> Result<Value, WhyError> {
        let deadline = tokio::time::Instant::now() + self.append_budget;
        let queue = self.queues.of(key);
        let (answer, mut answered) = tokio::sync::oneshot::channel();
        let ticket = queue.join(Pending {
            decision: QueuedDecision::of(decision),
            step,
            kept: caller.household.is_some(),
            deadline,
            answer,
        });
        loop {
            match queue
                .turn(&ticket, deadline, MOST_TOGETHER, Pending::alone)
                .await
            {
                Turn::Lead {
                    appends,
                    turn,
                    waited,
                    own,
                } => {
                    // What the HTTP layer read ahead serves this call's own batch, and only when
                    // no other call's append came first.
                    let read_ahead = match (own, waited) {
                        (true, false) => caller.read_ahead_with_log_of(key),
                        _ => None,
                    };
                    let committer = Committer {
                        store: self.store.clone(),
                        clock: self.clock.clone(),
                        log_keys: self.log_keys.clone(),
                        hot_chains: self.hot_chains.clone(),
                        verified_bodies: self.verified_bodies.clone(),
                    };
                    // On its own task: the other calls' answers must not depend on this one's
                    // client staying.
                    tokio::spawn(committer.land(
                        key.clone(),
                        appends,
                        read_ahead,
                        queue.clone(),
                        turn,
                    ));
                    if own {
                        break;
                    }
                }
                Turn::Taken => break,
                Turn::Withdrawn => return Err(WhyError::Busy),
            }
        }
        drop(ticket);
        // A landing that ended without answering (its task panicked) wrote nothing or all of
        // the batch, which cannot be told here: the same answer as a store that did not reply.
        let appended = (&mut answered).await.map_err(|_| WhyError::Unavailable)??;
        let mut record = appended.record;
        if let (Some(witnesses), Some(witnessing), Some(receipt)) = (
            &self.witnesses,
            appended.witnessing,
            record.get("tlog_proof").and_then(Value::as_str),
        ) {
            let lines = witnessing
                .lines
                .get_or_init(|| {
                    witnesses.witness(
                        key,
                        &witnessing.signed.note,
                        witnessing.signed.expires_at_ms,
                    )
                })
                .await;
            record["tlog_proof"] = format!("{receipt}{lines}").into();
        }
        Ok(record)
    }

    /// Finds one decision by trace id (full or a prefix of at least 8), exact action, or
    /// question, and phrases the answer.
    pub async fn explain(
        &self,
        caller: &Caller,
        household_id: &str,
        lookup: &Lookup,
    ) -> Result<Explanation, WhyError> {
        let key = chain_key(caller, household_id)?;
        let snapshot = self.retained(caller, &key).await?;
        let views = self.verified(&snapshot)?;
        let records = &snapshot.records;
        let index = match lookup {
            Lookup::TraceId(trace_id) => find_trace(records, trace_id)?,
            Lookup::Action(action) => {
                check_text("action", action, ACTION_MAX)?;
                views
                    .iter()
                    .rposition(|view| view.action == action.as_str())
                    .ok_or_else(|| {
                        WhyError::NotFound("No retained decision has exactly that action.".into())
                    })?
            }
            Lookup::Question(question) => {
                check_text("question", question, QUESTION_MAX)?;
                let texts: Vec<[&str; 2]> = views
                    .iter()
                    .map(|v| [v.action.as_ref(), v.reason.as_ref()])
                    .collect();
                best_match(question, texts.iter().map(|pair| &pair[..])).ok_or_else(|| {
                    WhyError::NotFound("No retained decision matches that question.".into())
                })?
            }
        };
        let sealed = &records[index];
        Ok(Explanation {
            answer: spoken_answer(&views[index], &sealed.hash),
            record: to_json(sealed, index)?,
            trace_id: sealed.hash.clone(),
        })
    }

    /// Decisions recorded strictly after `since` (ISO 8601 with a timezone), oldest first.
    pub async fn changes_since(
        &self,
        caller: &Caller,
        household_id: &str,
        since: &str,
    ) -> Result<Vec<Value>, WhyError> {
        let key = chain_key(caller, household_id)?;
        let since = parse_since(since)?;
        let snapshot = self.retained(caller, &key).await?;
        let views = self.verified(&snapshot)?;
        let mut changed = Vec::new();
        for (index, (sealed, view)) in snapshot.records.iter().zip(&views).enumerate() {
            let recorded_at = OffsetDateTime::parse(&view.recorded_at, &Rfc3339)
                .map_err(|_| unreadable(index))?;
            if recorded_at > since {
                changed.push(to_json(sealed, index)?);
            }
        }
        Ok(changed)
    }

    /// The verified retained chain with the record named by `trace_id` (full or prefix).
    pub async fn trace(
        &self,
        caller: &Caller,
        household_id: &str,
        trace_id: &str,
    ) -> Result<Trace, WhyError> {
        let (key, snapshot, log_head) = self.read_window(caller, household_id).await?;
        let index = find_trace(&snapshot.records, trace_id)?;
        let window = self.prove(&key, &snapshot, log_head).await?;
        Ok(Trace {
            trace_id: snapshot.records[index].hash.clone(),
            anchor: window.anchor,
            records: window.records,
            log: window.log,
        })
    }

    /// The verified retained chain, each record with its inclusion proof: what the household
    /// page's phone checks for itself.
    pub async fn window(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Result<ProvenWindow, WhyError> {
        let (key, snapshot, log_head) = self.read_window(caller, household_id).await?;
        self.prove(&key, &snapshot, log_head).await
    }

    /// The household's live window, verified, and its log head, in one read (the proofs add
    /// one batch read), made beside admission when the HTTP layer could (see
    /// `read_ahead_with_log`).
    async fn read_window(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Result<(ChainKey, Snapshot, Option<LogHead>), WhyError> {
        let key = chain_key(caller, household_id)?;
        let (snapshot, log_head) = match caller.read_ahead_with_log_of(&key) {
            Some(read) => read,
            None => {
                self.store
                    .load_for_append(&key, unix_ms(self.clock.now()))
                    .await?
            }
        };
        let snapshot = snapshot.ok_or_else(no_decisions)?;
        self.verified(&snapshot)?;
        Ok((key, snapshot, log_head))
    }

    /// `snapshot`'s records as JSON with their inclusion proofs, cosigned by the witnesses
    /// that answered.
    async fn prove(
        &self,
        key: &ChainKey,
        snapshot: &Snapshot,
        log_head: Option<LogHead>,
    ) -> Result<ProvenWindow, WhyError> {
        let records = snapshot
            .records
            .iter()
            .enumerate()
            .map(|(index, sealed)| to_json(sealed, index))
            .collect::<Result<Vec<_>, _>>()?;
        let proved = transparency::prove_window(
            self.store.as_ref(),
            self.log_keys.as_deref(),
            LogKind::Decisions,
            key,
            snapshot,
            log_head,
        )
        .await;
        let log = match proved {
            Ok(Some(mut proofs)) => {
                if let Some(witnesses) = &self.witnesses {
                    proofs.checkpoint = witnesses.attach(key, &proofs.checkpoint).await;
                }
                Some(proofs)
            }
            Ok(None) => None,
            Err(ProofError::Store(error)) => return Err(error.into()),
            Err(error) => return Err(WhyError::LogMismatch(error.to_string())),
        };
        Ok(ProvenWindow {
            anchor: snapshot.head.anchor.clone(),
            records,
            log,
        })
    }

    /// The household's current signed checkpoint of its `kind` log and the consistency proof
    /// from the tree of `from_size` to it. The ledger's log is read through its chain key in
    /// the same data scope (`countersign::ledger::chain_key_in`): one tool serves both logs.
    pub async fn history(
        &self,
        caller: &Caller,
        household_id: &str,
        kind: LogKind,
        from_size: u64,
    ) -> Result<(String, Vec<String>), WhyError> {
        let key = chain_key(caller, household_id)?;
        // Like every other read of the ledger, its history is for a signed speaker, or a
        // reader granted the household's purchase records without one (a token holding
        // `countersign:read`, a member on the household page): it tells when, and how often,
        // the household bought.
        let reads_without_device = caller
            .household
            .as_ref()
            .is_some_and(|household| household.reads_without_device && household.id == key.name);
        if kind == LogKind::Ledger
            && !matches!(caller.host, HostClaim::Verified(_))
            && !reads_without_device
        {
            return Err(WhyError::NoSpeaker);
        }
        let key = log_chain_key(&caller.scope, &key.name, kind);
        let keys = self.log_keys.as_ref().ok_or_else(|| {
            WhyError::NotFound("This server has no log key, so it signs no checkpoints.".into())
        })?;
        let now_ms = unix_ms(self.clock.now());
        // The log head comes from the head item the window read returned, and only from a
        // live window, which names the log the proof must come from.
        let ahead = caller
            .read_ahead_for_history_of(&key)
            .map(|(window, log, hashes)| {
                let named = window.head.log_id.clone();
                (LogRead { log, named }, hashes)
            });
        match history(
            self.store.as_ref(),
            keys,
            kind,
            &key,
            from_size,
            now_ms,
            ahead,
        )
        .await
        {
            Ok((checkpoint, proof)) => match &self.witnesses {
                Some(witnesses) => Ok((witnesses.attach(&key, &checkpoint).await, proof)),
                None => Ok((checkpoint, proof)),
            },
            Err(ProofError::NoLog) => Err(WhyError::NotFound(format!(
                "This household has no signed {} log yet.",
                kind.as_str()
            ))),
            Err(ProofError::Invalid(reason)) => Err(WhyError::Invalid(reason)),
            Err(ProofError::Store(error)) => Err(error.into()),
            Err(error) => Err(WhyError::LogMismatch(error.to_string())),
        }
    }

    /// Reads the window a read-only call on `household_id` will read (see
    /// [`Caller::read_ahead`]), for a caller whose standing admission is still confirming;
    /// `None` where the household id is malformed.
    pub async fn read_ahead(&self, caller: &Caller, household_id: &str) -> Option<ChainRead> {
        let key = ahead_key(caller, household_id)?;
        Some(ChainRead::read(self.store.as_ref(), key, unix_ms(self.clock.now())).await)
    }

    /// Reads the window and log head a trace of `household_id` starts from, as
    /// [`Self::read_ahead`] does for the window alone.
    pub async fn read_ahead_with_log(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Option<ChainRead> {
        let key = ahead_key(caller, household_id)?;
        self.read_with_log(key).await
    }

    /// Reads what a decision's append to `household_id` starts from, as [`Self::read_ahead`]
    /// does for a read; `None` for a hot chain, whose append starts from the heads this
    /// process's last append left and reads nothing (see `commit`), and for a chain whose turn
    /// another call holds now or that this process appended to just now (see `queue`): the
    /// append would not use the read.
    pub async fn read_ahead_for_append(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Option<ChainRead> {
        let key = ahead_key(caller, household_id)?;
        if self.hot_chains.get(&key).is_some() || self.queues.reads_nothing_next(&key) {
            return None;
        }
        self.read_with_log(key).await
    }

    /// Reads what a history proof of `household_id`'s `kind` log from `from_size` needs: the
    /// window with its log head and, beside them, the stored hashes such a proof may need
    /// whatever the log's size (`tlog::tree::consistency_candidates`), so that the proof takes
    /// one round trip. `None` for a malformed household id. The ledger's is read too: the
    /// caller a read ahead is made for has no verified speaker yet (its attestation is checked
    /// beside), and the call itself refuses the ledger's history without one, dropping what
    /// was read, as every read ahead of a refused call is dropped.
    pub async fn read_ahead_for_history(
        &self,
        caller: &Caller,
        household_id: &str,
        kind: LogKind,
        from_size: u64,
    ) -> Option<ChainRead> {
        let key = ahead_key(caller, household_id)?;
        let key = log_chain_key(&caller.scope, &key.name, kind);
        let leaves = history_leaves(from_size);
        let now_ms = unix_ms(self.clock.now());
        Some(ChainRead::read_for_history(self.store.as_ref(), key, now_ms, &leaves).await)
    }

    async fn read_with_log(&self, key: ChainKey) -> Option<ChainRead> {
        let now_ms = unix_ms(self.clock.now());
        Some(ChainRead::read_with_log(self.store.as_ref(), key, now_ms).await)
    }

    /// The household's live window, not yet verified; an empty or expired one is "not found".
    /// Every caller goes on to [`verified`], which is the only way to read its records. A
    /// window the HTTP layer read ahead under the same key is used as it is.
    async fn retained(&self, caller: &Caller, key: &ChainKey) -> Result<Arc<Snapshot>, WhyError> {
        let now_ms = unix_ms(self.clock.now());
        ChainRead::or_load(caller.read_ahead_of(key), self.store.as_ref(), key, now_ms)
            .await?
            .ok_or_else(no_decisions)
    }
}

/// The chain whose log is `household_id`'s `kind` log, in data scope `scope`: the ledger's
/// log is read through its chain key (`countersign::ledger::chain_key_in`).
fn log_chain_key(scope: &str, household_id: &str, kind: LogKind) -> ChainKey {
    match kind {
        LogKind::Decisions => chain_key_in(scope, household_id),
        LogKind::Ledger => crate::countersign::ledger::chain_key_in(scope, household_id),
    }
}

/// The chain a read ahead of `caller`'s call on `household_id` reads, or `None` where the
/// household id is malformed (the call itself then says what is wrong).
fn ahead_key(caller: &Caller, household_id: &str) -> Option<ChainKey> {
    check_household(household_id).ok()?;
    Some(chain_key_in(&caller.scope, household_id))
}

fn no_decisions() -> WhyError {
    WhyError::NotFound("This household has no decisions in its current window.".into())
}

/// The chain for one household of one caller (see [`chain_key_in`]).
/// The toolset suffix keeps the household cap
/// apart from other toolsets' chains in the same credential scope.
fn chain_key(caller: &Caller, household_id: &str) -> Result<ChainKey, WhyError> {
    // A household token's caller acts on its own household only, whatever it asks for.
    let household_id = caller
        .household_for(Some(household_id))
        .map_err(|refusal| WhyError::Invalid(refusal.to_string()))?;
    check_household(household_id)?;
    Ok(chain_key_in(&caller.scope, household_id))
}

/// The decision chain of `household_id` in data scope `scope`: what `hearth admin` moves and
/// removes.
pub fn chain_key_in(scope: &str, household_id: &str) -> ChainKey {
    ChainKey {
        scope: format!("{scope}/why"),
        name: household_id.to_owned(),
    }
}

fn check_household(household_id: &str) -> Result<(), WhyError> {
    let length = household_id.chars().count();
    let well_formed = household_id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && household_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if length == 0 || length > HOUSEHOLD_ID_MAX || !well_formed {
        return Err(WhyError::Invalid(format!(
            "`household_id` must be 1 to {HOUSEHOLD_ID_MAX} letters, digits, '.', '_' or '-', starting with a letter or digit."
        )));
    }
    Ok(())
}

/// Checks a required free-text argument: not blank, at most `max` characters.
pub fn check_text(field: &str, value: &str, max: usize) -> Result<(), WhyError> {
    if value.trim().is_empty() {
        return Err(WhyError::Invalid(format!("`{field}` must not be empty.")));
    }
    let length = value.chars().count();
    if length > max {
        return Err(WhyError::Invalid(format!(
            "`{field}` is {length} characters; the limit is {max}."
        )));
    }
    Ok(())
}

/// Parses `since`: ISO 8601 with a timezone. A timestamp without one is ambiguous (whose
/// midnight?) and is refused with a message that says so.
pub fn parse_since(since: &str) -> Result<OffsetDateTime, WhyError> {
    if since.chars().count() > SINCE_MAX {
        return Err(WhyError::Invalid(format!(
            "`since` is longer than {SINCE_MAX} characters."
        )));
    }
    if let Ok(time) = OffsetDateTime::parse(since, &Rfc3339) {
        return Ok(time);
    }
    if let Ok(time) = OffsetDateTime::parse(since, &Iso8601::DEFAULT) {
        return Ok(time);
    }
    if PrimitiveDateTime::parse(since, &Iso8601::DEFAULT).is_ok()
        || time::Date::parse(since, &Iso8601::DEFAULT).is_ok()
    {
        return Err(WhyError::Invalid(
            "`since` has no timezone; add one, e.g. 2026-11-30T08:00:00Z or 2026-11-30T09:00:00+01:00.".into(),
        ));
    }
    Err(WhyError::Invalid(
        "`since` is not an ISO 8601 timestamp, e.g. 2026-11-30T08:00:00Z.".into(),
    ))
}

fn find_trace(records: &[Sealed], trace_id: &str) -> Result<usize, WhyError> {
    let wanted = trace_id.to_ascii_lowercase();
    let length = wanted.len();
    if !(TRACE_ID_MIN..=TRACE_ID_MAX).contains(&length)
        || !wanted.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(WhyError::Invalid(format!(
            "`trace_id` must be {TRACE_ID_MIN} to {TRACE_ID_MAX} hexadecimal characters."
        )));
    }
    let mut found = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.hash.starts_with(&wanted));
    match (found.next(), found.next()) {
        (Some((index, _)), None) => Ok(index),
        (Some(_), Some(_)) => Err(WhyError::Invalid(
            "That trace id prefix matches more than one decision; give more characters.".into(),
        )),
        (None, _) => Err(WhyError::NotFound(
            "No retained decision in this household has that trace id.".into(),
        )),
    }
}

fn to_json(sealed: &Sealed, index: usize) -> Result<Value, WhyError> {
    sealed.to_json(HASH_FIELD).map_err(|_| unreadable(index))
}

/// A record that hashes correctly but is not a decision record (0-based `index`).
fn unreadable(index: usize) -> WhyError {
    WhyError::Integrity(IntegrityError {
        position: index + 1,
        problem: chain::Problem::Unreadable,
    })
}

/// At most two short sentences: the recorded reason as a labelled, sanitised quote, then the
/// short trace id and the approver.
fn spoken_answer(view: &RecordView, trace_id: &str) -> String {
    use crate::speech::sanitize::sanitize;
    format!(
        "The recorded reason for \"{}\" (the caller's words, unverified) is: \"{}\". Trace {}, approved by {}.",
        sanitize(&view.action, SPOKEN_ACTION_CHARS),
        sanitize(&view.reason, SPOKEN_REASON_CHARS),
        &trace_id[..8],
        sanitize(&view.approver, SPOKEN_APPROVER_CHARS),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::timestamp;
    use crate::transparency::LogError;

    #[test]
    fn a_full_log_is_a_limit_not_an_untrustworthy_history() {
        let full = WhyError::from(LogError::Full(3));
        assert!(matches!(full, WhyError::LogFull(3)), "{full:?}");
        assert!(!full.to_string().contains("cannot be trusted"), "{full}");
        let replaced = WhyError::from(LogError::Replaced);
        assert!(
            replaced.to_string().contains("cannot be trusted"),
            "{replaced}"
        );
    }

    #[test]
    fn since_requires_a_timezone() {
        assert!(parse_since("2026-11-30T08:00:00Z").is_ok());
        assert!(parse_since("2026-11-30T09:00:00+01:00").is_ok());
        let naive = parse_since("2026-11-30T08:00:00").unwrap_err().to_string();
        assert!(naive.contains("no timezone"), "{naive}");
        let garbage = parse_since("last tuesday").unwrap_err().to_string();
        assert!(garbage.contains("not an ISO 8601"), "{garbage}");
    }

    #[test]
    fn trace_ids_match_by_unique_prefix_of_8_to_64_hex() {
        let sealed = |hash: &str| Sealed {
            seq: 1,
            hash: hash.into(),
            body: String::new(),
        };
        let records = [
            sealed(&format!("abcdef01{}", "0".repeat(56))),
            sealed(&format!("abcdef01{}", "1".repeat(56))),
            sealed(&format!("12345678{}", "2".repeat(56))),
        ];
        assert_eq!(find_trace(&records, "12345678").unwrap(), 2);
        assert_eq!(find_trace(&records, "ABCDEF011").unwrap(), 1);
        assert_eq!(find_trace(&records, &records[0].hash).unwrap(), 0);
        let ambiguous = find_trace(&records, "abcdef01").unwrap_err().to_string();
        assert!(ambiguous.contains("more than one"), "{ambiguous}");
        for bad in ["1234567", "xyz45678", &"a".repeat(65)] {
            assert!(
                matches!(find_trace(&records, bad), Err(WhyError::Invalid(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            find_trace(&records, "ffffffff"),
            Err(WhyError::NotFound(_))
        ));
    }

    #[test]
    fn since_is_bounded_at_64_characters() {
        let at_limit = format!("2026-11-30T08:00:00{}Z", " ".repeat(44));
        assert_eq!(at_limit.len(), 64);
        assert!(
            parse_since(&at_limit)
                .unwrap_err()
                .to_string()
                .contains("not an ISO 8601")
        );
        let past = format!("{at_limit} ");
        assert!(
            parse_since(&past)
                .unwrap_err()
                .to_string()
                .contains("longer than 64")
        );
    }

    #[test]
    fn timestamps_are_utc_with_milliseconds() {
        let time = OffsetDateTime::from_unix_timestamp_nanos(1_764_473_853_123_000_000).unwrap();
        assert_eq!(timestamp(time), "2025-11-30T03:37:33.123Z");
    }
}
