//! Criterion bench for one `explain_why` tool call in process, as the MCP handler runs it
//! after the HTTP layers: the window read from SQLite (a file in a temporary directory), every
//! record verified, the question matched, and the `CallToolResult` built. No HTTP, no log
//! line. Run with `cargo bench -p hearth-core --bench tool_call`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use hearth_core::auth::Caller;
use hearth_core::clock::SystemClock;
use hearth_core::mcp::HearthServer;
use hearth_core::store::sqlite::SqliteStore;
use hearth_core::why::record::NewDecision;
use hearth_core::why::{WhyService, WhyToolset};
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, json};

fn explain_why(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let directory = tempfile::tempdir().expect("a temporary directory");
    let store = Arc::new(SqliteStore::open(&directory.path().join("bench.db")).expect("a store"));
    let service = Arc::new(WhyService::new(store, Arc::new(SystemClock)));
    let caller = Caller::unattested("5f2b".repeat(16));
    let mut inputs = Map::new();
    inputs.insert("brightness".into(), json!(20));
    inputs.insert("room".into(), json!("living room"));
    runtime.block_on(async {
        for n in 1..=25 {
            let action = format!("dim lights {n}");
            let decision = NewDecision {
                household_id: "bench-household",
                action: &action,
                reason: "Movie time requested by the user — a typical one-sentence reason.",
                inputs: &inputs,
                approver: "Demo parent",
            };
            service.record(&caller, decision).await.expect("recorded");
        }
    });
    let server = HearthServer::new(vec![Arc::new(WhyToolset::new(service))]);
    let arguments =
        json!({"household_id": "bench-household", "question": "why are the lights dim?"});
    let request: CallToolRequestParams = serde_json::from_value(json!({
        "name": "explain_why", "arguments": arguments}))
    .expect("a tool call");
    c.bench_function("explain_why_tool_call", |b| {
        b.iter(|| {
            let result = runtime.block_on(server.call(&caller, black_box(request.clone())));
            let (result, _) = result.expect("a tool this server serves");
            assert_eq!(result.is_error, Some(false));
            black_box(result)
        });
    });
}

criterion_group!(benches, explain_why);
criterion_main!(benches);
