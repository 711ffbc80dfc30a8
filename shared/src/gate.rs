//! The checks every public endpoint runs before its own work: the operator's kill switch, the
//! exact browser-Origin allow-list and the rate limiter. Each endpoint renders a [`Refusal`]
//! in its own protocol's error shape.

use std::net::{IpAddr, SocketAddr};

use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lambda_http::RequestExt;
use lambda_http::request::RequestContext;
use serde_json::json;

use crate::auth::Caller;
use crate::ratelimit::{Admission, RateLimiter};

/// Why a request was turned away before reaching its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    OriginNotAllowed,
    RateLimited { retry_after_secs: u64 },
    LimiterUnavailable,
}

impl Refusal {
    pub fn status(self) -> StatusCode {
        match self {
            Refusal::OriginNotAllowed => StatusCode::FORBIDDEN,
            Refusal::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Refusal::LimiterUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Refusal::OriginNotAllowed => "Origin not allowed",
            Refusal::RateLimited { .. } => "Too many requests; retry after the time in Retry-After",
            Refusal::LimiterUnavailable => "Rate limiter unavailable; try again shortly",
        }
    }

    /// Adds the headers this refusal needs (`Retry-After`) to `response`.
    pub fn decorate(self, response: &mut Response) {
        if let Refusal::RateLimited { retry_after_secs } = self {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
        }
    }
}

pub struct Gate {
    allowed_origins: Vec<String>,
    limiter: RateLimiter,
}

impl Gate {
    pub fn new(allowed_origins: Vec<String>, limiter: RateLimiter) -> Self {
        Self {
            allowed_origins,
            limiter,
        }
    }

    /// A request without `Origin` (not from a browser) passes; one with an `Origin` must match
    /// an allowed origin exactly.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        match headers.get(header::ORIGIN) {
            None => Ok(()),
            Some(origin) => origin
                .to_str()
                .is_ok_and(|origin| self.allowed_origins.iter().any(|o| o == origin))
                .then_some(())
                .ok_or(Refusal::OriginNotAllowed),
        }
    }

    /// CORS for the routes a browser-based host fetches (the MCP endpoint, the OAuth JSON
    /// endpoints and the discovery documents): the same exact origins [`Gate::check_origin`]
    /// admits and no others, no credentials (a bearer token travels in a header the page sets
    /// itself, never in a cookie), and the headers MCP and OAuth clients send. A preflight
    /// from any other origin is answered without permission, so the browser stops there.
    pub fn cors(&self) -> tower_http::cors::CorsLayer {
        use tower_http::cors::{AllowOrigin, CorsLayer};
        let origins: Vec<HeaderValue> = self
            .allowed_origins
            .iter()
            .filter_map(|origin| HeaderValue::from_str(origin).ok())
            .collect();
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([http::Method::GET, http::Method::POST])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::ACCEPT,
                http::HeaderName::from_static("mcp-protocol-version"),
                http::HeaderName::from_static("mcp-method"),
                http::HeaderName::from_static("mcp-name"),
                http::HeaderName::from_static("last-event-id"),
            ])
            .expose_headers([
                header::WWW_AUTHENTICATE,
                header::RETRY_AFTER,
                http::HeaderName::from_static("mcp-protocol-version"),
            ])
            .max_age(std::time::Duration::from_secs(600))
    }

    /// Counts the request against its client IP and, if known, its caller.
    pub async fn admit(&self, ip: Option<IpAddr>, caller: Option<&Caller>) -> Result<(), Refusal> {
        match self.limiter.admit(ip, caller).await {
            Admission::Admitted => Ok(()),
            Admission::Limited { retry_after_secs } => {
                Err(Refusal::RateLimited { retry_after_secs })
            }
            Admission::Unavailable => Err(Refusal::LimiterUnavailable),
        }
    }
}

/// The client's address: API Gateway's `sourceIp` under Lambda, the TCP peer locally.
/// `X-Forwarded-For` is never trusted, because any client can write it.
pub fn client_ip(request: &Request) -> Option<IpAddr> {
    if let Some(context) = request.request_context_ref() {
        let source = match context {
            RequestContext::ApiGatewayV2(context) => context.http.source_ip.as_deref(),
            RequestContext::ApiGatewayV1(context) => context.identity.source_ip.as_deref(),
            // Other event sources are not routed to Hearth.
            #[allow(unreachable_patterns)]
            _ => None,
        };
        return source.and_then(|ip| ip.parse().ok());
    }
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip())
}

/// Wraps `router` so that, when the operator has disabled Hearth (`MCP_DISABLED`), every
/// request gets 503 before anything else runs, authentication included.
pub fn kill_switch(router: Router, disabled: bool) -> Router {
    if !disabled {
        return router;
    }
    router.layer(middleware::from_fn(refuse_disabled))
}

async fn refuse_disabled(_request: Request, _next: Next) -> Response {
    let body = json!({
        "error": "temporarily_unavailable",
        "error_description": "Hearth is disabled by its operator",
    });
    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
}
