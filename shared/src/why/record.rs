//! The decision record format. Fixed for good: verifiers outside this codebase rely on it.
//!
//! ```json
//! {"format": "hearth.why/1", "seq": 3, "household_id": "demo",
//!  "recorded_at": "2026-11-30T03:37:33.123Z", "action": "dim lights",
//!  "reason": "Movie time requested by the user", "inputs": {"brightness": 20},
//!  "approver": "Demo user", "atoms": [Action, Finding], "prev": "<hash or null>",
//!  "trace_id": "<sha256 of the canonical JSON of everything else>"}
//! ```
//!
//! `atoms` holds a Scholialang `Action` atom for the action and a `Finding` atom for the reason
//! that `REFER`s to it, each stamped with its `canonical_id`. Their content is the caller's text
//! made inert (`scholia::inert`): a space separates any upper-case word from a `:` or `(`
//! after it, so the atoms lint clean whatever was written; `action` and `reason` keep the
//! words exactly.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::scholia::{Atom, inert};

pub const FORMAT: &str = "hearth.why/1";
/// The record field that holds the record's own hash.
pub const HASH_FIELD: &str = "trace_id";

/// A decision record as returned to clients (the schema of every record in tool outputs).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DecisionRecord {
    /// Record format identifier, `hearth.why/1`.
    pub format: String,
    /// 1-based position in the household's history since its window opened.
    pub seq: u64,
    pub household_id: String,
    /// When the decision was recorded (RFC 3339, UTC, milliseconds).
    pub recorded_at: String,
    pub action: String,
    /// The caller's stated reason: a claim, not an established fact.
    pub reason: String,
    pub inputs: Map<String, Value>,
    /// Who the caller says approved the action: a claim, not an established fact.
    pub approver: String,
    pub atoms: Vec<Atom>,
    /// `trace_id` of the previous record, or the chain's anchor for the first retained record.
    pub prev: Option<String>,
    /// SHA-256 (hex) of the canonical JSON of this record without `trace_id`.
    pub trace_id: String,
    /// Only in `record_decision`'s answer, not stored: the new entry's
    /// `c2sp.org/tlog-proof@v1` text (its index, its audit path, and the household's signed
    /// decision-log checkpoint). Keep it: with the published log key it proves offline that
    /// this entry is in the log. Absent when the server has no log key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlog_proof: Option<String>,
}

/// What a new record says, before it is placed in the chain.
pub struct NewDecision<'a> {
    pub household_id: &'a str,
    pub action: &'a str,
    pub reason: &'a str,
    pub inputs: &'a Map<String, Value>,
    pub approver: &'a str,
}

/// A [`NewDecision`] owned, to wait in a chain's queue (see `why::queue`) for whichever call
/// lands it.
#[derive(Debug, Clone)]
pub struct QueuedDecision {
    pub household_id: String,
    pub action: String,
    pub reason: String,
    pub inputs: Map<String, Value>,
    pub approver: String,
}

impl QueuedDecision {
    pub fn of(decision: &NewDecision<'_>) -> Self {
        Self {
            household_id: decision.household_id.to_owned(),
            action: decision.action.to_owned(),
            reason: decision.reason.to_owned(),
            inputs: decision.inputs.clone(),
            approver: decision.approver.to_owned(),
        }
    }

    pub fn as_new(&self) -> NewDecision<'_> {
        NewDecision {
            household_id: &self.household_id,
            action: &self.action,
            reason: &self.reason,
            inputs: &self.inputs,
            approver: &self.approver,
        }
    }
}

/// Builds the unsealed record JSON (everything but `trace_id`).
pub fn build(decision: &NewDecision<'_>, seq: u64, recorded_at: &str, prev: Option<&str>) -> Value {
    let action_id = format!("A_{seq}");
    let mut action_attrs = Map::new();
    action_attrs.insert("timestamp".into(), json!(recorded_at));
    // The caller's words go into atom content made inert, so that no token in them reads as
    // an operator or a reference and the atoms always lint clean.
    let action = Atom::new(
        "Action",
        action_id.clone(),
        inert(decision.action).into_owned(),
        action_attrs,
    );
    let finding = Atom::new(
        "Finding",
        format!("F_{seq}"),
        format!("REFER:{action_id} {}", inert(decision.reason)),
        Map::new(),
    );
    json!({
        "format": FORMAT,
        "seq": seq,
        "household_id": decision.household_id,
        "recorded_at": recorded_at,
        "action": decision.action,
        "reason": decision.reason,
        "inputs": decision.inputs,
        "approver": decision.approver,
        "atoms": [action, finding],
        "prev": prev,
    })
}

/// Verifies a decision chain's whole retained window and returns each record's view, parsed
/// once: `memo` remembers the bodies already checked (see [`crate::chain::VerifiedBodies`]).
pub fn verified_window(
    snapshot: &crate::store::Snapshot,
    memo: &crate::chain::VerifiedBodies<RecordView>,
) -> Result<Vec<std::sync::Arc<RecordView>>, crate::chain::IntegrityError> {
    crate::chain::verify_parsed_remembering(
        &snapshot.records,
        snapshot.head.anchor.as_deref(),
        &snapshot.head.last_hash,
        memo,
    )
}

/// The fields of a stored record that answers need, read without building a full JSON tree.
/// Owned, so that a process parses each record once and keeps its view with the verified
/// body (`chain::VerifiedBodies`).
#[derive(Debug, Deserialize)]
pub struct RecordView {
    pub seq: u64,
    pub recorded_at: String,
    pub action: String,
    pub reason: String,
    pub approver: String,
    pub prev: Option<String>,
}

impl crate::chain::Linked for RecordView {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn prev(&self) -> Option<&str> {
        self.prev.as_deref()
    }
}
