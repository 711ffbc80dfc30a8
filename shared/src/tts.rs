//! `POST /tts`: speech for the web demo's "read answers aloud", from Amazon Polly.
//!
//! The same checks as `/mcp` run first (kill switch, Origin, bearer token, rate limits). The
//! body is `{"text": "…"}`; the text is sanitised as decision text is, and must be 1 to 300
//! characters after that. The answer is MP3 (`audio/mpeg`, `Cache-Control: no-store`), or 503
//! `voice unavailable` for any failure behind it. The text never reaches the logs.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use http::{HeaderValue, Method, StatusCode, header};
use serde::Deserialize;
use serde_json::json;

use crate::auth::{AuthFailure, Authenticator};
use crate::gate::{Gate, Refusal, client_ip};
use crate::media::{has_media_type, read_body};
use crate::speech::polly::Voice;
use crate::speech::sanitize::sanitize;
use crate::telemetry::{RequestLog, request_id};

/// The most characters spoken, after sanitising.
pub const MAX_SPOKEN_CHARS: usize = 300;

/// The largest request body read.
pub const MAX_TTS_BODY_BYTES: usize = 4096;

pub struct TtsEndpoint {
    auth: Authenticator,
    gate: Gate,
    /// `None` when speech is not configured: every request is then 503.
    voice: Option<Arc<Voice>>,
}

impl TtsEndpoint {
    pub fn new(auth: Authenticator, gate: Gate, voice: Option<Arc<Voice>>) -> Self {
        Self { auth, gate, voice }
    }
}

pub fn router(endpoint: Arc<TtsEndpoint>) -> Router {
    Router::new().route("/tts", any(tts)).with_state(endpoint)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpeakRequest {
    text: String,
}

async fn tts(State(endpoint): State<Arc<TtsEndpoint>>, request: Request) -> Response {
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    log.method(Some("tts"));
    let response = handle(&endpoint, request, &mut log).await;
    log.finish(response.status(), started.elapsed());
    response
}

fn error(status: StatusCode, message: &str) -> Response {
    let mut response = (status, axum::Json(json!({"error": message}))).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn handle(endpoint: &TtsEndpoint, request: Request, log: &mut RequestLog) -> Response {
    if request.method() != Method::POST {
        let mut response = error(StatusCode::METHOD_NOT_ALLOWED, "use POST");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    let refused = |refusal: Refusal| {
        let mut response = error(refusal.status(), refusal.message());
        refusal.decorate(&mut response);
        response
    };
    if let Err(refusal) = endpoint.gate.check_origin(request.headers()) {
        return refused(refusal);
    }
    let authenticated = endpoint
        .auth
        .authenticate(request.headers())
        .map(|grant| grant.subject.caller());
    if let Err(refusal) = endpoint
        .gate
        .admit(client_ip(&request), authenticated.as_ref().ok())
        .await
    {
        return refused(refusal);
    }
    let caller = match authenticated {
        Ok(caller) => caller,
        Err(failure) => return unauthorized(failure),
    };
    log.subject(&caller);
    let is_json = has_media_type(request.headers(), "application/json");
    if !is_json {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    let too_large = || {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the body exceeds {MAX_TTS_BODY_BYTES} bytes"),
        )
    };
    let (parts, body) = request.into_parts();
    let Some(bytes) = read_body(&parts.headers, body, MAX_TTS_BODY_BYTES).await else {
        return too_large();
    };
    let Ok(body) = serde_json::from_slice::<SpeakRequest>(&bytes) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the body must be {\"text\": \"…\"}",
        );
    };
    // Sanitise without a cut first, so that over-long text is refused rather than shortened.
    let spoken = sanitize(&body.text, body.text.chars().count());
    let length = spoken.chars().count();
    if length == 0 {
        return error(StatusCode::BAD_REQUEST, "the text is empty");
    }
    if length > MAX_SPOKEN_CHARS {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("the text is longer than {MAX_SPOKEN_CHARS} characters"),
        );
    }
    let Some(voice) = &endpoint.voice else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "voice unavailable");
    };
    match voice.speak(&spoken).await {
        Ok(audio) => {
            let mut response = Response::new(Body::from(audio));
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("audio/mpeg"));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(unavailable) => {
            tracing::warn!(cause = %unavailable, "tts: no audio");
            error(StatusCode::SERVICE_UNAVAILABLE, "voice unavailable")
        }
    }
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
