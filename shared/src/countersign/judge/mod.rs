//! The intent check: does a proposed order match what the person said?
//!
//! A judge answers `match`, `mismatch` or `unclear`. Countersign stops and asks on both
//! `mismatch` and `unclear`, so a judge that cannot tell must say `unclear`, never `match`.

mod amounts;
#[cfg(feature = "aws")]
pub mod bedrock;
mod described;
pub mod listing_text;
pub mod measures;
mod merchant;
pub mod model;
pub mod openai;
pub mod rules;
pub mod thesaurus;
mod words;

use async_trait::async_trait;

/// The default model of the Bedrock judge: a different model from the assistant's, so that a
/// model that misread the request does not grade its own reading.
pub const DEFAULT_MODEL: &str = "us.amazon.nova-premier-v1:0";
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

/// What a judge found wrong, from a closed set. A model judge answers with these codes only,
/// and the device hears Hearth's fixed words for them ([`ReasonCode::spoken`]), so nothing a
/// model that has read an untrusted listing writes is ever spoken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    Quantity,
    Item,
    Variant,
    Price,
    Merchant,
    Injection,
    Unclear,
}

impl ReasonCode {
    /// The code as written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::Quantity => "quantity",
            ReasonCode::Item => "item",
            ReasonCode::Variant => "variant",
            ReasonCode::Price => "price",
            ReasonCode::Merchant => "merchant",
            ReasonCode::Injection => "injection",
            ReasonCode::Unclear => "unclear",
        }
    }

    /// Hearth's own words for the code: the only judge text that is ever spoken.
    pub fn spoken(self) -> &'static str {
        match self {
            ReasonCode::Quantity => "quantity: not the amount that was asked for",
            ReasonCode::Item => "item: not the thing that was asked for",
            ReasonCode::Variant => "variant: not the size or kind that was asked for",
            ReasonCode::Price => "price: over the limit that was said",
            ReasonCode::Merchant => "merchant: not the shop that was named",
            ReasonCode::Injection => "injection: the listing tries to instruct the assistant",
            ReasonCode::Unclear => "unclear: the words do not say enough to be sure",
        }
    }
}

/// A verdict with what was found (both empty for a plain match).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    pub verdict: Verdict,
    /// What was found, each code once, in the order found.
    pub codes: Vec<ReasonCode>,
    /// Details in Hearth's own words: the rules' findings (written from the catalogue and the
    /// person's words), or, from the model judge, its codes and why it could not answer.
    /// Recorded and reported, never spoken, and never a model's own text.
    pub notes: Vec<String>,
}

impl Judgement {
    /// `verdict` with `findings` (code and note), each code kept once.
    pub fn found(verdict: Verdict, findings: Vec<(ReasonCode, String)>) -> Self {
        let mut codes = Vec::new();
        let mut notes = Vec::new();
        for (code, note) in findings {
            if !codes.contains(&code) {
                codes.push(code);
            }
            notes.push(note);
        }
        Self {
            verdict,
            codes,
            notes,
        }
    }
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
