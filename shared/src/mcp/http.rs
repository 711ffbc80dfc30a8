//! The MCP function's routes: `POST /mcp`, `GET /healthz`, the protected-resource metadata,
//! the logs' keys and the witness policy, and the endpoint state they share. What `/mcp`
//! checks, in which order and with which status, is its layers (`super::layers`).

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http::{HeaderValue, Method, StatusCode, header};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use super::MAX_BODY_BYTES;
use super::handler::HearthServer;
use crate::auth::Authenticator;
use crate::auth::attestation::AttestationVerifier;
use crate::config::PublicUrls;
use crate::gate::{self, Gate};
use crate::oauth::metadata;
use crate::telemetry::{RequestLog, request_id};
use crate::transparency::LogKeys;

/// Everything `/mcp` needs, built once per process.
pub struct McpEndpoint {
    pub(super) service: StreamableHttpService<HearthServer, NeverSessionManager>,
    pub(super) server: HearthServer,
    pub(super) auth: Authenticator,
    pub(super) attestations: AttestationVerifier,
    pub(super) gate: Gate,
    urls: Option<PublicUrls>,
    pub(super) tiers: Tiers,
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
            tiers: Tiers {
                challenge,
                linking_required: false,
            },
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
        self.tiers.linking_required = required;
        self
    }
}

/// What a token may reach, and how a refusal points to the way in.
pub(super) struct Tiers {
    /// The `WWW-Authenticate` challenge of a 401, pointing at the resource metadata.
    pub(super) challenge: String,
    /// Account linking is configured: the client-credentials token is Tier 1 only.
    pub(super) linking_required: bool,
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
/// `path_inserted`: also answer RFC 9728's path-inserted name of a resource with a path prefix
/// (the local server; see `app::Route::lambda`).
pub fn router(endpoint: Arc<McpEndpoint>, path_inserted: bool) -> Router {
    // A browser-based host (the MCP Inspector, for one) fetches these from its own origin:
    // they answer CORS for the allowed origins.
    // `/mcp` passes the gate in its own layers, where the token names the subject to count
    // beside the address; the documents pass it as a layer. CORS is outside the gate, so that
    // a browser host can read a refusal's status.
    let mut documents = Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            any(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            any(resource_metadata),
        );
    if path_inserted {
        documents = documents.route(
            "/.well-known/oauth-protected-resource/{*path}",
            any(resource_metadata_inserted),
        );
    }
    let fetched = Router::new().route("/mcp", any(mcp)).merge(gate::limit(
        documents,
        &endpoint.gate,
        gate::json_refusal,
    ));
    let fetched = gate::browser_access(fetched, &endpoint.gate);
    let published = Router::new()
        .route("/.well-known/hearth/log-keys", get(log_keys))
        .route("/.well-known/hearth/witness-policy", get(witness_policy));
    // `/healthz` alone is never limited: a load balancer's probe must not be refused.
    Router::new()
        .route("/healthz", get(healthz))
        .merge(gate::limit(published, &endpoint.gate, gate::json_refusal))
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

/// The protected-resource metadata at its RFC 9728 §3.1 name for a resource with a path
/// prefix: served only at the resource's own path.
async fn resource_metadata_inserted(
    State(endpoint): State<Arc<McpEndpoint>>,
    Path(path): Path<String>,
    request: Request,
) -> Response {
    let ours = endpoint
        .urls
        .as_ref()
        .is_some_and(|urls| urls.resource_path() == format!("/{path}"));
    if !ours {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": "not_found"})),
        )
            .into_response();
    }
    resource_metadata(State(endpoint), request).await
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
    let response = super::layers::handle(&endpoint, request, &mut log).await;
    log.finish(response.status(), started.elapsed());
    response
}
