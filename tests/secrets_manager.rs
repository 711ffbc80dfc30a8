//! Credentials from AWS Secrets Manager, through the real AWS SDK against `moto_server` on
//! loopback: the secret a deployment reads, a missing secret, a malformed one, and the whole
//! server started on a secret that does not exist (it denies, says why, and keeps running).

mod common;

use aws_sdk_secretsmanager::primitives::Blob;
use common::process::{Server, http};
use common::{CLIENT_ID, CLIENT_SECRET, JWT_SECRET, TOKEN};
use hearth_core::auth::Credentials;
use hearth_core::chain::sha256_hex;
use hearth_core::config::secrets::{SecretError, read_credentials};
use hearth_testkit::moto::{Moto, unique_name};
use serde_json::json;

fn secret_json() -> String {
    json!({
        "MCP_CLIENT_ID": CLIENT_ID,
        "MCP_CLIENT_SECRET": CLIENT_SECRET,
        "MCP_JWT_SECRET": JWT_SECRET,
        "MCP_JUDGE_TOKEN_HASHES": sha256_hex(TOKEN),
    })
    .to_string()
}

async fn create_secret(moto: &Moto, value: &str) -> String {
    let name = unique_name("hearth-credentials");
    let created = moto
        .secrets_client()
        .create_secret()
        .name(&name)
        .secret_string(value)
        .send()
        .await
        .expect("moto creates the secret");
    created.arn().expect("an ARN").to_owned()
}

#[tokio::test]
async fn the_credentials_secret_is_read_and_parsed() {
    let moto = Moto::shared();
    let arn = create_secret(moto, &secret_json()).await;
    let (credentials, problems) = read_credentials(&moto.secrets_client(), &[arn])
        .await
        .unwrap();
    assert!(problems.is_empty());
    let (expected, _) = Credentials::from_secret_json(&secret_json()).unwrap();
    assert_eq!(credentials, expected);
    assert!(credentials.missing().is_empty());
}

/// A deployment splits the credentials so each function reads only what it uses: the token
/// secret, plus the client secret for the token endpoint or the device keys for MCP.
#[tokio::test]
async fn split_secrets_are_read_together_and_a_name_in_two_is_refused() {
    let moto = Moto::shared();
    let tokens = json!({"MCP_CLIENT_ID": CLIENT_ID, "MCP_JWT_SECRET": JWT_SECRET,
        "MCP_JUDGE_TOKEN_HASHES": sha256_hex(TOKEN)})
    .to_string();
    let tokens = create_secret(moto, &tokens).await;
    let client_secret = create_secret(
        moto,
        &json!({"MCP_CLIENT_SECRET": CLIENT_SECRET}).to_string(),
    )
    .await;
    let (credentials, problems) = read_credentials(
        &moto.secrets_client(),
        &[tokens.clone(), client_secret.clone()],
    )
    .await
    .unwrap();
    assert!(problems.is_empty());
    let (expected, _) = Credentials::from_secret_json(&secret_json()).unwrap();
    assert_eq!(credentials, expected);

    // The token secret alone, as the speech function reads it: no client secret to leak.
    let (alone, _) = read_credentials(&moto.secrets_client(), std::slice::from_ref(&tokens))
        .await
        .unwrap();
    assert_eq!(alone.client_secret, None);
    assert_eq!(alone.missing(), ["MCP_CLIENT_SECRET"]);

    let again = create_secret(moto, &json!({"MCP_CLIENT_ID": "other"}).to_string()).await;
    let error = read_credentials(&moto.secrets_client(), &[tokens, again])
        .await
        .unwrap_err();
    assert_eq!(
        error,
        SecretError::Overlap {
            name: "MCP_CLIENT_ID".into()
        }
    );
}

#[tokio::test]
async fn missing_malformed_and_binary_secrets_are_errors_that_reveal_nothing() {
    let moto = Moto::shared();
    let client = moto.secrets_client();
    let missing = read_credentials(
        &client,
        &["arn:aws:secretsmanager:us-east-1:123456789012:secret:absent".to_owned()],
    )
    .await
    .unwrap_err();
    assert_eq!(
        missing,
        SecretError::Service {
            code: "ResourceNotFoundException".into()
        }
    );
    let not_json = create_secret(moto, "MCP_CLIENT_SECRET=hunter2").await;
    let error = read_credentials(&client, &[not_json]).await.unwrap_err();
    assert_eq!(error, SecretError::Format);
    assert!(!error.to_string().contains("hunter2"));

    let name = unique_name("hearth-binary");
    client
        .create_secret()
        .name(&name)
        .secret_binary(Blob::new(secret_json().into_bytes()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        read_credentials(&client, &[name]).await.unwrap_err(),
        SecretError::NotAString
    );
}

#[tokio::test]
async fn a_short_signing_key_in_the_secret_is_left_out() {
    let moto = Moto::shared();
    let weak = json!({"MCP_CLIENT_ID": CLIENT_ID, "MCP_JWT_SECRET": "short"}).to_string();
    let arn = create_secret(moto, &weak).await;
    let (credentials, problems) = read_credentials(&moto.secrets_client(), &[arn])
        .await
        .unwrap();
    assert_eq!(credentials.jwt_secret, None);
    assert_eq!(problems.len(), 1);
}

#[tokio::test]
async fn an_unreachable_secrets_manager_is_reported_as_such() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(format!("http://127.0.0.1:{port}"))
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "tests"))
        .build();
    let client = aws_sdk_secretsmanager::Client::from_conf(config);
    let error = read_credentials(&client, &["anything".to_owned()])
        .await
        .unwrap_err();
    assert!(matches!(error, SecretError::Unreachable(_)), "{error:?}");
}

/// Starts the `hearth` binary with `HEARTH_SECRET_ARN` and the emulator's AWS environment.
fn start_hearth(moto: &Moto, secret: &str, data: &std::path::Path) -> Server {
    let mut vars = moto.environment();
    vars.push(("HEARTH_SECRET_ARN", secret.to_owned()));
    Server::start(data, &vars)
}

/// Asks the running server for a client-credentials token; returns the status.
fn token_status(server: &Server) -> u16 {
    let form = format!(
        "grant_type=client_credentials&resource=http://127.0.0.1:{}/mcp",
        server.port
    );
    let basic = common::basic(CLIENT_ID, CLIENT_SECRET);
    let headers = [
        ("Authorization", basic.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    http(server.port, "POST", "/oauth/token", &headers, &form).0
}

#[tokio::test]
async fn the_server_runs_on_credentials_from_the_secret() {
    let moto = Moto::shared();
    let arn = create_secret(moto, &secret_json()).await;
    let data = tempfile::tempdir().unwrap();
    let server = start_hearth(moto, &arn, data.path());
    assert_eq!(token_status(&server), 200);
    assert!(
        !data.path().join("dev-credentials.json").exists(),
        "no dev credentials beside a secret"
    );
}

#[tokio::test]
async fn a_missing_secret_denies_everything_logs_why_and_does_not_crash() {
    let moto = Moto::shared();
    let data = tempfile::tempdir().unwrap();
    let absent = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hearth-absent";
    let mut server = start_hearth(moto, absent, data.path());
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(server.rpc(TOKEN, &ping).0, 401);
    assert_eq!(token_status(&server), 401);
    assert!(server.is_running());
    let log = server.stop();
    let line = log
        .lines()
        .find(|line| line.contains("could not be read"))
        .unwrap_or_else(|| panic!("no log line about the secret in: {log}"));
    assert!(line.contains("ResourceNotFoundException"), "{line}");
    assert!(line.contains(r#""level":"ERROR""#), "{line}");
}
