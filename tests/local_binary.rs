//! The README's first command (`cargo run`; docs/src/getting-started/quick-start.md): the
//! `hearth` binary serves on HEARTH_ADDR, creates and prints development credentials when none
//! are configured, and refuses bad settings with one clear line.

mod common;

use std::io::BufRead;
use std::io::BufReader;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::process::{free_port, http, wait_until_listening};

/// The value after `label` on the banner line that starts with it.
fn banner_value(banner: &[String], label: &str) -> String {
    banner
        .iter()
        .find_map(|line| line.trim().strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label} in {banner:?}"))
        .trim()
        .to_owned()
}

#[test]
fn serves_with_generated_private_dev_credentials() {
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env_clear()
        .env("HEARTH_ADDR", format!("127.0.0.1:{port}"))
        .env("HEARTH_DATA_DIR", data.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read the whole banner and keep the pipe open: closing it early would fail the server's
    // own write to stdout.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner: Vec<String> = Vec::new();
    while !banner
        .last()
        .is_some_and(|line| line.contains("\"method\":\"ping\""))
    {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "banner ended early: {banner:?}"
        );
        banner.push(line);
    }
    assert!(
        banner[0].starts_with("Hearth development credentials"),
        "{banner:?}"
    );
    let judge_token = banner_value(&banner, "judge token:");
    let client_id = banner_value(&banner, "client id:");
    let client_secret = banner_value(&banner, "client secret:");
    let stored: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data.path().join("dev-credentials.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(stored["judge_token"], judge_token.as_str());
    assert_eq!(stored["client_secret"], client_secret.as_str());

    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        http(port, "GET", "/healthz", &[], ""),
        (200, r#"{"service":"hearth","status":"ok"}"#.into())
    );
    use base64::Engine;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{client_secret}"))
    );
    let (status, body) = http(
        port,
        "POST",
        "/oauth/token",
        &[
            ("Authorization", basic.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &format!("grant_type=client_credentials&resource=http://127.0.0.1:{port}/mcp"),
    );
    assert_eq!(status, 200, "{body}");
    let issued: serde_json::Value = serde_json::from_str(&body).unwrap();
    let access_token = issued["access_token"].as_str().unwrap();

    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let json = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    for token in [judge_token.as_str(), access_token] {
        let bearer = format!("Bearer {token}");
        let mut authorized = json.to_vec();
        authorized.push(("Authorization", bearer.as_str()));
        assert_eq!(http(port, "POST", "/mcp", &authorized, ping).0, 200);
    }
    assert_eq!(http(port, "POST", "/mcp", &json, ping).0, 401);
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdout);
}

fn refused(vars: &[(&str, &str)]) -> String {
    let data = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env_clear()
        .env("HEARTH_DATA_DIR", data.path())
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr.lines().count(),
        1,
        "one line, no backtrace: {stderr}"
    );
    stderr
}

#[test]
fn bad_settings_are_refused_with_one_line() {
    assert!(refused(&[("HEARTH_ADDR", "nowhere")]).contains("HEARTH_ADDR is not valid"));
    assert!(refused(&[("MCP_JUDGE_TOKEN_HASHES", "abc")]).contains("MCP_JUDGE_TOKEN_HASHES"));
    assert!(refused(&[("HEARTH_TOOLSETS", "why,nope")]).contains("unknown toolset"));
    let lambda = refused(&[
        ("MCP_ALLOW_NO_AUTH", "true"),
        ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9"),
    ]);
    assert!(lambda.contains("local development only"), "{lambda}");
    let short_key = refused(&[("MCP_JWT_SECRET", "too-short")]);
    assert!(short_key.contains("MCP_JWT_SECRET") && !short_key.contains("too-short"));
    assert!(refused(&[("MCP_DISABLED", "maybe")]).contains("MCP_DISABLED"));
    assert!(refused(&[("MCP_RESOURCE_URL", "http://hearth.example/mcp")]).contains("https"));
}

/// With the development credentials, the log keys still come from the environment when it
/// sets them, as a deployment's do: the published keys are those of `HEARTH_LOG_KEY` and
/// `HEARTH_LOG_KEY_PREVIOUS` at `HEARTH_LOG_KEY_VERSION`, not the generated file's.
#[test]
fn development_credentials_honour_the_log_keys_in_the_environment() {
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let log_keys = [
        ("HEARTH_LOG_KEY", "the second log key"),
        ("HEARTH_LOG_KEY_PREVIOUS", "the first log key"),
        ("HEARTH_LOG_KEY_VERSION", "2"),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env_clear()
        .env("HEARTH_ADDR", format!("127.0.0.1:{port}"))
        .env("HEARTH_DATA_DIR", data.path())
        .envs(log_keys)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_listening(port, "the server");
    let (status, body) = http(port, "GET", "/.well-known/hearth/log-keys", &[], "");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(status, 200, "{body}");
    let published: serde_json::Value = serde_json::from_str(&body).unwrap();
    let expected = hearth_core::transparency::LogKeys::new(
        "127.0.0.1",
        &common::config(&log_keys).log_key_seeds(),
    )
    .unwrap()
    .published();
    let vkeys: Vec<&str> = published["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|key| key["verify_only"] != true)
        .map(|key| key["vkey"].as_str().unwrap())
        .collect();
    assert_eq!(
        vkeys,
        expected
            .iter()
            .map(|key| key.vkey.as_str())
            .collect::<Vec<_>>()
    );
    assert!(
        vkeys[0].starts_with("127.0.0.1/hearth-log/v2+"),
        "{vkeys:?}"
    );
}

/// `hearth healthcheck`: 0 when the server's /healthz answers, from `HEARTH_ADDR` as the
/// image's HEALTHCHECK runs it (every address means loopback) or a URL given; 1 when nothing
/// answers.
#[test]
fn healthcheck_says_whether_the_server_answers() {
    let data = tempfile::tempdir().unwrap();
    let server = common::process::Server::start(data.path(), &[]);
    let healthcheck = |vars: &[(&str, String)], args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .env_clear()
            .envs(vars.iter().map(|(name, value)| (*name, value.as_str())))
            .arg("healthcheck")
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code().unwrap(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let every_address = [("HEARTH_ADDR", format!("0.0.0.0:{}", server.port))];
    let (code, said) = healthcheck(&every_address, &[]);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains(&format!(
            "http://127.0.0.1:{}/healthz: healthy",
            server.port
        )),
        "{said}"
    );
    let url = format!("http://127.0.0.1:{}/healthz", server.port);
    assert_eq!(healthcheck(&[], &[&url]).0, 0);
    let not_health = format!("http://127.0.0.1:{}/nothing-here", server.port);
    let (code, said) = healthcheck(&[], &[&not_health]);
    assert_eq!(code, 1);
    assert!(said.contains("answered 404"), "{said}");
    server.stop();
    let (code, said) = healthcheck(&every_address, &[]);
    assert_eq!(code, 1);
    assert!(said.contains("no answer"), "{said}");
}
