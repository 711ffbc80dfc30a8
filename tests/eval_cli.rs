//! `hearth eval` as a person runs it: the table, `--json`, splits, and clear refusals. Of the
//! project's 24 reference development cases, which the rules were written against, every
//! mismatch must be caught; the held-out test split is frozen, byte for byte.

use std::process::Command;

use hearth_testkit::chat_completions::{ChatStandIn, MODEL, Reply};

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

/// SHA-256 of the test split's lines, in file order, each with its newline. The split was
/// written by someone who had not read the rules, committed before the rules were changed,
/// and run once at the final rules; it is never edited: a change here means the held-out
/// figures in the manual (docs/src/measurements.md, "The intent check") no longer describe
/// it.
const TEST_SPLIT_SHA256: &str = "34da9ac7dfafbf5fb0aae6d5330fa45e61164be807a4810eaad0d69d70b64903";

#[test]
fn the_test_split_is_frozen_and_half_genuine() {
    let cases =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/eval/cases.jsonl")).unwrap();
    let test: String = cases
        .lines()
        .filter(|line| line.contains(r#""split": "test""#))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(hearth_core::chain::sha256_hex(&test), TEST_SPLIT_SHA256);
    let lines: Vec<&str> = test.lines().collect();
    assert_eq!(lines.len(), 48);
    let genuine = lines
        .iter()
        .filter(|line| line.contains(r#""kind": "genuine""#))
        .count();
    assert_eq!(genuine * 2, lines.len());
}

#[test]
fn every_reference_mismatch_is_caught_and_two_genuine_orders_are_asked_about() {
    let (code, stdout, _) = eval(&["--split", "dev", "--json"]);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["judge"], "rules", "rules is the default judge");
    assert_eq!(report["split"], "dev");
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 128);
    assert!(cases.iter().all(|case| case["id"].is_string()
        && case["verdict"].is_string()
        && case["codes"].is_array()
        && case["reasons"].is_array()));
    let labels: std::collections::HashMap<String, String> =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/eval/cases.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .map(|case| {
                (
                    case["id"].as_str().unwrap().to_owned(),
                    case["label"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
    // Every reference mismatch is caught. Two genuine orders are asked about, because a word
    // said is not in the listing ("printer" ink for an InkJet cartridge, a "phone" charger
    // for a wall charger): the rules cannot tell a synonym from another item, so they ask.
    let mut asked_about = Vec::new();
    for number in 1..=24 {
        let id = format!("dev-{number:02}");
        let case = cases.iter().find(|case| case["id"] == id.as_str()).unwrap();
        let flagged = case["verdict"] != "match";
        if labels[&id] == "mismatch" {
            assert!(flagged, "{id}: {case}");
        } else if flagged {
            assert_eq!(case["verdict"], "unclear", "{id}: {case}");
            asked_about.push(id);
        }
    }
    assert_eq!(asked_about, ["dev-10", "dev-15"]);
}

#[test]
fn the_table_names_counts_percentages_and_intervals() {
    let (code, stdout, _) = eval(&["--split", "test"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("split: test"), "{stdout}");
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
fn bad_invocations_are_refused_clearly() {
    // Usage errors: exit 2, clap's message naming the flag and what it accepts.
    for (args, expected) in [
        (vec!["--judge"], "a value is required for '--judge <JUDGE>'"),
        (
            vec!["--split", "train"],
            "invalid value 'train' for '--split <SPLIT>'",
        ),
        (
            vec!["--judge", "oracle"],
            "[possible values: rules, bedrock, openai, rules+openai]",
        ),
    ] {
        let (code, _, stderr) = eval(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // Failures: exit 1, one line.
    for (args, expected) in [
        (
            vec!["--cases", "nowhere.jsonl", "--judge", "rules"],
            "reading nowhere.jsonl",
        ),
        (vec!["--cases", "Cargo.toml", "--judge", "rules"], "line 1"),
        // A model judge needs to know where its model is.
        (vec!["--judge", "openai"], "COUNTERSIGN_JUDGE_URL"),
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
                {"text": "{\"verdict\":\"unclear\",\"reasons\":[\"unclear\"]}"}]}},
                "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1}})
            .to_string()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let saved = tempfile::tempdir().unwrap();
    let save_dir = saved.path().to_str().unwrap();
    let report = eval_report(
        &[
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", &endpoint),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
        ],
        &["--judge", "bedrock", "--save", save_dir],
    )
    .await;
    assert_eq!(report["judge"], "bedrock");
    assert_eq!(report["model"], "us.amazon.nova-premier-v1:0");
    let cases =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/eval/cases.jsonl")).unwrap();
    assert_eq!(
        report["cases_sha256"],
        hearth_core::chain::sha256_hex(&cases)
    );
    assert_eq!(report["split"], "dev");
    assert_eq!(
        report["prompt_sha256"],
        hearth_core::countersign::judge::bedrock::prompt_sha256()
    );
    // Unsure means flagged: every mismatch is caught, and no genuine order passes.
    assert_eq!(report["mismatches_caught"]["count"], 64);
    assert_eq!(report["genuine_passed"]["count"], 0);
    let files: Vec<_> = std::fs::read_dir(saved.path()).unwrap().collect();
    assert_eq!(files.len(), 1);
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap())
            .unwrap();
    assert_eq!(stored["prompt_sha256"], report["prompt_sha256"]);
}

/// `hearth eval --split dev --json` with `args`, in an environment of only `env` (kept off
/// the test's runtime threads, which serve the stand-in it asks): the report, after success.
async fn eval_report(env: &[(&str, &str)], args: &[&str]) -> serde_json::Value {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_hearth"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .envs(env)
            .args(["eval", "--split", "dev", "--json"])
            .args(args)
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
    serde_json::from_slice(&output.stdout).unwrap()
}

/// `hearth eval` with a judge on an OpenAI-compatible server (the stand-in), as a household
/// runs it against its own model.
async fn eval_against(base_url: &str, judge: &str) -> serde_json::Value {
    eval_report(
        &[
            ("COUNTERSIGN_JUDGE_URL", base_url),
            ("COUNTERSIGN_JUDGE_MODEL", MODEL),
        ],
        &["--judge", judge],
    )
    .await
}

/// The combined judge over the development split, with a model that says `match` to
/// everything: the model is asked exactly where the rules are unclear, and a rules mismatch
/// stays a mismatch whatever the model says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_match_never_overrides_a_rules_mismatch() {
    let always_match = r#"{"verdict": "match", "reasons": []}"#;
    let stand_in = ChatStandIn::start(Reply::Content(always_match.into())).await;
    let combined = eval_against(&stand_in.base_url, "rules+openai").await;
    assert_eq!(combined["judge"], "rules+openai");
    assert_eq!(combined["model"], MODEL);
    assert_eq!(
        combined["models"]["data"][0]["id"], MODEL,
        "the server's own list"
    );
    assert_eq!(
        combined["prompt_sha256"],
        hearth_core::countersign::judge::model::prompt_sha256()
    );
    let (code, stdout, _) = eval(&["--split", "dev", "--json"]);
    assert_eq!(code, 0);
    let rules: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let verdicts = |report: &serde_json::Value| -> Vec<(String, String)> {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|case| {
                let verdict = case["verdict"].as_str().unwrap().to_owned();
                (case["id"].as_str().unwrap().to_owned(), verdict)
            })
            .collect()
    };
    let mut unclear_to_rules = 0;
    for ((id, by_rules), (same_id, combined_verdict)) in
        verdicts(&rules).into_iter().zip(verdicts(&combined))
    {
        assert_eq!(id, same_id);
        let expected = match by_rules.as_str() {
            "unclear" => {
                unclear_to_rules += 1;
                "match"
            }
            decided => decided,
        };
        assert_eq!(
            combined_verdict, expected,
            "{id}: the rules said {by_rules}"
        );
    }
    assert!(
        unclear_to_rules > 0,
        "the split has cases the rules leave to a model"
    );
    assert_eq!(stand_in.completions().len(), unclear_to_rules);

    // The model alone is asked every case, and (saying match to all) catches nothing.
    let stand_in = ChatStandIn::start(Reply::Content(always_match.into())).await;
    let alone = eval_against(&stand_in.base_url, "openai").await;
    assert_eq!(alone["judge"], "openai");
    assert_eq!(stand_in.completions().len(), 128);
    assert_eq!(alone["mismatches_caught"]["count"], 0);
    assert_eq!(alone["genuine_passed"]["count"], 64);
}

/// A server that fails passes nothing: every case is flagged, and a server that cannot be
/// reached is named as such in the report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_server_passes_nothing_and_is_recorded() {
    let stand_in = ChatStandIn::start(Reply::Status(503, "{}".into())).await;
    let report = eval_against(&stand_in.base_url, "openai").await;
    assert_eq!(report["genuine_passed"]["count"], 0);
    assert_eq!(report["mismatches_caught"]["count"], 64);
    assert!(report["models"]["data"].is_array(), "{}", report["models"]);

    // Nothing listens there: the report says so instead of a list.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let report = eval_against(&nowhere, "openai").await;
    assert_eq!(
        report["models"],
        serde_json::json!({"error": "the server could not be reached"})
    );
    assert_eq!(report["genuine_passed"]["count"], 0);
}
