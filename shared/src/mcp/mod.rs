//! MCP protocol wiring: the rmcp server handler over the enabled toolsets, and the `/mcp`
//! HTTP endpoint (stateless Streamable HTTP with JSON responses) in front of it.

pub mod body;
pub mod handler;
pub mod http;
mod layers;

pub use handler::HearthServer;
pub use http::{McpEndpoint, router};

/// Protocol versions Hearth speaks. Alexa+ initializes with 2025-03-26; current SDKs send the
/// later ones. 2026-07-28 is stateless: no `initialize`, `server/discover` instead, and every
/// request names its version and the client's capabilities in `_meta`. A client that
/// initializes asking for a version Hearth lacks is offered 2025-11-25.
pub const PROTOCOL_VERSIONS: &[&str] = &["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

/// How long a 2026-07-28 client may keep what `server/discover`, `tools/list`,
/// `prompts/list` and `resources/list` answer: they change only when the server's
/// configuration does, and are the same for every caller (`cacheScope: "public"`).
pub const LIST_TTL_MS: u64 = 5 * 60_000;

/// Largest `arguments` object of one tool call, in compact JSON bytes.
pub const MAX_TOOL_ARGUMENT_BYTES: usize = 8192;
/// Largest HTTP request body on `/mcp`.
pub const MAX_BODY_BYTES: usize = 65_536;

/// Set by the handler when a tool call's result is an `isError` result, for the request's log
/// line (its `ToolErrors` mark or metric, and a refusal's fixed code as its `reason`); the HTTP layer
/// puts one in each request's extensions.
#[derive(Debug, Clone, Default)]
pub struct ToolOutcome(std::sync::Arc<std::sync::OnceLock<Option<&'static str>>>);

impl ToolOutcome {
    /// The call failed, for the reason `code` names if it is a refusal.
    pub fn fail(&self, code: Option<&'static str>) {
        let _ = self.0.set(code);
    }

    pub fn failed(&self) -> bool {
        self.0.get().is_some()
    }

    /// The refusal's code, if the call was refused.
    pub fn reason(&self) -> Option<&'static str> {
        self.0.get().copied().flatten()
    }
}
