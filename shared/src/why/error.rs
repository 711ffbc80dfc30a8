//! What the decision memory answers when it cannot do what was asked: the text of each is safe
//! to return.

use super::limits::{MAX_HOUSEHOLDS, MAX_LOGS};
use crate::chain::IntegrityError;
use crate::store::StoreError;
use crate::transparency::LogError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum WhyError {
    /// The arguments break a documented rule; the message says which.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}. The decision history cannot be trusted and is not used.")]
    Integrity(#[from] IntegrityError),
    #[error("Decision storage unavailable; try again later.")]
    Unavailable,
    #[error("The household's decision history is busy with other writes; try again.")]
    Busy,
    #[error(
        "This credential already has {MAX_HOUSEHOLDS} active households; no more can be added until one expires."
    )]
    HouseholdLimit,
    #[error(
        "This credential already keeps {MAX_LOGS} decision logs, live and retiring; a new household can start when one retires, a week after its window ends."
    )]
    LogLimit,
    /// The chain's log is not what its own signed checkpoint says: nothing is appended or
    /// signed over it.
    #[error("{0}. The decision history cannot be trusted and nothing was recorded.")]
    Log(LogError),
    /// The chain's log holds as many entries as one log may: a limit, not tampering.
    #[error(
        "The household's decision log is full ({0} entries), so nothing was recorded; whoever runs Hearth can start a new one."
    )]
    LogFull(u64),
    /// The retained window or the log's stored hashes disagree with the signed checkpoint.
    #[error("{0}. The decision history cannot be trusted and is not used.")]
    LogMismatch(String),
    /// The purchase ledger's history asked for without a signed speaker.
    #[error(
        "I can't show the household's purchase history without knowing who is speaking. Please ask on the device that knows your voice."
    )]
    NoSpeaker,
}

impl From<LogError> for WhyError {
    fn from(error: LogError) -> Self {
        match error {
            LogError::Full(entries) => WhyError::LogFull(entries),
            other => WhyError::Log(other),
        }
    }
}

impl From<StoreError> for WhyError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Conflict => WhyError::Busy,
            StoreError::ScopeFull { .. } => WhyError::HouseholdLimit,
            StoreError::LogsFull { .. } => WhyError::LogLimit,
            StoreError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "decision store unavailable");
                WhyError::Unavailable
            }
        }
    }
}
