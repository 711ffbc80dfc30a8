//! The command line as a person meets it: `--help` on every command exits 0, `--version`
//! names the release, usage errors exit 2 (as JSON when `--json` was asked for), and the
//! manual's CLI page is exactly what the definitions generate.

use std::process::{Command, Output};

fn hearth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(args)
        // A fresh, empty data directory: nothing here may touch a store.
        .env(
            "HEARTH_DATA_DIR",
            std::env::temp_dir().join("hearth-cli-test-unused"),
        )
        .env_remove("HEARTH_LOG_FORMAT")
        .output()
        .expect("the hearth binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every command path the reference documents (`hearth`, `hearth admin household create`…).
fn command_paths() -> Vec<Vec<String>> {
    let page = text(&hearth(&["reference", "cli"]).stdout);
    page.lines()
        .filter_map(|line| line.strip_prefix("## `")?.strip_suffix('`'))
        .map(|path| path.split(' ').skip(1).map(str::to_owned).collect())
        .collect()
}

#[test]
fn the_manuals_generated_reference_pages_are_what_the_code_generates() {
    let update = "run `cargo run -q -- reference --update` from the project root";
    for (page, table) in [
        ("cli", None),
        ("configuration", None),
        ("routes", Some("routes")),
        ("tools", Some("tools")),
        ("dynamodb", Some("items")),
    ] {
        let generated = hearth(&["reference", page]);
        assert_eq!(generated.status.code(), Some(0));
        let generated = text(&generated.stdout);
        let path = format!("docs/src/reference/{page}.md");
        let kept =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&path))
                .unwrap();
        let expected = match table {
            None => generated,
            Some(name) => hearth_core::config::reference::splice(&kept, name, &generated)
                .expect("the page marks its generated table"),
        };
        assert!(expected == kept, "{path} is out of date: {update}");
    }
}

#[test]
fn every_command_has_help_and_refuses_what_it_does_not_know_with_exit_2() {
    let paths = command_paths();
    assert!(paths.len() >= 25, "{} commands documented", paths.len());
    for path in &paths {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let help = hearth(&[&words[..], &["--help"]].concat());
        assert_eq!(help.status.code(), Some(0), "{words:?} --help");
        assert!(
            text(&help.stdout).contains("Usage: hearth"),
            "{words:?}: {}",
            text(&help.stdout)
        );
        let unknown = hearth(&[&words[..], &["--no-such-flag"]].concat());
        assert_eq!(unknown.status.code(), Some(2), "{words:?} --no-such-flag");
        assert!(text(&unknown.stderr).contains("--no-such-flag"));
    }
}

#[test]
fn version_and_usage_errors() {
    // The build's commit, as Git names the checkout the tests run in (CI runs a clone).
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| text(&output.stdout).trim().to_owned());
    let commit = head.as_deref().unwrap_or("unknown");
    for flag in ["--version", "-V"] {
        let version = hearth(&[flag]);
        assert_eq!(version.status.code(), Some(0));
        let version = text(&version.stdout);
        let lines: Vec<&str> = version.lines().collect();
        assert_eq!(lines.len(), 5, "{version}");
        assert_eq!(lines[0], format!("hearth {}", env!("CARGO_PKG_VERSION")));
        assert_eq!(lines[1], format!("commit: {commit}"));
        assert!(
            ["dirty: yes", "dirty: no", "dirty: unknown"].contains(&lines[2]),
            "{version}"
        );
        let date = lines[3].strip_prefix("date: ").unwrap();
        assert!(
            date == "unknown"
                || (date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-'),
            "{version}"
        );
        assert_eq!(
            lines[4], "features: aws on, mimalloc on, fuzzing off",
            "a product build"
        );
    }
    let json = hearth(&["--version", "--json"]);
    assert_eq!(json.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(json["commit"], commit);
    assert_eq!(json["features"]["fuzzing"], false);
    if head.is_some() {
        let date = Command::new("git")
            .args(["log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%d"])
            .env("TZ", "UTC")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(
            json["date"],
            text(&date.stdout).trim(),
            "the commit's date, never the clock's"
        );
    }
    for args in [
        &["frobnicate"][..],
        &["admin"],
        &["admin", "token"],
        &["admin", "token", "hh-1", "--days", "91"],
        &["assistant", "hello"],
        &["witness", "trust", "not-a-vkey"],
        &["eval", "--judge", "oracle"],
    ] {
        let run = hearth(args);
        assert_eq!(
            run.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&run.stderr)
        );
        // An error names what is wrong; a command missing its subcommand shows its help.
        let stderr = text(&run.stderr);
        assert!(
            stderr.starts_with("error: ") || stderr.contains("Usage: hearth"),
            "{args:?}: {stderr}"
        );
    }
    // Asked for JSON, a usage error is one JSON object on stdout, naming what is wrong.
    let run = hearth(&["admin", "token", "--json"]);
    assert_eq!(run.status.code(), Some(2));
    let answer: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        answer["error"],
        "the following required arguments were not provided: <HOUSEHOLD>"
    );
    assert!(
        answer["usage"]
            .as_str()
            .unwrap()
            .starts_with("Usage: hearth admin token")
    );
}

/// Every command that takes `--json`, given a bad argument, answers with exactly one JSON
/// object naming what is wrong (exit 2); so does a command that fails after parsing (exit 1).
#[test]
fn every_json_command_answers_a_bad_argument_with_one_object() {
    let mut walked = 0;
    for path in command_paths() {
        let mut help_args: Vec<&str> = path.iter().map(String::as_str).collect();
        help_args.push("--help");
        let help = text(&hearth(&help_args).stdout);
        if !help.contains("--json") {
            continue;
        }
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.extend(["--json", "--no-such-flag"]);
        let run = hearth(&args);
        assert_eq!(
            run.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&run.stderr)
        );
        let stdout = text(&run.stdout);
        let answer: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|error| panic!("{args:?}: not one JSON value ({error}): {stdout:?}"));
        assert!(
            answer["error"]
                .as_str()
                .is_some_and(|error| error.contains("--no-such-flag")),
            "{args:?}: {answer}"
        );
        walked += 1;
    }
    assert!(walked >= 30, "only {walked} commands take --json");
    // A failure after parsing: eval's missing cases file.
    let run = hearth(&["eval", "--cases", "nowhere.jsonl", "--json"]);
    assert_eq!(run.status.code(), Some(1));
    let answer: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .starts_with("reading nowhere.jsonl"),
        "{answer}"
    );
}

#[test]
fn destroying_commands_do_nothing_without_yes() {
    for (args, says) in [
        (
            &["admin", "household", "delete", "hh-1", "--json"][..],
            "its decisions, its ledger and its logs",
        ),
        (
            &["admin", "log", "reset", "hh-1", "--json"],
            "Run it again with --yes",
        ),
    ] {
        let run = hearth(args);
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        let answer: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert!(answer["error"].as_str().unwrap().contains(says), "{answer}");
    }
}

#[test]
fn serve_refuses_an_address_others_reach_without_its_public_url() {
    let run = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["serve", "--addr", "0.0.0.0:0"])
        .env_remove("MCP_RESOURCE_URL")
        .env(
            "HEARTH_DATA_DIR",
            std::env::temp_dir().join("hearth-cli-test-unused"),
        )
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("MCP_RESOURCE_URL") && stderr.contains("0.0.0.0"),
        "{stderr}"
    );
}

/// The manual's bad-input table names, for each kind of bad input, the tests that pin it: each
/// named test exists in the file named, so the table cannot point at a test that is gone.
#[test]
fn every_test_the_bad_input_table_names_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/src/reference/bad-input.md")).unwrap();
    let mut checked = 0;
    for row in page.lines().filter(|line| line.starts_with("| ")) {
        let Some(cell) = row.trim_end_matches('|').rsplit(" | ").next() else {
            continue;
        };
        // "`tests/a.rs` `name`, `name`; `shared/tests/b.rs` `name`": a file, then its tests.
        let mut file: Option<String> = None;
        for quoted in cell.split('`').skip(1).step_by(2) {
            if quoted.ends_with(".rs") {
                file = Some(
                    std::fs::read_to_string(root.join(quoted)).unwrap_or_else(|_| {
                        panic!("the bad-input table names {quoted}, which does not exist")
                    }),
                );
            } else if let Some(source) = &file
                && quoted
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                assert!(
                    source.contains(&format!("fn {quoted}(")),
                    "the bad-input table names test {quoted}, which its file does not hold"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} tests named");
}

/// `hearth package-files DIR`: what the packages install beside the binary, from the same
/// definitions as `--help`: a man page for `hearth` and each visible command, the three shells'
/// completions, and the settings file.
#[test]
fn package_files_are_a_man_page_per_command_completions_and_the_settings_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = hearth(&["package-files", dir.path().to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let mut pages: Vec<String> = std::fs::read_dir(dir.path().join("man"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    let mut expected: Vec<String> = command_paths()
        .into_iter()
        .filter(|path| path.len() <= 1)
        .map(|path| match path.first() {
            None => "hearth.1".to_owned(),
            Some(command) => format!("hearth-{command}.1"),
        })
        .collect();
    expected.sort();
    assert_eq!(pages, expected);
    let doctor = std::fs::read_to_string(dir.path().join("man/hearth-doctor.1")).unwrap();
    assert!(doctor.starts_with(".ie"), "roff: {}", &doctor[..40]);
    assert!(
        doctor.contains("hearth doctor"),
        "the page names the whole command"
    );
    assert!(doctor.contains("\\-\\-aws"));
    for (file, says) in [
        ("completions/hearth.bash", "complete -F"),
        ("completions/_hearth", "#compdef hearth"),
        ("completions/hearth.fish", "complete -c hearth"),
        ("hearth.env", "\n#MCP_RESOURCE_URL=\n"),
    ] {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        assert!(text.contains(says), "{file}: {says:?}");
    }
}
