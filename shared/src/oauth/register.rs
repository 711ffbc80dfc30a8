//! `POST /oauth/register`: Dynamic Client Registration (RFC 7591).
//!
//! Hosts that register themselves (Claude Code, Cursor, ChatGPT, MCP Inspector) send their
//! metadata as JSON and get a client id back. A registration is unverified (the consent page
//! says so), may only link households (never `client_credentials`), and is forgotten if no
//! token is issued to it within a day. Registrations are counted per client address in the
//! shared counters, like link-code attempts.

use std::collections::BTreeSet;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{OAuthEndpoint, OAuthError};
use crate::auth::Scopes;
use crate::clients::{ClientError, Registrant, check_redirect_uris, usable_redirect_uris};
use crate::media::{has_media_type, read_body};
use crate::ratelimit::Admission;

/// The largest registration request read.
pub const MAX_REGISTRATION_BYTES: usize = 16 * 1024;
/// Registrations one client address may make per [`REGISTRATION_WINDOW_MS`].
pub const REGISTRATIONS_PER_WINDOW: u32 = 20;
pub const REGISTRATION_WINDOW_MS: i64 = 60 * 60_000;

/// The grant types a registered client may name: a self-registered client links households,
/// nothing else.
const GRANT_TYPES: [&str; 2] = ["authorization_code", "refresh_token"];
/// How a registered client may authenticate at the token endpoint.
const AUTH_METHODS: [&str; 3] = ["none", "client_secret_basic", "client_secret_post"];

/// The client metadata Hearth reads (RFC 7591 §2); any other field is accepted and ignored,
/// as §2 allows.
#[derive(Deserialize)]
struct RequestedMetadata {
    #[serde(default)]
    redirect_uris: Vec<String>,
    /// RFC 7591 §2: absent means `client_secret_basic`.
    token_endpoint_auth_method: Option<String>,
    /// Absent means `["authorization_code"]`.
    grant_types: Option<Vec<String>>,
    /// Absent means `["code"]`.
    response_types: Option<Vec<String>>,
    client_name: Option<String>,
    scope: Option<String>,
}

/// Serves one registration.
pub(super) async fn register(
    endpoint: &OAuthEndpoint,
    request: Request,
) -> Result<Response, OAuthError> {
    let ip = endpoint.gate.client_ip(&request);
    let (Some(attempts), Some(_)) = (&endpoint.registrations, &endpoint.linking) else {
        return Err(OAuthError::unavailable(
            "client registration is not available on this server",
        ));
    };
    if !has_media_type(request.headers(), "application/json") {
        return Err(invalid_metadata("the body must be application/json"));
    }
    let (parts, body) = request.into_parts();
    let bytes = read_body(&parts.headers, body, MAX_REGISTRATION_BYTES)
        .await
        .ok_or_else(|| {
            OAuthError::with_status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_client_metadata",
                format!("the body exceeds {MAX_REGISTRATION_BYTES} bytes"),
            )
        })?;
    let requested: RequestedMetadata = serde_json::from_slice(&bytes)
        .map_err(|error| invalid_metadata(format!("the client metadata is not valid: {error}")))?;
    let registration = Registration::check(requested)?;
    // Counted only once the request is well formed, so a client fixing its metadata is not
    // locked out by its own mistakes; a flood of good registrations still is.
    match attempts.attempt(ip).await {
        Admission::Admitted => {}
        Admission::Limited { retry_after_secs } => {
            let mut response = OAuthError::with_status(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "too many clients were registered from this address; try again later",
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            return Ok(response);
        }
        Admission::Unavailable => {
            return Err(OAuthError::unavailable(
                "registration is unavailable; try again",
            ));
        }
    }
    let (item, secret) = endpoint
        .clients
        .register(
            &registration.client_name,
            &registration.redirect_uris,
            registration.auth_method == "none",
        )
        .await
        .map_err(|error| match error {
            ClientError::Invalid(text) => invalid_metadata(text),
            other => {
                tracing::warn!(error = %other, "a registration could not be stored");
                OAuthError::unavailable("storage unavailable; try again")
            }
        })?;
    let mut body = json!({
        "client_id": item.client_id,
        "client_id_issued_at": item.created_at_ms / 1000,
        "client_name": item.name,
        "redirect_uris": item.redirect_uris,
        "token_endpoint_auth_method": registration.auth_method,
        "grant_types": registration.grant_types,
        "response_types": ["code"],
    });
    if let Some(secret) = secret {
        body["client_secret"] = Value::String(secret);
        // The secret itself never expires; only a registration never used is forgotten.
        body["client_secret_expires_at"] = json!(0);
    }
    if let Some(scope) = registration.scope {
        body["scope"] = Value::String(scope);
    }
    let mut response = (StatusCode::CREATED, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// A registration request that passed every rule.
struct Registration {
    client_name: String,
    redirect_uris: Vec<String>,
    auth_method: String,
    grant_types: Vec<String>,
    scope: Option<String>,
}

impl Registration {
    fn check(requested: RequestedMetadata) -> Result<Self, OAuthError> {
        let grant_types = requested
            .grant_types
            .unwrap_or_else(|| vec!["authorization_code".into()]);
        if grant_types
            .iter()
            .any(|grant| grant == "client_credentials")
        {
            return Err(invalid_metadata(
                "a registered client may not use client_credentials; it links a household with authorization_code",
            ));
        }
        if let Some(unknown) = grant_types
            .iter()
            .find(|grant| !GRANT_TYPES.contains(&grant.as_str()))
        {
            return Err(invalid_metadata(format!(
                "grant type {unknown:?} is not supported; use authorization_code and refresh_token"
            )));
        }
        if !grant_types
            .iter()
            .any(|grant| grant == "authorization_code")
        {
            return Err(invalid_metadata(
                "grant_types must include authorization_code",
            ));
        }
        let response_types = requested
            .response_types
            .unwrap_or_else(|| vec!["code".into()]);
        if response_types.iter().any(|kind| kind != "code") || response_types.is_empty() {
            return Err(invalid_metadata("response_types must be [\"code\"]"));
        }
        let auth_method = requested
            .token_endpoint_auth_method
            .unwrap_or_else(|| "client_secret_basic".into());
        if !AUTH_METHODS.contains(&auth_method.as_str()) {
            return Err(invalid_metadata(format!(
                "token_endpoint_auth_method must be one of {}",
                AUTH_METHODS.join(", ")
            )));
        }
        // Hosts list a callback for every platform they run on (Cursor: its own scheme, a
        // website and loopback): what Hearth cannot send codes to is set aside, and only a
        // list with nothing usable is refused.
        let registrant = if auth_method == "none" {
            Registrant::PublicClient
        } else {
            Registrant::ConfidentialClient
        };
        let (redirect_uris, set_aside) = usable_redirect_uris(&requested.redirect_uris, registrant);
        let invalid_redirect = |text: String| {
            OAuthError::with_status(StatusCode::BAD_REQUEST, "invalid_redirect_uri", text)
        };
        if redirect_uris.is_empty() {
            return Err(invalid_redirect(if set_aside.is_empty() {
                "redirect_uris lists no redirect URI".into()
            } else {
                format!("no redirect URI can be used: {}", set_aside.join("; "))
            }));
        }
        check_redirect_uris(&redirect_uris, registrant).map_err(invalid_redirect)?;
        if let Some(scope) = &requested.scope
            && Scopes::parse(scope).is_err()
        {
            return Err(invalid_metadata(
                "scope must be mcp:service, mcp:tools and/or mcp:resources",
            ));
        }
        // A client that names itself nothing is shown by where it sends people back.
        let client_name = requested
            .client_name
            .filter(|name| !name.trim().is_empty())
            .unwrap_or_else(|| redirect_host(&redirect_uris[0]));
        Ok(Self {
            client_name,
            redirect_uris,
            auth_method,
            grant_types: dedup(grant_types),
            scope: requested.scope,
        })
    }
}

fn dedup(values: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    values
        .into_iter()
        .filter(|value| seen.insert(value.clone()))
        .collect()
}

fn redirect_host(uri: &str) -> String {
    url::Url::parse(uri)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| "an unnamed client".into())
}

fn invalid_metadata(description: impl Into<String>) -> OAuthError {
    OAuthError::with_status(
        StatusCode::BAD_REQUEST,
        "invalid_client_metadata",
        description,
    )
}
