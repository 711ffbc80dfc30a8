//! Token-endpoint errors in the shape of RFC 6749 §5.2 (and `invalid_target` from RFC 8707).

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use crate::gate::Refusal;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    status: StatusCode,
    code: &'static str,
    description: String,
    retry_after_secs: Option<u64>,
}

impl OAuthError {
    fn new(status: StatusCode, code: &'static str, description: impl Into<String>) -> Self {
        Self {
            status,
            code,
            description: description.into(),
            retry_after_secs: None,
        }
    }

    /// A request the gate turned away (Origin, rate limit, limiter down).
    pub fn refused(refusal: Refusal) -> Self {
        let mut error = Self::new(refusal.status(), refusal.code(), refusal.message());
        if let Refusal::RateLimited { retry_after_secs } = refusal {
            error.retry_after_secs = Some(retry_after_secs);
        }
        error
    }

    pub fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", description)
    }

    /// 401 with `WWW-Authenticate: Basic`, as §5.2 asks when the client used (or should have
    /// used) the Authorization header.
    pub fn invalid_client(description: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_client", description)
    }

    /// The client authenticated but may not use this grant type (RFC 6749 §5.2).
    pub fn unauthorized_client(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "unauthorized_client", description)
    }

    pub fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_grant", description)
    }

    pub fn unsupported_grant_type(description: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            description,
        )
    }

    pub fn invalid_scope(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_scope", description)
    }

    pub fn invalid_target(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_target", description)
    }

    /// A refusal that is not the client's fault: the server lacks configuration it needs.
    pub fn unavailable(description: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            description,
        )
    }

    /// Any other status (405, 413, 403, 429) with an OAuth-shaped body.
    pub fn with_status(
        status: StatusCode,
        code: &'static str,
        description: impl Into<String>,
    ) -> Self {
        Self::new(status, code, description)
    }

    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn description(&self) -> &str {
        &self.description
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.code, "error_description": self.description});
        let mut response = (self.status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(seconds) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.code == "invalid_client" {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Basic realm="hearth", charset="UTF-8""#),
            );
        }
        response
    }
}
