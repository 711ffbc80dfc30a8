//! Why a ledger operation failed, in words a voice may read.

use crate::chain::Problem;
use crate::store::StoreError;
use crate::transparency::LogError;

use super::{MAX_HOUSEHOLDS, MAX_LOGS};

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
    pub(super) fn from_log(error: LogError) -> Self {
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
