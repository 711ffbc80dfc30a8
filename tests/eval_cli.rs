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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bedrock_judge_is_evaluated_with_the_prompt_and_cases_hashes_saved() {
    use axum::routing::post;
    // A Converse stand-in that is never sure: every case the rules pass becomes unclear.
    let app = axum::Router::new().route(
        "/model/{model}/converse",
        post(|| async {
            serde_json::json!({"output": {"message": {"role": "assistant", "content": [
                {"text": "{\"verdict\":\"unclear\",\"reasons\":[\"stand-in\"]}"}]}},
                "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1}})
            .to_string()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let saved = tempfile::tempdir().unwrap();
    let save_dir = saved.path().to_str().unwrap().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_hearth"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", &endpoint)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .args([
                "eval",
                "--cases",
                "eval/dev.jsonl",
                "--judge",
                "bedrock",
                "--json",
                "--save",
                &save_dir,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["judge"], "bedrock");
    let dev =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/eval/dev.jsonl")).unwrap();
    assert_eq!(report["cases_sha256"], hearth_core::chain::sha256_hex(&dev));
    assert_eq!(
        report["prompt_sha256"],
        hearth_core::countersign::judge::bedrock::prompt_sha256()
    );
    // Unsure means flagged: every mismatch is caught, and no genuine order passes.
    assert_eq!(report["mismatches_caught"]["count"], 12);
    assert_eq!(report["genuine_passed"]["count"], 0);
    let files: Vec<_> = std::fs::read_dir(saved.path()).unwrap().collect();
    assert_eq!(files.len(), 1);
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap())
            .unwrap();
    assert_eq!(stored["prompt_sha256"], report["prompt_sha256"]);
}
