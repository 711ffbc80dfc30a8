//! The Scholia v0.6.2 validator rules, each shown passing and failing. Every case names the
//! rule it exercises and the atoms it must flag; no other error may appear.

use hearth_core::scholia::validator::{Mode, Severity, validate};

/// Validates `trace` and returns the `(rule, atom_id)` of every error.
fn errors(trace: &str) -> Vec<(String, String)> {
    validate(trace, Mode::Full, &[])
        .errors
        .into_iter()
        .map(|issue| (issue.rule.to_owned(), issue.atom_id))
        .collect()
}

fn warnings(trace: &str) -> Vec<(String, String)> {
    validate(trace, Mode::Full, &[])
        .warnings
        .into_iter()
        .map(|issue| (issue.rule.to_owned(), issue.atom_id))
        .collect()
}

fn expect(trace: &str, expected: &[(&str, &str)]) {
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(rule, atom)| (rule.to_string(), atom.to_string()))
        .collect();
    assert_eq!(errors(trace), expected, "{trace}");
}

fn step(body: &str) -> String {
    format!("<Step id=\"S_01\" name=\"case\">\n{body}\n</Step>")
}

#[test]
fn well_formed_needs_known_kinds_known_attributes_and_unique_ids() {
    expect(&step("<Print id=\"P_1\">ok</Print>"), &[]);
    expect(
        &step("<Musing id=\"M_1\">hm</Musing>"),
        &[("well_formed", "M_1")],
    );
    expect(
        &step("<Print id=\"P_1\" colour=\"red\">x</Print>"),
        &[("well_formed", "P_1")],
    );
    expect(
        &step("<Print id=\"P_1\">a</Print><Print id=\"P_1\">b</Print>"),
        &[("well_formed", "P_1")],
    );
    expect(
        &step("<Alternative id=\"Alt\" label=\"a\" rejected_because=\"b\">x</Alternative>"),
        &[("well_formed", "Alt")],
    );
    expect(
        "<Step name=\"no id\"><Print>x</Print></Step>",
        &[("well_formed", "Step")],
    );
    // A missing required attribute is a warning, as the shared fixtures expect.
    let trace =
        step("<Hypothesis id=\"H_1\">x</Hypothesis><Evidence id=\"E_1\" for=\"H_1\">y</Evidence>");
    assert_eq!(errors(&trace), Vec::<(String, String)>::new());
    assert_eq!(
        warnings(&trace),
        vec![("well_formed".to_owned(), "E_1".to_owned())]
    );
}

#[test]
fn malformed_snippets_are_one_positioned_well_formed_error() {
    let report = validate(
        "<Step id=\"S\">\n  <Finding>x</Action>\n</Step>",
        Mode::Full,
        &[],
    );
    assert_eq!(report.errors.len(), 1);
    let error = &report.errors[0];
    assert_eq!((error.rule, error.atom_id.as_str()), ("well_formed", ""));
    assert!(
        error.message.starts_with("line 2, column 13:"),
        "{}",
        error.message
    );
    assert_eq!(error.severity, Severity::Error);
}

#[test]
fn tag_balance_mode_checks_only_the_tags() {
    let unbalanced = "<Step id=\"S\"><Action>x</Step>";
    assert!(!validate(unbalanced, Mode::TagBalance, &[]).ok());
    // An unknown kind and an unrecorded Action are fine when only tags are checked.
    let balanced = step("<Musing>x</Musing><Action>y</Action>");
    assert!(validate(&balanced, Mode::TagBalance, &[]).ok());
    assert!(!validate(&balanced, Mode::Full, &[]).ok());
}

#[test]
fn reference_complete_resolves_ids_steps_storing_names_and_canonical_ids() {
    let observed = hearth_core::scholia::canonical_id("Observation", "ran", &Default::default());
    let resolved = step(&format!(
        concat!(
            "<Storing id=\"St\" name=\"limit\" value=\"5\"/>",
            "<Observation id=\"O_1\">ran</Observation>",
            "<Finding id=\"F_1\">REFER:O_1 REFER:S_01 REFER:limit REFER:{cid}.</Finding>",
            "<Reference id=\"R_1\" to=\"O_1\"/>",
            "<Review id=\"Rv\" of=\"other-trace:F_9\">checked<Finding id=\"F_2\">fine</Finding></Review>",
        ),
        cid = observed
    ));
    expect(&resolved, &[]);
    expect(
        &step("<Finding id=\"F_1\">REFER:sha256:000000000000</Finding>"),
        &[("reference_complete", "F_1")],
    );
    expect(
        &step("<Observation id=\"O_1\">x</Observation><Finding id=\"F_1\">REFER:O_2</Finding>"),
        &[("reference_complete", "F_1")],
    );
    expect(
        &step("<Implication id=\"I_1\" next=\"nowhere\"/>"),
        &[("reference_complete", "I_1")],
    );
}

#[test]
fn decision_closed_needs_a_finding_naming_an_option_or_a_branch() {
    expect(
        &step(
            r#"<Deciding id="D_1" options="retry, abort">pick<Finding id="F_1">Chose retry.</Finding></Deciding>"#,
        ),
        &[],
    );
    expect(
        &step(
            r#"<Deciding id="D_1" options="retry, abort">pick<Finding id="F_1">Thought about it.</Finding></Deciding>"#,
        ),
        &[("decision_closed", "D_1")],
    );
    expect(
        &step(
            r#"<Deciding id="D_1" options="retry, abort">pick</Deciding><Branch id="B_1" of="D_1" label="abort">go</Branch>"#,
        ),
        &[],
    );
    expect(
        &step(r#"<Deciding id="D_1">pick</Deciding>"#),
        &[("decision_closed", "D_1")],
    );
}

#[test]
fn hypotheses_need_evidence_or_uncertainty() {
    expect(
        &step(
            r#"<Hypothesis id="H_1">x</Hypothesis><Evidence id="E_1" for="H_1" polarity="supports">y</Evidence>"#,
        ),
        &[],
    );
    expect(
        &step(
            r#"<Hypothesis id="H_1">x</Hypothesis><Uncertainty id="U_1" on="H_1" confidence="0.4">unsure</Uncertainty>"#,
        ),
        &[],
    );
    expect(
        &step(r#"<Hypothesis id="H_1">x</Hypothesis>"#),
        &[("hypothesis_evaluated", "H_1")],
    );
}

#[test]
fn retracts_name_a_finding_concluding_or_goal() {
    expect(
        &step(r#"<Finding id="F_1">x</Finding><Retract id="R_1" target="F_1">wrong</Retract>"#),
        &[],
    );
    expect(
        &step(r#"<Print id="P_1">x</Print><Retract id="R_1" target="P_1">wrong</Retract>"#),
        &[("retract_consistent", "R_1")],
    );
}

#[test]
fn constraint_respected_catches_an_action_doing_what_is_forbidden() {
    let constraint =
        r#"<Constraint id="C_1" scope="repo">Never delete the production database.</Constraint>"#;
    expect(
        &step(&format!(
            "{constraint}<Action id=\"A_1\">Deleted the production database.<Finding id=\"F_1\">gone</Finding></Action>"
        )),
        &[("constraint_respected", "A_1")],
    );
    expect(
        &step(&format!(
            "{constraint}<Action id=\"A_1\">Did not delete the production database; archived a copy.<Finding id=\"F_1\">kept</Finding></Action>"
        )),
        &[],
    );
    expect(
        &step(&format!(
            "{constraint}<Action id=\"A_1\">Deleted a temporary file.<Finding id=\"F_1\">ok</Finding></Action>"
        )),
        &[],
    );
    // A Constraint binds the Actions after it, not those before.
    expect(
        &step(&format!(
            "<Action id=\"A_1\">Deleted the production database.<Finding id=\"F_1\">gone</Finding></Action>{constraint}"
        )),
        &[],
    );
}

#[test]
fn required_goals_are_closed_with_a_status_unless_in_research_mode() {
    let goal = r#"<Goal id="G_1" priority="required">ship</Goal><Observation id="O_1">shipped</Observation>"#;
    expect(
        &step(&format!(
            r#"{goal}<Concluding id="C_1" for_goal="G_1" status="met">REFER:O_1 shows it.</Concluding>"#
        )),
        &[],
    );
    expect(
        &step(&format!(
            r#"{goal}<Concluding id="C_1" for_goal="G_1">REFER:O_1 shows it.</Concluding>"#
        )),
        &[("goal_declared", "G_1")],
    );
    expect(&step(&format!("<Meta:research-mode/>{goal}")), &[]);
    expect(
        &step(&format!(
            r#"{goal}<Finding id="F_1" for_goal="G_1" status="met_late">late</Finding>"#
        )),
        &[],
    );
}

#[test]
fn only_known_operators_are_written_as_operators() {
    expect(
        &step(
            "<Thinking id=\"T_1\">FORALL(x IN xs) x EQUALS y AND NOT z; LIST(string): [a]</Thinking>",
        ),
        &[],
    );
    expect(
        &step("<Thinking id=\"T_1\">NOTE: this is not an operator</Thinking>"),
        &[("unknown_operator", "T_1")],
    );
    // Provisional operators are accepted with a warning.
    let trace = step("<Finding id=\"F_1\">x</Finding><Thinking id=\"T_1\">FLIP:F_1</Thinking>");
    assert_eq!(errors(&trace), vec![]);
    assert_eq!(
        warnings(&trace),
        vec![("unknown_operator".to_owned(), "T_1".to_owned())]
    );
}

#[test]
fn locations_edges_and_v031_fields_use_their_shapes() {
    expect(
        &step(r#"<Observation id="O_1" location="src/a.rs:3:9">x</Observation>"#),
        &[],
    );
    for bad in ["src/a.rs:9:3", "src/a.rs:3", "a b:1:2"] {
        expect(
            &step(&format!(
                r#"<Observation id="O_1" location="{bad}">x</Observation>"#
            )),
            &[("location_edge_shape", "O_1")],
        );
    }
    expect(&step(r#"<Edge id="E_1" type="imports"/>"#), &[]);
    expect(
        &step(r#"<Edge id="E_1" type="likes"/>"#),
        &[("location_edge_shape", "E_1")],
    );
    expect(
        &step(
            r#"<Effect id="X_1" kind="network"/><Ref id="R_1" type="doc"/><Meta id="M_1" criticality="kernel"/>"#,
        ),
        &[],
    );
    expect(
        &step(r#"<Effect id="X_1" kind="telepathy"/>"#),
        &[("v031_optional_fields", "X_1")],
    );
    for (confidence, ok) in [
        ("0", true),
        ("1", true),
        ("high", true),
        ("1.01", false),
        ("-0.1", false),
        ("sure", false),
    ] {
        let trace = step(&format!(
            r#"<Observation id="O_1" confidence="{confidence}">x</Observation>"#
        ));
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("v031_optional_fields", "O_1")]
        };
        expect(&trace, expected);
    }
}

#[test]
fn concluding_atoms_close_a_real_goal_from_cited_evidence() {
    let goal = r#"<Goal id="G_1">ship</Goal><Observation id="O_1">shipped</Observation>"#;
    expect(
        &step(&format!(
            r#"{goal}<Concluding id="C_1" for_goal="O_1">REFER:O_1 shows it.</Concluding>"#
        )),
        &[("for_goal_resolves", "C_1")],
    );
    expect(
        &step(&format!(
            r#"{goal}<Concluding id="C_1">REFER:O_1 shows it.</Concluding>"#
        )),
        &[("for_goal_resolves", "C_1")],
    );
    expect(
        &step(&format!(
            r#"{goal}<Concluding id="C_1" for_goal="G_1">Done, trust me.</Concluding>"#
        )),
        &[("refer_at_least_one", "C_1")],
    );
}

#[test]
fn criticality_may_rise_but_never_fall_without_a_retract() {
    let goal = r#"<Goal id="G_1" criticality="kernel">ship</Goal><Observation id="O_1">shipped</Observation>"#;
    expect(
        &step(&format!(
            r#"{goal}<Concluding id="C_1" for_goal="G_1" criticality="bridge">REFER:O_1</Concluding>"#
        )),
        &[("criticality_non_decreasing", "C_1")],
    );
    expect(
        &step(&format!(
            r#"{goal}<Concluding id="C_1" for_goal="G_1" criticality="kernel">REFER:O_1</Concluding>"#
        )),
        &[],
    );
    expect(
        &step(&format!(
            r#"{goal}<Retract id="R_1" target="G_1" reason="downgraded">scope cut</Retract><Concluding id="C_1" for_goal="G_1" criticality="bridge">REFER:O_1</Concluding>"#
        )),
        &[],
    );
}

#[test]
fn concluding_warnings_do_not_invalidate() {
    let base = r#"<Goal id="G_1">ship</Goal><Finding id="F_1">built</Finding><Confidence id="K_1" on="F_1" level="0.6"/>"#;
    let trace = step(&format!(
        r#"{base}<Concluding id="C_1" for_goal="G_1" confidence="0.9">We should ship. REFER:F_1</Concluding><Concluding id="C_2" for_goal="G_1">REFER:F_1</Concluding>"#
    ));
    assert_eq!(errors(&trace), vec![]);
    let mut rules: Vec<String> = warnings(&trace).into_iter().map(|(rule, _)| rule).collect();
    rules.sort();
    assert_eq!(
        rules,
        [
            "min_confidence_ceiling",
            "no_action_in_concluding",
            "single_active_concluding_per_goal"
        ]
    );
}

#[test]
fn a_carried_canonical_id_must_match_the_content() {
    // The golden vector `Constraint "never delete prod" scope=repo`.
    expect(
        &step(
            r#"<Constraint id="C_1" scope="repo" canonical_id="sha256:8ce8ff2264d3">never delete prod</Constraint>"#,
        ),
        &[],
    );
    expect(
        &step(
            r#"<Constraint id="C_1" scope="repo" canonical_id="sha256:8ce8ff2264d3">never delete staging</Constraint>"#,
        ),
        &[("canonical_id_well_formed", "C_1")],
    );
}
