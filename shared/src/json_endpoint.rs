//! What the small authenticated JSON endpoints (`/tts`, the demo device) check before their
//! own work, in the same order as `/mcp`: POST only (405), Origin (403), rate limits (429/503,
//! counting the client address and, once known, the subject), a bearer token (401 with a
//! challenge), `application/json` (415), and a bounded body (413). Errors are JSON
//! `{"error": "…"}` with `Cache-Control: no-store`.

use std::net::IpAddr;

use axum::body::Bytes;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::json;

use crate::auth::{AuthFailure, Authenticator, Caller};
use crate::gate::{Gate, Refusal};
use crate::media::{has_media_type, read_body};
use crate::telemetry::RequestLog;

/// A JSON error answer.
pub fn error(status: StatusCode, message: &str) -> Response {
    let mut response = (status, axum::Json(json!({"error": message}))).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Runs every check and returns the authenticated caller and the body, or the answer that
/// refuses the request.
pub async fn admit(
    auth: &Authenticator,
    gate: &Gate,
    request: Request,
    max_body_bytes: usize,
    log: &mut RequestLog,
) -> Result<(Caller, Bytes), Response> {
    if request.method() != Method::POST {
        let mut response = error(StatusCode::METHOD_NOT_ALLOWED, "use POST");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return Err(response);
    }
    let ip = gate.client_ip(&request);
    let caller = authorize(auth, gate, request.headers(), ip, log).await?;
    if !has_media_type(request.headers(), "application/json") {
        return Err(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        ));
    }
    let (parts, body) = request.into_parts();
    let bytes = read_body(&parts.headers, body, max_body_bytes)
        .await
        .ok_or_else(|| {
            error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the body exceeds {max_body_bytes} bytes"),
            )
        })?;
    Ok((caller, bytes))
}

/// The origin, rate-limit and bearer checks alone, for a request without a body: the
/// authenticated caller, or the answer that refuses the request.
pub async fn authorize(
    auth: &Authenticator,
    gate: &Gate,
    headers: &HeaderMap,
    ip: Option<IpAddr>,
    log: &mut RequestLog,
) -> Result<Caller, Response> {
    let refused = |refusal: Refusal| {
        let mut response = error(refusal.status(), refusal.message());
        refusal.decorate(&mut response);
        response
    };
    gate.check_origin(headers).map_err(refused)?;
    let authenticated = auth.authenticate(headers);
    let known_caller = authenticated
        .as_ref()
        .ok()
        .map(|grant| grant.provisional_caller());
    gate.admit(ip, known_caller.as_ref())
        .await
        .map_err(refused)?;
    let grant = authenticated.map_err(unauthorized)?;
    let caller = auth.confirm(&grant).await.map_err(unauthorized)?;
    log.subject(&caller);
    Ok(caller)
}

fn unauthorized(failure: AuthFailure) -> Response {
    let mut response = error(
        StatusCode::UNAUTHORIZED,
        &format!("Unauthorized: {failure}"),
    );
    let challenge = match failure {
        AuthFailure::Invalid | AuthFailure::Expired => {
            r#"Bearer realm="hearth", error="invalid_token""#
        }
        AuthFailure::Missing | AuthFailure::WrongScheme => r#"Bearer realm="hearth""#,
    };
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}
