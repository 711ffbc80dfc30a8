//! The simulated Alexa+ device in a browser: `GET /demo` serves the page (plain HTML, CSS and
//! JavaScript from `demo/`, built into the binary), which talks to the same authenticated
//! `/mcp`, `/oauth/judge` and `/tts` as every other client.
//!
//! Purchases need the device's signed speaker attestation. A real device holds the host key;
//! the page must not, so in local development `POST /demo/device` signs attestations for the
//! simulated device. It exists only with `HEARTH_DEMO_DEVICE=1`, which configuration refuses
//! under Lambda, and it needs a valid bearer token like every other endpoint. Anyone who can
//! call it can speak as any household member: that is exactly the simulation, and why it is
//! never deployed.

#[cfg(feature = "aws")]
pub mod assistant;
pub mod phone;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};

use crate::auth::Authenticator;
use crate::auth::attestation::{self, Attestation, AttestationRefusal};
use crate::clock::Clock;
use crate::countersign::household::HouseholdData;
use crate::gate::Gate;
use crate::json_endpoint::{admit, authorize, error};
use crate::secret::Secret;
use crate::telemetry::{RequestLog, request_id};

const INDEX: &str = include_str!("../../../demo/index.html");
const SCRIPT: &str = include_str!("../../../demo/app.js");
const CANONICAL: &str = include_str!("../../../demo/canonical.js");
const TLOG: &str = include_str!("../../../demo/tlog.js");
const STYLE: &str = include_str!("../../../demo/style.css");

/// Everything the page loads comes from this origin; nothing inline, nothing from a CDN.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; media-src 'self' blob:; img-src 'self' data:; base-uri 'none'; \
form-action 'none'; frame-ancestors 'none'";

/// The page and its assets.
pub fn page_router(gate: &Gate) -> Router {
    let pages = Router::new()
        .route("/demo", get(index))
        .route("/demo/{asset}", get(asset));
    crate::gate::limit(pages, gate, crate::gate::json_refusal)
}

async fn index() -> Response {
    page(INDEX, "text/html; charset=utf-8")
}

/// The page's scripts and style, kept by browsers for five minutes, as the passkey pages'
/// are: the household page loads `canonical.js` and `tlog.js` on every view, and each request
/// spends its address's budget.
async fn asset(Path(name): Path<String>) -> Response {
    let mut response = match name.as_str() {
        "app.js" => page(SCRIPT, "text/javascript; charset=utf-8"),
        "canonical.js" => page(CANONICAL, "text/javascript; charset=utf-8"),
        "tlog.js" => page(TLOG, "text/javascript; charset=utf-8"),
        "style.css" => page(STYLE, "text/css; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}

fn page(text: &'static str, content_type: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The largest request body the device endpoint reads.
pub const MAX_DEVICE_BODY_BYTES: usize = 4096;

/// `POST /demo/device`: signs an attestation for the simulated device.
pub struct DeviceEndpoint {
    auth: Authenticator,
    gate: Gate,
    host_key: Option<Secret>,
    clock: Arc<dyn Clock>,
    household: Arc<HouseholdData>,
}

impl DeviceEndpoint {
    pub fn new(
        auth: Authenticator,
        gate: Gate,
        host_key: Option<Secret>,
        clock: Arc<dyn Clock>,
        household: Arc<HouseholdData>,
    ) -> Self {
        Self {
            auth,
            gate,
            host_key,
            clock,
            household,
        }
    }
}

impl DeviceEndpoint {
    /// The key to sign for `member` with, or why not (the status and the sentence): the
    /// household has no such member, or the server no host key.
    fn signing_key(&self, member: &str) -> Result<&Secret, (StatusCode, &'static str)> {
        if self.household.member(member).is_none() {
            return Err((
                StatusCode::BAD_REQUEST,
                "member_id is not a household member",
            ));
        }
        self.host_key.as_ref().ok_or((
            StatusCode::SERVICE_UNAVAILABLE,
            "no host key (COUNTERSIGN_HOST_KEY) to sign with",
        ))
    }
}

pub fn device_router(endpoint: Arc<DeviceEndpoint>) -> Router {
    Router::new()
        .route("/demo/device", any(device))
        .with_state(endpoint)
}

/// What the page says was heard: who (the speaker picker), which turn, the words, and which
/// request's question was last read aloud to this person.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Heard {
    member_id: String,
    turn_id: String,
    utterances: Vec<String>,
    answering: Option<String>,
}

#[derive(Serialize)]
struct Signed {
    attestation: String,
    signature: String,
}

/// A speaker the simulated device recognises. A real device is enrolled with its household's
/// voices; this one knows the household's members, so the page can offer them before anyone
/// has spoken (the rules resource itself needs a signed speaker).
#[derive(Serialize)]
struct Enrolled<'a> {
    id: &'a str,
    name: &'a str,
}

async fn device(State(endpoint): State<Arc<DeviceEndpoint>>, request: Request) -> Response {
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    log.method(Some("demo_device"));
    let response = if request.method() == http::Method::GET {
        enrolled(&endpoint, request, &mut log).await
    } else {
        sign(&endpoint, request, &mut log).await
    };
    log.finish(response.status(), started.elapsed());
    response
}

/// `GET /demo/device`: `{"members": [{"id", "name"}]}`, the speakers the device knows.
async fn enrolled(endpoint: &DeviceEndpoint, request: Request, log: &mut RequestLog) -> Response {
    let ip = endpoint.gate.client_ip(&request);
    let headers = request.headers();
    if let Err(refusal) = authorize(&endpoint.auth, &endpoint.gate, headers, ip, log).await {
        return refusal;
    }
    let members: Vec<Enrolled<'_>> = endpoint
        .household
        .household
        .members
        .iter()
        .map(|member| Enrolled {
            id: &member.id,
            name: &member.name,
        })
        .collect();
    axum::Json(serde_json::json!({ "members": members })).into_response()
}

async fn sign(endpoint: &DeviceEndpoint, request: Request, log: &mut RequestLog) -> Response {
    let bytes = match admit(
        &endpoint.auth,
        &endpoint.gate,
        request,
        MAX_DEVICE_BODY_BYTES,
        log,
    )
    .await
    {
        Ok((_caller, bytes)) => bytes,
        Err(refusal) => return refusal,
    };
    let Ok(heard) = serde_json::from_slice::<Heard>(&bytes) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the body must be {\"member_id\", \"turn_id\", \"utterances\", \"answering\"}",
        );
    };
    let key = match endpoint.signing_key(&heard.member_id) {
        Ok(key) => key,
        Err((status, why)) => return error(status, why),
    };
    let attestation = Attestation {
        member_id: heard.member_id,
        turn_id: heard.turn_id,
        utterances: heard.utterances,
        issued_at: endpoint.clock.now().unix_timestamp(),
        answering: heard.answering,
    };
    if let Err(AttestationRefusal::Malformed(reason)) = attestation::check_shape(&attestation) {
        return error(StatusCode::BAD_REQUEST, &reason);
    }
    let encoded = attestation.encode();
    let signed = Signed {
        signature: attestation::sign(key.expose(), &encoded),
        attestation: encoded,
    };
    let mut response = axum::Json(signed).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
