//! The model half of `hearth assistant`: one Bedrock Converse call with Hearth's tools, and
//! the conversions between MCP's JSON and Converse's `Document`s.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::error::ProvideErrorMetadata;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, InferenceConfiguration, Message, StopReason,
    SystemContentBlock, Tool, ToolConfiguration, ToolInputSchema, ToolResultBlock,
    ToolResultContentBlock, ToolResultStatus, ToolSpecification,
};
use aws_smithy_types::{Document, Number};
use serde_json::Value;

/// The longest answer asked of the model per call, in tokens.
const MAX_TOKENS: i32 = 1024;

/// What the model did with one call.
#[derive(Debug)]
pub enum ModelTurn {
    /// It wants these tools called, in order; `message` goes back into the conversation.
    UseTools {
        message: Message,
        calls: Vec<ToolUse>,
    },
    /// It answered.
    Reply(String),
}

/// One tool call the model asked for.
#[derive(Debug, Clone)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// A tool as the model is told about it.
#[derive(Debug, Clone)]
pub struct ToolDescription {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Bedrock Converse with one model and Hearth's tools.
pub struct Model {
    client: Client,
    model: String,
    timeout: Duration,
}

impl Model {
    /// `timeout` bounds each Converse call.
    pub fn new(client: Client, model: String, timeout: Duration) -> Self {
        Self {
            client,
            model,
            timeout,
        }
    }

    pub fn id(&self) -> &str {
        &self.model
    }

    /// One Converse call. Every failure is a sentence for the person at the device: the
    /// model could not be reached, refused, or answered in a way the loop cannot use.
    pub async fn next(
        &self,
        system: &str,
        messages: &[Message],
        tools: &ToolConfiguration,
    ) -> Result<ModelTurn, String> {
        let asked = self
            .client
            .converse()
            .model_id(&self.model)
            .system(SystemContentBlock::Text(system.to_owned()))
            .set_messages(Some(messages.to_vec()))
            .tool_config(tools.clone())
            .inference_config(
                InferenceConfiguration::builder()
                    .max_tokens(MAX_TOKENS)
                    .temperature(0.0)
                    .build(),
            )
            .send();
        let output = match tokio::time::timeout(self.timeout, asked).await {
            Err(_) => {
                return Err(format!(
                    "the assistant model did not answer within {} s",
                    self.timeout.as_secs_f64()
                ));
            }
            Ok(Err(error)) => {
                // Bedrock's own words for a refusal (throttled, access denied, no such model);
                // for a connection that failed, the innermost cause.
                let cause = match error.as_service_error() {
                    Some(service) => format!(
                        "{}: {}",
                        service.code().unwrap_or("error"),
                        service.message().unwrap_or("no message")
                    ),
                    None => innermost_cause(&error),
                };
                tracing::warn!(model = %self.model, "assistant model call failed: {cause}");
                return Err(format!(
                    "the assistant model ({}) could not be reached: {cause}",
                    self.model
                ));
            }
            Ok(Ok(output)) => output,
        };
        let message = output
            .output
            .and_then(|output| output.as_message().ok().cloned())
            .ok_or("the assistant model answered without a message")?;
        match output.stop_reason {
            StopReason::ToolUse => {
                let calls: Vec<ToolUse> = message
                    .content
                    .iter()
                    .filter_map(|block| block.as_tool_use().ok())
                    .map(|block| ToolUse {
                        id: block.tool_use_id.clone(),
                        name: block.name.clone(),
                        input: to_json(&block.input),
                    })
                    .collect();
                if calls.is_empty() {
                    return Err("the assistant model asked for tools but named none".into());
                }
                Ok(ModelTurn::UseTools { message, calls })
            }
            StopReason::EndTurn | StopReason::StopSequence => {
                Ok(ModelTurn::Reply(text_of(&message)))
            }
            StopReason::MaxTokens => Err(format!(
                "the assistant model's answer was cut off at {MAX_TOKENS} tokens"
            )),
            StopReason::GuardrailIntervened | StopReason::ContentFiltered => {
                Err("the assistant model's answer was withheld by its content filter".into())
            }
            other => Err(format!(
                "the assistant model stopped without an answer ({})",
                other.as_str()
            )),
        }
    }
}

/// The person's words as the conversation's first message.
pub fn user_message(words: &str) -> Message {
    Message::builder()
        .role(ConversationRole::User)
        .content(ContentBlock::Text(words.to_owned()))
        .build()
        .expect("role and content are set")
}

/// The results of one round of tool calls, as the user message that answers them.
pub fn results_message(results: Vec<(String, Value, bool)>) -> Message {
    let mut builder = Message::builder().role(ConversationRole::User);
    for (id, result, is_error) in results {
        let block = ToolResultBlock::builder()
            .tool_use_id(id)
            .content(ToolResultContentBlock::Json(to_document(&result)))
            .status(if is_error {
                ToolResultStatus::Error
            } else {
                ToolResultStatus::Success
            })
            .build()
            .expect("id and content are set");
        builder = builder.content(ContentBlock::ToolResult(block));
    }
    builder.build().expect("role and content are set")
}

/// Hearth's tools as Converse tool specifications.
pub fn tool_configuration(tools: &[ToolDescription]) -> Result<ToolConfiguration, String> {
    let specs = tools
        .iter()
        .map(|tool| {
            ToolSpecification::builder()
                .name(&tool.name)
                .description(&tool.description)
                .input_schema(ToolInputSchema::Json(to_document(&tool.input_schema)))
                .build()
                .map(Tool::ToolSpec)
                .map_err(|error| format!("tool {} cannot be offered: {error}", tool.name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    ToolConfiguration::builder()
        .set_tools(Some(specs))
        .build()
        .map_err(|error| format!("the tools cannot be offered: {error}"))
}

fn text_of(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(|block| block.as_text().ok())
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

fn innermost_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

// The SDK's `Document` has no serde support outside an unstable cfg, so MCP's JSON is
// converted by hand, value for value.

/// JSON as a Converse document.
pub fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(if let Some(u) = n.as_u64() {
            Number::PosInt(u)
        } else if let Some(i) = n.as_i64() {
            Number::NegInt(i)
        } else {
            Number::Float(n.as_f64().unwrap_or_default())
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(object) => Document::Object(
            object
                .iter()
                .map(|(key, value)| (key.clone(), to_document(value)))
                .collect::<HashMap<_, _>>(),
        ),
    }
}

/// A Converse document as JSON (a float that JSON cannot hold, such as NaN, becomes null).
pub fn to_json(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Document::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, value)| (key.clone(), to_json(value)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_survives_a_round_trip_through_a_document() {
        let value = json!({"quantity": 2, "below": -3, "ratio": 0.25, "ok": true, "none": null,
            "list": ["a", {"b": [1, 2]}], "big": u64::MAX});
        assert_eq!(to_json(&to_document(&value)), value);
        assert_eq!(
            to_json(&Document::Number(Number::Float(f64::NAN))),
            Value::Null
        );
    }
}
