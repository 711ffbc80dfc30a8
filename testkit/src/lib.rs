//! Test support shared by Hearth's test suites (never a dependency of shipped code).

pub mod calls;
pub mod capacity;
pub mod chat_completions;
pub mod converse;
pub mod moto;
pub mod passkey;

pub use calls::{Call, CallCounter};
