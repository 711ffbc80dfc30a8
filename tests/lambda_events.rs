//! Replays the API Gateway events in `events/mcp/` through the Lambda handler path: the event
//! JSON is decoded as the runtime would, adapted by `lambda_http`, served by the MCP function's
//! router, and the Lambda response is checked for status and body.

mod common;

use hearth_core::chain::sha256_hex;
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Context, LambdaEvent, Service};
use serde_json::Value;

/// Replays one fixture through `lambda_http`'s adapter and returns the Lambda response JSON.
async fn replay(file: &str) -> Value {
    // REST API (v1) events carry the stage in the path; deployments set this variable so the
    // function sees the same `/mcp` path as under an HTTP API. Every test sets the same value,
    // so concurrent tests cannot observe a different one.
    unsafe { std::env::set_var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true") };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("events/mcp")
        .join(file);
    let event =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let request: LambdaRequest = serde_json::from_str(&event).expect("API Gateway event");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lambda.db");
    let hash = sha256_hex(common::TOKEN);
    let config = common::config(&[
        ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
        ("MCP_JUDGE_TOKEN_HASHES", &hash),
        ("HEARTH_DB", db.to_str().unwrap()),
    ]);
    let router = hearth_core::app::mcp_router(&config).expect("router");
    let mut adapter = Adapter::from(router);
    let response = adapter
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .expect("handler answers");
    serde_json::to_value(&response).expect("Lambda response JSON")
}

fn status(response: &Value) -> u64 {
    response["statusCode"].as_u64().expect("statusCode")
}

fn body(response: &Value) -> Value {
    let text = response["body"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or(Value::Null)
}

async fn each_version(name: &str, check: impl Fn(&Value)) {
    for version in ["v2", "v1"] {
        let response = replay(&format!("{version}-{name}.json")).await;
        check(&response);
    }
}

#[tokio::test]
async fn initialize_echoes_the_alexa_protocol_version() {
    each_version("initialize", |response| {
        assert_eq!(status(response), 200, "{response}");
        let body = body(response);
        assert_eq!(body["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(body["result"]["serverInfo"]["name"], "hearth");
    })
    .await;
}

#[tokio::test]
async fn a_notification_gets_an_empty_202() {
    each_version("notification-initialized", |response| {
        assert_eq!(status(response), 202, "{response}");
        assert!(response["body"].as_str().unwrap_or_default().is_empty());
    })
    .await;
}

#[tokio::test]
async fn tools_list_names_the_decision_tools() {
    each_version("tools-list", |response| {
        assert_eq!(status(response), 200, "{response}");
        let names: Vec<String> = body(response)["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "record_decision",
                "explain_why",
                "whats_changed",
                "get_trace"
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn record_decision_returns_the_stored_record() {
    each_version("record-decision", |response| {
        assert_eq!(status(response), 200, "{response}");
        let result = &body(response)["result"];
        assert_eq!(result["isError"], false);
        let record = &result["structuredContent"];
        assert_eq!(record["seq"], 1);
        assert_eq!(record["action"], "dim lights");
        assert_eq!(record["trace_id"].as_str().unwrap().len(), 64);
    })
    .await;
}

#[tokio::test]
async fn get_is_405() {
    each_version("get-mcp", |response| {
        assert_eq!(status(response), 405, "{response}");
        assert_eq!(body(response)["error"]["code"], -32000);
    })
    .await;
}

#[tokio::test]
async fn a_call_without_a_token_is_401() {
    each_version("unauthenticated", |response| {
        assert_eq!(status(response), 401, "{response}");
        // v2 responses carry single-value headers, v1 responses multi-value ones.
        let challenge = response["headers"]["www-authenticate"]
            .as_str()
            .or_else(|| response["multiValueHeaders"]["www-authenticate"][0].as_str());
        assert!(
            challenge.is_some_and(|c| c.starts_with("Bearer")),
            "{response}"
        );
        assert!(body(response)["result"].is_null());
    })
    .await;
}
