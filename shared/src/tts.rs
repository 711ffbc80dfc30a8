//! `POST /tts`: speech for the web demo's "read answers aloud", from Amazon Polly.
//!
//! The same checks as `/mcp` run first (kill switch, Origin, bearer token, rate limits). The
//! body is `{"text": "…"}`; the text is sanitised as decision text is, and must be 1 to 300
//! characters after that. The answer is MP3 (`audio/mpeg`, `Cache-Control: no-store`), or 503
//! `{"error": "voice unavailable", "reason"}` for any failure behind it, the reason saying
//! why in a few fixed words (speech not configured, no AWS credentials or region, Polly
//! unreachable or its error code), so an operator can act on it. The text never reaches the
//! logs or the reason.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;

use crate::auth::Authenticator;
use crate::gate::Gate;
use crate::json_endpoint::{admit, error};
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

async fn handle(endpoint: &TtsEndpoint, request: Request, log: &mut RequestLog) -> Response {
    let bytes = match admit(
        &endpoint.auth,
        &endpoint.gate,
        request,
        MAX_TTS_BODY_BYTES,
        log,
    )
    .await
    {
        Ok((_caller, bytes)) => bytes,
        Err(refusal) => return refusal,
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
        return unavailable("speech is not configured on this server");
    };
    match voice.speak(&spoken).await {
        Ok(audio) => {
            let mut response = Response::new(Body::from(audio));
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("audio/mpeg"));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(failure) => {
            tracing::warn!(cause = %failure, "tts: no audio");
            unavailable(&format!("Amazon Polly: {}", failure.0))
        }
    }
}

fn unavailable(reason: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        axum::Json(serde_json::json!({"error": "voice unavailable", "reason": reason})),
    )
        .into_response()
}
