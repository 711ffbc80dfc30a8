//! A loopback stand-in for an OpenAI-compatible server: `POST /v1/chat/completions` and
//! `GET /v1/models` in the shapes Ollama, llama.cpp's server and vLLM answer with (no model
//! can be fetched here). Each answer is set by the test ([`Reply`]), including the ways a
//! real server fails: an error status, a refusal, a filtered answer, a slow one, and a server
//! without structured output that refuses `response_format` with 400.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// The model name the stand-in lists and answers as.
pub const MODEL: &str = "stand-in-judge";

/// What the next completions are answered with.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The assistant message's content.
    Content(String),
    /// [`Reply::Content`] after this delay.
    Slow(Duration, String),
    /// This status and body, as they are.
    Status(u16, String),
    /// A refusal in `message.refusal` with no content, as OpenAI's structured outputs give.
    Refusal,
    /// `finish_reason: content_filter` with part of an answer.
    Filtered,
    /// A server without structured output: 400 to a request with `response_format`, and the
    /// content to one without.
    NoStructuredOutput(String),
}

/// One request the stand-in answered.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The path asked for.
    pub path: &'static str,
    /// The `Authorization` header, when there was one.
    pub authorization: Option<String>,
    /// The JSON body (null for `GET /v1/models`).
    pub body: Value,
}

#[derive(Clone)]
struct Stand {
    reply: Arc<Mutex<Reply>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A running stand-in; it stops with the test's runtime.
pub struct ChatStandIn {
    /// The API's base URL, `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    stand: Stand,
}

impl ChatStandIn {
    /// Serves the stand-in on a free loopback port, answering with `reply`.
    pub async fn start(reply: Reply) -> Self {
        let stand = Stand {
            reply: Arc::new(Mutex::new(reply)),
            seen: Arc::default(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/v1/models", get(models))
            .with_state(stand.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("an address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { base_url, stand }
    }

    /// Answers the next requests with `reply`.
    pub fn answer(&self, reply: Reply) {
        *self.stand.reply.lock().expect("the reply lock") = reply;
    }

    /// Every request answered so far, oldest first.
    pub fn seen(&self) -> Vec<Seen> {
        self.stand.seen.lock().expect("the seen lock").clone()
    }

    /// The chat completion requests answered so far.
    pub fn completions(&self) -> Vec<Value> {
        self.seen()
            .into_iter()
            .filter(|seen| seen.path == "/v1/chat/completions")
            .map(|seen| seen.body)
            .collect()
    }
}

fn authorization(headers: &HeaderMap) -> Option<String> {
    headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

async fn models(State(stand): State<Stand>, headers: HeaderMap) -> Response {
    stand.seen.lock().expect("the seen lock").push(Seen {
        path: "/v1/models",
        authorization: authorization(&headers),
        body: Value::Null,
    });
    axum::Json(json!({
        "object": "list",
        "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "hearth-testkit"}],
    }))
    .into_response()
}

async fn completions(State(stand): State<Stand>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let asks_for_schema = body.get("response_format").is_some();
    stand.seen.lock().expect("the seen lock").push(Seen {
        path: "/v1/chat/completions",
        authorization: authorization(&headers),
        body,
    });
    let reply = stand.reply.lock().expect("the reply lock").clone();
    match reply {
        Reply::Content(text) => answer(json!({"role": "assistant", "content": text}), "stop"),
        Reply::Slow(delay, text) => {
            tokio::time::sleep(delay).await;
            answer(json!({"role": "assistant", "content": text}), "stop")
        }
        Reply::Status(status, body) => (
            StatusCode::from_u16(status).expect("a valid status"),
            [("content-type", "application/json")],
            body,
        )
            .into_response(),
        Reply::Refusal => answer(
            json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}),
            "stop",
        ),
        Reply::Filtered => answer(
            json!({"role": "assistant", "content": "{\"verdict\": \"match\"}"}),
            "content_filter",
        ),
        Reply::NoStructuredOutput(_) if asks_for_schema => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": {
                "message": "response_format is not supported by this server",
                "type": "invalid_request_error",
            }})),
        )
            .into_response(),
        Reply::NoStructuredOutput(text) => {
            answer(json!({"role": "assistant", "content": text}), "stop")
        }
    }
}

/// A chat completion in the shape OpenAI-compatible servers answer with.
fn answer(message: Value, finish_reason: &str) -> Response {
    axum::Json(json!({
        "id": "chatcmpl-stand-in",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }))
    .into_response()
}
