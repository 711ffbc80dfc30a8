//! The MCP half of `hearth assistant`: a real client (rmcp over Streamable HTTP) with a bearer
//! token and the turn's signed attestation on every request, listing Hearth's skills and tools
//! and calling them.

use std::collections::HashMap;

use http::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, GetPromptRequestParams,
    Implementation,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::converse::ToolDescription;
use crate::secret::Secret;

/// One turn's session with Hearth.
pub struct Session {
    client: RunningService<RoleClient, ClientConfig>,
}

/// What a tool call gave back, as the model is shown it.
pub struct ToolAnswer {
    /// `structuredContent` when there is some, else the text content.
    pub result: Value,
    pub is_error: bool,
}

impl Session {
    /// Connects to Hearth's `/mcp` at `url` and initialises, sending `headers` (the signed
    /// attestation) and the bearer `token` on every request.
    pub async fn open(
        url: &str,
        token: &Secret,
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<Self, String> {
        let config = StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(token.expose())
            .custom_headers(headers.into_iter().collect::<HashMap<_, _>>());
        let transport = StreamableHttpClientTransport::from_config(config);
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("hearth-assistant", env!("CARGO_PKG_VERSION")),
        );
        let client = info
            .serve(transport)
            .await
            .map_err(|error| format!("Hearth at {url} could not be reached: {error}"))?;
        Ok(Self { client })
    }

    /// Every skill Hearth serves as a prompt, joined: the assistant's instructions.
    pub async fn skills(&self) -> Result<String, String> {
        let prompts = self
            .client
            .list_all_prompts()
            .await
            .map_err(|error| failed("list its skills", &error))?;
        let mut texts = Vec::new();
        for prompt in prompts {
            let fetched = self
                .client
                .get_prompt(GetPromptRequestParams::new(&prompt.name))
                .await
                .map_err(|error| failed("send its skills", &error))?;
            for message in fetched.messages {
                if let Some(text) = message.content.as_text() {
                    texts.push(text.text.clone());
                }
            }
        }
        Ok(texts.join("\n\n"))
    }

    /// Every tool Hearth lists, as the model is told about them.
    pub async fn tools(&self) -> Result<Vec<ToolDescription>, String> {
        let tools = self
            .client
            .list_all_tools()
            .await
            .map_err(|error| failed("list its tools", &error))?;
        Ok(tools
            .into_iter()
            .map(|tool| ToolDescription {
                name: tool.name.to_string(),
                description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object(tool.input_schema.as_ref().clone()),
            })
            .collect())
    }

    /// Calls tool `name`. A JSON-RPC error (an unknown tool, say) is an error result the
    /// model can correct; only a lost connection is an `Err`.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<ToolAnswer, String> {
        let Value::Object(arguments) = arguments else {
            return Ok(ToolAnswer {
                result: json!({"error": "the tool arguments must be a JSON object"}),
                is_error: true,
            });
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        match self.client.call_tool(params).await {
            Ok(result) => {
                let is_error = result.is_error.unwrap_or(false);
                let result = match result.structured_content {
                    Some(structured) => structured,
                    None => json!({"text": text_of(&result.content)}),
                };
                Ok(ToolAnswer { result, is_error })
            }
            Err(ServiceError::McpError(error)) => Ok(ToolAnswer {
                result: json!({"error": error.message}),
                is_error: true,
            }),
            Err(error) => Err(failed(&format!("answer {name}"), &error)),
        }
    }

    pub async fn close(self) {
        // The server is stateless: there is no session to end, only the client task.
        let _ = self.client.cancel().await;
    }
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn failed(what: &str, error: &ServiceError) -> String {
    format!("Hearth did not {what}: {error}")
}
