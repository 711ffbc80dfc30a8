//! `hearth admin` as an operator runs it: every command, its `--json` object, its exit status
//! (0 success, 1 failure, 2 usage), a store that does not exist, and policies that name another
//! household. Each `--json` answer must be exactly one JSON object.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use hearth_core::auth::{Caller, JwtKeys};
use hearth_core::clock::SystemClock;
use hearth_core::countersign::household::built_in_policy;
use hearth_core::secret::Secret;
use hearth_core::store::sqlite::SqliteStore;
use hearth_core::why::WhyService;
use hearth_core::why::record::NewDecision;
use hearth_testkit::moto::{Moto, unique_name};
use serde_json::{Value, json};

const JWT_SECRET: &str = "admin-cli-test-signing-key-of-32-bytes";
const RESOURCE: &str = "http://127.0.0.1:8790/mcp";

/// What one run printed.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The `error` of the one JSON object printed.
    fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_default().to_owned()
    }

    /// The one JSON object printed (panics unless stdout is exactly one object).
    fn json(&self) -> Value {
        let value: Value = serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("not one JSON value ({error}): {:?}", self.stdout));
        assert!(value.is_object(), "{value}");
        value
    }
}

/// The settings of a local operator: the SQLite file under `dir`, and the server's key and URL.
fn local(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("HEARTH_DATA_DIR", dir.display().to_string()),
        ("MCP_JWT_SECRET", JWT_SECRET.into()),
        ("MCP_RESOURCE_URL", RESOURCE.into()),
    ]
}

fn admin(env: &[(&str, String)], args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("admin")
        .args(args);
    for name in [
        "HEARTH_TABLE",
        "HEARTH_DB",
        "HEARTH_SECRET_ARN",
        "MCP_CLIENT_ID",
        "MCP_JUDGE_TOKEN_HASHES",
    ] {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("run hearth admin");
    Run {
        code: output.status.code().expect("an exit code"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn write_json(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path.display().to_string()
}

/// A store the server has already created, with the log key it made beside it, as an
/// operator finds them.
fn existing_store(dir: &Path) -> Arc<SqliteStore> {
    use hearth_core::auth::dev_credentials::{create_log_key, read_log_key};
    let store = Arc::new(SqliteStore::open(&dir.join("hearth.db")).unwrap());
    if read_log_key(dir).unwrap().is_none() {
        create_log_key(dir).unwrap();
    }
    store
}

#[test]
fn every_command_answers_one_json_object_with_its_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    existing_store(dir.path());
    let env = local(dir.path());
    let run = |args: &[&str]| admin(&env, args);

    let created = run(&["household", "create", "The Adams", "--json"]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let created = created.json();
    assert_eq!(keys(&created), ["household_id", "name"]);
    assert_eq!(created["name"], "The Adams");
    let id = created["household_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("hh-") && id.len() == 35, "{id}");

    let listed = run(&["household", "list", "--json"]).json();
    assert_eq!(
        listed,
        json!({"households": [{"household_id": id, "name": "The Adams", "linked": false}]})
    );
    let shown = run(&["household", "show", &id, "--json"]).json();
    assert_eq!(
        keys(&shown),
        ["device_keys", "household_id", "linked", "name", "policy"]
    );
    assert_eq!(shown["policy"], Value::Null, "no rules until they are set");

    // A policy may leave its id out, or name this household; another household's is refused.
    let mut policy = built_in_policy();
    policy["household_id"] = id.clone().into();
    policy["name"] = "Adams Family".into();
    let file = write_json(dir.path(), "policy.json", &policy);
    let set = run(&["household", "set-policy", &id, &file, "--json"]);
    assert_eq!(set.code, 0, "{}", set.stdout);
    let set = set.json();
    assert_eq!(keys(&set), ["household_id", "policy"]);
    assert_eq!(set["policy"]["household_id"], id.as_str());
    assert_eq!(
        run(&["household", "show", &id, "--json"]).json()["name"],
        "Adams Family",
        "the policy's name is the display name"
    );
    let mismatched = write_json(dir.path(), "other.json", &built_in_policy());
    let refused = run(&["household", "set-policy", &id, &mismatched, "--json"]);
    assert_eq!(refused.code, 1);
    let error = refused.error();
    assert!(error.contains("does not match household"), "{error}");
    assert_eq!(
        run(&["household", "show", &id, "--json"]).json()["policy"]["name"],
        "Adams Family",
        "a refused policy changes nothing"
    );
    let mut unnamed = built_in_policy();
    unnamed.as_object_mut().unwrap().remove("name");
    let unnamed = write_json(dir.path(), "unnamed.json", &unnamed);
    let refused = run(&[
        "household",
        "create",
        "Bakers",
        "--policy",
        &unnamed,
        "--json",
    ]);
    assert_eq!(refused.code, 1);
    assert!(refused.error().contains("does not match household"));
    let renamed = run(&[
        "household",
        "create",
        "Bakers",
        "--policy",
        &mismatched,
        "--json",
    ]);
    assert_eq!(renamed.code, 1);
    let error = renamed.error();
    assert!(error.contains("names the household"), "{error}");
    assert_eq!(
        run(&["household", "list", "--json"]).json()["households"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "refused creations create nothing"
    );
    let mut invalid = policy.clone();
    invalid.as_object_mut().unwrap().remove("household_id");
    invalid["guardians"] = json!(["mia"]);
    let invalid = write_json(dir.path(), "invalid.json", &invalid);
    let refused = run(&["household", "set-policy", &id, &invalid, "--json"]);
    assert_eq!(refused.code, 1);
    assert!(refused.error().contains("is a child"));

    // Device keys: the key is printed once, at creation, and never listed.
    let added = run(&["device-key", "add", &id, "--json"]).json();
    assert_eq!(keys(&added), ["key", "key_id"]);
    let key = added["key"].as_str().unwrap();
    assert_eq!(key.len(), 64);
    let key_id = added["key_id"].as_str().unwrap().to_owned();
    let listed = run(&["device-key", "list", &id, "--json"]);
    assert!(
        !listed.stdout.contains(key),
        "a listing never shows the key"
    );
    let listed = listed.json();
    assert_eq!(keys(&listed["device_keys"][0]), ["created_at", "key_id"]);
    let shown = run(&["household", "show", &id, "--json"]);
    assert!(!shown.stdout.contains(key));
    assert_eq!(shown.json()["device_keys"][0]["key_id"], key_id.as_str());
    let revoked = run(&["device-key", "revoke", &id, &key_id, "--json"]).json();
    assert_eq!(revoked, json!({"revoked": key_id}));
    let again = run(&["device-key", "revoke", &id, &key_id, "--json"]);
    assert_eq!(again.code, 1, "revoking twice is a failure");
    assert!(again.error().contains("no device key"));

    // Tokens: at most 90 days, signed for this server, naming the household.
    let minted = run(&["token", &id, "--days", "90", "--json"]);
    assert_eq!(minted.code, 0, "{}", minted.stdout);
    let minted = minted.json();
    assert_eq!(keys(&minted), ["access_token", "expires_in"]);
    assert_eq!(minted["expires_in"], 90 * 86_400);
    let verified = JwtKeys::new(&Secret::new(JWT_SECRET), "http://127.0.0.1:8790", RESOURCE)
        .unwrap()
        .verify(minted["access_token"].as_str().unwrap())
        .unwrap();
    assert_eq!(verified.subject, id);
    assert_eq!(verified.generation, Some(0));
    for days in ["91", "0", "ninety"] {
        let refused = run(&["token", &id, "--days", days, "--json"]);
        assert_eq!(refused.code, 2, "--days {days}");
        assert!(refused.json()["usage"].is_string());
    }
    assert!(run(&["household", "list", "--json"]).json()["households"][0]["linked"] == true);

    // Link codes: shown once, with their expiry; an unknown household has none.
    let linking = run(&["link-code", &id, "--json"]);
    assert_eq!(linking.code, 0, "{}", linking.stdout);
    let linking = linking.json();
    assert_eq!(keys(&linking), ["code", "expires_at"]);
    let code = linking["code"].as_str().unwrap();
    assert!(
        code.len() == 14 && code.split('-').all(|group| group.len() == 4),
        "{code}"
    );
    assert!(linking["expires_at"].as_str().unwrap().ends_with('Z'));
    let unknown = run(&["link-code", "hh-00000000000000000000000000000000", "--json"]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.error().contains("there is no household"));

    // The log key: the same verifier key every time, for this server's host.
    let log_key = run(&["log-key", "--json"]);
    assert_eq!(log_key.code, 0, "{}", log_key.stdout);
    let log_key = log_key.json();
    assert_eq!(keys(&log_key), ["public_key", "vkey"]);
    let vkey = log_key["vkey"].as_str().unwrap();
    assert!(vkey.starts_with("127.0.0.1/hearth-log/v1+"), "{vkey}");
    assert!(hearth_core::tlog::note::NoteVerifier::parse(vkey).is_ok());
    assert_eq!(
        run(&["log-key", "--json"]).json(),
        log_key,
        "kept in the data directory"
    );

    let unlinked = run(&["unlink", &id, "--json"]).json();
    assert_eq!(
        unlinked,
        json!({"household_id": id, "revoked": {"access_tokens": 1}})
    );
    assert!(run(&["household", "list", "--json"]).json()["households"][0]["linked"] == false);

    // Deleting needs --yes: without it, nothing goes, and the answer says what would.
    let unconfirmed = run(&["household", "delete", &id, "--json"]);
    assert_eq!(unconfirmed.code, 2);
    assert!(
        unconfirmed
            .error()
            .contains("its decisions, its ledger and its logs")
    );
    assert!(unconfirmed.json()["usage"].is_string());
    assert_eq!(run(&["household", "show", &id, "--json"]).code, 0);
    // With it, everything goes, and the household is then unknown.
    let removed = run(&["household", "delete", &id, "--yes", "--json"]).json();
    assert_eq!(keys(&removed), ["household_id", "removed"]);
    assert_eq!(removed["removed"]["accounts"], 1);
    assert_eq!(removed["removed"]["device_keys"], 0);
    let gone = run(&["household", "show", &id, "--json"]);
    assert_eq!(gone.code, 1);
    assert!(gone.error().contains("there is no household"));
}

#[test]
fn usage_errors_exit_2_and_say_how() {
    let dir = tempfile::tempdir().unwrap();
    existing_store(dir.path());
    let env = local(dir.path());
    for args in [
        &["--json"][..],
        &["household", "--json"],
        &["household", "create", "--json"],
        &["household", "create", "a", "b", "--json"],
        &["household", "create", "a", "--policy", "--json"],
        &["household", "create", "a", "--colour", "red", "--json"],
        &["household", "show", "--json"],
        &["household", "adopt", "--household-id", "demo", "--json"],
        &["device-key", "revoke", "hh-x", "--json"],
        &["token", "--json"],
        &["frobnicate", "--json"],
    ] {
        let run = admin(&env, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stdout);
        let answer = run.json();
        assert!(
            answer["error"].is_string() && answer["usage"].is_string(),
            "{args:?}"
        );
    }
    let plain = admin(&env, &["frobnicate"]);
    assert_eq!(plain.code, 2);
    assert!(
        plain.stderr.contains("Usage: hearth admin"),
        "{}",
        plain.stderr
    );
}

#[test]
fn a_store_that_does_not_exist_is_named_and_never_created() {
    let dir = tempfile::tempdir().unwrap();
    let env = local(dir.path());
    let missing = admin(&env, &["household", "list", "--json"]);
    assert_eq!(missing.code, 1);
    let error = missing.error();
    assert!(error.contains("hearth.db"), "{error}");
    assert!(
        !dir.path().join("hearth.db").exists(),
        "nothing was created"
    );

    let moto = Moto::shared();
    let table = unique_name("hearth-admin-missing");
    let mut env: Vec<(&str, String)> = moto.environment();
    env.push(("HEARTH_TABLE", table.clone()));
    let missing = admin(&env, &["household", "list", "--json"]);
    assert_eq!(missing.code, 1, "{}", missing.stdout);
    let error = missing.error();
    assert!(
        error.contains(&table) && error.contains("does not exist"),
        "{error}"
    );
    let plain = admin(&env, &["household", "list"]);
    assert_eq!(plain.code, 1);
    assert!(plain.stderr.contains(&table), "{}", plain.stderr);
}

#[tokio::test]
async fn the_same_commands_run_over_dynamodb() {
    let moto = Moto::shared();
    let table = unique_name("hearth-admin");
    let store =
        hearth_core::store::dynamodb::DynamoStore::new(moto.dynamodb_client(), table.clone());
    store.ensure_table().await.unwrap();
    let mut env: Vec<(&str, String)> = moto.environment();
    env.push(("HEARTH_TABLE", table));
    env.push(("MCP_JWT_SECRET", JWT_SECRET.into()));
    env.push(("MCP_RESOURCE_URL", RESOURCE.into()));
    let created = admin(&env, &["household", "create", "Dynamo Dwellers", "--json"]).json();
    let id = created["household_id"].as_str().unwrap().to_owned();
    let key = admin(&env, &["device-key", "add", &id, "--json"]).json();
    assert!(key["key_id"].as_str().unwrap().starts_with("dk-"));
    let listed = admin(&env, &["household", "list", "--json"]).json();
    assert_eq!(listed["households"][0]["household_id"], id.as_str());
    let token = admin(&env, &["token", &id, "--json"]);
    assert_eq!(token.code, 0, "{}", token.stdout);
    let removed = admin(&env, &["household", "delete", &id, "--yes", "--json"]).json();
    assert_eq!(removed["removed"]["device_keys"], 1);
    assert_eq!(
        admin(&env, &["household", "list", "--json"]).json(),
        json!({"households": []})
    );
}

#[tokio::test]
async fn adopt_moves_a_credentials_decisions_into_a_new_account() {
    let dir = tempfile::tempdir().unwrap();
    let store = existing_store(dir.path());
    // An OAuth client's data scope is the SHA-256 of its id.
    let scope = hearth_core::chain::sha256_hex("alexa-client");
    let why = WhyService::new(store.clone(), Arc::new(SystemClock));
    let inputs = serde_json::Map::new();
    for action in ["dim lights", "lock the door", "start the kettle"] {
        why.record(
            &Caller::unattested(scope.clone()),
            NewDecision {
                household_id: "kitchen",
                action,
                reason: "asked for",
                inputs: &inputs,
                approver: "Dana",
            },
        )
        .await
        .unwrap();
    }
    drop(why);
    drop(store);
    let env = local(dir.path());
    let bad = admin(
        &env,
        &[
            "household",
            "adopt",
            "--subject-scope",
            "not-hex",
            "--household-id",
            "kitchen",
            "--json",
        ],
    );
    assert_eq!(bad.code, 1);
    assert!(bad.error().contains("64 lowercase hex"));
    let nothing = admin(
        &env,
        &[
            "household",
            "adopt",
            "--subject-scope",
            &scope,
            "--household-id",
            "garage",
            "--json",
        ],
    );
    assert_eq!(nothing.code, 1);
    assert!(nothing.error().contains("no live decisions"));
    let adopted = admin(
        &env,
        &[
            "household",
            "adopt",
            "--subject-scope",
            &scope,
            "--household-id",
            "kitchen",
            "--name",
            "Kitchen",
            "--json",
        ],
    );
    assert_eq!(adopted.code, 0, "{}", adopted.stdout);
    let adopted = adopted.json();
    assert_eq!(keys(&adopted), ["household_id", "moved"]);
    assert_eq!(
        adopted["moved"],
        json!({"decision_records": 3, "ledger_entries": 0})
    );
    let id = adopted["household_id"].as_str().unwrap();
    let shown = admin(&env, &["household", "show", id, "--json"]).json();
    assert_eq!(shown["name"], "Kitchen");
    assert_eq!(
        shown["policy"],
        Value::Null,
        "only the configured household brings a policy"
    );
}

#[test]
fn without_json_a_person_reads_lines() {
    let dir = tempfile::tempdir().unwrap();
    existing_store(dir.path());
    let env = local(dir.path());
    let created = admin(&env, &["household", "create", "Plain Folk"]);
    assert_eq!(created.code, 0);
    assert!(
        created.stdout.contains("name: Plain Folk"),
        "{}",
        created.stdout
    );
    let listed = admin(&env, &["household", "list"]);
    assert!(listed.stdout.contains("linked: false"), "{}", listed.stdout);
}

/// `log-key re-sign` and `log reset` as an operator runs them: one JSON object each, a reset
/// only with `--yes` (without it, what it would do and exit 2), and usage errors exit 2.
#[test]
fn the_log_commands_answer_in_json_and_a_reset_needs_yes() {
    let dir = tempfile::tempdir().unwrap();
    existing_store(dir.path());
    let env = local(dir.path());
    let created = admin(&env, &["household", "create", "Logged", "--json"]);
    assert_eq!(created.code, 0, "{}", created.stdout);
    let household = created.json()["household_id"].as_str().unwrap().to_owned();

    let resigned = admin(&env, &["log-key", "re-sign", "--all", "--json"]);
    assert_eq!(resigned.code, 0, "{}{}", resigned.stdout, resigned.stderr);
    assert_eq!(
        resigned.json(),
        json!({"households": [{"household_id": household, "decisions": "no_log", "ledger": "no_log"}]})
    );
    let one = admin(&env, &["log-key", "re-sign", &household, "--json"]);
    assert_eq!(one.code, 0, "{}", one.stdout);

    let unconfirmed = admin(&env, &["log", "reset", &household, "--json"]);
    assert_eq!(unconfirmed.code, 2, "{}", unconfirmed.stdout);
    assert!(
        unconfirmed.error().contains("--yes"),
        "{}",
        unconfirmed.stdout
    );
    assert!(
        unconfirmed.error().contains("both logs"),
        "{}",
        unconfirmed.stdout
    );

    let reset = admin(&env, &["log", "reset", &household, "--yes", "--json"]);
    assert_eq!(reset.code, 0, "{}{}", reset.stdout, reset.stderr);
    let answer = reset.json();
    assert_eq!(answer["household_id"], household.as_str());
    let logs: Vec<&str> = answer["reset"]
        .as_array()
        .unwrap()
        .iter()
        .map(|log| log["log"].as_str().unwrap())
        .collect();
    assert_eq!(logs, ["decisions", "ledger"]);
    assert!(answer["reset"][0]["entry"].as_str().unwrap().len() == 64);
    // The ledger's new log starts with its own reset, then records the decision log's, which
    // outlives the decision window: what a phone that pinned the old decision log finds.
    let export = admin(&env, &["ledger", "export", &household, "--json"]);
    assert_eq!(export.code, 0, "{}{}", export.stdout, export.stderr);
    let entries = export.json()["entries"].clone();
    let kinds: Vec<&str> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["log_reset", "decision_log_reset"], "{entries}");
    let recorded = &entries[1];
    assert_eq!(recorded["member_id"], "operator");
    assert!(
        recorded["origin"]
            .as_str()
            .unwrap()
            .ends_with("/decisions/1"),
        "{recorded}"
    );

    for args in [
        &["log-key", "re-sign", "--json"][..],
        &["log", "reset", "--yes", "--json"],
        &[
            "log", "reset", &household, "--yes", "--log", "receipts", "--json",
        ],
    ] {
        let run = admin(&env, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stdout);
    }
    let unknown = admin(&env, &["log", "reset", "hh-nobody", "--yes", "--json"]);
    assert_eq!(unknown.code, 1, "{}", unknown.stdout);
}

#[test]
fn clients_are_added_listed_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    existing_store(dir.path());
    let env = local(dir.path());
    // A repeated flag, and a flag without a value, in any order.
    let confidential = admin(
        &env,
        &[
            "client",
            "add",
            "Kitchen Display",
            "--redirect-uri",
            "https://display.example/callback",
            "--json",
            "--redirect-uri",
            "http://127.0.0.1/callback",
        ],
    );
    assert_eq!(
        confidential.code, 0,
        "{}{}",
        confidential.stdout, confidential.stderr
    );
    let added = confidential.json();
    assert_eq!(keys(&added), ["client_id", "client_secret"]);
    let public = admin(
        &env,
        &[
            "client",
            "add",
            "--public",
            "Phone",
            "--redirect-uri",
            "https://phone.example/cb",
            "--json",
        ],
    );
    assert_eq!(public.code, 0, "{}", public.stdout);
    assert_eq!(keys(&public.json()), ["client_id"]);

    let listed = admin(&env, &["client", "list", "--json"]).json();
    let clients = listed["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 2);
    let display = clients
        .iter()
        .find(|client| client["client_id"] == added["client_id"])
        .unwrap();
    assert_eq!(display["name"], "Kitchen Display");
    assert_eq!(display["public"], false);
    assert_eq!(display["created_by"], "operator");
    assert_eq!(
        display["redirect_uris"],
        json!([
            "https://display.example/callback",
            "http://127.0.0.1/callback"
        ])
    );
    assert!(
        !listed
            .to_string()
            .contains(added["client_secret"].as_str().unwrap())
    );

    let id = added["client_id"].as_str().unwrap();
    let deleted = admin(&env, &["client", "delete", id, "--json"]);
    assert_eq!(deleted.code, 0, "{}", deleted.stdout);
    assert_eq!(deleted.json(), json!({"deleted": id}));
    let again = admin(&env, &["client", "delete", id, "--json"]);
    assert_eq!(again.code, 1, "{}", again.stdout);
    assert!(again.error().contains(id), "{}", again.stdout);
    let refused = admin(
        &env,
        &[
            "client",
            "add",
            "Plain",
            "--redirect-uri",
            "http://example.com/cb",
            "--json",
        ],
    );
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(refused.error().contains("loopback"), "{}", refused.stdout);

    for args in [
        &["client", "add", "No Redirect", "--json"][..],
        &["client", "add", "X", "--redirect-uri", "--json"],
        &["client", "add", "X", "--redirect-uri", "--public"],
        &[
            "client",
            "add",
            "X",
            "--redirect-uri",
            "https://a.example/cb",
            "--colour",
            "--json",
        ],
        &[
            "client",
            "add",
            "--redirect-uri",
            "https://a.example/cb",
            "--json",
        ],
        &["client", "delete", "--json"],
        &["client", "list", "extra", "--json"],
    ] {
        let run = admin(&env, args);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
    }
}

#[test]
fn passkey_commands_invite_list_and_revoke() {
    let dir = tempfile::tempdir().unwrap();
    existing_store(dir.path());
    let env = local(dir.path());
    let mut policy = hearth_core::countersign::household::built_in_policy();
    policy.as_object_mut().unwrap().remove("household_id");
    policy.as_object_mut().unwrap().remove("name");
    let file = write_json(dir.path(), "policy.json", &policy);
    let created = admin(
        &env,
        &["household", "create", "Maple", "--policy", &file, "--json"],
    )
    .json();
    let household = created["household_id"].as_str().unwrap();

    let invite = admin(&env, &["passkey", "invite", household, "dana", "--json"]);
    assert_eq!(invite.code, 0, "{}", invite.stdout);
    let invite = invite.json();
    assert_eq!(keys(&invite), ["expires_at", "url"]);
    let url = invite["url"].as_str().unwrap();
    // WebAuthn refuses IP addresses: a loopback IP is linked as localhost.
    assert_eq!(RESOURCE, "http://127.0.0.1:8790/mcp");
    assert!(
        url.starts_with(&format!(
            "http://localhost:8790/passkeys/enrol/{household}."
        )),
        "{url}"
    );

    // A child first, a stranger, a household that does not exist: failures, exit 1.
    for (args, says) in [
        (vec!["passkey", "invite", household, "mia"], "guardian"),
        (
            vec!["passkey", "invite", household, "nobody"],
            "not a member",
        ),
        (
            vec![
                "passkey",
                "invite",
                "hh-00000000000000000000000000000000",
                "dana",
            ],
            "no household",
        ),
        (vec!["passkey", "revoke", household, "bm8"], "no passkey"),
        // base64url ids may begin with a hyphen: an id, not an option.
        (
            vec!["passkey", "revoke", household, "-3Ny97Ik"],
            "no passkey",
        ),
    ] {
        let mut args = args.clone();
        args.push("--json");
        let run = admin(&env, &args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stdout);
        assert!(run.error().contains(says), "{args:?}: {}", run.error());
    }
    let listed = admin(&env, &["passkey", "list", household, "--json"]).json();
    assert_eq!(listed, serde_json::json!({"passkeys": []}));
    // The sign-in index, for every household and for one: nothing to add without passkeys.
    let every = admin(&env, &["passkey", "index", "--json"]).json();
    assert_eq!(every["added"], 0, "{every}");
    assert!(every["households"].as_u64().unwrap() >= 1, "{every}");
    let one = admin(&env, &["passkey", "index", household, "--json"]).json();
    assert_eq!(
        one,
        serde_json::json!({"households": 1, "added": 0, "held_elsewhere": 0})
    );
    for args in [
        &["passkey", "invite", household, "--json"][..],
        &["passkey", "list", "--json"],
        &["passkey", "revoke", household, "--json"],
    ] {
        assert_eq!(admin(&env, args).code, 2, "{args:?}");
    }
    // Without a public URL under Lambda there is nowhere to link to.
    let mut lambda = env.clone();
    lambda.retain(|(name, _)| *name != "MCP_RESOURCE_URL" && *name != "MCP_JWT_SECRET");
    lambda.push(("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9".into()));
    lambda.push((
        "HEARTH_DB",
        dir.path().join("hearth.db").display().to_string(),
    ));
    let nowhere = admin(&lambda, &["passkey", "invite", household, "dana", "--json"]);
    assert_eq!(nowhere.code, 1, "{}", nowhere.stdout);
    assert!(
        nowhere.error().contains("MCP_RESOURCE_URL"),
        "{}",
        nowhere.error()
    );
}

#[test]
fn a_signup_link_is_printed_once_where_sign_up_takes_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = existing_store(dir.path());
    let mut env = local(dir.path());
    // Refused where the server would refuse the link: sign-up off.
    let off = admin(&env, &["signup-link", "--json"]);
    assert_eq!(off.code, 1, "{}", off.stdout);
    assert!(
        off.error().contains("HEARTH_SIGNUP=invite"),
        "{}",
        off.error()
    );
    env.push(("HEARTH_SIGNUP", "invite".into()));
    env.push((
        "MCP_REDIRECT_URIS",
        "https://alexa.example/api/skill/link/M2TEST".into(),
    ));
    let made = admin(&env, &["signup-link", "--json"]);
    assert_eq!(made.code, 0, "{}", made.stdout);
    let made = made.json();
    assert_eq!(keys(&made), ["expires_at", "url"]);
    let url = made["url"].as_str().unwrap();
    let token = url
        .strip_prefix("http://localhost:8790/household/signup#invite=")
        .unwrap_or_else(|| panic!("{url}"));
    // Only its hash is kept, for 7 days.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let now = hearth_core::clock::unix_ms(time::OffsetDateTime::now_utc());
    let kept = runtime
        .block_on(hearth_core::store::GrantStore::grant(
            store.as_ref(),
            hearth_core::store::GrantKind::SignupLink,
            &hearth_core::store::token_hash(token),
            now,
        ))
        .unwrap()
        .expect("the link's record");
    assert!(!kept.body.contains(token));
    let week = 7 * 24 * 60 * 60_000;
    assert!((kept.expires_at_ms - now - week).abs() < 60_000, "{kept:?}");
    // Another run, another link.
    let again = admin(&env, &["signup-link", "--json"]).json();
    assert_ne!(again["url"], made["url"]);
    assert_eq!(admin(&env, &["signup-link", "extra", "--json"]).code, 2);
}
