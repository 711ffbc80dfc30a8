//! The local server never starts silently wrong, in the situations a newcomer met (issue 45):
//! a store restored without its log key, heads signed by a key that was dropped, `hearth
//! admin` pointed at a store or credentials that are not there, and files anyone could read
//! under a permissive umask.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::process::{Server, dev_judge_token as judge_token, free_port};
use serde_json::{Value, json};

/// One URL for every server of a test, whatever port each listens on: household tokens name it
/// as their audience.
const RESOURCE: &str = "http://127.0.0.1:8790/mcp";

fn at_resource() -> Vec<(&'static str, String)> {
    vec![("MCP_RESOURCE_URL", RESOURCE.to_owned())]
}

/// Records a decision for the household label `household` with the judge token; returns the
/// stored record (`structuredContent`).
fn record(server: &Server, token: &str, household: &str, action: &str) -> Value {
    let (status, body) = server.rpc(
        token,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "record_decision",
            "arguments": {"household_id": household, "action": action, "reason": "because",
                          "inputs": {}, "approver": "Dana"}}}),
    );
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["result"]["isError"], true, "{body}");
    body["result"]["structuredContent"].clone()
}

/// Runs `hearth serve` in `data` with `args` and `vars`, expecting it to refuse to start: its
/// exit code and what it printed on stderr. Fails if it is still running after 20 s.
fn refused_start(data: &Path, args: &[&str], vars: &[(&str, String)]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env_clear()
        .env("HEARTH_ADDR", format!("127.0.0.1:{}", free_port()))
        .env("HEARTH_DATA_DIR", data)
        .env("HEARTH_LOG_FORMAT", "text")
        .envs(vars.iter().map(|(name, value)| (*name, value.as_str())))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the server started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.stdout.is_empty(),
        "a server that does not start prints no credentials: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// `hearth admin --data-dir DATA ARGS --json` for the servers at [`RESOURCE`], which must
/// succeed: its one JSON object.
fn admin_json(data: &Path, args: &[&str]) -> Value {
    // The servers' URL, which a token's audience must be.
    let (code, answer) =
        common::process::admin(data, &[("MCP_RESOURCE_URL", RESOURCE.to_owned())], args);
    assert_eq!(code, 0, "{args:?}: {answer}");
    answer
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_store_restored_without_its_log_key_is_refused_until_new_log_key_starts_its_logs_anew() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &at_resource());
    let token = judge_token(data.path());
    record(&server, &token, "home", "dim the lights");
    // A household account's chain too, written with its own token.
    let household = admin_json(data.path(), &["household", "create", "Home"])["household_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let household_token = admin_json(data.path(), &["token", &household])["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    record(&server, &household_token, &household, "open the garage");
    server.stop();
    // Restored from a copy that left the key behind.
    let key_file = data.path().join("log-key");
    std::fs::remove_file(&key_file).unwrap();

    let (code, stderr) = refused_start(data.path(), &[], &at_resource());
    assert_eq!(code, 1, "{stderr}");
    for expected in [
        "holds 2 signed log heads",
        &format!("{} does not exist", key_file.display()),
        "HEARTH_LOG_KEY is not set",
        "hearth admin restore",
        "hearth serve --new-log-key",
    ] {
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
    }
    assert!(!key_file.exists(), "a refused start makes no key");

    // --new-log-key: a new key, and the log started anew with a recorded reset.
    let server = Server::start_serving(data.path(), &["--new-log-key"], &at_resource());
    assert!(key_file.exists());
    let next = record(&server, &token, "home", "open the blinds");
    let proof = next["tlog_proof"].as_str().unwrap();
    assert!(
        proof.starts_with("c2sp.org/tlog-proof@v1\nindex 1\n"),
        "the reset is the new log's first entry: {proof}"
    );
    let (_, found) = server.rpc(
        &token,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "explain_why", "arguments": {"household_id": "home",
                                                  "action": "start a new decision log"}}}),
    );
    assert_ne!(found["result"]["isError"], true, "{found}");
    let household_next = record(&server, &household_token, &household, "close the garage");
    assert!(
        household_next["tlog_proof"]
            .as_str()
            .unwrap()
            .starts_with("c2sp.org/tlog-proof@v1\nindex 1\n"),
        "the household's log was started anew too"
    );
    let log = server.stop();
    assert!(log.contains("were started anew"), "{log}");
    assert!(log.contains("\"logs\":2"), "both logs: {log}");

    // From then on it starts as any server does.
    let server = Server::start(data.path(), &at_resource());
    record(&server, &token, "home", "close the blinds");
}

/// Heads signed by a key that is no longer configured: the server refuses when more than
/// half verify under no configured key or identity, names the count and the setting, and
/// starts (with a warning) when fewer do.
#[test]
fn heads_signed_by_a_dropped_key_are_refused_when_they_are_more_than_half() {
    let data = tempfile::tempdir().unwrap();
    let first = || ("HEARTH_LOG_KEY", "the first log key".to_owned());
    let first_vkey = hearth_core::transparency::LogKeys::new(
        "127.0.0.1",
        &common::config(&[("HEARTH_LOG_KEY", "the first log key")]).log_key_seeds(),
    )
    .unwrap()
    .published()
    .remove(0)
    .vkey;
    let second = [
        ("HEARTH_LOG_KEY", "the second log key".to_owned()),
        ("HEARTH_LOG_KEY_VERSION", "2".to_owned()),
    ];
    let server = Server::start(data.path(), &[first()]);
    let token = judge_token(data.path());
    record(&server, &token, "one", "water the plants");
    server.stop();
    // A new key, with the first one kept as an identity that verifies but no longer signs:
    // "two" and "three" are signed by the second key alone.
    let mut verifying_the_first = second.to_vec();
    verifying_the_first.push(("HEARTH_LOG_KEY_NAMES_PREVIOUS", first_vkey));
    let server = Server::start(data.path(), &verifying_the_first);
    record(&server, &token, "two", "feed the cat");
    record(&server, &token, "three", "feed the cat");
    server.stop();

    // The first identity dropped: one head of three verifies under nothing configured.
    let server = Server::start(data.path(), &second);
    let log = server.stop();
    assert!(
        log.contains("some signed log heads verify under no configured log key"),
        "{log}"
    );

    // Back to the first key alone: two of three verify under nothing it knows.
    let (code, stderr) = refused_start(data.path(), &[], &[first()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("2 of the 3 signed log heads in the SQLite store"),
        "{stderr}"
    );
    assert!(
        stderr.contains("HEARTH_LOG_KEY_NAMES_PREVIOUS") && stderr.contains("--new-log-key"),
        "{stderr}"
    );
    // A key that signed none of them.
    let (code, stderr) = refused_start(
        data.path(),
        &[],
        &[("HEARTH_LOG_KEY", "somebody else's key".to_owned())],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("None of the 3 signed log heads"),
        "{stderr}"
    );
    assert!(stderr.contains("in HEARTH_LOG_KEY or"), "{stderr}");
}

/// `hearth admin` works on the server's store or says where it looked: it never creates a
/// store, credentials or a log key, wherever it is run from.
#[test]
fn admin_pointed_at_what_is_not_there_names_the_path_and_creates_nothing() {
    let data = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let admin = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .env_clear()
            .current_dir(elsewhere.path())
            .arg("admin")
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        (output.status.code().unwrap(), answer)
    };
    let missing = data.path().join("nothing-here");
    let (code, answer) = admin(&["household", "list", "--data-dir", missing.to_str().unwrap()]);
    assert_eq!(code, 1, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains(&format!(
            "there is no SQLite store at {}",
            missing.join("hearth.db").display()
        )),
        "{error}"
    );
    assert!(!missing.exists(), "no folder was made");

    let server = Server::start(data.path(), &[]);
    server.stop();
    let db = data.path().join("hearth.db");
    let (code, created) = admin(&["household", "create", "Home", "--db", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{created}");
    let household = created["household_id"].as_str().unwrap();
    // The newcomer's mistake: the server's store, but the credentials of another folder.
    let (code, answer) = admin(&["token", household, "--db", db.to_str().unwrap()]);
    assert_eq!(code, 1, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains(".hearth/dev-credentials.json does not exist")
            && error.contains("--data-dir"),
        "{error}"
    );
    let (code, answer) = admin(&["log-key", "--db", db.to_str().unwrap()]);
    assert_eq!(code, 1, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains(".hearth/log-key"),
        "{answer}"
    );
    assert!(
        names(elsewhere.path()).is_empty(),
        "nothing was created where admin ran: {:?}",
        names(elsewhere.path())
    );

    // Pointed at the server's folder, the same commands work.
    let folder = data.path().to_str().unwrap();
    let (code, token) = admin(&["token", household, "--data-dir", folder]);
    assert_eq!(code, 0, "{token}");
    let (code, key) = admin(&["log-key", "--data-dir", folder]);
    assert_eq!(code, 0, "{key}");
    assert!(
        key["vkey"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1/hearth-log/v1+")
    );
}

/// Under `umask 000`, the data folder is 0700 and every file the server writes is 0600.
#[cfg(unix)]
#[test]
fn the_data_folder_and_its_files_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    let port = free_port();
    let mut child = Command::new("sh")
        .args([
            "-c",
            "umask 000; exec \"$0\" serve",
            env!("CARGO_BIN_EXE_hearth"),
        ])
        .env_clear()
        .env("HEARTH_ADDR", format!("127.0.0.1:{port}"))
        .env("HEARTH_DATA_DIR", &data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::process::wait_until_listening(port, "hearth");
    let token = judge_token(&data);
    let (status, _) = common::process::http(
        port,
        "POST",
        "/mcp",
        &[
            ("Authorization", &format!("Bearer {token}")),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "record_decision",
            "arguments": {"household_id": "home", "action": "a", "reason": "b", "inputs": {},
                          "approver": "Dana"}}})
        .to_string(),
    );
    assert_eq!(status, 200);
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let files = names(&data);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(mode(&data), 0o700);
    for expected in [
        "dev-credentials.json",
        "hearth.db",
        "hearth.db-shm",
        "hearth.db-wal",
        "log-key",
    ] {
        assert!(
            files.iter().any(|name| name == expected),
            "{expected} in {files:?}"
        );
    }
    for name in files {
        assert_eq!(mode(&data.join(&name)), 0o600, "{name}");
    }
}
