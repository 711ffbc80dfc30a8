//! The OAuth function: `POST /oauth/token` (client credentials), `POST /oauth/judge` (judge
//! token exchange) and `GET /.well-known/oauth-authorization-server`.
//!
//! Alexa+ authenticates machine to machine: HTTP Basic with `MCP_CLIENT_ID` and
//! `MCP_CLIENT_SECRET`, a form body with `grant_type=client_credentials`, `resource` equal to
//! `MCP_RESOURCE_URL`, and an optional `scope`. The answer is a one-hour HS256 access token.
//! A person with a judge token (the web demo) exchanges it at `/oauth/judge` for an access
//! token whose subject is the judge token's hash.

mod error;
pub(crate) mod form;
pub mod metadata;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub use error::OAuthError;
pub use form::MAX_FORM_BYTES;
use form::{Form, basic_credentials};

use crate::auth::{Authenticator, Credentials, JwtKeys, Scopes, Subject};
use crate::config::PublicUrls;
use crate::gate::{Gate, client_ip};
use crate::media::{has_media_type, read_body};
use crate::telemetry::{RequestLog, request_id};

/// Everything the OAuth routes need, built once per process.
pub struct OAuthEndpoint {
    gate: Gate,
    client_id: Option<String>,
    client_secret_hash: Option<[u8; 32]>,
    judges: Authenticator,
    jwt: Option<JwtKeys>,
    urls: Option<PublicUrls>,
}

impl OAuthEndpoint {
    pub fn new(
        gate: Gate,
        credentials: &Credentials,
        jwt: Option<JwtKeys>,
        urls: Option<PublicUrls>,
    ) -> Self {
        Self {
            gate,
            client_id: credentials.client_id.clone(),
            client_secret_hash: credentials
                .client_secret
                .as_ref()
                .map(|secret| Sha256::digest(secret.expose().as_bytes()).into()),
            judges: Authenticator::new(credentials, None),
            jwt,
            urls,
        }
    }
}

/// The OAuth function's routes.
pub fn router(endpoint: Arc<OAuthEndpoint>) -> Router {
    Router::new()
        .route("/oauth/token", any(token))
        .route("/oauth/judge", any(judge))
        .route("/.well-known/oauth-authorization-server", any(discovery))
        .with_state(endpoint)
}

async fn token(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    token_route(&endpoint, request, TokenRoute::ClientCredentials).await
}

async fn judge(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    token_route(&endpoint, request, TokenRoute::JudgeToken).await
}

/// The two routes that issue tokens.
#[derive(Clone, Copy)]
enum TokenRoute {
    ClientCredentials,
    JudgeToken,
}

/// Serves one token route and writes the request's log line.
async fn token_route(endpoint: &OAuthEndpoint, request: Request, route: TokenRoute) -> Response {
    if request.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    let outcome = match route {
        TokenRoute::ClientCredentials => {
            log.method(Some("oauth/token"));
            client_credentials_grant(endpoint, request, &mut log).await
        }
        TokenRoute::JudgeToken => {
            log.method(Some("oauth/judge"));
            judge_token_exchange(endpoint, request, &mut log).await
        }
    };
    let response = outcome.unwrap_or_else(IntoResponse::into_response);
    log.finish(response.status(), started.elapsed());
    response
}

async fn discovery(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    if request.method() != Method::GET {
        return method_not_allowed("GET");
    }
    match &endpoint.urls {
        Some(urls) => axum::Json(metadata::authorization_server(urls)).into_response(),
        None => {
            OAuthError::unavailable("the authorization server is not configured").into_response()
        }
    }
}

/// The checks both token routes share: Origin, rate limit, media type and body size.
async fn read_form(
    endpoint: &OAuthEndpoint,
    request: Request,
) -> Result<(http::request::Parts, Form), OAuthError> {
    endpoint
        .gate
        .check_origin(request.headers())
        .map_err(OAuthError::refused)?;
    let ip = client_ip(&request);
    endpoint
        .gate
        .admit(ip, None)
        .await
        .map_err(OAuthError::refused)?;
    let is_form = has_media_type(request.headers(), "application/x-www-form-urlencoded");
    if !is_form {
        return Err(OAuthError::invalid_request(
            "the body must be application/x-www-form-urlencoded",
        ));
    }
    let (parts, body) = request.into_parts();
    let too_large = || {
        OAuthError::with_status(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            format!("the body exceeds {MAX_FORM_BYTES} bytes"),
        )
    };
    let bytes = read_body(&parts.headers, body, MAX_FORM_BYTES)
        .await
        .ok_or_else(too_large)?;
    Ok((parts, Form::parse(&bytes)?))
}

async fn client_credentials_grant(
    endpoint: &OAuthEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Result<Response, OAuthError> {
    let (parts, form) = read_form(endpoint, request).await?;
    let client_id = authenticate_client(endpoint, &parts.headers, &form)?;
    let subject = Subject::of_client(&client_id);
    log.subject(&subject.caller());
    match form.get("grant_type") {
        None => return Err(OAuthError::invalid_request("grant_type is required")),
        Some("client_credentials") => {}
        Some(_) => {
            return Err(OAuthError::unsupported_grant_type(
                "only client_credentials is supported",
            ));
        }
    }
    let urls = endpoint
        .urls
        .as_ref()
        .ok_or_else(|| OAuthError::unavailable("the token endpoint is not configured"))?;
    if form.get("resource") != Some(urls.resource()) {
        return Err(OAuthError::invalid_target(
            "resource is required and must be this server's MCP URL",
        ));
    }
    let scopes = requested_scopes(&form)?;
    issue(endpoint, &subject, scopes)
}

async fn judge_token_exchange(
    endpoint: &OAuthEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Result<Response, OAuthError> {
    let (_parts, form) = read_form(endpoint, request).await?;
    let presented = form
        .get("judge_token")
        .ok_or_else(|| OAuthError::invalid_request("judge_token is required"))?;
    let subject = endpoint
        .judges
        .judge_token(presented)
        .ok_or_else(|| OAuthError::invalid_grant("the judge token is not valid"))?;
    log.subject(&subject.caller());
    let scopes = requested_scopes(&form)?;
    issue(endpoint, &subject, scopes)
}

/// Checks HTTP Basic client credentials (the only supported method) in constant time and
/// returns the client id.
fn authenticate_client(
    endpoint: &OAuthEndpoint,
    headers: &http::HeaderMap,
    form: &Form,
) -> Result<String, OAuthError> {
    let in_body = form.get("client_secret").is_some() || form.get("client_id").is_some();
    let has_header = headers.contains_key(header::AUTHORIZATION);
    if in_body && has_header {
        return Err(OAuthError::invalid_request(
            "use exactly one client authentication method",
        ));
    }
    if in_body {
        return Err(OAuthError::invalid_client(
            "client credentials in the body are not accepted; use HTTP Basic",
        ));
    }
    let (id, secret) = basic_credentials(headers)?;
    let (Some(expected_id), Some(expected_secret)) =
        (endpoint.client_id.as_deref(), endpoint.client_secret_hash)
    else {
        return Err(OAuthError::invalid_client("client authentication failed"));
    };
    let presented_secret: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
    let id_matches = Sha256::digest(id.as_bytes()).ct_eq(&Sha256::digest(expected_id.as_bytes()));
    if bool::from(id_matches & presented_secret.ct_eq(&expected_secret)) {
        Ok(id)
    } else {
        Err(OAuthError::invalid_client("client authentication failed"))
    }
}

fn requested_scopes(form: &Form) -> Result<Scopes, OAuthError> {
    match form.get("scope") {
        None => Ok(Scopes::DEFAULT),
        Some(list) => Scopes::parse(list).map_err(|_| {
            OAuthError::invalid_scope("scope must be mcp:service, mcp:tools and/or mcp:resources")
        }),
    }
}

fn issue(
    endpoint: &OAuthEndpoint,
    subject: &Subject,
    scopes: Scopes,
) -> Result<Response, OAuthError> {
    let jwt = endpoint
        .jwt
        .as_ref()
        .ok_or_else(|| OAuthError::unavailable("the token endpoint is not configured"))?;
    let issued = jwt.issue(subject.as_str(), scopes, crate::auth::jwt::now_secs());
    let body = json!({
        "access_token": issued.access_token,
        "token_type": "Bearer",
        "expires_in": issued.expires_in,
        "scope": issued.scope.to_string(),
    });
    let mut response = axum::Json(body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    Ok(response)
}

fn method_not_allowed(allow: &'static str) -> Response {
    let mut response = OAuthError::with_status(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request",
        format!("use {allow}"),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}
