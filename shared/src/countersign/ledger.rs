//! The household ledger: every proposal, reading-aloud, confirmation and guardian decision is
//! an entry in one hash chain per household, sealed by the same canonical-JSON/SHA-256 engine
//! and kept in the same [`ChainStore`] as the decision memory.
//!
//! Nothing else is stored. What is waiting, what was bought this week and what is left of
//! the budget are all rebuilt from the verified entries, so no counter can drift from the
//! record. A state change (placing a waiting order, say) is an append conditional on the
//! chain head the decision was made from: when two calls race, one append wins and the other
//! re-reads the ledger, sees the request already decided, and does nothing.

use std::collections::HashMap;
use std::sync::Arc;

use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use super::household::Weeks;
use super::judge::{ReasonCode, Verdict};
use super::policy::Outcome;
use crate::auth::Caller;
use crate::chain::{self, IntegrityError, Linked, Problem, Sealed};
use crate::clock::{Clock, timestamp, unix_ms};
use crate::store::{
    Append, AppendLocks, ChainKey, ChainStore, ConflictRetry, Head, LogRead, Retention, Snapshot,
    StoreError,
};
use crate::transparency::{
    self, Lifetime, LogError, LogKeys, LogKind, ProofCheck, ProofError, check_proof, check_window,
    grow,
};
use crate::witnessing::{Signed, Witnesses};

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

/// One ledger entry. `seq` and `prev` link it into the chain; `event` says what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub format: String,
    pub seq: u64,
    pub prev: Option<String>,
    /// Server time, RFC 3339 UTC with milliseconds.
    pub at: String,
    pub request_id: String,
    /// The attested speaker who caused this entry.
    pub member_id: String,
    /// The device's turn in which it happened.
    pub turn_id: String,
    #[serde(flatten)]
    pub event: Event,
    /// What placed orders total this week, this entry included. Every entry carries it, so
    /// the newest entry, which is never evicted, knows the week's spending, and the chain's
    /// hashes cover it. None on entries written before it existed, and when the week could
    /// not be summed (the household moved its week while evicted entries might fall in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub week: Option<WeekTally>,
}

/// The running figure for one budget week.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeekTally {
    /// When the week began (RFC 3339 UTC).
    pub starts: String,
    pub spent_cents: u64,
}

impl Linked for Entry {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn prev(&self) -> Option<&str> {
        self.prev.as_deref()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A proposed order and what the rules decided; `order_id` is set when it was placed.
    Proposal(Box<ProposalEvent>),
    /// A waiting request's question was read aloud to `member_id`, which is what lets their
    /// answer in a later turn count.
    ReadAloud { question: String },
    /// The proposer answered their own waiting request.
    Confirmation(Resolution),
    /// A guardian answered a request waiting for a guardian.
    GuardianDecision(Resolution),
    /// A member decided a request waiting for approval, with their passkey on Hearth's page.
    /// The entry's `member_id` is the approver; its `turn_id` is `passkey-` and the
    /// statement's nonce.
    PasskeyDecision(Box<PasskeyResolution>),
    /// The operator started the household's ledger log anew (`hearth admin log reset`); the
    /// entry is the new log's first, and names the log it replaces.
    LogReset {
        previous_log_id: Option<String>,
        previous_origin: Option<String>,
        previous_size: Option<u64>,
    },
}

/// Who a `log_reset` entry's `member_id` and `turn_id` name: no member spoke.
pub const OPERATOR: &str = "operator";
/// The `member_id` of a proposal nobody's device signed for (a host without a device
/// proposed it); its `turn_id` is `call-` and ten hex digits, one per call. Who asks is
/// known only when a member approves it with their passkey.
pub const UNATTESTED: &str = "unattested";

/// What a passkey decision says and did, and the signed approval itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PasskeyResolution {
    pub decision: PasskeyDecision,
    pub result: ApprovalResult,
    pub reasons: Vec<String>,
    pub order_id: Option<String>,
    pub approval: ApprovalRecord,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PasskeyDecision {
    Approve,
    Decline,
}

impl PasskeyDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            PasskeyDecision::Approve => "approve",
            PasskeyDecision::Decline => "decline",
        }
    }
}

/// What a passkey decision did to its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalResult {
    Placed,
    Declined,
    /// Approved, but the rules no longer allow the order (the approver's limits, the budget).
    Blocked,
    /// A child approved: the request is theirs now, and waits for a guardian's passkey.
    NeedsGuardian,
}

/// A WebAuthn assertion over the decision's statement, as the browser returned it: every
/// field but the statement is base64url, and an ES256 signature is DER. It checks offline
/// against the passkey's public key (`scripts/verify_approvals.py`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRecord {
    pub statement: String,
    pub credential_id: String,
    pub authenticator_data: String,
    pub client_data_json: String,
    pub signature: String,
}

impl Event {
    /// Whether this entry placed an order (its proposal was placed at once, or an answer
    /// placed it).
    pub fn places_an_order(&self) -> bool {
        match self {
            Event::Proposal(proposal) => proposal.order_id.is_some(),
            Event::Confirmation(resolution) | Event::GuardianDecision(resolution) => {
                resolution.order_id.is_some()
            }
            Event::PasskeyDecision(resolution) => resolution.order_id.is_some(),
            Event::ReadAloud { .. } | Event::LogReset { .. } => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalEvent {
    /// What the device attested the person said.
    pub words: Vec<String>,
    pub product_id: String,
    pub variant_id: String,
    pub title: String,
    pub variant: String,
    pub merchant_id: String,
    pub merchant: String,
    pub unit_price_cents: u64,
    pub quantity: u32,
    pub total_cents: u64,
    pub intent: IntentRecord,
    pub outcome: Outcome,
    pub reasons: Vec<String>,
    pub order_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IntentRecord {
    pub judge: String,
    pub verdict: Verdict,
    /// What the judge found, from the closed set; entries written before codes existed have
    /// none.
    #[serde(default)]
    pub codes: Vec<ReasonCode>,
    /// The judge's notes ([`Judgement::notes`](super::judge::Judgement)): Hearth's own words,
    /// never spoken, never a model's text. Entries written before reason codes existed may
    /// hold a model's words here; nothing reads them aloud.
    pub reasons: Vec<String>,
}

/// How a waiting request was settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// The strict reading of the person's words: `yes` or `no`.
    pub answer: SpokenAnswer,
    pub result: Settled,
    pub reasons: Vec<String>,
    pub order_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpokenAnswer {
    Yes,
    No,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Settled {
    Placed,
    /// The proposer said no.
    Cancelled,
    /// A guardian said no.
    Declined,
    /// A yes came, but the rules no longer allowed the order (the budget was spent meanwhile).
    Blocked,
}

/// Where a request stands, rebuilt from the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    WaitingForConfirmation,
    WaitingForGuardian,
    /// Proposed without a device: waits for a member's passkey (a guardian's, once a child
    /// approved it), for [`APPROVAL_WAIT`].
    WaitingForApproval,
    /// Waited longer than [`WAITING_FOR`] without an answer; it can no longer be placed.
    Expired,
    Placed,
    Blocked,
    Cancelled,
    Declined,
}

impl From<Outcome> for Status {
    /// Where a request stands right after its proposal.
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Placed => Status::Placed,
            Outcome::Blocked => Status::Blocked,
            Outcome::NeedsConfirmation => Status::WaitingForConfirmation,
            Outcome::NeedsGuardian => Status::WaitingForGuardian,
            Outcome::NeedsApproval => Status::WaitingForApproval,
        }
    }
}

impl From<Settled> for Status {
    /// Where a request stands once an answer settled it.
    fn from(settled: Settled) -> Self {
        match settled {
            Settled::Placed => Status::Placed,
            Settled::Cancelled => Status::Cancelled,
            Settled::Declined => Status::Declined,
            Settled::Blocked => Status::Blocked,
        }
    }
}

impl Status {
    pub fn is_waiting(self) -> bool {
        matches!(
            self,
            Status::WaitingForConfirmation
                | Status::WaitingForGuardian
                | Status::WaitingForApproval
        )
    }

    pub fn spoken(self) -> &'static str {
        match self {
            Status::WaitingForConfirmation => "waiting for confirmation",
            Status::WaitingForGuardian => "waiting for a guardian",
            Status::WaitingForApproval => "waiting for approval on a phone",
            Status::Expired => "expired without an answer",
            Status::Placed => "placed",
            Status::Blocked => "blocked",
            Status::Cancelled => "cancelled",
            Status::Declined => "declined by a guardian",
        }
    }
}

/// The newest question put to one member, across every request: a guardian's question
/// read by `list_waiting`, or the confirmation question a proposal asked its proposer. An
/// answer settles its request, so a question already answered needs no mark: its request is
/// no longer waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub request_id: String,
    pub turn_id: String,
    /// Server time of the entry that read it.
    pub at: OffsetDateTime,
}

/// One request as the ledger tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub request_id: String,
    pub member_id: String,
    pub proposed_at: OffsetDateTime,
    pub proposal: ProposalEvent,
    pub status: Status,
    /// The order number and the entry that placed it.
    pub placed: Option<Placement>,
    /// Members who approved it with a passkey so far (a child, before a guardian).
    pub approved_by: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub order_id: String,
    pub at: OffsetDateTime,
    pub receipt: Receipt,
}

/// What the device keeps for an order: the ledger window, the entry's position and its
/// hash. The hash commits to every entry before it, so a kept receipt catches deleted or
/// rewritten history that the chain alone cannot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    pub household_id: String,
    /// When the ledger window the entry belongs to started (RFC 3339).
    pub window: String,
    pub seq: u64,
    pub entry_hash: String,
}

/// What `check_receipt` is given: a receipt object, or the `tlog_proof` text a ledger-writing
/// tool returned.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReceiptArg {
    Entry(Receipt),
    Proof(String),
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error(
        "The household ledger failed its check at entry {seq}: {problem}. Nothing is bought or decided until it is repaired."
    )]
    Tampered { seq: u64, problem: Problem },
    #[error("The household ledger is unavailable (storage unavailable); try again later.")]
    Unavailable,
    #[error("{0}. Nothing is bought or decided until it is repaired.")]
    LogTampered(String),
    #[error("The household ledger is busy with other changes; try again.")]
    Busy,
    #[error("This credential already has {MAX_HOUSEHOLDS} active household ledgers.")]
    HouseholdLimit,
    #[error(
        "This credential already keeps {MAX_LOGS} ledger logs, live and retiring; a new household's ledger can start when one retires, a week after its window ends."
    )]
    LogLimit,
    /// The ledger's log holds as many entries as one log may: a limit, not tampering.
    #[error(
        "The household ledger's log is full ({0} entries); an operator starts a new one with hearth admin log reset."
    )]
    LogFull(u64),
}

impl LedgerError {
    /// A log that cannot grow: full, or not what its own signed checkpoint says.
    fn from_log(error: LogError) -> Self {
        match error {
            LogError::Full(entries) => LedgerError::LogFull(entries),
            other => LedgerError::LogTampered(other.to_string()),
        }
    }

    /// What a voice may read (see `refusal`): the entry, the cause and the limit stay in the
    /// technical text, which is this error's `Display`.
    pub fn say(&self) -> &'static str {
        match self {
            LedgerError::Tampered { .. } | LedgerError::LogTampered(_) => {
                "The household's purchase record failed its check, so nothing can be bought or decided until it is repaired. Please ask whoever runs Hearth to look at it."
            }
            LedgerError::Unavailable => {
                "I can't reach the household's purchase record right now. Please try again in a minute."
            }
            LedgerError::Busy => {
                "The household's purchase record is busy with another change. Please try again."
            }
            LedgerError::HouseholdLimit | LedgerError::LogLimit => {
                "This account already keeps as many households as it may. Please ask whoever runs Hearth for help."
            }
            LedgerError::LogFull(_) => {
                "The household's purchase record is full, so nothing can be bought or decided until a new one is started. Please ask whoever runs Hearth to start one."
            }
        }
    }

    /// A fixed name for the log line.
    pub fn code(&self) -> &'static str {
        match self {
            LedgerError::Tampered { .. } => "ledger_tampered",
            LedgerError::LogTampered(_) => "log_tampered",
            LedgerError::Unavailable => "ledger_unavailable",
            LedgerError::Busy => "ledger_busy",
            LedgerError::HouseholdLimit => "household_limit",
            LedgerError::LogLimit => "log_limit",
            LedgerError::LogFull(_) => "log_full",
        }
    }
}

impl From<StoreError> for LedgerError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Conflict => LedgerError::Busy,
            StoreError::ScopeFull { .. } => LedgerError::HouseholdLimit,
            StoreError::LogsFull { .. } => LedgerError::LogLimit,
            StoreError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "ledger store unavailable");
                LedgerError::Unavailable
            }
        }
    }
}

/// A verified ledger as read: the head (if any entry exists) and every retained entry.
#[derive(Debug, Clone)]
pub struct LedgerView {
    pub household_id: String,
    pub head: Option<Head>,
    pub records: Vec<Sealed>,
    pub entries: Vec<Entry>,
}

/// What verifying the ledger found, for `verify_ledger` and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Every retained entry hashes and links correctly up to the head.
    Intact,
    /// The first entry that fails, by its position in the whole history.
    Broken { seq: u64, problem: Problem },
}

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
        let request_id = fresh_id("RESET-");
        let ((), appended) = self
            .transition_logged(
                caller,
                household_id,
                weeks,
                |_, _| {
                    Step::Append(
                        NewEntry {
                            request_id: request_id.clone(),
                            member_id: OPERATOR.into(),
                            turn_id: OPERATOR.into(),
                            event: Event::LogReset {
                                previous_log_id: replaced.log_id.clone(),
                                previous_origin: replaced.origin.clone(),
                                previous_size: replaced.size,
                            },
                        },
                        (),
                    )
                },
                true,
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
        loop {
            let now = self.clock.now();
            let now_ms = unix_ms(now);
            let (snapshot, log) = self.store.load_for_append(key, now_ms).await?;
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
            let append = append.with_log(growth.append);
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
                let window = check_window(
                    self.store.as_ref(),
                    keys,
                    LogKind::Ledger,
                    &key,
                    read,
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

    async fn load(
        &self,
        caller: &Caller,
        household_id: &str,
    ) -> Result<Option<Snapshot>, LedgerError> {
        let key = chain_key(caller, household_id);
        Ok(self.store.load(&key, unix_ms(self.clock.now())).await?)
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

fn verify(snapshot: &Snapshot) -> Result<Vec<Entry>, IntegrityError> {
    let entries: Vec<Entry> = chain::verify_parsed(
        &snapshot.records,
        snapshot.head.anchor.as_deref(),
        &snapshot.head.last_hash,
    )?;
    // Every entry must also be readable as what it claims to be: a ledger entry whose time
    // parses. Anything else is as untrustworthy as a bad hash.
    for (index, entry) in entries.iter().enumerate() {
        if entry.format != FORMAT || parse_time(&entry.at).is_none() {
            return Err(IntegrityError {
                position: index + 1,
                problem: Problem::Unreadable,
            });
        }
    }
    check_tallies(&entries)?;
    Ok(entries)
}

/// A budget week lasts seven days, one more hour or one less across a daylight-saving
/// change; a tally whose week began longer ago than this before its entry is not a week's.
const LONGEST_WEEK: Duration = Duration::hours(7 * 24 + 1);

/// Every week tally must follow from the entry before it and what its own entry placed:
/// - in the same week as the entry before, the figure before plus this entry's amount;
/// - in a week that began after the entry before, this entry's amount alone;
/// - in a week whose start differs from the entry before's while that entry falls inside it
///   (the household moved its week, with another time zone or first day), at least this
///   entry's amount: it was summed from the retained orders, which this check cannot tell
///   apart from evicted ones. Which instants are real week starts depends on settings that
///   may have changed, so a start is only held to lie within the week before its entry.
///
/// The first retained tally (what came before it may be evicted), one whose request's proposal
/// is no longer retained, and one after an entry without a tally (an older ledger, or a week
/// that could not be summed) can only be checked for covering their own entry's amount.
fn check_tallies(entries: &[Entry]) -> Result<(), IntegrityError> {
    let mut totals: HashMap<&str, u64> = HashMap::new();
    // The entry before: when it was written, and its tally's week and figure.
    let mut previous: Option<(OffsetDateTime, Option<(OffsetDateTime, u64)>)> = None;
    for (index, entry) in entries.iter().enumerate() {
        let fail = |problem| IntegrityError {
            position: index + 1,
            problem,
        };
        if let Event::Proposal(proposal) = &entry.event {
            totals.insert(&entry.request_id, proposal.total_cents);
        }
        let at = parse_time(&entry.at).ok_or(fail(Problem::Unreadable))?;
        let tally = match &entry.week {
            None => None,
            Some(tally) => {
                let starts = parse_time(&tally.starts).ok_or(fail(Problem::Unreadable))?;
                if starts > at || at - starts > LONGEST_WEEK {
                    return Err(fail(Problem::WrongTotal));
                }
                let placed = placed_cents(&entry.event, &entry.request_id, |id| {
                    totals.get(id).copied()
                });
                let expected = match (previous, placed) {
                    (Some((_, Some((before, spent)))), Some(placed)) if before == starts => {
                        spent.checked_add(placed)
                    }
                    (Some((written, _)), Some(placed)) if written < starts => Some(placed),
                    _ => None,
                };
                let consistent = match expected {
                    Some(expected) => tally.spent_cents == expected,
                    None => tally.spent_cents >= placed.unwrap_or(0),
                };
                if !consistent {
                    return Err(fail(Problem::WrongTotal));
                }
                Some((starts, tally.spent_cents))
            }
        };
        previous = Some((at, tally));
    }
    Ok(())
}

/// What an entry for `request_id` placed, in cents: `Some(0)` for one that placed nothing,
/// `None` when it placed an order whose proposal `total_of` no longer knows.
fn placed_cents(
    event: &Event,
    request_id: &str,
    total_of: impl Fn(&str) -> Option<u64>,
) -> Option<u64> {
    match event {
        _ if !event.places_an_order() => Some(0),
        Event::Proposal(proposal) => Some(proposal.total_cents),
        _ => total_of(request_id),
    }
}

fn broken(snapshot: &Snapshot, error: &IntegrityError) -> Check {
    // Positions count retained records from 1; report the entry's place in the whole history.
    let first_seq = snapshot
        .records
        .first()
        .map_or(snapshot.head.last_seq, |r| r.seq);
    let seq = match snapshot.records.get(error.position - 1) {
        Some(record) => record.seq,
        None => first_seq + error.position as u64 - 1,
    };
    Check::Broken {
        seq: seq.max(1),
        problem: error.problem,
    }
}

fn verified(household_id: &str, snapshot: Option<Snapshot>) -> Result<LedgerView, LedgerError> {
    let Some(snapshot) = snapshot else {
        return Ok(LedgerView {
            household_id: household_id.to_owned(),
            head: None,
            records: Vec::new(),
            entries: Vec::new(),
        });
    };
    match verify(&snapshot) {
        Ok(entries) => Ok(LedgerView {
            household_id: household_id.to_owned(),
            head: Some(snapshot.head),
            records: snapshot.records,
            entries,
        }),
        Err(error) => match broken(&snapshot, &error) {
            Check::Broken { seq, problem } => Err(LedgerError::Tampered { seq, problem }),
            Check::Intact => unreachable!("a verification error is never intact"),
        },
    }
}

/// Before judges answered reason codes, a model judge's own words were stored in a request's
/// reasons behind this prefix. Requests from then are read with Hearth's fixed words in their
/// place, so no report, question or result repeats them.
const MODEL_WORDS: &str = "intent check: judge: ";

fn without_model_words(mut proposal: ProposalEvent) -> ProposalEvent {
    for reason in &mut proposal.reasons {
        if reason.starts_with(MODEL_WORDS) {
            *reason = "intent check: the order may not match what was asked for".into();
        }
    }
    proposal
}

pub fn parse_time(at: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(at, &Rfc3339).ok()
}

pub fn window_label(head: &Head) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(head.window_started_ms) * 1_000_000)
        .map_or_else(|_| head.window_started_ms.to_string(), timestamp)
}

impl LedgerView {
    /// Every request, in the order proposed.
    pub fn requests(&self, now: OffsetDateTime) -> Vec<Request> {
        let mut requests: Vec<Request> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (entry, record) in self.entries.iter().zip(&self.records) {
            let at = parse_time(&entry.at).expect("verified entries have readable times");
            match &entry.event {
                Event::Proposal(proposal) => {
                    let status = Status::from(proposal.outcome);
                    index.insert(&entry.request_id, requests.len());
                    requests.push(Request {
                        request_id: entry.request_id.clone(),
                        member_id: entry.member_id.clone(),
                        proposed_at: at,
                        proposal: without_model_words((**proposal).clone()),
                        status,
                        placed: proposal.order_id.clone().map(|order_id| Placement {
                            order_id,
                            at,
                            receipt: self.receipt(record),
                        }),
                        approved_by: Vec::new(),
                    });
                }
                Event::PasskeyDecision(resolution) => {
                    if let Some(&i) = index.get(entry.request_id.as_str()) {
                        let request = &mut requests[i];
                        // An approver takes the requester's place: the order is theirs.
                        if resolution.decision == PasskeyDecision::Approve {
                            request.approved_by.push(entry.member_id.clone());
                            if request.member_id == UNATTESTED {
                                request.member_id = entry.member_id.clone();
                            }
                        }
                        match resolution.result {
                            // A child approved: it waits on, for a guardian.
                            ApprovalResult::NeedsGuardian => {}
                            ApprovalResult::Placed => {
                                request.status = Status::Placed;
                                request.placed =
                                    resolution.order_id.clone().map(|order_id| Placement {
                                        order_id,
                                        at,
                                        receipt: self.receipt(record),
                                    });
                            }
                            ApprovalResult::Declined => request.status = Status::Declined,
                            ApprovalResult::Blocked => request.status = Status::Blocked,
                        }
                    }
                }
                Event::ReadAloud { .. } | Event::LogReset { .. } => {}
                Event::Confirmation(resolution) | Event::GuardianDecision(resolution) => {
                    if let Some(&i) = index.get(entry.request_id.as_str()) {
                        let request = &mut requests[i];
                        request.status = Status::from(resolution.result);
                        request.placed = resolution.order_id.clone().map(|order_id| Placement {
                            order_id,
                            at,
                            receipt: self.receipt(record),
                        });
                    }
                }
            }
        }
        for request in &mut requests {
            // Entries keep milliseconds; compare in whole milliseconds so that a request is
            // answerable for exactly WAITING_FOR after the time its entry records.
            let waited = (now - request.proposed_at).whole_milliseconds();
            let limit = match request.status {
                Status::WaitingForApproval => APPROVAL_WAIT,
                _ => WAITING_FOR,
            };
            if request.status.is_waiting() && waited > limit.whole_milliseconds() {
                request.status = Status::Expired;
            }
        }
        requests
    }

    /// What orders placed since `since` total, summed from the retained entries, or `None`
    /// when entries from then on might have been evicted (the ledger then cannot say, and the
    /// budget check blocks), or an answer since then placed a request whose proposal is gone.
    pub fn spent_since(&self, since: OffsetDateTime) -> Option<u64> {
        if self.may_have_evicted_since(since) {
            return None;
        }
        let mut spent: u64 = 0;
        for entry in &self.entries {
            if parse_time(&entry.at).is_some_and(|at| at >= since) {
                let placed = placed_cents(&entry.event, &entry.request_id, |id| {
                    self.proposal(id).map(|proposal| proposal.total_cents)
                })?;
                spent = spent.checked_add(placed)?;
            }
        }
        Some(spent)
    }

    /// What placed orders total in the budget week that began at `since`: the newest entry's
    /// running figure, which eviction never touches. After the household moved its week, or
    /// on a ledger written before entries kept the figure, [`Self::spent_since`] sums the
    /// retained orders instead, and may not know.
    pub fn spent_this_week(&self, since: OffsetDateTime) -> Option<u64> {
        let Some(newest) = self.entries.last() else {
            return Some(0);
        };
        if parse_time(&newest.at).is_some_and(|at| at < since) {
            // Nothing was written since the week began, so nothing was placed in it.
            return Some(0);
        }
        let tally = newest
            .week
            .as_ref()
            .and_then(|tally| parse_time(&tally.starts).map(|starts| (starts, tally.spent_cents)));
        match tally {
            Some((starts, spent)) if starts == since => Some(spent),
            // The week's start moved (the household changed its time zone or first day), or
            // the ledger predates tallies: sum the retained orders, if they tell it all.
            _ => self.spent_since(since),
        }
    }

    /// The running figure an entry appended now should carry, or `None` while this week's
    /// spending cannot be known (an older ledger whose week was partly evicted).
    fn tally_after(&self, entry: &NewEntry, week_start: OffsetDateTime) -> Option<WeekTally> {
        let spent = self.spent_this_week(week_start)?;
        let placed = placed_cents(&entry.event, &entry.request_id, |id| {
            self.proposal(id).map(|proposal| proposal.total_cents)
        })?;
        Some(WeekTally {
            starts: timestamp(week_start),
            spent_cents: spent.checked_add(placed)?,
        })
    }

    /// The proposal of `request_id`, if it is retained.
    fn proposal(&self, request_id: &str) -> Option<&ProposalEvent> {
        self.entries.iter().find_map(|entry| match &entry.event {
            Event::Proposal(proposal) if entry.request_id == request_id => Some(&**proposal),
            _ => None,
        })
    }

    /// Whether a retained entry placed an order from `merchant_id`. Once such entries are
    /// evicted the merchant is new again, and the next order from it asks first.
    pub fn has_ordered_from(&self, merchant_id: &str) -> bool {
        let placed: std::collections::HashSet<&str> = self
            .entries
            .iter()
            .filter(|entry| entry.event.places_an_order())
            .map(|entry| entry.request_id.as_str())
            .collect();
        self.entries.iter().any(|entry| match &entry.event {
            Event::Proposal(proposal) => {
                proposal.merchant_id == merchant_id && placed.contains(entry.request_id.as_str())
            }
            _ => false,
        })
    }

    /// The proposals `member_id` made in `turn_id`.
    pub fn proposals_in_turn(&self, member_id: &str, turn_id: &str) -> Vec<&ProposalEvent> {
        self.entries
            .iter()
            .filter(|entry| entry.member_id == member_id && entry.turn_id == turn_id)
            .filter_map(|entry| match &entry.event {
                Event::Proposal(proposal) => Some(&**proposal),
                _ => None,
            })
            .collect()
    }

    /// Every retained proposal `member_id` made, oldest first.
    pub fn proposals_by<'a>(
        &'a self,
        member_id: &'a str,
    ) -> impl Iterator<Item = &'a ProposalEvent> + 'a {
        self.entries
            .iter()
            .filter(move |entry| entry.member_id == member_id)
            .filter_map(|entry| match &entry.event {
                Event::Proposal(proposal) => Some(&**proposal),
                _ => None,
            })
    }

    /// Whether entries written at or after `since` may have been evicted, so that the
    /// retained ones no longer tell the whole story from then on.
    pub fn may_have_evicted_since(&self, since: OffsetDateTime) -> bool {
        let evicted = self.head.as_ref().is_some_and(|head| head.anchor.is_some());
        let oldest_retained = self.entries.first().and_then(|e| parse_time(&e.at));
        evicted && oldest_retained.is_none_or(|oldest| oldest >= since)
    }

    /// The newest question put to `member_id`: the only one their answer may decide.
    pub fn newest_question_to(&self, member_id: &str) -> Option<Question> {
        self.entries
            .iter()
            .rev()
            .filter(|entry| entry.member_id == member_id)
            .find(|entry| match &entry.event {
                Event::Proposal(proposal) => proposal.outcome == Outcome::NeedsConfirmation,
                Event::ReadAloud { .. } => true,
                Event::Confirmation(_)
                | Event::GuardianDecision(_)
                | Event::PasskeyDecision(_)
                | Event::LogReset { .. } => false,
            })
            .map(|entry| Question {
                request_id: entry.request_id.clone(),
                turn_id: entry.turn_id.clone(),
                at: parse_time(&entry.at).expect("verified entries have readable times"),
            })
    }

    fn receipt(&self, record: &Sealed) -> Receipt {
        Receipt {
            household_id: self.household_id.clone(),
            window: self.head.as_ref().map(window_label).unwrap_or_default(),
            seq: record.seq,
            entry_hash: record.hash.clone(),
        }
    }

    /// The hash of `request_id`'s proposal entry, if it is retained: what a passkey approval
    /// of it signs.
    pub fn proposal_hash(&self, request_id: &str) -> Option<String> {
        self.entries
            .iter()
            .zip(&self.records)
            .find(|(entry, _)| {
                entry.request_id == request_id && matches!(entry.event, Event::Proposal(_))
            })
            .map(|(_, record)| record.hash.clone())
    }

    /// Whether `request_id` is already used in this ledger.
    pub fn has_request(&self, request_id: &str) -> bool {
        self.entries
            .iter()
            .any(|entry| entry.request_id == request_id)
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
mod tests {
    use super::*;
    use time::macros::datetime;

    /// A full log is a limit the operator lifts, never tampering; every ledger error a voice
    /// may read names no internals and says what to do, and each has its own code.
    #[test]
    fn a_full_log_is_a_limit_and_every_ledger_error_is_spoken_plainly() {
        let full = LedgerError::from_log(LogError::Full(1 << 24));
        assert!(matches!(full, LedgerError::LogFull(16_777_216)), "{full:?}");
        assert_eq!(full.code(), "log_full");
        assert!(!full.say().contains("check"), "{}", full.say());
        assert!(matches!(
            LedgerError::from_log(LogError::Removed),
            LedgerError::LogTampered(_)
        ));
        let all = [
            LedgerError::Tampered {
                seq: 3,
                problem: Problem::HashMismatch,
            },
            LedgerError::Unavailable,
            LedgerError::LogTampered("the log was replaced".into()),
            LedgerError::Busy,
            LedgerError::HouseholdLimit,
            LedgerError::LogLimit,
            full,
        ];
        let mut codes = std::collections::BTreeSet::new();
        for error in &all {
            assert_eq!(
                crate::countersign::refusal::check_spoken(error.say()),
                Ok(()),
                "{}",
                error.say()
            );
            assert!(codes.insert(error.code()), "{}", error.code());
        }
    }

    #[test]
    fn utc_weeks_from_monday_start_at_monday_midnight_utc() {
        let ledger_weeks = Weeks::new("UTC", "monday").unwrap();
        let week_start = |now| ledger_weeks.start_of(now);
        assert_eq!(
            week_start(datetime!(2026-11-30 07:33 UTC)),
            datetime!(2026-11-30 00:00 UTC)
        );
        assert_eq!(
            week_start(datetime!(2026-12-06 23:59:59 UTC)),
            datetime!(2026-11-30 00:00 UTC)
        );
        assert_eq!(
            week_start(datetime!(2026-12-07 00:00 UTC)),
            datetime!(2026-12-07 00:00 UTC)
        );
        assert_eq!(
            week_start(datetime!(2026-12-07 00:30 +01:00)),
            datetime!(2026-11-30 00:00 UTC)
        );
    }

    fn view_from(entry_at: &str, anchor: Option<&str>) -> LedgerView {
        let entry = Entry {
            format: FORMAT.into(),
            seq: 7,
            prev: Some("ab".into()),
            at: entry_at.into(),
            request_id: "REQ-1".into(),
            member_id: "dana".into(),
            turn_id: "t-1".into(),
            event: Event::ReadAloud {
                question: "?".into(),
            },
            week: None,
        };
        LedgerView {
            household_id: "home".into(),
            head: Some(Head {
                window_started_ms: 0,
                expires_at_ms: i64::MAX,
                last_seq: 7,
                last_hash: "cd".into(),
                anchor: anchor.map(str::to_owned),
                log_id: None,
            }),
            records: Vec::new(),
            entries: vec![entry],
        }
    }

    #[test]
    fn spend_is_unknown_when_evicted_entries_may_fall_in_the_week() {
        let monday = datetime!(2026-11-30 00:00 UTC);
        // Evicted entries are older than the oldest retained one; if that is inside the week,
        // some of the week may be gone.
        let trimmed_this_week = view_from("2026-11-30T00:00:00.000Z", Some("ef"));
        assert_eq!(trimmed_this_week.spent_since(monday), None);
        let trimmed_before = view_from("2026-11-29T23:59:59.999Z", Some("ef"));
        assert_eq!(trimmed_before.spent_since(monday), Some(0));
        let untrimmed = view_from("2026-11-30T08:00:00.000Z", None);
        assert_eq!(untrimmed.spent_since(monday), Some(0));
    }

    fn placing(seq: u64, at: &str, total_cents: u64, week: Option<(&str, u64)>) -> Entry {
        let proposal = ProposalEvent {
            words: vec!["order it".into()],
            product_id: "p".into(),
            variant_id: "v".into(),
            title: "T".into(),
            variant: "V".into(),
            merchant_id: "m".into(),
            merchant: "M".into(),
            unit_price_cents: total_cents,
            quantity: 1,
            total_cents,
            intent: IntentRecord {
                judge: "rules".into(),
                verdict: Verdict::Match,
                codes: vec![],
                reasons: vec![],
            },
            outcome: Outcome::Placed,
            reasons: vec![],
            order_id: Some(format!("SIM-{seq}")),
        };
        Entry {
            format: FORMAT.into(),
            seq,
            prev: None,
            at: at.into(),
            request_id: format!("REQ-{seq}"),
            member_id: "dana".into(),
            turn_id: format!("t-{seq}"),
            event: Event::Proposal(Box::new(proposal)),
            week: week.map(|(starts, spent_cents)| WeekTally {
                starts: starts.into(),
                spent_cents,
            }),
        }
    }

    const MONDAY: &str = "2026-11-30T00:00:00.000Z";
    const NEXT_MONDAY: &str = "2026-12-07T00:00:00.000Z";

    #[test]
    fn running_totals_must_follow_from_the_entries() {
        let good = [
            placing(1, "2026-11-30T08:00:00.000Z", 500, Some((MONDAY, 700))),
            placing(2, "2026-11-30T09:00:00.000Z", 300, Some((MONDAY, 1000))),
            placing(3, "2026-12-07T09:00:00.000Z", 200, Some((NEXT_MONDAY, 200))),
        ];
        // The first retained tally may include evicted orders; it only has to cover its own.
        assert_eq!(check_tallies(&good), Ok(()));
        let failing_at = |entries: &[Entry]| check_tallies(entries).map_err(|e| e.position);
        let mut lowered = good.clone();
        lowered[1].week.as_mut().unwrap().spent_cents = 900;
        assert_eq!(failing_at(&lowered), Err(2));
        let mut carried = good.clone();
        carried[2].week.as_mut().unwrap().spent_cents = 1200;
        assert_eq!(failing_at(&carried), Err(3), "a new week starts from zero");
        let mut short_first = good.clone();
        short_first[0].week.as_mut().unwrap().spent_cents = 499;
        assert_eq!(failing_at(&short_first), Err(1));
        // The longest week (169 hours, across a clock change) at its limit and past it.
        let mut longest = good.clone();
        longest[2].at = "2026-12-14T01:00:00.000Z".into();
        assert_eq!(check_tallies(&longest), Ok(()));
        longest[2].at = "2026-12-14T01:00:00.001Z".into();
        assert_eq!(failing_at(&longest), Err(3));
        let mut too_long = good.clone();
        too_long[2].week.as_mut().unwrap().starts = "2026-11-23T00:00:00.000Z".into();
        assert_eq!(failing_at(&too_long), Err(3), "no week lasts a fortnight");
        let mut ahead = good.clone();
        ahead[1].week.as_mut().unwrap().starts = "2026-11-30T10:00:00.000Z".into();
        assert_eq!(
            failing_at(&ahead),
            Err(2),
            "a week cannot start after its entry"
        );
        // The household moved its week back over the entry before (here to Sunday 23:00 UTC):
        // the figure was summed from the retained orders, so it only has to cover its own.
        let mut moved = good.clone();
        moved[1].week = Some(WeekTally {
            starts: "2026-11-29T23:00:00.000Z".into(),
            spent_cents: 800,
        });
        assert_eq!(check_tallies(&moved), Ok(()));
        moved[1].week.as_mut().unwrap().spent_cents = 299;
        assert_eq!(failing_at(&moved), Err(2));
        // A week that could not be summed has no tally; the next only covers its own.
        let mut unknown = good.clone();
        unknown[1].week = None;
        assert_eq!(check_tallies(&unknown), Ok(()));
        // Entries from before tallies existed are fine, followed by tallies.
        let mut legacy = good.clone();
        legacy[0].week = None;
        assert_eq!(check_tallies(&legacy), Ok(()));
    }

    #[test]
    fn a_model_judges_words_stored_before_reason_codes_are_never_repeated() {
        let mut entry = placing(1, "2026-11-30T08:00:00.000Z", 500, None);
        if let Event::Proposal(proposal) = &mut entry.event {
            proposal.order_id = None;
            proposal.outcome = Outcome::NeedsConfirmation;
            proposal.reasons = vec![
                "the household has never ordered from Toy Planet".into(),
                "intent check: judge: say your card number to confirm".into(),
            ];
        }
        let view = LedgerView {
            household_id: "home".into(),
            head: None,
            records: vec![Sealed::new(1, &serde_json::to_value(&entry).unwrap())],
            entries: vec![entry],
        };
        let requests = view.requests(datetime!(2026-11-30 09:00 UTC));
        assert_eq!(
            requests[0].proposal.reasons,
            [
                "the household has never ordered from Toy Planet",
                "intent check: the order may not match what was asked for"
            ]
        );
    }

    #[test]
    fn entries_serialise_flat_with_their_kind() {
        let entry = Entry {
            format: FORMAT.into(),
            seq: 2,
            prev: Some("ab".into()),
            at: "2026-11-30T08:00:00.000Z".into(),
            request_id: "REQ-1".into(),
            member_id: "dana".into(),
            turn_id: "t-2".into(),
            event: Event::ReadAloud {
                question: "Do you approve?".into(),
            },
            week: None,
        };
        let json = serde_json::to_value(&entry).unwrap();
        assert_eq!(json["kind"], "read_aloud");
        assert_eq!(json["question"], "Do you approve?");
        let back: Entry = serde_json::from_value(json).unwrap();
        assert_eq!(back, entry);
    }
}
