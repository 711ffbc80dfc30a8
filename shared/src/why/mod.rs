//! `why`: a verifiable memory of why the assistant did things.
//!
//! Decisions are kept per household in a hash chain (see [`crate::chain`]) scoped to the
//! caller's credential. Each household has a fixed retention window that starts at its first
//! decision; a window keeps the newest [`limits::WINDOW_CAPACITY`] decisions and moves the hash
//! of each evicted record into the chain's anchor.

mod commit;
mod error;
pub mod limits;
pub mod matching;
mod queue;
pub mod record;
pub mod reference;
pub mod service;
pub mod tools;

pub use service::{WhyError, WhyService};
pub use tools::WhyToolset;
