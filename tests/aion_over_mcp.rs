//! `ask_aion` over `/mcp` with a failing backend: the caller gets the generic answer, the log
//! gets the cause, and neither the backend URL nor its key appears in any answer or log line.

mod common;

use common::aion_stand_in::stand_in;
use common::capture::Captured;
use common::{config, request, settings};
use serde_json::json;

const KEY: &str = "aion-backend-key-for-tests";

#[tokio::test]
async fn over_mcp_the_url_and_key_stay_out_of_answers_and_logs() {
    let (captured, _logs) = Captured::installed();
    let (url, _) = stand_in("500").await;
    let vars = settings(&[
        ("AION_BACKEND_URL", url.as_str()),
        ("AION_BACKEND_API_KEY", KEY),
    ]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let h = common::harness_with(&config(&vars));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask_aion", "arguments": {"question": "Where is my key?"}}});
    let reply = common::rpc(&h.router, &body).await;
    assert_eq!(reply.body["result"]["isError"], true, "{}", reply.raw);
    let listed = common::rpc(
        &h.router,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    let tool = listed.body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ask_aion")
        .unwrap()
        .clone();
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(tool["annotations"]["openWorldHint"], true);
    assert_eq!(tool["annotations"]["idempotentHint"], false);
    let health = request(&h.router, "GET", "/healthz", &[], "").await;
    let logs = captured.text();
    assert!(
        logs.contains("status 500"),
        "the cause is logged: {logs}\n{}",
        reply.raw
    );
    for text in [&reply.raw, &listed.raw, &health.raw, &logs] {
        assert!(
            !text.contains(&url) && !text.contains("127.0.0.1:") && !text.contains(KEY),
            "{text}"
        );
        assert!(!text.contains("Where is my key"), "{text}");
    }
}

fn tool_names(listed: &serde_json::Value) -> Vec<String> {
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `MOCK_AION_BACKEND=true` answers from the canned guide even with a backend configured, and
/// the backend is never asked.
#[tokio::test]
async fn the_mock_switch_wins_over_a_configured_backend() {
    let (url, seen) = stand_in("ok").await;
    let vars = settings(&[
        ("AION_BACKEND_URL", url.as_str()),
        ("MOCK_AION_BACKEND", "true"),
    ]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let h = common::harness_with(&config(&vars));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask_aion", "arguments": {"question": "Where do herons nest?"}}});
    let reply = common::rpc(&h.router, &body).await;
    assert_eq!(reply.body["result"]["isError"], false, "{}", reply.raw);
    assert_eq!(
        reply.body["result"]["structuredContent"]["meta"]["source"],
        "mock"
    );
    assert!(seen.0.lock().unwrap().is_empty(), "the backend was asked");
    assert!(
        common::try_config(&[("MOCK_AION_BACKEND", "yes")])
            .unwrap_err()
            .to_string()
            .contains("MOCK_AION_BACKEND")
    );
}

/// Under Lambda a deployment with neither a backend nor the mock switch leaves `ask_aion`
/// out, says why in one log line, and never serves canned answers; with the switch it serves
/// the mock.
#[tokio::test]
async fn under_lambda_the_guide_needs_a_backend_or_the_mock_switch() {
    let (captured, _logs) = Captured::installed();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    for (mock, listed) in [("false", false), ("true", true)] {
        let vars = settings(&[("MOCK_AION_BACKEND", mock)]);
        let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let mut lambda = config(&vars);
        lambda.runtime = hearth_core::config::Runtime::Lambda;
        let h = common::harness_with(&lambda);
        let names = tool_names(&common::rpc(&h.router, &list).await.body);
        assert_eq!(names.contains(&"ask_aion".to_owned()), listed, "{names:?}");
        assert!(names.contains(&"scholia_catalog".to_owned()));
    }
    let logs = captured.text();
    assert_eq!(
        logs.matches("the aion toolset is left out").count(),
        1,
        "{logs}"
    );
    // A local server without a backend still answers from the mock.
    let h = common::harness(&[]);
    assert!(tool_names(&common::rpc(&h.router, &list).await.body).contains(&"ask_aion".into()));
}
