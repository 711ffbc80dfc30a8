//! The checks every public route runs before its own work, in one order: the operator's kill
//! switch, the exact browser-Origin allow-list, then the rate limiter's counters for the
//! client's address (and, once a bearer token names one, its subject). Every route but
//! `/healthz` passes them; `app::ROUTES` says how each is limited.
//!
//! Two ways through, one gate:
//! - [`limit`] wraps the routes that have no caller to count (pages, discovery documents, the
//!   OAuth forms but the token endpoint) in a layer that runs [`Gate::admit_address`] before
//!   any handler, and so before any store read of the route's own;
//! - the routes that count a caller as well (`/mcp`, `/tts`, the demo's device) call
//!   [`Gate::check_origin`] and then [`Gate::admit`] themselves once the token is read, so
//!   that one counter call covers both and `/mcp` can read a household's account beside it;
//!   `/oauth/token` does the same with the address alone, to read a refresh token's family
//!   beside it ([`admission_first`]).
//!
//! Each route family renders a [`Refusal`] in its own shape (a page, OAuth's JSON, JSON-RPC).
//! The client's address is API Gateway's source IP under Lambda, and otherwise the TCP peer,
//! or, from a proxy in `HEARTH_TRUSTED_PROXIES`, the client it forwarded for (see
//! [`crate::forwarded`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lambda_http::RequestExt;
use lambda_http::request::RequestContext;
use serde_json::json;

use crate::auth::Caller;
use crate::forwarded::TrustedProxies;
use crate::ratelimit::{Admission, RateLimiter};
use crate::telemetry::{RequestLog, request_id};

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

    /// The refusal's code in OAuth's error vocabulary (RFC 6749 §5.2 and its kin), which the
    /// JSON answers of every route family use.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::OriginNotAllowed => "access_denied",
            Refusal::RateLimited { .. } => "rate_limited",
            Refusal::LimiterUnavailable => "temporarily_unavailable",
        }
    }

    /// What a person reading a page is told, with what to do next.
    pub fn for_a_person(self) -> &'static str {
        match self {
            Refusal::OriginNotAllowed => {
                "This request came from another website. Open the link itself instead."
            }
            Refusal::RateLimited { .. } => {
                "Too many requests came from your network just now. Wait a minute, then try again."
            }
            Refusal::LimiterUnavailable => {
                "Hearth cannot take requests for a moment. Try again in a minute."
            }
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

/// One deployment's gate. Cloning it shares its limiter (and so the limiter's local counts
/// during a store outage).
#[derive(Clone)]
pub struct Gate {
    allowed_origins: Arc<[String]>,
    limiter: Arc<RateLimiter>,
    proxies: TrustedProxies,
}

impl Gate {
    pub fn new(allowed_origins: Vec<String>, limiter: RateLimiter) -> Self {
        Self {
            allowed_origins: allowed_origins.into(),
            limiter: Arc::new(limiter),
            proxies: TrustedProxies::default(),
        }
    }

    /// The same gate believing the forwarding headers of `proxies` (`HEARTH_TRUSTED_PROXIES`).
    pub fn with_trusted_proxies(mut self, proxies: TrustedProxies) -> Self {
        self.proxies = proxies;
        self
    }

    /// The client's address: API Gateway's `sourceIp` under Lambda; locally the TCP peer, or
    /// the client a trusted proxy forwarded for.
    pub fn client_ip(&self, request: &Request) -> Option<IpAddr> {
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
            .map(|ConnectInfo(peer)| self.proxies.client_of(peer.ip(), request.headers()))
    }

    /// Origin, then the counters of the client's address `ip`: the whole gate for a route
    /// with no caller to count.
    pub async fn admit_address(
        &self,
        headers: &HeaderMap,
        ip: Option<IpAddr>,
    ) -> Result<(), Refusal> {
        self.check_origin(headers)?;
        self.admit(ip, None).await
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

/// Awaits `admission` and `head` together: what a route reads in memory and from the store
/// beside its admission, so that both are one round trip. Admission's verdict comes first
/// whichever finishes first: its refusal is the answer, and drops `head` unfinished or
/// unread; once admitted, the head's own refusal is the caller's to give.
pub async fn admission_first<A, H, E>(
    admission: impl Future<Output = Result<A, E>>,
    head: impl Future<Output = H>,
) -> Result<(A, H), E> {
    use futures_util::future::{Either, select};
    let admission = std::pin::pin!(admission);
    let head = std::pin::pin!(head);
    match select(admission, head).await {
        Either::Left((admitted, head)) => {
            let admitted = admitted?;
            Ok((admitted, head.await))
        }
        Either::Right((head, admission)) => Ok((admission.await?, head)),
    }
}

/// How a route family answers a refusal of the gate, in its own shape.
pub type Render = fn(Refusal, &Request) -> Response;

/// Wraps every route of `routes` in [`Gate::admit_address`], answering a refusal as `render`
/// shapes it, with `Retry-After` when it is a rate limit, and one request log line. Routes
/// only: an unknown path's 404 and a known path's 405 are answered without the counters.
pub fn limit<S>(routes: Router<S>, gate: &Gate, render: Render) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes.route_layer(middleware::from_fn_with_state(
        (gate.clone(), render),
        admitted_by_address,
    ))
}

async fn admitted_by_address(
    State((gate, render)): State<(Gate, Render)>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let ip = gate.client_ip(&request);
    match gate.admit_address(request.headers(), ip).await {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            let log = RequestLog::new(request_id(&request));
            let mut response = render(refusal, &request);
            refusal.decorate(&mut response);
            log.finish(response.status(), started.elapsed());
            response
        }
    }
}

/// CORS for `routes`, which a browser-based host fetches: [`Gate::cors`], and a preflight from
/// an origin not allowed answered 403 with a request log line naming the origin, where the
/// CORS layer alone would answer it without permission and log nothing.
pub fn browser_access<S>(routes: Router<S>, gate: &Gate) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes
        .layer(gate.cors())
        .layer(middleware::from_fn_with_state(
            gate.clone(),
            foreign_preflight,
        ))
}

async fn foreign_preflight(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let preflight = request.method() == http::Method::OPTIONS
        && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let Some(origin) = headers.get(header::ORIGIN).filter(|_| preflight) else {
        return next.run(request).await;
    };
    if gate.check_origin(headers).is_ok() {
        return next.run(request).await;
    }
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    log.method(Some("cors_preflight"));
    log.refused_origin(origin.to_str().unwrap_or_default());
    let response = StatusCode::FORBIDDEN.into_response();
    log.finish(response.status(), started.elapsed());
    response
}

/// A refusal as JSON in OAuth's shape, `{"error", "error_description"}`: for discovery
/// documents and other routes a program fetches.
pub fn json_refusal(refusal: Refusal, _request: &Request) -> Response {
    let body = json!({"error": refusal.code(), "error_description": refusal.message()});
    let mut response = (refusal.status(), axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
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
