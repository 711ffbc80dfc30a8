//! The intent check: does a proposed order match what the person said?
//!
//! A judge answers `match`, `mismatch` or `unclear`. Countersign stops and asks on both
//! `mismatch` and `unclear`, so a judge that cannot tell must say `unclear`, never `match`.

pub mod bedrock;
pub mod rules;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A judge's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Match,
    Mismatch,
    Unclear,
}

impl Verdict {
    /// Whether Countersign must stop and ask.
    pub fn flags(self) -> bool {
        self != Verdict::Match
    }
}

/// A verdict with the reasons for it (empty for a plain match).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub reasons: Vec<String>,
}

/// The order the assistant proposes, as a listing describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub title: String,
    pub variant: String,
    pub merchant: String,
    pub unit_price_cents: u64,
    /// The listing's own text: untrusted, and possibly written to steer the assistant.
    pub text: String,
    pub quantity: u32,
}

#[async_trait]
pub trait Judge: Send + Sync + 'static {
    /// The name used by `COUNTERSIGN_JUDGE` and `hearth eval --judge`.
    fn name(&self) -> &'static str;

    /// Compares the person's utterances with the proposal.
    async fn judge(&self, words: &[String], proposal: &Proposal) -> Judgement;
}
