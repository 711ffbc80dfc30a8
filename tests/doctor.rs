//! `hearth doctor` against a healthy setup, then against the same setup with each check
//! broken in turn: each broken part is named with what to do, the exit status says whether
//! anything failed, and the doctor never writes. With `--aws`, the table, its point-in-time
//! recovery and the secrets on the emulator.

mod common;

use std::path::Path;
use std::process::Command;

use common::process::{Server, free_port};
use hearth_testkit::moto::{Moto, unique_name};
use serde_json::{Value, json};

/// `hearth doctor --json ARGS` in a cleared environment of `env`: its exit code and report.
fn doctor(env: &[(&str, String)], args: &[&str]) -> (i32, Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env_clear()
        .envs(env.iter().map(|(name, value)| (*name, value.as_str())))
        .arg("doctor")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "not one JSON object ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let code = output.status.code().unwrap();
    assert_eq!(report["ok"], code == 0, "{report}");
    (code, report)
}

/// The check named `name`: its status, and its detail and fix as one text.
fn check(report: &Value, name: &str) -> (String, String) {
    let found = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {report}"));
    (
        found["status"].as_str().unwrap().to_owned(),
        format!(
            "{} / {}",
            found["detail"].as_str().unwrap(),
            found["fix"].as_str().unwrap_or_default()
        ),
    )
}

/// Every file in `dir` with its bytes' hash: what "never writes" compares. SQLite's `-shm`
/// file is left out: it is the WAL's shared-memory index, which any reader of the store
/// rebuilds, and holds no data.
fn contents(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .filter(|entry| {
            !entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with("-shm")
        })
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                hearth_core::chain::sha256_hex(std::fs::read(entry.path()).unwrap()),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_healthy_setup_passes_and_each_broken_part_is_named() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    let server = Server::start(&data, &[]);
    let (status, body) = server.rpc(
        &common::process::dev_judge_token(&data),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "record_decision", "arguments": {"household_id": "home", "action": "dim the lights",
            "reason": "because", "inputs": {}, "approver": "Dana"}}}),
    );
    assert_eq!(
        (status, body["result"]["isError"].clone()),
        (200, json!(false)),
        "{body}"
    );
    server.stop();
    let env = vec![("HEARTH_DATA_DIR", data.display().to_string())];

    let before = contents(&data);
    let (code, healthy) = doctor(&env, &[]);
    assert_eq!(code, 0, "{healthy}");
    for name in [
        "settings",
        "store",
        "clock",
        "modes",
        "log key",
        "resource url",
    ] {
        assert_eq!(check(&healthy, name).0, "ok", "{name}: {healthy}");
    }
    assert!(
        check(&healthy, "log key")
            .1
            .contains("all 1 signed log heads verify")
    );
    assert_eq!(check(&healthy, "witnesses").0, "skip");
    assert_eq!(contents(&data), before, "the doctor never writes");

    // A setting that does not parse: nothing else can be checked.
    let mut bad = env.clone();
    bad.push(("HEARTH_ADDR", "my house".into()));
    let (code, report) = doctor(&bad, &[]);
    assert_eq!(code, 1);
    assert_eq!(check(&report, "settings").0, "fail");
    assert!(check(&report, "settings").1.contains("HEARTH_ADDR"));

    // A file others can read.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let key = data.join("log-key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (code, report) = doctor(&env, &[]);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(code, 0, "a warning is not a failure");
        let (status, said) = check(&report, "modes");
        assert_eq!(status, "warn");
        assert!(
            said.contains(&format!("chmod 600 {}", key.display())),
            "{said}"
        );
    }

    // The log key missing, then another key.
    let key = data.join("log-key");
    let aside = parent.path().join("log-key.aside");
    std::fs::rename(&key, &aside).unwrap();
    let (code, report) = doctor(&env, &[]);
    std::fs::rename(&aside, &key).unwrap();
    assert_eq!(code, 1);
    let (status, said) = check(&report, "log key");
    assert_eq!(status, "fail");
    assert!(
        said.contains("holds 1 signed log heads") && said.contains("--new-log-key"),
        "{said}"
    );
    let mut other = env.clone();
    other.push(("HEARTH_LOG_KEY", "a key that signed nothing here".into()));
    let (code, report) = doctor(&other, &[]);
    assert_eq!(code, 1);
    let (status, said) = check(&report, "log key");
    assert_eq!(status, "fail");
    assert!(
        said.contains("1 of the 1 signed log heads")
            && said.contains("HEARTH_LOG_KEY_NAMES_PREVIOUS"),
        "{said}"
    );

    // The resource URL written as a person might type it.
    let mut typed = env.clone();
    typed.push(("MCP_RESOURCE_URL", "HTTP://127.0.0.1:8790/mcp".into()));
    let (code, report) = doctor(&typed, &[]);
    assert_eq!(code, 0);
    let (status, said) = check(&report, "resource url");
    assert_eq!(status, "warn");
    assert!(
        said.contains("MCP_RESOURCE_URL=http://127.0.0.1:8790/mcp"),
        "{said}"
    );

    // A witness that does not answer.
    let log_key = std::fs::read_to_string(&key).unwrap();
    let log_vkey = hearth_core::transparency::LogKeys::new(
        "127.0.0.1",
        &common::config(&[("HEARTH_LOG_KEY", log_key.trim())]).log_key_seeds(),
    )
    .unwrap()
    .published()
    .remove(0)
    .vkey;
    let witness = hearth_core::tlog::cosignature::Cosigner::from_seed("neighbour", &[7; 32])
        .unwrap()
        .vkey();
    let mut witnessed = env.clone();
    witnessed.push((
        "HEARTH_WITNESS_POLICY",
        format!(
            "log {log_vkey}\nwitness neighbour {witness} http://127.0.0.1:{}\nquorum neighbour\n",
            free_port()
        ),
    ));
    let (code, report) = doctor(&witnessed, &[]);
    assert_eq!(code, 1, "{report}");
    let (status, said) = check(&report, "witness");
    assert_eq!(status, "fail");
    assert!(said.contains("neighbour did not answer"), "{said}");

    // A store from somewhere else: a table this release does not know.
    let db = data.join("hearth.db");
    let connection = rusqlite::Connection::open(&db).unwrap();
    connection
        .execute_batch("CREATE TABLE from_the_future (x)")
        .unwrap();
    // The newest record from the future: the clock is behind it.
    connection
        .execute_batch(
            "UPDATE chain_records SET body = json_set(body, '$.recorded_at', '2099-01-01T00:00:00.000Z')",
        )
        .unwrap();
    drop(connection);
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1);
    assert_eq!(check(&report, "store").0, "warn");
    assert!(check(&report, "store").1.contains("from_the_future"));
    let (status, said) = check(&report, "clock");
    assert_eq!(status, "fail");
    assert!(said.contains("behind the newest stored record"), "{said}");

    // No store at all.
    let mut elsewhere = env.clone();
    elsewhere.push((
        "HEARTH_DB",
        parent.path().join("none.db").display().to_string(),
    ));
    let (code, report) = doctor(&elsewhere, &[]);
    assert_eq!(code, 1);
    assert_eq!(check(&report, "store").0, "fail");
    assert!(
        !parent.path().join("none.db").exists(),
        "nothing was created"
    );
}

/// Before the first start of a new installation there is no store and no key yet: the doctor
/// says so and passes.
#[test]
fn a_new_installation_passes_before_its_first_start() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let (code, report) = doctor(&[("HEARTH_DATA_DIR", data.display().to_string())], &[]);
    assert_eq!(code, 0, "{report}");
    let (status, said) = check(&report, "store");
    assert_eq!(status, "skip");
    assert!(said.contains("creates it at its first start"), "{said}");
    assert_eq!(check(&report, "log key").0, "skip");
    assert!(
        std::fs::read_dir(&data).unwrap().next().is_none(),
        "nothing was made"
    );
}

#[tokio::test]
async fn with_aws_it_checks_the_table_its_recovery_and_the_secrets() {
    let moto = Moto::shared();
    let table = unique_name("hearth-doctor");
    let mut env: Vec<(&str, String)> = moto.environment();
    env.push(("HEARTH_TABLE", table.clone()));
    // Without the deployment's URL the log heads cannot be checked.
    let (code, report) = doctor(&env, &["--aws"]);
    assert_eq!(code, 1);
    assert_eq!(check(&report, "resource url").0, "fail");
    assert_eq!(check(&report, "log key").0, "skip");
    env.push(("MCP_RESOURCE_URL", "https://hearth.example/mcp".into()));
    let (code, report) = doctor(&env, &["--aws"]);
    assert_eq!(code, 1);
    assert_eq!(check(&report, "table").0, "fail");
    assert!(check(&report, "table").1.contains(&table));
    assert_eq!(check(&report, "secrets").0, "fail");

    hearth_core::store::dynamodb::DynamoStore::new(moto.dynamodb_client(), table.clone())
        .ensure_table()
        .await
        .unwrap();
    let secret = moto
        .secrets_client()
        .create_secret()
        .name(unique_name("hearth-doctor-secret"))
        .secret_string(
            json!({"MCP_CLIENT_ID": "alexa", "MCP_CLIENT_SECRET": "a client secret",
                   "MCP_JWT_SECRET": "a jwt secret of thirty-two bytes!!",
                   "MCP_JUDGE_TOKEN_HASHES": hearth_core::chain::sha256_hex("t"),
                   "HEARTH_LOG_KEY": "a log key of at least thirty-two characters"})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    env.push(("HEARTH_SECRET_ARN", secret.arn().unwrap().to_owned()));
    let (code, report) = doctor(&env, &["--aws"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(check(&report, "table").0, "ok");
    let (status, said) = check(&report, "backups");
    assert_eq!(
        status, "warn",
        "the emulator's table has no recovery: {said}"
    );
    assert!(check(&report, "secrets").1.contains("read 1 secrets"));
    assert_eq!(check(&report, "log key").0, "ok", "{report}");
}
