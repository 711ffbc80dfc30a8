//! What the household page's phone checks for itself: each log's retained records with their
//! inclusion proofs and signed checkpoint (the shape `get_trace` answers, for either log), and
//! the consistency proof from the checkpoint the phone kept (`prove_history`'s). The server
//! hands out what it holds; the phone verifies it with the published keys and the witness
//! policy it pinned (see the script, `page.js`).

use serde::Serialize;
use serde_json::Value;

use super::{HouseholdPage, PageError, UNTRUSTED, Visitor};
use crate::countersign::service::CountersignError;
use crate::transparency::{InclusionProof, LogKind, ProvenWindow};
use crate::why::WhyError;

/// One log's retained window, as the page's script reads it.
#[derive(Debug, Serialize)]
pub struct Evidence {
    /// `decisions` or `ledger`.
    pub log: &'static str,
    pub household_id: String,
    /// The field each record carries its own hash in: `trace_id` or `entry_hash`.
    pub hash_field: &'static str,
    /// The hash of the last record no longer kept; null while nothing was evicted.
    pub anchor: Option<String>,
    /// The retained records, oldest first, as stored.
    pub records: Vec<Value>,
    /// The log's signed checkpoint with the witnesses' cosignatures, when the server signs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// Each record's inclusion proof against `checkpoint`, oldest first.
    pub inclusion_proofs: Vec<InclusionProof>,
}

/// The consistency of the log now with the tree the phone kept.
#[derive(Debug, Serialize)]
pub struct History {
    pub checkpoint: String,
    pub consistency: Vec<String>,
}

impl HouseholdPage {
    /// `kind`'s retained window with its proofs, as stored; a chain that fails Hearth's own
    /// check is [`PageError::Broken`], named.
    pub async fn evidence(&self, visitor: &Visitor, kind: LogKind) -> Result<Evidence, PageError> {
        let caller = visitor.caller();
        let household_id = &visitor.account.household_id;
        let (hash_field, window) = match kind {
            LogKind::Decisions => {
                let window = match self.why.window(&caller, household_id).await {
                    Ok(window) => Some(window),
                    // A household with no decisions yet has no chain.
                    Err(WhyError::NotFound(_)) => None,
                    Err(error) => return Err(why_failure(error)),
                };
                (crate::why::record::HASH_FIELD, window)
            }
            LogKind::Ledger => {
                let window = self
                    .countersign
                    .ledger_window(&caller)
                    .await
                    .map_err(ledger_failure)?;
                (crate::countersign::ledger::HASH_FIELD, window)
            }
        };
        let ProvenWindow {
            anchor,
            records,
            log,
        } = window.unwrap_or(ProvenWindow {
            anchor: None,
            records: Vec::new(),
            log: None,
        });
        let (checkpoint, inclusion_proofs) = match log {
            Some(log) => (Some(log.checkpoint), log.proofs),
            None => (None, Vec::new()),
        };
        Ok(Evidence {
            log: kind.as_str(),
            household_id: household_id.clone(),
            hash_field,
            anchor,
            records,
            checkpoint,
            inclusion_proofs,
        })
    }

    /// `kind`'s current signed checkpoint and the consistency proof to it from the tree of
    /// `from_size` entries the phone kept.
    pub async fn history(
        &self,
        visitor: &Visitor,
        kind: LogKind,
        from_size: u64,
    ) -> Result<History, PageError> {
        let (checkpoint, consistency) = self
            .why
            .history(
                &visitor.caller(),
                &visitor.account.household_id,
                kind,
                from_size,
            )
            .await
            .map_err(why_failure)?;
        Ok(History {
            checkpoint,
            consistency,
        })
    }
}

fn why_failure(error: WhyError) -> PageError {
    match error {
        WhyError::Integrity(_) | WhyError::LogMismatch(_) | WhyError::Log(_) => PageError::Broken(
            format!("{UNTRUSTED}Hearth's own check of the decisions failed: {error}"),
        ),
        WhyError::Invalid(reason) | WhyError::NotFound(reason) => PageError::Invalid(reason),
        _ => PageError::Unavailable(
            "Hearth cannot read the decision memory right now. Try again in a minute.".into(),
        ),
    }
}

fn ledger_failure(error: CountersignError) -> PageError {
    match &error {
        CountersignError::Ledger(
            crate::countersign::ledger::LedgerError::Tampered { .. }
            | crate::countersign::ledger::LedgerError::LogTampered(_),
        ) => PageError::Broken(format!(
            "{UNTRUSTED}Hearth's own check of the orders failed: {error}"
        )),
        _ => PageError::from(error),
    }
}
