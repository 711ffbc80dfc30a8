//! Countersign, the purchase guard: a second signature on everything the assistant buys.
//!
//! This release holds its intent check: the [`judge::Judge`] interface, the deterministic
//! rules judge, and the evaluation harness behind `hearth eval`. The toolset, household rules,
//! attestations and ledger build on them.

pub mod eval;
pub mod judge;
