//! `hearth eval` as a person runs it: the table, `--json`, and clear refusals. On the
//! development set the rules judge must meet its target: at least 90% of mismatches caught
//! with every genuine order passed (the rules were written against these cases, so this is a
//! development figure, not a held-out one).

use std::process::Command;

fn eval(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("eval")
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn the_rules_judge_meets_its_target_on_the_development_set() {
    let (code, stdout, _) = eval(&["--cases", "eval/dev.jsonl", "--judge", "rules", "--json"]);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let caught = &report["mismatches_caught"];
    let passed = &report["genuine_passed"];
    assert_eq!(
        (caught["total"].as_u64(), passed["total"].as_u64()),
        (Some(12), Some(12))
    );
    assert!(caught["percent"].as_f64().unwrap() >= 90.0, "{caught}");
    assert_eq!(passed["percent"], 100.0, "{passed}");
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 24);
    assert!(cases.iter().all(|case| case["id"].is_string()
        && case["verdict"].is_string()
        && case["reasons"].is_array()));
}

#[test]
fn the_table_names_counts_percentages_and_intervals() {
    let (code, stdout, _) = eval(&["--cases", "eval/own.jsonl", "--judge", "rules"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("mismatches caught"), "{stdout}");
    assert!(stdout.contains("genuine orders passed"));
    assert!(stdout.contains("95% CI"));
    for kind in [
        "genuine",
        "quantity",
        "item",
        "variant",
        "price",
        "merchant",
        "injection",
    ] {
        assert!(stdout.contains(&format!("  {kind}")), "{kind}: {stdout}");
    }
}

#[test]
fn bad_invocations_are_one_clear_line() {
    for (args, expected) in [
        (vec!["--judge", "rules"], "--cases FILE is required"),
        (vec!["--cases", "eval/dev.jsonl"], "--judge is required"),
        (
            vec!["--cases", "eval/dev.jsonl", "--judge", "oracle"],
            "unknown judge",
        ),
        (
            vec!["--cases", "nowhere.jsonl", "--judge", "rules"],
            "reading nowhere.jsonl",
        ),
        (vec!["--cases", "Cargo.toml", "--judge", "rules"], "line 1"),
    ] {
        let (code, _, stderr) = eval(&args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
