//! What every host's replay is made of: a Hearth over one store, the person who types the
//! link code, the host's website on loopback (for hosts that name themselves by a document),
//! and the requests a host sends, each checked as the host itself would check the answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use crate::common::oauth::{challenge, encode_pairs, hidden_fields};
use crate::common::{self, Backend, Harness, LOG_KEY, Reply, request};
use hearth_testkit::moto::Moto;

/// This server's MCP URL and issuer, as metadata names them (the local default).
pub const MCP_URL: &str = "http://127.0.0.1:8790/mcp";
pub const ISSUER: &str = "http://127.0.0.1:8790";
/// A PKCE verifier as hosts make them (43 to 128 characters).
pub const VERIFIER: &str = "host-replay-code-verifier-0123456789-abcdefghijklmnop";

/// A Hearth that hosts link to, with its operator.
pub struct Hearth {
    pub h: Harness,
    pub admin: hearth_core::admin::Admin,
}

/// A server with account linking, for `extra` settings beside the harness's own.
pub async fn hearth(backend: Backend, extra: &[(&str, &str)]) -> Hearth {
    let mut vars = vec![
        ("MCP_JWT_SECRET", "host-replay-jwt-signing-key-of-32-bytes"),
        ("HEARTH_LOG_KEY", LOG_KEY),
        ("HEARTH_RATE_LIMIT_PER_SUBJECT", "1000000"),
        ("HEARTH_RATE_LIMIT_PER_IP", "1000000"),
        ("HEARTH_CIMD_ALLOW_HTTP_LOOPBACK", "true"),
    ];
    vars.extend_from_slice(extra);
    let config = common::config(&vars);
    let (h, admin) = common::operated(
        &config,
        backend,
        Moto::shared().dynamodb_client(),
        "hearth-hosts",
    )
    .await;
    Hearth { h, admin }
}

impl Hearth {
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        request(&self.h.router, "GET", path, headers, "").await
    }

    pub async fn post_json(&self, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        request(&self.h.router, "POST", path, &all, &body.to_string()).await
    }

    pub async fn post_form(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        pairs: &[(&str, &str)],
    ) -> Reply {
        let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        request(&self.h.router, "POST", path, &all, &encode_pairs(pairs)).await
    }

    /// An MCP request as a host sends it: JSON in and out, a bearer token when it has one, and
    /// the protocol version header from 2025-06-18 on.
    pub async fn mcp(&self, bearer: Option<&str>, version: Option<&str>, body: &Value) -> Reply {
        let authorization = bearer.map(|token| format!("Bearer {token}"));
        let mut headers = vec![("accept", "application/json, text/event-stream")];
        if let Some(authorization) = &authorization {
            headers.push(("authorization", authorization.as_str()));
        }
        if let Some(version) = version {
            headers.push(("mcp-protocol-version", version));
        }
        self.post_json("/mcp", &headers, body).await
    }

    /// The 2026-07-28 probe newer hosts send first (`server/discover`, its version and the
    /// client's capabilities in `_meta`, `Mcp-Method`); a 400 would send them back to
    /// `initialize`, and Hearth answers it.
    pub async fn discover(&self, token: &str, client: (&str, &str)) -> Reply {
        let authorization = format!("Bearer {token}");
        let body = json!({"jsonrpc": "2.0", "id": "discover", "method": "server/discover",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": client.0, "version": client.1},
        }}});
        self.post_json(
            "/mcp",
            &[
                ("authorization", authorization.as_str()),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "server/discover"),
            ],
            &body,
        )
        .await
    }

    /// Discovery as a host starts it: an unauthenticated MCP request, answered 401 with the
    /// resource metadata's URL in `WWW-Authenticate` (RFC 9728 §5.1); that URL's path.
    pub async fn challenge(&self, initialize: &Value) -> String {
        let refused = self.mcp(None, None, initialize).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.raw);
        let challenge = refused.header("www-authenticate").to_owned();
        let url = challenge
            .split("resource_metadata=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no resource_metadata in {challenge:?}"));
        url.strip_prefix(ISSUER).expect("same origin").to_owned()
    }

    /// The first of `paths` that answers 200, in the order a host tries them: its index and
    /// its document.
    pub async fn first_found(&self, paths: &[&str]) -> (usize, Value) {
        for (index, path) in paths.iter().enumerate() {
            let reply = self.get(path, &[]).await;
            if reply.status == StatusCode::OK {
                return (index, reply.body);
            }
        }
        panic!("none of {paths:?} answered");
    }

    /// The person's part, as a household does it: the page the host opened (it must name the
    /// client as `shown`), the link code from `hearth admin link-code`, **Link household**.
    /// The redirect's query parameters.
    pub async fn person_links(
        &self,
        household: &str,
        query: &[(&str, &str)],
        shown: &str,
    ) -> HashMap<String, String> {
        let page = self
            .get(&format!("/oauth/authorize?{}", encode_pairs(query)), &[])
            .await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
        assert!(
            page.raw
                .contains(&format!("<strong><bdi>{shown}</bdi></strong>")),
            "the page names {shown}: {}",
            page.raw
        );
        let cookie = page
            .header("set-cookie")
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let mut fields = hidden_fields(&page.raw);
        fields.insert("decision".into(), "allow".into());
        fields.insert(
            "link_code".into(),
            self.admin.link_code(household).await.unwrap().code,
        );
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let answer = self
            .post_form("/oauth/authorize", &[("cookie", &cookie)], &pairs)
            .await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.raw);
        redirect_parameters(answer.header("location"))
    }

    pub async fn household(&self, name: &str) -> String {
        self.admin.create(name, None).await.unwrap().household_id
    }
}

/// The query parameters of a redirect.
pub fn redirect_parameters(location: &str) -> HashMap<String, String> {
    url::Url::parse(location)
        .unwrap_or_else(|_| panic!("not a URL: {location}"))
        .query_pairs()
        .into_owned()
        .collect()
}

/// An authorization request's query, PKCE S256 with [`VERIFIER`].
pub fn authorize_query<'a>(
    client_id: &'a str,
    redirect_uri: &'a str,
    state: &'a str,
    challenge_value: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut query = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
        ("state", state),
        ("code_challenge", challenge_value),
        ("code_challenge_method", "S256"),
    ];
    query.extend_from_slice(extra);
    query
}

/// The S256 challenge of [`VERIFIER`].
pub fn pkce_challenge() -> String {
    challenge(VERIFIER)
}

/// The JSON-RPC `initialize` a host sends.
pub fn initialize(id: Value, version: &str, capabilities: Value, client: (&str, &str)) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": client.0, "version": client.1},
    }})
}

/// Initializes at `version` with `token`, then calls `record_decision`, as a linked host's
/// first tool call: the decision is recorded for the household the token names.
pub async fn first_tool_call(
    hearth: &Hearth,
    token: &str,
    initialize_body: &Value,
    version: &str,
    household: &str,
) {
    let initialized = hearth.mcp(Some(token), None, initialize_body).await;
    assert_eq!(initialized.status, StatusCode::OK, "{}", initialized.raw);
    assert_eq!(initialized.body["result"]["protocolVersion"], version);
    let header = (version != "2025-03-26").then_some(version);
    let listed = hearth
        .mcp(
            Some(token),
            header,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.raw);
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "record_decision",
        "arguments": {"action": "dimmed the hall lights", "reason": "asked for it",
            "inputs": {}, "approver": "Dana"}}});
    let called = hearth.mcp(Some(token), header, &call).await;
    assert_eq!(called.status, StatusCode::OK, "{}", called.raw);
    assert_eq!(called.body["result"]["isError"], false, "{}", called.raw);
    assert_eq!(
        called.body["result"]["structuredContent"]["household_id"], household,
        "recorded for the linked household"
    );
}

/// A host's own website on loopback, serving its published document (its `client_id`
/// rewritten to the stand-in's URL) and, for a signing host, its keys.
#[derive(Clone, Default)]
pub struct Website {
    pub base: String,
    files: Arc<Mutex<HashMap<String, String>>>,
}

impl Website {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let site = Website {
            base: format!("http://{}", listener.local_addr().unwrap()),
            ..Website::default()
        };
        let app = axum::Router::new()
            .route("/{*name}", axum::routing::get(serve))
            .with_state(site.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        site
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    pub fn publish(&self, path: &str, body: &Value) {
        self.files
            .lock()
            .unwrap()
            .insert(path.to_owned(), body.to_string());
    }
}

async fn serve(State(site): State<Website>, Path(name): Path<String>) -> Response {
    match site.files.lock().unwrap().get(&name) {
        Some(body) => (
            [
                (http::header::CONTENT_TYPE, "application/json"),
                (http::header::CACHE_CONTROL, "public, max-age=300"),
            ],
            body.clone(),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
