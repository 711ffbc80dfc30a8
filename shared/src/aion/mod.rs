//! The `aion` toolset: `ask_aion`, a narrow, authenticated relay that puts one question to the
//! outside AionRealm guide service and returns its answer.
//!
//! The relay never sends who is asking: `member_id` and `session_id` are always null, and the
//! tool takes nothing but the question. Whatever goes wrong with the backend, the caller gets
//! the same generic answer; the cause goes to the log, without the backend's URL or key.

pub mod backend;
pub mod tools;

pub use backend::{Answer, BackendFailure, Guide, HttpGuide, MockGuide};
pub use tools::AionToolset;
