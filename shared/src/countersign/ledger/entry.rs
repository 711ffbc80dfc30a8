//! What a ledger entry records: the entry, its events, and what is read back from them
//! (requests, statuses, receipts).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::chain::Linked;
use crate::countersign::judge::{ReasonCode, Verdict};
use crate::countersign::policy::Outcome;

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
    /// A guardian ran the household from its page (a member invited, a passkey approved or
    /// revoked, a device key added or revoked, an assistant unlinked), signed with their
    /// passkey. The entry's `member_id` is the guardian; its `turn_id` is `passkey-` and the
    /// statement's nonce.
    HouseholdAction(Box<HouseholdActionEvent>),
    /// The operator started the household's ledger log anew (`hearth admin log reset`); the
    /// entry is the new log's first, and names the log it replaces.
    LogReset {
        previous_log_id: Option<String>,
        previous_origin: Option<String>,
        previous_size: Option<u64>,
    },
    /// The operator started the household's decision log anew (`hearth admin log reset`). The
    /// new decision log's first entry says so too, but a decision window keeps days; the
    /// ledger keeps a year, so a phone that pinned the old decision log long ago still finds
    /// here why it was replaced, and by which log.
    DecisionLogReset(Box<DecisionLogReset>),
}

/// What a `decision_log_reset` entry says: the decision log replaced (as `log_reset` names
/// the ledger's), and the new one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionLogReset {
    pub previous_log_id: Option<String>,
    pub previous_origin: Option<String>,
    pub previous_size: Option<u64>,
    /// The new decision log's origin.
    pub origin: String,
}

/// Who a `log_reset` entry's `member_id` and `turn_id` name: no member spoke.
pub const OPERATOR: &str = "operator";
/// The `member_id` of a proposal nobody's device signed for (a host without a device
/// proposed it); its `turn_id` is `call-` and ten hex digits, one per call. Who asks is
/// known only when a member approves it with their passkey.
pub const UNATTESTED: &str = "unattested";

/// What a guardian did on the household's page, and the signed statement itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HouseholdActionEvent {
    /// `invite-member`, `approve-passkey`, `revoke-passkey`, `add-device-key`,
    /// `revoke-device-key`, `unlink-assistant` or `unlink-all`.
    pub action: String,
    /// What it was done to: a member id, a credential id, a device key id, a client id, or
    /// `new` for a device key not yet made.
    pub target: String,
    pub approval: ApprovalRecord,
}

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
            Event::ReadAloud { .. }
            | Event::LogReset { .. }
            | Event::DecisionLogReset(_)
            | Event::HouseholdAction(_) => false,
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

pub fn parse_time(at: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(at, &Rfc3339).ok()
}
