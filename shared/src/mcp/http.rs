//! `POST /mcp`, `GET /healthz` and the protected-resource metadata.
//!
//! Checks run cheapest and most general first, and each failure has its own status:
//! 405 (not POST), 403 (Origin not allowed), 400 (a token in the query string), 429 or 503
//! (rate limit reached or limiter unreachable), 401 (no valid bearer token), 415 (not JSON),
//! 406 (an `Accept` that rules JSON out; no header, `*/*` and `application/json` alone are
//! served), 400 (unsupported `MCP-Protocol-Version`), 413 (body over 64 KiB), 400 with a JSON-RPC parse
//! error (not UTF-8, not JSON) or invalid-request error (not JSON-RPC, or nesting deeper than
//! [`body::MAX_NESTING_DEPTH`]), 403 (`insufficient_scope` for the method), 401 with
//! `account_linking_required` (a client-credentials token, where account linking is
//! configured, on anything beyond Tier 1: see [`is_tier_one`]); then, for
//! `tools/call`, invalid params (-32602) when `arguments` is not an object, and an `isError`
//! result naming an integer beyond 64 bits in them. Everything that passes
//! goes to rmcp's stateless Streamable HTTP service in JSON-response mode with the
//! authenticated caller attached.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::Full;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;
use serde_json::value::RawValue;

use super::body;
use super::handler::HearthServer;
use super::{MAX_BODY_BYTES, PROTOCOL_VERSIONS, ToolOutcome};
use crate::auth::attestation::{AttestationRefusal, AttestationVerifier, HostClaim};
use crate::auth::{AuthFailure, Authenticator, Scope};
use crate::config::PublicUrls;
use crate::gate::{Gate, Refusal, client_ip};
use crate::media::{accepts_json, has_media_type, read_body};
use crate::oauth::metadata;
use crate::telemetry::{RequestLog, request_id};
use crate::transparency::LogKeys;

/// MCP methods whose names may appear in logs; anything else is logged as `other`.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "server/discover",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "notifications/initialized",
    "notifications/cancelled",
];

/// Everything `/mcp` needs, built once per process.
pub struct McpEndpoint {
    service: StreamableHttpService<HearthServer, NeverSessionManager>,
    server: HearthServer,
    auth: Authenticator,
    attestations: AttestationVerifier,
    gate: Gate,
    urls: Option<PublicUrls>,
    /// The `WWW-Authenticate` challenge of a 401, pointing at the resource metadata.
    challenge: String,
    /// Account linking is configured: the client-credentials token is Tier 1 only.
    linking_required: bool,
    /// The transparency logs' keys, published at `/.well-known/hearth/log-keys`.
    log_keys: Option<Arc<LogKeys>>,
    /// The witness policy (C2SP tlog-policy), published at
    /// `/.well-known/hearth/witness-policy`.
    witness_policy: Option<String>,
}

impl McpEndpoint {
    /// `allowed_hosts` empty disables the `Host` check (see `Config::allowed_hosts`).
    pub fn new(
        server: HearthServer,
        auth: Authenticator,
        attestations: AttestationVerifier,
        gate: Gate,
        allowed_hosts: Vec<String>,
        urls: Option<PublicUrls>,
    ) -> Self {
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_max_request_body_bytes(MAX_BODY_BYTES)
            // Origins are checked exactly, before authentication, by this endpoint.
            .disable_allowed_origins();
        config = if allowed_hosts.is_empty() {
            config.disable_allowed_hosts()
        } else {
            config.with_allowed_hosts(allowed_hosts)
        };
        let factory_server = server.clone();
        let service = StreamableHttpService::new(
            move || Ok(factory_server.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let challenge = match &urls {
            Some(urls) => format!(
                r#"Bearer realm="hearth", resource_metadata="{}""#,
                urls.resource_metadata()
            ),
            None => r#"Bearer realm="hearth""#.to_owned(),
        };
        Self {
            service,
            server,
            auth,
            attestations,
            gate,
            urls,
            challenge,
            linking_required: false,
            log_keys: None,
            witness_policy: None,
        }
    }

    /// The same endpoint publishing the logs' verifier keys.
    /// Publishes `policy` (the witness policy's text) at `/.well-known/hearth/witness-policy`.
    pub fn with_witness_policy(mut self, policy: Option<String>) -> Self {
        self.witness_policy = policy;
        self
    }

    pub fn with_log_keys(mut self, keys: Option<Arc<LogKeys>>) -> Self {
        self.log_keys = keys;
        self
    }

    /// The same endpoint with account linking configured: a client-credentials token then
    /// reaches only Tier 1 (see [`is_tier_one`]).
    pub fn with_linking(mut self, required: bool) -> Self {
        self.linking_required = required;
        self
    }
}

/// What a client-credentials token may do where account linking is configured (Tier 1):
/// start a session, list what exists, and call the tools that touch no household's data.
/// Everything else acts for a customer and needs their own token (Tier 2).
pub fn is_tier_one(method: &str, tool: Option<&str>) -> bool {
    match method {
        "initialize" | "server/discover" | "ping" | "tools/list" | "resources/list"
        | "prompts/list" | "prompts/get" => true,
        "tools/call" => tool.is_some_and(|name| name.starts_with("scholia_") || name == "ask_aion"),
        other => other.starts_with("notifications/"),
    }
}

/// The MCP function's routes: `/mcp`, `/healthz` and the RFC 9728 metadata (at the root and
/// with the `/mcp` suffix, where clients look for it first).
pub fn router(endpoint: Arc<McpEndpoint>) -> Router {
    // A browser-based host (the MCP Inspector, for one) fetches these from its own origin:
    // they answer CORS for the allowed origins.
    let fetched = Router::new()
        .route("/mcp", any(mcp))
        .route(
            "/.well-known/oauth-protected-resource",
            any(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            any(resource_metadata),
        )
        .layer(endpoint.gate.cors());
    Router::new()
        .route("/healthz", get(healthz))
        .route("/.well-known/hearth/log-keys", get(log_keys))
        .route("/.well-known/hearth/witness-policy", get(witness_policy))
        .merge(fetched)
        .with_state(endpoint)
}

async fn resource_metadata(State(endpoint): State<Arc<McpEndpoint>>, request: Request) -> Response {
    if request.method() != Method::GET {
        let mut response = (
            StatusCode::METHOD_NOT_ALLOWED,
            axum::Json(json!({"error": "method_not_allowed"})),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return response;
    }
    match &endpoint.urls {
        Some(urls) => axum::Json(metadata::protected_resource(urls)).into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({
                "error": "temporarily_unavailable",
                "error_description": "MCP_RESOURCE_URL is not configured",
            })),
        )
            .into_response(),
    }
}

/// `GET /.well-known/hearth/log-keys`: the verifier keys every household's checkpoints are
/// signed with (during a rotation, the new and the old).
async fn log_keys(State(endpoint): State<Arc<McpEndpoint>>) -> Response {
    match &endpoint.log_keys {
        Some(keys) => {
            let mut response = axum::Json(json!({"keys": keys.published()})).into_response();
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            );
            response
        }
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({
                "error": "temporarily_unavailable",
                "error_description": "no log signing key is configured (HEARTH_LOG_KEY)",
            })),
        )
            .into_response(),
    }
}

/// `GET /.well-known/hearth/witness-policy`: the C2SP tlog-policy text this deployment's
/// checkpoints are checked under (its `log` lines name the deployment's keys, not origins).
/// Without witnesses that is still a true policy: the log keys and `quorum none`. 503 without
/// a log key, as for the keys themselves.
async fn witness_policy(State(endpoint): State<Arc<McpEndpoint>>) -> Response {
    let policy = match (&endpoint.witness_policy, &endpoint.log_keys) {
        (Some(policy), _) => policy.clone(),
        (None, Some(keys)) => {
            let mut policy = String::from(
                "# No witnesses are configured (HEARTH_WITNESS_POLICY): checkpoints are signed by the log key alone.\n",
            );
            for key in keys.published() {
                policy.push_str(&format!("log {}\n", key.vkey));
            }
            policy.push_str("quorum none\n");
            policy
        }
        (None, None) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(json!({
                    "error": "temporarily_unavailable",
                    "error_description": "no log signing key is configured (HEARTH_LOG_KEY)",
                })),
            )
                .into_response();
        }
    };
    (
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        policy,
    )
        .into_response()
}

async fn healthz() -> Response {
    axum::Json(json!({"status": "ok", "service": "hearth"})).into_response()
}

async fn mcp(State(endpoint): State<Arc<McpEndpoint>>, request: Request) -> Response {
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    let response = handle(&endpoint, request, &mut log).await;
    log.finish(response.status(), started.elapsed());
    response
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<PeekParams<'a>>,
}

#[derive(Deserialize)]
struct PeekParams<'a> {
    #[serde(borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: Option<PeekMeta>,
}

#[derive(Deserialize)]
struct PeekMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<IgnoredAny>,
}

/// A request whose `MCP-Protocol-Version` header names a revision Hearth does not speak, when
/// its `_meta` names none: 400 with the request's id and the supported versions.
///
/// rmcp checks the header against every revision it knows (2024-11-05 included), not the ones
/// this server speaks, and checks only a version named in `_meta` against those; so this one
/// case is decided here. Everything else about versions (a `_meta` version, a header and
/// `_meta` that disagree, unknown header values) is rmcp's.
fn unspoken_version(headers: &http::HeaderMap, peek: &Peek<'_>) -> Option<Response> {
    let header = headers.get("mcp-protocol-version")?.to_str().ok()?;
    let names_its_own = peek
        .params
        .as_ref()
        .and_then(|params| params.meta.as_ref())
        .is_some_and(|meta| meta.protocol_version.is_some());
    if names_its_own || PROTOCOL_VERSIONS.contains(&header) {
        return None;
    }
    let body = json!({"jsonrpc": "2.0", "id": peek.id, "error": {
        "code": rmcp::model::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0,
        "message": format!(
            "Unsupported MCP-Protocol-Version; supported: {}",
            PROTOCOL_VERSIONS.join(", ")
        ),
        "data": {"requested": header, "supported": PROTOCOL_VERSIONS},
    }});
    Some((StatusCode::BAD_REQUEST, axum::Json(body)).into_response())
}

async fn handle(endpoint: &McpEndpoint, request: Request, log: &mut RequestLog) -> Response {
    if request.method() != Method::POST {
        let mut response = rpc_error(
            StatusCode::METHOD_NOT_ALLOWED,
            -32000,
            "Method not allowed: this stateless endpoint accepts POST only",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    if let Err(refusal) = endpoint.gate.check_origin(request.headers()) {
        return refused(refusal);
    }
    if token_in_query(request.uri()) {
        let mut response = rpc_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad request: access tokens are accepted only in the Authorization header",
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="hearth", error="invalid_request""#),
        );
        return response;
    }
    // Authenticate first (in memory) so that one limiter call counts both the client address
    // and, when known, the subject; a failed attempt still counts against the address.
    let authenticated = endpoint.auth.authenticate(request.headers()).map(|grant| {
        let caller = grant.provisional_caller();
        (grant, caller)
    });
    let known_caller = authenticated.as_ref().ok().map(|(_, caller)| caller);
    if let Err(refusal) = endpoint.gate.admit(client_ip(&request), known_caller).await {
        return refused(refusal);
    }
    let grant = match authenticated {
        Ok((grant, _)) => grant,
        Err(failure) => return unauthorized(&endpoint.challenge, failure),
    };
    let caller = match endpoint.auth.confirm(&grant).await {
        Ok(caller) => caller,
        Err(failure) => return unauthorized(&endpoint.challenge, failure),
    };
    log.subject(&caller);
    let headers = request.headers();
    let is_json = has_media_type(headers, "application/json");
    if !is_json {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32000,
            "Content-Type must be application/json",
        );
    }
    if !accepts_json(headers) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: Hearth answers every request with application/json",
        );
    }
    let (mut parts, body) = request.into_parts();
    let Some(bytes) = read_body(&parts.headers, body, MAX_BODY_BYTES).await else {
        return too_large();
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            -32700,
            "Parse error: the body is not valid UTF-8",
        );
    };
    if body::nesting_depth(text.as_bytes()) > body::MAX_NESTING_DEPTH {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            &format!(
                "Invalid request: the body nests deeper than {} levels of objects and arrays",
                body::MAX_NESTING_DEPTH
            ),
        );
    }
    let mut caller = caller;
    // Kept for rmcp's own refusals, which answer in plain text without it.
    let request_id: Option<Box<RawValue>>;
    match serde_json::from_str::<Peek<'_>>(text) {
        Ok(peek) => {
            request_id = peek.id.map(ToOwned::to_owned);
            if let Some(refusal) = unspoken_version(&parts.headers, &peek) {
                return refusal;
            }
            if let Err(needed) = grant.scopes.allow(peek.method.as_deref()) {
                return insufficient_scope(endpoint, needed, peek.id);
            }
            let method = peek.method.as_deref().unwrap_or_default();
            log.method(
                KNOWN_METHODS
                    .iter()
                    .find(|known| **known == method)
                    .copied(),
            );
            let params = peek.params.as_ref();
            let tool = params.and_then(|params| params.name.as_deref());
            // A client an operator added is always Tier 1: it exists to link households.
            let tier_one_only =
                grant.is_service && (endpoint.linking_required || grant.stored_client);
            if tier_one_only && !is_tier_one(method, tool) {
                return linking_required(endpoint, peek.id);
            }
            if let Some(name) = params.and_then(|params| params.name.as_deref())
                && method == "tools/call"
                && endpoint.server.knows_tool(name)
            {
                log.tool(name);
            }
            if method == "tools/call"
                && let Some(arguments) = params.and_then(|params| params.arguments)
            {
                if !matches!(
                    arguments.get().trim_start().as_bytes().first(),
                    Some(b'{' | b'n')
                ) {
                    return rpc_error_for(
                        peek.id,
                        -32602,
                        "Invalid params: `arguments` must be a JSON object",
                    );
                }
                if let Some(place) = body::oversized_integer(arguments) {
                    log.tool_failed();
                    return tool_error(
                        peek.id,
                        &format!(
                            "`{place}` is an integer beyond 64 bits, which would not be stored exactly; send it as a string."
                        ),
                    );
                }
            }
            // Only tool calls and resource reads act on who is speaking or reveal household
            // data; other methods skip the HMAC.
            if method == "tools/call" || method == "resources/read" {
                caller.host = match (&mut caller.household, endpoint.auth.accounts()) {
                    (Some(household), Some(accounts)) => {
                        let (claim, account) = endpoint
                            .attestations
                            .check_household(&parts.headers, accounts, &household.id)
                            .await;
                        household.account = account;
                        claim
                    }
                    (Some(_), None) => HostClaim::Refused(AttestationRefusal::KeysUnavailable),
                    (None, _) => endpoint.attestations.check(&parts.headers),
                };
            }
        }
        Err(_) if serde_json::from_str::<IgnoredAny>(text).is_ok() => return invalid_request(),
        Err(_) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                "Parse error: the body is not valid JSON",
            );
        }
    }
    parts.extensions.insert(caller);
    let outcome = ToolOutcome::default();
    parts.extensions.insert(outcome.clone());
    // Hearth answers JSON only (rmcp runs in JSON-response mode), so any client that takes
    // JSON is served, including curl's `*/*` and no Accept header; rmcp itself insists that
    // both JSON and an event stream are named.
    parts.headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    let response = endpoint
        .service
        .handle(http::Request::from_parts(parts, Full::new(bytes)))
        .await;
    // rmcp answers 415 when the JSON is not a JSON-RPC message; the media type was already
    // checked above, so that can only mean an invalid request.
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return invalid_request();
    }
    if outcome.failed() {
        log.tool_failed();
        log.reason(outcome.reason());
    }
    // rmcp's own refusals (a Host outside the allowed list, for one) are plain text; every
    // refusal on /mcp carries a JSON-RPC error body instead, with the same status and words,
    // and the request's id.
    if !response.status().is_success() && !has_media_type(response.headers(), "application/json") {
        let status = response.status();
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_default();
        let message = String::from_utf8_lossy(&bytes);
        let message = match message.trim() {
            "" => status.canonical_reason().unwrap_or("Refused"),
            text => text,
        };
        let body = json!({"jsonrpc": "2.0", "id": request_id, "error": {
            "code": -32000, "message": message}});
        return (status, axum::Json(body)).into_response();
    }
    response.map(Body::new)
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

/// A JSON-RPC error answering the request `id` (HTTP 200, as rmcp answers its own).
fn rpc_error_for(id: Option<&RawValue>, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// A tool result with `isError` answering the request `id`: MCP reports a tool's argument
/// problems this way, so the model can correct them.
fn tool_error(id: Option<&RawValue>, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": message}], "isError": true}});
    (StatusCode::OK, axum::Json(body)).into_response()
}

fn invalid_request() -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        -32600,
        "Invalid request: the body is not a JSON-RPC 2.0 message",
    )
}

fn too_large() -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        -32000,
        &format!("Request body exceeds {MAX_BODY_BYTES} bytes"),
    )
}

fn refused(refusal: Refusal) -> Response {
    let mut response = rpc_error(refusal.status(), -32000, refusal.message());
    refusal.decorate(&mut response);
    response
}

/// Whether the query string carries an access token, which MCP forbids (tokens in URLs end up
/// in logs and histories). Such a request is refused even with a valid header.
fn token_in_query(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|query| {
        form_urlencoded::parse(query.as_bytes()).any(|(name, _)| name == "access_token")
    })
}

fn unauthorized(challenge: &str, failure: AuthFailure) -> Response {
    let mut response = rpc_error(
        StatusCode::UNAUTHORIZED,
        -32000,
        &format!("Unauthorized: {failure}"),
    );
    let challenge = match failure {
        AuthFailure::Invalid | AuthFailure::Expired => {
            format!(r#"{challenge}, error="invalid_token", error_description="{failure}""#)
        }
        AuthFailure::Missing | AuthFailure::WrongScheme => challenge.to_owned(),
    };
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).expect("challenge is ASCII"),
    );
    response
}

/// HTTP 401 for a Tier-1 token on a Tier-2 method: Alexa+ starts account linking on it, and
/// other clients follow the challenge to the metadata.
fn linking_required(endpoint: &McpEndpoint, id: Option<&RawValue>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": "Unauthorized: this needs a household's own token; link the household's account first",
        "data": {"reason": "account_linking_required"},
    }});
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&endpoint.challenge).expect("challenge is ASCII"),
    );
    response
}

fn insufficient_scope(endpoint: &McpEndpoint, needed: Scope, id: Option<&RawValue>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!("Forbidden: this method needs the {} scope", needed.as_str()),
    }});
    let mut response = (StatusCode::FORBIDDEN, axum::Json(body)).into_response();
    let challenge = format!(
        r#"{}, error="insufficient_scope", scope="{}""#,
        endpoint.challenge,
        needed.as_str()
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).expect("challenge is ASCII"),
    );
    response
}
