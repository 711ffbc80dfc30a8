//! Countersign, the purchase guard: a second signature on everything the assistant buys.
//!
//! The device signs who spoke and their words ([`crate::auth::attestation`]); the intent
//! check ([`judge`]) compares the proposed order with those words; the household's rules
//! ([`policy`]) decide; and every step is an entry in a hash-chained [`ledger`], from which
//! reports, budgets and receipts are rebuilt. [`service`] holds the behaviour and [`tools`]
//! the MCP face; `hearth eval` runs the judges over labelled cases ([`eval`]).

pub mod answer;
pub mod eval;
pub mod household;
pub mod judge;
pub mod ledger;
pub mod money;
pub mod notify;
pub mod policy;
pub mod refusal;
pub mod say;
pub mod service;
pub mod tools;

pub use service::CountersignService;
pub use tools::CountersignToolset;
