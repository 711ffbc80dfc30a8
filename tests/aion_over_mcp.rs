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
    let captured = Captured::default();
    let sink = captured.clone();
    let _logs =
        tracing::subscriber::set_default(hearth_core::telemetry::subscriber(move || sink.clone()));
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
