//! The evaluation harness behind `hearth eval`: runs a judge over labelled cases and reports
//! how many mismatches it caught and how many genuine orders it let through, each with a
//! two-sided 95% Clopper–Pearson interval, overall and per kind.
//!
//! A case is one JSON line: `{"id", "split": "dev"|"test", "words": [...], "proposal": {...},
//! "label": "match"|"mismatch", "kind": "genuine"|"quantity"|"item"|"variant"|"price"|
//! "merchant"|"injection"}` (`split` may be left out of files that are not split). "Caught"
//! means the judge answered mismatch or unclear: both make Countersign stop and ask.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::judge::{Judge, Proposal, ReasonCode, Verdict};

pub const KINDS: &[&str] = &[
    "genuine",
    "quantity",
    "item",
    "variant",
    "price",
    "merchant",
    "injection",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    #[serde(default)]
    pub split: Option<Split>,
    pub words: Vec<String>,
    pub proposal: Proposal,
    pub label: Label,
    pub kind: String,
}

/// Which part of the cases a case belongs to: `dev` cases may shape the rules; `test` cases
/// are written before, held back, and frozen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    Dev,
    Test,
}

impl Split {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "dev" => Some(Split::Dev),
            "test" => Some(Split::Test),
            _ => None,
        }
    }
}

/// The cases of `split`, or all of them.
pub fn select(cases: Vec<Case>, split: Option<Split>) -> Vec<Case> {
    match split {
        None => cases,
        Some(split) => cases
            .into_iter()
            .filter(|case| case.split == Some(split))
            .collect(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Match,
    Mismatch,
}

/// A line of the cases file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct CaseError {
    pub line: usize,
    pub reason: String,
}

/// Reads JSON-lines cases; blank lines are skipped. Labels and kinds must agree: `genuine`
/// cases are labelled `match`, every other kind `mismatch`.
pub fn parse_cases(text: &str) -> Result<Vec<Case>, CaseError> {
    let mut cases = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let error = |reason: String| CaseError {
            line: index + 1,
            reason,
        };
        let case: Case = serde_json::from_str(line).map_err(|e| error(e.to_string()))?;
        if !KINDS.contains(&case.kind.as_str()) {
            return Err(error(format!("unknown kind {:?}", case.kind)));
        }
        if (case.kind == "genuine") != (case.label == Label::Match) {
            return Err(error(
                "a genuine case is labelled match, any other kind mismatch".into(),
            ));
        }
        if case.proposal.quantity == 0 {
            return Err(error("a proposal orders at least one".into()));
        }
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(CaseError {
            line: 0,
            reason: "the file holds no cases".into(),
        });
    }
    Ok(cases)
}

/// A count out of a total, with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    pub count: usize,
    pub total: usize,
    pub percent: f64,
    pub low: f64,
    pub high: f64,
}

impl Rate {
    fn of(count: usize, total: usize) -> Self {
        let (low, high) = clopper_pearson(count, total);
        Self {
            count,
            total,
            percent: if total == 0 {
                0.0
            } else {
                100.0 * count as f64 / total as f64
            },
            low: 100.0 * low,
            high: 100.0 * high,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub verdict: Verdict,
    pub codes: Vec<ReasonCode>,
    /// The judge's notes, in Hearth's own words.
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub judge: String,
    /// SHA-256 of the cases file as read.
    pub cases_sha256: String,
    /// The split run, or null for every case in the file.
    pub split: Option<Split>,
    /// SHA-256 of the model judge's prompt, for a judge that has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_sha256: Option<String>,
    /// The model a model judge asked (`COUNTERSIGN_JUDGE_MODEL`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What an OpenAI-compatible server answered to `GET /models` when the run began, or
    /// `{"error": ...}` in Hearth's words when it did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<serde_json::Value>,
    /// Mismatch cases the judge flagged (mismatch or unclear).
    pub mismatches_caught: Rate,
    /// Genuine cases the judge answered `match`.
    pub genuine_passed: Rate,
    /// Per kind: for `genuine` the passed rate, for the others the caught rate.
    pub by_kind: BTreeMap<String, Rate>,
    pub cases: Vec<CaseResult>,
}

/// Runs `judge` over `cases`; `cases_sha256` and `prompt_sha256` are recorded in the report.
pub async fn run(
    judge: &dyn Judge,
    cases: &[Case],
    split: Option<Split>,
    cases_sha256: String,
    prompt_sha256: Option<String>,
) -> Report {
    run_with_progress(judge, cases, split, cases_sha256, prompt_sha256, &|_, _| {}).await
}

/// [`run`], telling `progress(done, total)` after each case (a terminal shows it; a judge on
/// Bedrock takes about a second a case).
pub async fn run_with_progress(
    judge: &dyn Judge,
    cases: &[Case],
    split: Option<Split>,
    cases_sha256: String,
    prompt_sha256: Option<String>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Report {
    let mut results = Vec::with_capacity(cases.len());
    let mut tallies: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (done, case) in cases.iter().enumerate() {
        let judgement = judge.judge(&case.words, &case.proposal).await;
        let right = match case.label {
            Label::Match => judgement.verdict == Verdict::Match,
            Label::Mismatch => judgement.verdict.flags(),
        };
        let tally = tallies.entry(case.kind.clone()).or_default();
        tally.0 += usize::from(right);
        tally.1 += 1;
        results.push(CaseResult {
            id: case.id.clone(),
            verdict: judgement.verdict,
            codes: judgement.codes,
            reasons: judgement.notes,
        });
        progress(done + 1, cases.len());
    }
    let (caught, mismatches) = tallies
        .iter()
        .filter(|(kind, _)| *kind != "genuine")
        .fold((0, 0), |(c, t), (_, (count, total))| (c + count, t + total));
    let (passed, genuine) = tallies.get("genuine").copied().unwrap_or_default();
    Report {
        judge: judge.name().to_owned(),
        cases_sha256,
        split,
        prompt_sha256,
        model: None,
        models: None,
        mismatches_caught: Rate::of(caught, mismatches),
        genuine_passed: Rate::of(passed, genuine),
        by_kind: tallies
            .into_iter()
            .map(|(kind, (count, total))| (kind, Rate::of(count, total)))
            .collect(),
        cases: results,
    }
}

/// The report as a table for a person.
pub fn table(report: &Report) -> String {
    let row = |label: &str, rate: &Rate| {
        format!(
            "{label:<22} {:>3} of {:<3} {:>6.1}%   95% CI {:>5.1}% to {:>5.1}%\n",
            rate.count, rate.total, rate.percent, rate.low, rate.high
        )
    };
    let split = match report.split {
        Some(Split::Dev) => "dev",
        Some(Split::Test) => "test",
        None => "all cases",
    };
    let mut out = format!(
        "judge: {}\nsplit: {split}\ncases sha256: {}\n",
        report.judge, report.cases_sha256
    );
    if let Some(prompt) = &report.prompt_sha256 {
        out.push_str(&format!("prompt sha256: {prompt}\n"));
    }
    if let Some(model) = &report.model {
        out.push_str(&format!("model: {model}\n"));
    }
    if let Some(error) = report
        .models
        .as_ref()
        .and_then(|models| models.get("error"))
        .and_then(serde_json::Value::as_str)
    {
        out.push_str(&format!("model server: {error}\n"));
    }
    out.push('\n');
    out.push_str(&row("mismatches caught", &report.mismatches_caught));
    out.push_str(&row("genuine orders passed", &report.genuine_passed));
    out.push_str("\nby kind (genuine: passed; others: caught)\n");
    for (kind, rate) in &report.by_kind {
        out.push_str(&row(&format!("  {kind}"), rate));
    }
    let missed: Vec<&CaseResult> = report
        .cases
        .iter()
        .filter(|case| !case.codes.is_empty() || case.verdict != Verdict::Match)
        .collect();
    if !missed.is_empty() {
        out.push_str("\nflagged cases\n");
        for case in missed {
            let codes: Vec<&str> = case.codes.iter().map(|code| code.as_str()).collect();
            out.push_str(&format!(
                "  {} {:?} [{}]: {}\n",
                case.id,
                case.verdict,
                codes.join(", "),
                case.reasons.join("; ")
            ));
        }
    }
    out
}

/// The exact two-sided 95% Clopper–Pearson interval for `count` successes in `total` trials.
/// Found by bisection on the binomial distribution, whose tails are summed exactly; written
/// here because it is twenty lines, where a statistics crate would be a large dependency.
pub fn clopper_pearson(count: usize, total: usize) -> (f64, f64) {
    if total == 0 {
        return (0.0, 1.0);
    }
    let alpha = 0.05;
    let low = if count == 0 {
        0.0
    } else {
        // The p at which seeing `count` or more is just α/2 likely.
        bisect(|p| 1.0 - binomial_cdf(count - 1, total, p) - alpha / 2.0)
    };
    let high = if count == total {
        1.0
    } else {
        // The p at which seeing `count` or fewer is just α/2 likely.
        bisect(|p| alpha / 2.0 - binomial_cdf(count, total, p))
    };
    (low, high)
}

/// P(X <= k) for X ~ Binomial(n, p), summed in log space.
fn binomial_cdf(k: usize, n: usize, p: f64) -> f64 {
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return if k >= n { 1.0 } else { 0.0 };
    }
    let mut log_choose = 0.0f64;
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            log_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (log_choose + i as f64 * p.ln() + (n - i) as f64 * (1.0 - p).ln()).exp();
    }
    sum.min(1.0)
}

/// The root in [0, 1] of an increasing function.
fn bisect(f: impl Fn(f64) -> f64) -> f64 {
    let (mut low, mut high) = (0.0, 1.0);
    for _ in 0..100 {
        let middle = (low + high) / 2.0;
        if f(middle) < 0.0 {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low + high) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounded(value: (f64, f64)) -> (f64, f64) {
        (
            (value.0 * 1000.0).round() / 10.0,
            (value.1 * 1000.0).round() / 10.0,
        )
    }

    #[test]
    fn clopper_pearson_matches_published_intervals() {
        assert_eq!(rounded(clopper_pearson(7, 16)), (19.8, 70.1));
        assert_eq!(rounded(clopper_pearson(16, 16)), (79.4, 100.0));
        assert_eq!(rounded(clopper_pearson(0, 10)), (0.0, 30.8));
        assert_eq!(rounded(clopper_pearson(5, 10)), (18.7, 81.3));
    }

    #[test]
    fn case_files_are_checked_line_by_line() {
        let good = r#"{"id":"a","words":["two eggs"],"proposal":{"title":"Eggs","variant":"1","merchant":"M","unit_price_cents":1,"text":"","quantity":2},"label":"match","kind":"genuine"}"#;
        assert_eq!(parse_cases(&format!("{good}\n\n")).unwrap().len(), 1);
        let wrong_label = good.replace("\"match\"", "\"mismatch\"");
        assert_eq!(
            parse_cases(&format!("{good}\n{wrong_label}"))
                .unwrap_err()
                .line,
            2
        );
        assert!(parse_cases(&good.replace("genuine", "colour")).is_err());
        assert!(parse_cases("").is_err());
        assert!(parse_cases("{").is_err());
    }
}
