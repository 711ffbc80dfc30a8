//! `hearth admin backup` and `restore`: a backup taken while the server writes restores into
//! a fresh folder where every chain and log verifies; a restore writes only into an empty
//! folder, and nothing at all when the backup's key does not verify its logs.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::process::{Server, dev_judge_token as judge_token};
use serde_json::{Value, json};

const HOUSEHOLDS: [&str; 3] = ["north", "south", "west"];

/// `hearth admin --data-dir DATA ARGS --json`: its exit code and its one JSON object.
fn admin(data: &Path, args: &[&str]) -> (i32, Value) {
    common::process::admin(data, &[], args)
}

fn call(server: &Server, token: &str, tool: &str, arguments: Value) -> Value {
    let (status, body) = server.rpc(
        token,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}),
    );
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["result"]["isError"], true, "{tool}: {body}");
    body["result"]["structuredContent"].clone()
}

fn record(server: &Server, token: &str, household: &str, action: &str) -> Value {
    call(
        server,
        token,
        "record_decision",
        json!({"household_id": household, "action": action, "reason": "because",
               "inputs": {}, "approver": "Dana"}),
    )
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_backup_taken_while_the_server_writes_restores_into_a_fresh_folder_that_verifies() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    let server = Arc::new(Server::start(&data, &[]));
    let token = judge_token(&data);

    // A writer appends to three households' chains for as long as the backup takes.
    let written = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (server, token, written, stop) =
            (server.clone(), token.clone(), written.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let n = written.load(Ordering::Relaxed);
                record(&server, &token, HOUSEHOLDS[n % 3], &format!("step {n}"));
                written.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let started = Instant::now();
    while written.load(Ordering::Relaxed) < 6 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the writer stalled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let file = parent.path().join("hearth.backup");
    let before = written.load(Ordering::Relaxed);
    let (code, backed_up) = admin(&data, &["backup", file.to_str().unwrap()]);
    while written.load(Ordering::Relaxed) < before + 3 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the writer stalled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(code, 0, "{backed_up}");
    assert_eq!(backed_up["signed_log_heads"], 3, "{backed_up}");
    assert_eq!(backed_up["log_key"], true);
    assert_eq!(backed_up["dev_credentials"], true);
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);
    let (code, again) = admin(&data, &["backup", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        again["error"].as_str().unwrap().contains("exists already"),
        "{again}"
    );
    Arc::into_inner(server).unwrap().stop();

    // Without --yes, nothing.
    let fresh = parent.path().join("restored");
    let (code, refused) = admin(&fresh, &["restore", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{refused}");
    assert!(!fresh.exists());
    let (code, restored) = admin(&fresh, &["restore", file.to_str().unwrap(), "--yes"]);
    assert_eq!(code, 0, "{restored}");
    assert_eq!(restored["signed_log_heads"], 3);
    assert_eq!(
        (
            restored["log_key"].clone(),
            restored["dev_credentials"].clone()
        ),
        (json!(true), json!(true))
    );
    #[cfg(unix)]
    {
        assert_eq!(mode(&fresh), 0o700);
        for name in ["hearth.db", "log-key", "dev-credentials.json"] {
            assert_eq!(mode(&fresh.join(name)), 0o600, "{name}");
        }
    }
    let (code, twice) = admin(&fresh, &["restore", file.to_str().unwrap(), "--yes"]);
    assert_eq!(code, 1);
    assert!(
        twice["error"].as_str().unwrap().contains("is not empty"),
        "{twice}"
    );

    // The restored folder starts (every head verifies under its key), and every chain takes
    // its next entry and hands out its verified trace.
    let server = Server::start(&fresh, &[]);
    assert_eq!(judge_token(&fresh), token, "the same credentials");
    for household in HOUSEHOLDS {
        let next = record(&server, &token, household, "after the restore");
        let trace = call(
            &server,
            &token,
            "get_trace",
            json!({"household_id": household, "trace_id": next["trace_id"]}),
        );
        assert!(trace["records"].as_array().unwrap().len() >= 2, "{trace}");
    }
}

/// A backup whose log key does not verify the heads it holds restores nothing, and a store on
/// DynamoDB is pointed to point-in-time recovery.
#[test]
fn a_backup_whose_key_does_not_verify_its_logs_restores_nothing() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    let server = Server::start(&data, &[]);
    record(&server, &judge_token(&data), "north", "dim the lights");
    server.stop();
    let file = parent.path().join("hearth.backup");
    let (code, written) = admin(&data, &["backup", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{written}");
    let connection = rusqlite::Connection::open(&file).unwrap();
    connection
        .execute(
            "UPDATE hearth_backup SET content = ?1 WHERE name = 'log-key'",
            [b"another key entirely, long enough to be one".as_slice()],
        )
        .unwrap();
    drop(connection);
    let fresh = parent.path().join("restored");
    let (code, refused) = admin(&fresh, &["restore", file.to_str().unwrap(), "--yes"]);
    assert_eq!(code, 1, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("1 of the 1 signed log heads"),
        "{refused}"
    );
    assert!(!fresh.exists(), "nothing was written");

    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env_clear()
        .args(["admin", "backup", "x.backup", "--json"])
        .env("HEARTH_TABLE", "hearth")
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("point-in-time recovery"),
        "{answer}"
    );
}

/// A restore checks the backup's key under the key names the heads were signed with, so it
/// need not be run with the server's `MCP_RESOURCE_URL` (whose host names the key).
#[test]
fn a_restore_checks_the_key_under_the_names_the_heads_carry() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    let public = [
        ("MCP_RESOURCE_URL", "https://hearth.example/mcp".to_owned()),
        ("HEARTH_ALLOWED_HOSTS", "127.0.0.1".to_owned()),
    ];
    let server = Server::start(&data, &public);
    let record_one = record(&server, &judge_token(&data), "north", "dim the lights");
    assert!(
        record_one["tlog_proof"]
            .as_str()
            .unwrap()
            .contains("hearth.example/hearth/"),
        "signed under the public host: {record_one}"
    );
    server.stop();
    let file = parent.path().join("hearth.backup");
    let (code, written) = admin(&data, &["backup", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{written}");
    // Restored by an operator whose shell has no MCP_RESOURCE_URL.
    let fresh = parent.path().join("restored");
    let (code, restored) = admin(&fresh, &["restore", file.to_str().unwrap(), "--yes"]);
    assert_eq!(code, 0, "{restored}");
    assert_eq!(restored["signed_log_heads"], 1);
    // The restored store has no trace of the table that carried the key.
    let key = std::fs::read_to_string(fresh.join("log-key")).unwrap();
    let store = std::fs::read(fresh.join("hearth.db")).unwrap();
    assert!(
        !store
            .windows(key.trim().len())
            .any(|window| window == key.trim().as_bytes()),
        "the log key is not left in the store's free pages"
    );
    // And the server, with its URL, starts on it.
    let server = Server::start(&fresh, &public);
    record(&server, &judge_token(&fresh), "north", "open the blinds");
}
