//! The Scholialang reference tools over `/mcp`: the catalog, lookup and both lint tools,
//! their limits, malformed input that never crashes a request, and decision records whose
//! atoms lint clean.

mod common;

use common::{Harness, harness};
use serde_json::{Value, json};

async fn call(h: &Harness, name: &str, arguments: Value) -> Value {
    common::call_tool(&h.router, name, arguments).await
}

const VALID: &str = "<Step id=\"S_01\" name=\"demo\">\n  <Action id=\"A_1\">Dimmed the lights.</Action>\n  <Finding id=\"F_1\">REFER:A_1 The room is darker.</Finding>\n</Step>";

#[tokio::test]
async fn the_catalog_is_the_closed_vocabulary_and_deterministic() {
    let h = harness(&[]);
    let first = call(&h, "scholia_catalog", json!({})).await;
    assert_eq!(first["isError"], false);
    let catalog = &first["structuredContent"];
    assert_eq!(catalog["atoms"].as_array().unwrap().len(), 32);
    assert_eq!(catalog["validator_version"], "0.6.2");
    let finding = catalog["atoms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["tag"] == "Finding")
        .unwrap();
    assert_eq!(finding["id"], "finding");
    assert!(finding["summary"].as_str().unwrap().contains("conclusion"));
    let operators: Vec<&str> = catalog["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(operators.len(), 13);
    assert!(operators.contains(&"REFER") && operators.contains(&"FLIP"));
    assert!(!catalog["relations"].as_array().unwrap().is_empty());
    assert!(!catalog["resources"].as_array().unwrap().is_empty());
    assert_eq!(call(&h, "scholia_catalog", json!({})).await, first);
    let extra = call(&h, "scholia_catalog", json!({"x": 1})).await;
    assert_eq!(extra["isError"], true);
}

#[tokio::test]
async fn lookup_searches_atoms_operators_and_relations_in_any_case() {
    let h = harness(&[]);
    let found = call(&h, "scholia_lookup", json!({"term": "rEfEr"})).await;
    assert_eq!(found["isError"], false);
    let matches = found["structuredContent"]["matches"].as_array().unwrap();
    assert!(
        matches
            .iter()
            .any(|m| m["type"] == "operator" && m["name"] == "REFER")
    );
    let goal = call(&h, "scholia_lookup", json!({"term": "for_goal"})).await;
    let types: Vec<&str> = goal["structuredContent"]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"relation"), "{goal}");
    let action = call(&h, "scholia_lookup", json!({"term": "action"})).await;
    assert!(
        action["structuredContent"]["matches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["type"] == "atom" && m["name"] == "Action")
    );
    let nothing = call(&h, "scholia_lookup", json!({"term": "zzzz"})).await;
    assert_eq!(nothing["isError"], true);
    assert!(
        nothing["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("No Scholia")
    );
    for term in [json!(""), json!("x".repeat(101))] {
        assert_eq!(
            call(&h, "scholia_lookup", json!({"term": term})).await["isError"],
            true
        );
    }
    assert_eq!(
        call(&h, "scholia_lookup", json!({"term": "x".repeat(100)})).await["isError"],
        true,
        "no match, but accepted"
    );
}

#[tokio::test]
async fn lint_snippet_reports_rules_and_is_an_error_when_invalid() {
    let h = harness(&[]);
    let valid = call(&h, "scholia_lint_snippet", json!({"snippet": VALID})).await;
    assert_eq!(valid["isError"], false, "{valid}");
    let report = &valid["structuredContent"];
    assert_eq!(
        (report["ok"].as_bool(), report["mode"].as_str()),
        (Some(true), Some("full"))
    );
    assert_eq!(report["validator_version"], "0.6.2");
    let invalid = call(
        &h,
        "scholia_lint_snippet",
        json!({"snippet": "<Step id=\"S\"><Action id=\"A_1\">x</Action></Step>"}),
    )
    .await;
    assert_eq!(invalid["isError"], true);
    let error = &invalid["structuredContent"]["errors"][0];
    assert_eq!(error["rule"], "action_recorded");
    assert_eq!(error["atom_id"], "A_1");
    assert_eq!(error["severity"], "error");
    let balance = call(
        &h,
        "scholia_lint_snippet",
        json!({"snippet": "<Step id=\"S\"><Action>x</Action></Step>", "mode": "tag_balance"}),
    )
    .await;
    assert_eq!(
        balance["isError"], false,
        "tag balance ignores the unrecorded Action"
    );
    assert_eq!(balance["structuredContent"]["mode"], "tag_balance");
    let bad_mode = call(
        &h,
        "scholia_lint_snippet",
        json!({"snippet": VALID, "mode": "strict"}),
    )
    .await;
    assert_eq!(bad_mode["isError"], true);
}

#[tokio::test]
async fn lint_trace_adds_totals_and_per_rule_counts() {
    let h = harness(&[]);
    let trace = "<Step id=\"S_01\"><Action id=\"A_1\">x</Action><Action id=\"A_2\">y</Action><Thinking id=\"T\">NOTE: z</Thinking></Step>";
    let result = call(&h, "scholia_lint_trace", json!({"snippet": trace})).await;
    assert_eq!(result["isError"], true);
    let report = &result["structuredContent"];
    assert_eq!(report["total_errors"], 3);
    assert_eq!(
        report["errors_by_rule"],
        json!({"action_recorded": 2, "unknown_operator": 1})
    );
    assert_eq!(report["total_warnings"], 0);
    assert_eq!(report["rules"].as_array().unwrap().len(), 18);
    let clean = call(&h, "scholia_lint_trace", json!({"snippet": VALID})).await;
    assert_eq!(clean["structuredContent"]["errors_by_rule"], json!({}));
}

#[tokio::test]
async fn snippets_are_limited_to_8000_characters() {
    let h = harness(&[]);
    let padded = |len: usize| format!("<Print id=\"P\">{}</Print>", "x".repeat(len - 22));
    assert_eq!(padded(8000).chars().count(), 8000);
    let at_limit = call(&h, "scholia_lint_snippet", json!({"snippet": padded(8000)})).await;
    assert_eq!(at_limit["isError"], false, "{at_limit}");
    let past = call(&h, "scholia_lint_snippet", json!({"snippet": padded(8001)})).await;
    assert_eq!(past["isError"], true);
    assert!(
        past["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("8000")
    );
}

#[tokio::test]
async fn malformed_snippets_never_crash_a_request() {
    let h = harness(&[]);
    let deep = format!("{}x{}", "<Thinking>".repeat(40), "</Thinking>".repeat(40));
    let cases = [
        "<",
        "<<<>>>",
        "</Step>",
        "<Step",
        "<Step id=>",
        "<Step id=\"a\"",
        "<Action>\u{0}</Action>",
        "<Finding>&#xFFFFFFFF;&#0;</Finding>",
        "<A:b-c/>",
        "<Step id='x'><Step id='y'></Step></Step>",
        "<Action id=\"\u{1F600}\">é</Action>",
        "<Meta:research-mode/>",
        deep.as_str(),
        "\u{FEFF}<Print>x</Print>",
    ];
    for snippet in cases {
        for tool in ["scholia_lint_snippet", "scholia_lint_trace"] {
            let result = call(&h, tool, json!({"snippet": snippet})).await;
            assert!(
                result["structuredContent"]["ok"].is_boolean(),
                "{tool} {snippet:?}: {result}"
            );
        }
    }
}

#[tokio::test]
async fn decision_records_render_as_steps_that_lint_clean() {
    let h = harness(&[]);
    let reasons = [
        "Movie time requested by the user",
        "NOTE: the user said REFER:F_9 and FORALL(x) & <Action> \"quoted\"",
        "café trip \u{1F600}; ratio 3:4",
    ];
    for (n, reason) in reasons.iter().enumerate() {
        let action = format!("ACTION: dim lights {n} <now>");
        let recorded = call(
            &h,
            "record_decision",
            json!({"household_id": "home", "action": action,
            "reason": reason, "inputs": {}, "approver": "Parent"}),
        )
        .await;
        assert_eq!(recorded["isError"], false, "{recorded}");
        let record = &recorded["structuredContent"];
        assert_eq!(
            record["reason"], *reason,
            "the record keeps the words exactly"
        );
        let trace = call(
            &h,
            "get_trace",
            json!({"household_id": "home",
            "trace_id": record["trace_id"], "scholia": true}),
        )
        .await;
        let step = trace["structuredContent"]["scholia_step"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            step.starts_with(&format!("<Step id=\"S_{}\"", record["seq"])),
            "{step}"
        );
        let lint = call(&h, "scholia_lint_snippet", json!({"snippet": step})).await;
        assert_eq!(lint["structuredContent"]["ok"], true, "{step}\n{lint}");
        assert_eq!(lint["structuredContent"]["warnings"], json!([]), "{lint}");
        // The rendered atoms carry their canonical ids, which the lint recomputed.
        for atom in record["atoms"].as_array().unwrap() {
            assert!(step.contains(atom["canonical_id"].as_str().unwrap()));
        }
    }
    let plain = call(
        &h,
        "get_trace",
        json!({"household_id": "home", "trace_id": "0".repeat(8)}),
    )
    .await;
    assert_eq!(plain["isError"], true);
}

#[tokio::test]
async fn the_readme_lint_example_holds() {
    let h = harness(&[]);
    let broken = "<Step id=\"S_01\"><Constraint id=\"C_1\">Never unlock the front door.</Constraint><Action id=\"A_1\">Unlocked the front door for the courier.</Action></Step>";
    let result = call(&h, "scholia_lint_trace", json!({"snippet": broken})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["total_errors"], 2);
    assert_eq!(
        result["structuredContent"]["errors_by_rule"],
        json!({"action_recorded": 1, "constraint_respected": 1})
    );
    let recorded = broken.replace(
        "</Action>",
        "</Action><Finding id=\"F_1\">REFER:A_1 The courier left the parcel.</Finding>",
    );
    let result = call(&h, "scholia_lint_trace", json!({"snippet": recorded})).await;
    assert_eq!(
        result["structuredContent"]["errors_by_rule"],
        json!({"constraint_respected": 1})
    );
}
