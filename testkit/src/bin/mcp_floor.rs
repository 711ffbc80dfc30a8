//! `mcp-floor [ADDR]`: the floor of the side-by-side benchmark (`scripts/bench`). The same
//! stack as Hearth's `/mcp` (rmcp's stateless Streamable HTTP service with JSON responses,
//! inside axum, mimalloc) with one tool, `explain_why`, that answers a fixed sentence: no
//! authentication, store, rate limit or logging. What it serves per second is the most Hearth
//! could serve on this machine, so Hearth's share of it is measured in the same run.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Clone)]
struct Floor {
    tools: Arc<Vec<Tool>>,
}

impl ServerHandler for Floor {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp-floor", "1"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "explain_why" {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "The recorded reason is the floor's fixed answer.",
        )])
        .into())
    }
}

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8005".to_owned());
    let schema = json!({"type": "object", "properties": {
        "household_id": {"type": "string"}, "question": {"type": "string"}}});
    let serde_json::Value::Object(schema) = schema else {
        unreachable!()
    };
    let floor = Floor {
        tools: Arc::new(vec![Tool::new(
            "explain_why",
            "Answers a fixed sentence.",
            schema,
        )]),
    };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_origins()
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(floor.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .expect("the address is free");
    axum::serve(listener, app).await.expect("the floor serves");
}
