//! A loopback stand-in for the AionRealm backend, with a scenario per failure mode.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// What the stand-in received.
#[derive(Clone, Default)]
pub struct Seen(pub Arc<Mutex<Vec<(HeaderMap, Value)>>>);

async fn backend(
    State((seen, scenario)): State<(Seen, &'static str)>,
    headers: HeaderMap,
    body: String,
) -> Response {
    seen.0
        .lock()
        .unwrap()
        .push((headers, serde_json::from_str(&body).unwrap_or(Value::Null)));
    let json = |value: Value| {
        (
            [(header::CONTENT_TYPE, "application/json")],
            value.to_string(),
        )
            .into_response()
    };
    match scenario {
        "ok" => json(json!({"text": "Begin with one small step.", "meta": {"model": "aion-1"}})),
        "500" => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        "malformed" => {
            ([(header::CONTENT_TYPE, "application/json")], "{\"text\": ").into_response()
        }
        "empty" => json(json!({"text": "  ", "meta": {}})),
        // Exactly at and one byte past the 64 KiB answer limit.
        "at_limit" => json(sized_answer(hearth_core::aion::backend::MAX_ANSWER_BYTES)),
        "past_limit" => json(sized_answer(
            hearth_core::aion::backend::MAX_ANSWER_BYTES + 1,
        )),
        "html" => ([(header::CONTENT_TYPE, "text/html")], "<p>hello</p>").into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(2)).await;
            json(json!({"text": "too late", "meta": {}}))
        }
        other => panic!("unknown scenario {other}"),
    }
}

/// Starts the stand-in on a loopback port; returns its URL and what it sees.
pub async fn stand_in(scenario: &'static str) -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route("/ask", post(backend))
        .with_state((seen.clone(), scenario));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/ask", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// A valid answer whose JSON is exactly `bytes` long.
fn sized_answer(bytes: usize) -> Value {
    let empty = json!({"text": "", "meta": {}}).to_string().len();
    json!({"text": "x".repeat(bytes - empty), "meta": {}})
}
