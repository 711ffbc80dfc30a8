//! The Scholia v0.6.2 conformance suite for rule 4 (`action_recorded`), copied with
//! attribution in `tests/vectors/scholialang/`: every positive case passes, every negative case
//! fails on exactly the named Actions, and no other rule fires on any case.

use hearth_core::scholia::validator::{GraphEdge, Mode, validate};
use serde::Deserialize;

#[derive(Deserialize)]
struct Suite {
    validator_version: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    id: String,
    trace: String,
    graph_edges: Vec<Edge>,
    expects: Expects,
}

#[derive(Deserialize)]
struct Edge {
    source_id: String,
    target_id: String,
    relation: String,
}

#[derive(Deserialize)]
struct Expects {
    outcome: String,
    error_count: usize,
    #[serde(default)]
    atom_ids: Vec<String>,
}

#[test]
fn every_action_recorded_case_holds() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vectors/scholialang/action_recorded.json"
    );
    let suite: Suite = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        suite.validator_version,
        hearth_core::scholia::catalog::VALIDATOR_VERSION
    );
    assert!(suite.cases.len() >= 13);
    for case in &suite.cases {
        let edges: Vec<GraphEdge> = case
            .graph_edges
            .iter()
            .map(|edge| GraphEdge {
                source_id: edge.source_id.clone(),
                target_id: edge.target_id.clone(),
                relation: edge.relation.clone(),
            })
            .collect();
        let report = validate(&case.trace, Mode::Full, &edges);
        let rule_errors: Vec<&str> = report
            .errors
            .iter()
            .filter(|issue| issue.rule == "action_recorded")
            .map(|issue| issue.atom_id.as_str())
            .collect();
        assert_eq!(
            rule_errors.len(),
            case.expects.error_count,
            "{}: {:?}",
            case.id,
            report.errors
        );
        assert_eq!(rule_errors, case.expects.atom_ids, "{}", case.id);
        assert_eq!(
            case.expects.outcome == "pass",
            rule_errors.is_empty(),
            "{}",
            case.id
        );
        let others: Vec<_> = report
            .errors
            .iter()
            .filter(|issue| issue.rule != "action_recorded")
            .collect();
        assert!(
            others.is_empty(),
            "{}: other rules fired: {others:?}",
            case.id
        );
    }
}
