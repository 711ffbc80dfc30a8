//! A loopback stand-in for Bedrock's Converse API that plays scripted tool-use turns (moto
//! does not implement Converse). It speaks the REST JSON shapes the SDK sends and parses, so
//! the assistant under test runs its real Bedrock client against it.
//!
//! A script is chosen by the conversation's first user message (the person's words): the
//! first script whose `when` occurs in them, ignoring case. Its steps are played in order, one
//! per Converse call, and the step is the number of assistant messages already in the
//! conversation, so the stand-in keeps no state of its own. A step is a tool call
//! (`{"tool", "input"}`, or several as `{"tools": [...]}`), a reply (`{"text"}`) or a failure
//! (`{"fail": "throttled" | "slow" | "max_tokens" | "filtered"}`). In a tool input the string
//! `$answering` becomes the request id the system prompt names as the question last read
//! aloud (or, once the conversation has one, the `request_id` of the latest tool result), and
//! `$household` the household the prompt names.
//! Words no script matches get a plain reply.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};

/// Scripts as the stand-in reads them (`tests/assistant/scripts.json`).
#[derive(Debug, Clone, Deserialize)]
pub struct Scripts {
    pub scripts: Vec<Script>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Script {
    pub name: String,
    pub when: String,
    pub steps: Vec<Value>,
}

/// Every Converse request the stand-in answered: the model id in the path and the body.
pub type Seen = Arc<Mutex<Vec<(String, Value)>>>;

#[derive(Clone)]
struct Stand {
    scripts: Arc<Scripts>,
    seen: Seen,
}

impl Scripts {
    /// The scripts in a JSON file.
    pub fn load(path: &std::path::Path) -> Self {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
    }
}

/// The stand-in's routes.
pub fn router(scripts: Scripts, seen: Seen) -> Router {
    Router::new()
        .route("/model/{model}/converse", post(converse))
        .with_state(Stand {
            scripts: Arc::new(scripts),
            seen,
        })
}

/// Serves the stand-in on a free loopback port; returns its URL and what it saw.
pub async fn start(scripts: Scripts) -> (String, Seen) {
    let seen = Seen::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    let app = router(scripts, seen.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

async fn converse(State(stand): State<Stand>, Path(model): Path<String>, body: String) -> Response {
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    stand
        .seen
        .lock()
        .expect("seen")
        .push((model, request.clone()));
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let words = messages
        .first()
        .and_then(|first| first["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_lowercase();
    let step_index = messages
        .iter()
        .filter(|message| message["role"] == "assistant")
        .count();
    let Some(script) = stand
        .scripts
        .scripts
        .iter()
        .find(|script| words.contains(&script.when.to_lowercase()))
    else {
        return reply("The stand-in has no script for those words.", "end_turn");
    };
    let Some(step) = script.steps.get(step_index) else {
        return reply("The script has run out of steps.", "end_turn");
    };
    let system = request["system"][0]["text"].as_str().unwrap_or_default();
    let answering = latest_request(&messages).or_else(|| quoted_after(system, "was for request `"));
    let household = quoted_after(system, "it is `");
    if let Some(text) = step["text"].as_str() {
        return reply(text, "end_turn");
    }
    let calls: Vec<&Value> = match &step["tools"] {
        Value::Array(calls) => calls.iter().collect(),
        _ => vec![step],
    };
    if calls.iter().all(|call| call["tool"].is_string()) {
        let content: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                json!({"toolUse": {
                    "toolUseId": format!("tooluse-{step_index}-{index}"),
                    "name": call["tool"],
                    "input": substitute(&call["input"], answering.as_deref(), household.as_deref()),
                }})
            })
            .collect();
        return answer(json!({"role": "assistant", "content": content}), "tool_use");
    }
    match step["fail"].as_str() {
        Some("throttled") => (
            StatusCode::TOO_MANY_REQUESTS,
            [("x-amzn-ErrorType", "ThrottlingException")],
            r#"{"message":"Too many requests, please wait before trying again."}"#,
        )
            .into_response(),
        Some("slow") => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            reply("Too late.", "end_turn")
        }
        Some("max_tokens") => reply("I was going to say", "max_tokens"),
        Some("filtered") => reply("", "content_filtered"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "a malformed script step").into_response(),
    }
}

fn reply(text: &str, stop: &str) -> Response {
    answer(
        json!({"role": "assistant", "content": [{"text": text}]}),
        stop,
    )
}

fn answer(message: Value, stop: &str) -> Response {
    json!({"output": {"message": message}, "stopReason": stop,
        "usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120},
        "metrics": {"latencyMs": 5}})
    .to_string()
    .into_response()
}

/// The text between `marker` and the next backtick in the system prompt.
fn quoted_after(system: &str, marker: &str) -> Option<String> {
    let rest = system.split(marker).nth(1)?;
    rest.split('`').next().map(str::to_owned)
}

/// The `request_id` of the newest tool result in the conversation.
fn latest_request(messages: &[Value]) -> Option<String> {
    messages.iter().rev().find_map(|message| {
        message["content"].as_array()?.iter().find_map(|block| {
            let result = &block["toolResult"]["content"][0]["json"];
            result["request_id"].as_str().map(str::to_owned)
        })
    })
}

fn substitute(value: &Value, answering: Option<&str>, household: Option<&str>) -> Value {
    match value {
        Value::String(text) if text == "$answering" => {
            Value::String(answering.unwrap_or("no-question-was-read").to_owned())
        }
        Value::String(text) if text == "$household" => {
            Value::String(household.unwrap_or("no-household-was-named").to_owned())
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute(v, answering, household))
                .collect(),
        ),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, v)| (key.clone(), substitute(v, answering, household)))
                .collect(),
        ),
        other => other.clone(),
    }
}
