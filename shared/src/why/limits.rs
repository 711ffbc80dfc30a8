//! Every bound the decision tools enforce. Schemas advertise the string bounds; the service
//! enforces all of them, so a client that ignores the schema still gets a clear error.

/// A household's window lasts this long from its first decision.
pub const WINDOW_MS: i64 = 72 * 60 * 60 * 1000;
/// Decisions retained per window; older ones are evicted into the anchor.
pub const WINDOW_CAPACITY: usize = 25;
/// Live households per credential.
pub const MAX_HOUSEHOLDS: usize = 8;
/// Decision logs a credential keeps, its live households' and those retiring (a log is kept
/// for [`crate::store::LOG_RETIREMENT_MS`] after its window ends): eight households renewed
/// every 72 hours for ten days fill it.
pub const MAX_LOGS: usize = 32;
/// The four above, as the store applies them.
pub const RETENTION: crate::store::Retention = crate::store::Retention {
    window_ms: WINDOW_MS,
    capacity: WINDOW_CAPACITY,
    max_live_chains: MAX_HOUSEHOLDS,
    max_logs: MAX_LOGS,
};

pub const HOUSEHOLD_ID_MAX: usize = 64;
pub const ACTION_MAX: usize = 200;
pub const REASON_MAX: usize = 1000;
pub const APPROVER_MAX: usize = 100;
pub const QUESTION_MAX: usize = 500;
pub const SINCE_MAX: usize = 64;
/// The predecessor's `session_id`, accepted and ignored by `record_decision`.
pub const SESSION_ID_MAX: usize = 128;
/// Canonical JSON bytes of `inputs`, which is what is stored and hashed.
pub const INPUTS_MAX_BYTES: usize = 2048;
/// Shortest accepted trace id prefix (what spoken answers quote) and the full length.
pub const TRACE_ID_MIN: usize = 8;
pub const TRACE_ID_MAX: usize = 64;

/// Characters quoted from stored text in a spoken answer.
pub const SPOKEN_ACTION_CHARS: usize = 80;
pub const SPOKEN_REASON_CHARS: usize = 200;
pub const SPOKEN_APPROVER_CHARS: usize = 60;
