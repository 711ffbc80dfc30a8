//! Builds Hearth routers for tests from a configuration map, over a fresh SQLite file, and
//! sends them requests.

#![allow(dead_code)]

pub mod aion_stand_in;
pub mod capture;
pub mod device;
pub mod oauth;
pub mod process;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use hearth_core::app::Backing;
use hearth_core::chain::sha256_hex;
use hearth_core::clock::ManualClock;
use hearth_core::config::Config;
use hearth_core::speech::polly::Voice;
use hearth_core::store::Stores;
use hearth_core::store::sqlite::SqliteStore;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tempfile::TempDir;
use tower::ServiceExt;

/// A static judge token the harness accepts.
pub const TOKEN: &str = "hearth-fixture-token";
/// The OAuth client the harness accepts.
pub const CLIENT_ID: &str = "alexa-fixture-client";
pub const CLIENT_SECRET: &str = "fixture-client-secret-0123456789";
pub const JWT_SECRET: &str = "fixture-jwt-signing-key-of-32-bytes-or-more";
/// The local default `MCP_RESOURCE_URL` for the default `HEARTH_ADDR`.
pub const RESOURCE: &str = "http://127.0.0.1:8790/mcp";
/// The secret the fixture's transparency-log signing key is derived from.
pub const LOG_KEY: &str = "fixture-log-key-secret-of-some-length";

pub struct Harness {
    pub router: Router,
    pub dir: TempDir,
    pub clock: Arc<ManualClock>,
}

impl Harness {
    pub fn db_path(&self) -> std::path::PathBuf {
        self.dir.path().join("hearth.db")
    }
}

pub fn config(vars: &[(&str, &str)]) -> Config {
    try_config(vars).expect("valid test configuration")
}

pub fn try_config(vars: &[(&str, &str)]) -> Result<Config, hearth_core::config::ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|name| map.get(name).cloned())
}

/// The harness's credentials and generous rate limits, overridden by `extra`.
pub fn settings<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, String)> {
    let mut vars: Vec<(&str, String)> = vec![
        ("MCP_JUDGE_TOKEN_HASHES", sha256_hex(TOKEN)),
        ("MCP_CLIENT_ID", CLIENT_ID.into()),
        ("MCP_CLIENT_SECRET", CLIENT_SECRET.into()),
        ("MCP_JWT_SECRET", JWT_SECRET.into()),
        ("HEARTH_LOG_KEY", LOG_KEY.into()),
        ("HEARTH_RATE_LIMIT_PER_SUBJECT", "1000000".into()),
        ("HEARTH_RATE_LIMIT_PER_IP", "1000000".into()),
    ];
    for (name, value) in extra {
        vars.retain(|(n, _)| n != name);
        vars.push((name, value.to_string()));
    }
    vars
}

/// The whole local router (MCP and OAuth) accepting [`TOKEN`] and the fixture client, plus
/// `extra` settings, over a fresh SQLite store.
pub fn harness(extra: &[(&str, &str)]) -> Harness {
    harness_with(&config_with(extra))
}

/// The harness's configuration ([`settings`]) with `extra` settings.
pub fn config_with(extra: &[(&str, &str)]) -> Config {
    let vars = settings(extra);
    let borrowed: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    config(&borrowed)
}

pub fn harness_with(config: &Config) -> Harness {
    harness_over(config, Stores::shared)
}

/// Like [`harness_with`], with the stores chosen by `stores` from a fresh SQLite store.
pub fn harness_over(config: &Config, stores: impl FnOnce(Arc<SqliteStore>) -> Stores) -> Harness {
    harness_built(config, stores, None)
}

/// The standard harness (see [`harness`]) with a voice for `/tts`.
pub fn harness_speaking(extra: &[(&str, &str)], voice: Voice) -> Harness {
    let vars = settings(extra);
    let borrowed: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    harness_built(&config(&borrowed), Stores::shared, Some(Arc::new(voice)))
}

fn harness_built(
    config: &Config,
    stores: impl FnOnce(Arc<SqliteStore>) -> Stores,
    voice: Option<Arc<Voice>>,
) -> Harness {
    let (backing, dir, clock) = backing_with(config, stores, voice);
    let router = hearth_core::app::local_router_with(config, &backing);
    Harness { router, dir, clock }
}

/// What routers are built over in tests: a fresh SQLite store (wrapped by `stores`), a manual
/// clock, the configured household and judge, and `voice`.
pub fn backing_with(
    config: &Config,
    stores: impl FnOnce(Arc<SqliteStore>) -> Stores,
    voice: Option<Arc<Voice>>,
) -> (Backing, TempDir, Arc<ManualClock>) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let stores = stores(Arc::new(
        SqliteStore::open(&dir.path().join("hearth.db")).expect("store"),
    ));
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let witnesses = hearth_core::app::witnesses(config, &stores, clock.clone())
        .expect("the configured witness policy");
    let backing = Backing {
        // No host name resolves in tests: every stand-in is on a loopback IP.
        resolver: Arc::new(hearth_core::clients::metadata_document::LocalhostOnly),
        witnesses,
        accounts: Arc::new(hearth_core::accounts::Accounts::new(
            stores.accounts.clone(),
            clock.clone(),
        )),
        stores,
        clock: clock.clone(),
        voice,
        household: hearth_core::app::household_data(config).expect("household data"),
        judge: hearth_core::app::judge(config),
    };
    (backing, dir, clock)
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub raw: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }
}

/// Sends one request to `router` with exactly the given headers (`Host: 127.0.0.1` unless
/// given) and returns the reply.
pub async fn request(
    router: &Router,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    request_bytes(router, method, uri, headers, body.as_bytes().to_vec()).await
}

/// [`request`] with a body of any bytes, valid UTF-8 or not.
pub async fn request_bytes(
    router: &Router,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    send(router, None, method, uri, headers, body).await
}

/// [`request`] from the TCP peer `peer`, as the local server sees a connection (the address
/// the per-address limits count).
pub async fn request_from(
    router: &Router,
    peer: std::net::SocketAddr,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    send(
        router,
        Some(peer),
        method,
        uri,
        headers,
        body.as_bytes().to_vec(),
    )
    .await
}

async fn send(
    router: &Router,
    peer: Option<std::net::SocketAddr>,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(peer) = peer {
        request = request.extension(axum::extract::ConnectInfo(peer));
    }
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request = request.header("host", "127.0.0.1");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    Reply {
        status,
        headers,
        body: serde_json::from_str(&raw).unwrap_or(Value::Null),
        raw,
    }
}

/// Posts a JSON-RPC body to `/mcp` with the fixture token and MCP's JSON headers.
pub async fn rpc(router: &Router, body: &Value) -> Reply {
    let bearer = format!("Bearer {TOKEN}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    request(router, "POST", "/mcp", &headers, &body.to_string()).await
}

/// Calls a tool with the fixture token and returns `result` (`isError`, `content`,
/// `structuredContent`); the HTTP answer must be 200.
pub async fn call_tool(router: &Router, name: &str, arguments: Value) -> Value {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    let reply = rpc(router, &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    reply.body["result"].clone()
}

/// `Authorization: Basic` for a client id and secret.
pub fn basic(id: &str, secret: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
    )
}

/// Asks `/oauth/token` for an access token as Alexa+ does, with an optional scope.
pub async fn access_token(router: &Router, scope: Option<&str>) -> String {
    let mut form = format!("grant_type=client_credentials&resource={RESOURCE}");
    if let Some(scope) = scope {
        form.push_str(&format!("&scope={scope}"));
    }
    let authorization = basic(CLIENT_ID, CLIENT_SECRET);
    let reply = request(
        router,
        "POST",
        "/oauth/token",
        &[
            ("authorization", authorization.as_str()),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        &form,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    reply.body["access_token"].as_str().unwrap().to_owned()
}

/// A server and the operator's `hearth admin` over the same stores: a fresh SQLite file, or a
/// fresh DynamoDB table (named after `table`) through `client`.
pub async fn operated(
    config: &Config,
    backend: Backend,
    client: aws_sdk_dynamodb::Client,
    table: &str,
) -> (Harness, hearth_core::admin::Admin) {
    let (h, admin, _) = operated_with_stores(config, backend, client, table).await;
    (h, admin)
}

/// [`operated`], with the stores both use.
pub async fn operated_with_stores(
    config: &Config,
    backend: Backend,
    client: aws_sdk_dynamodb::Client,
    table: &str,
) -> (Harness, hearth_core::admin::Admin, Stores) {
    match backend {
        Backend::Sqlite => {
            let mut shared: Option<Stores> = None;
            let h = harness_over(config, |sqlite| {
                let stores = Stores::shared(sqlite);
                shared = Some(stores.clone());
                stores
            });
            let stores = shared.expect("the harness chose its stores");
            let admin = admin_over(config, &h, &stores);
            (h, admin, stores)
        }
        Backend::Dynamo => {
            operated_on_table(config, client, &hearth_testkit::moto::unique_name(table)).await
        }
    }
}

/// [`operated_with_stores`] on DynamoDB, in a new table of exactly this name.
pub async fn operated_on_table(
    config: &Config,
    client: aws_sdk_dynamodb::Client,
    table: &str,
) -> (Harness, hearth_core::admin::Admin, Stores) {
    let store = hearth_core::store::dynamodb::DynamoStore::new(client, table);
    store.ensure_table().await.expect("create the table");
    let stores = Stores::shared(Arc::new(store));
    let h = harness_over(config, |_| stores.clone());
    let admin = admin_over(config, &h, &stores);
    (h, admin, stores)
}

/// The operator's `hearth admin` over `stores`, on the harness's clock.
fn admin_over(config: &Config, h: &Harness, stores: &Stores) -> hearth_core::admin::Admin {
    use hearth_core::clock::Clock;
    let clock: Arc<dyn Clock> = h.clock.clone();
    hearth_core::admin::Admin::new(
        hearth_core::accounts::Accounts::new(stores.accounts.clone(), clock.clone()),
        stores.chains.clone(),
        stores.grants.clone(),
        hearth_core::app::household_data(config).unwrap(),
        config.jwt_keys(),
        clock,
    )
}

/// Which store a story runs on: the embedded SQLite store, or DynamoDB on moto.
#[derive(Clone, Copy, Debug)]
pub enum Backend {
    Sqlite,
    Dynamo,
}

/// One `#[tokio::test]` per story on each store: `sqlite::story` and `dynamodb::story`, each
/// calling `story(Backend)` from the test file (which names `Backend` in its scope).
#[macro_export]
macro_rules! on_both_stores {
    ($($story:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $story() {
                    super::$story(super::Backend::Sqlite).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $story() {
                    super::$story(super::Backend::Dynamo).await;
                }
            )*
        }
    };
}
