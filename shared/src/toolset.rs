//! The seam between the MCP wiring and the toolsets: each toolset describes its tools (typed
//! arguments with generated input and output schemas, and annotations) and answers calls for
//! the caller the HTTP layer authenticated. Toolsets never see HTTP or JSON-RPC.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{JsonObject, Resource, ResourceContents, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::auth::Caller;
use crate::store::ChainRead;

/// The result of a tool call: structured content with a short text; a negative verdict that
/// still carries structured content (an `isError` result with `structuredContent`, e.g. a lint
/// report that found errors); a refusal a voice may read; or a plain failure message that
/// becomes an `isError` result.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    Success {
        text: String,
        structured: Value,
    },
    Rejected {
        text: String,
        structured: Value,
    },
    /// An `isError` result whose text a host may read aloud (`say`), with the technical
    /// `reason` for developers in the result's `_meta` and a fixed `code` for the request's
    /// log line.
    Refused {
        say: String,
        reason: String,
        code: &'static str,
    },
    Failure(String),
}

impl ToolOutput {
    /// A success whose structured content is `value` serialised.
    pub fn success(text: impl Into<String>, value: &impl serde::Serialize) -> Self {
        match serde_json::to_value(value) {
            Ok(structured) => Self::Success {
                text: text.into(),
                structured,
            },
            Err(_) => Self::Failure("The result could not be encoded.".into()),
        }
    }

    /// An `isError` result whose structured content is `value` serialised.
    pub fn rejected(text: impl Into<String>, value: &impl serde::Serialize) -> Self {
        match serde_json::to_value(value) {
            Ok(structured) => Self::Rejected {
                text: text.into(),
                structured,
            },
            Err(_) => Self::Failure("The result could not be encoded.".into()),
        }
    }

    pub fn failure(message: impl Into<String>) -> Self {
        Self::Failure(message.into())
    }
}

#[async_trait]
pub trait Toolset: Send + Sync + 'static {
    /// The name used in `HEARTH_TOOLSETS`.
    fn name(&self) -> &'static str;

    /// The tools this toolset serves, in listing order.
    fn tools(&self) -> Vec<Tool>;

    /// Runs tool `name`, or returns `None` if this toolset has no such tool.
    async fn call(&self, caller: &Caller, name: &str, arguments: JsonObject) -> Option<ToolOutput>;

    /// Reads, for tool `name` called with `arguments` (the message's JSON text of them, as
    /// sent and not yet decoded) by `caller`, the chain window the call
    /// would read first and only, when the arguments alone say which (most tools read nothing
    /// ahead). The HTTP layer runs this beside the request's admission and hands the read to
    /// the call in [`Caller::read_ahead`]; the call uses it only if its own key matches.
    async fn read_ahead(
        &self,
        _caller: &Caller,
        _name: &str,
        _arguments: Option<&str>,
    ) -> Option<ChainRead> {
        None
    }

    /// Whether tool `name`, called with a household token, starts from that household's
    /// account (its rules): the HTTP layer then reads the account beside the request's
    /// admission, as it does for any request carrying a device attestation, and hands it to
    /// the call in [`crate::auth::HouseholdCaller::account`].
    fn reads_household_account(&self, _name: &str) -> bool {
        false
    }

    /// The resources this toolset serves; most serve none.
    fn resources(&self) -> Vec<Resource> {
        Vec::new()
    }

    /// Reads resource `uri`, or returns `None` if this toolset has no such resource. A
    /// refusal (this caller may not read it) is a sentence safe to show the caller.
    async fn read_resource(
        &self,
        _caller: &Caller,
        _uri: &str,
    ) -> Option<Result<ResourceContents, String>> {
        None
    }
}

/// Describes a tool from its argument and output types.
pub fn describe<Args, Output>(
    name: &'static str,
    title: &str,
    description: &'static str,
    annotations: ToolAnnotations,
) -> Tool
where
    Args: JsonSchema + 'static,
    Output: JsonSchema + 'static,
{
    let mut tool = Tool::new(name, description, JsonObject::new())
        .with_title(title)
        .with_input_schema::<Args>()
        .with_output_schema::<Output>()
        .annotate(annotations);
    tool.input_schema = Arc::new(standard_formats_only(&tool.input_schema));
    tool.output_schema = tool
        .output_schema
        .map(|schema| Arc::new(standard_formats_only(&schema)));
    tool
}

/// The `format` values JSON Schema 2020-12 defines (§7.3). Validators such as Ajv, which the
/// TypeScript SDK runs over every listed schema, warn about any other value.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` without the `format` annotations schemars adds for Rust number types (`uint64`,
/// `uint32`, `uint`, `int64`, `double`, ...), which are not JSON Schema formats. The range
/// they stood for stays as `minimum`/`maximum`, which schemars writes beside them.
pub fn standard_formats_only(schema: &JsonObject) -> JsonObject {
    fn clean(value: &mut Value) {
        match value {
            Value::Object(object) => {
                let non_standard = object
                    .get("format")
                    .and_then(Value::as_str)
                    .is_some_and(|format| !STANDARD_FORMATS.contains(&format));
                if non_standard {
                    object.remove("format");
                }
                object.values_mut().for_each(clean);
            }
            Value::Array(items) => items.iter_mut().for_each(clean),
            _ => {}
        }
    }
    let mut value = Value::Object(schema.clone());
    clean(&mut value);
    match value {
        Value::Object(object) => object,
        _ => unreachable!("an object stays an object"),
    }
}

/// Decodes tool arguments into `Args`, with a plain message a model can act on when they do
/// not fit the schema (MCP reports argument errors as tool errors, not protocol errors).
pub fn decode<Args: DeserializeOwned>(arguments: JsonObject) -> Result<Args, ToolOutput> {
    serde_json::from_value(Value::Object(arguments))
        .map_err(|error| ToolOutput::Failure(format!("Invalid arguments: {error}.")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rust_number_formats_go_and_their_ranges_and_standard_formats_stay() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint64", "minimum": 0},
                "at": {"type": "string", "format": "date-time"},
                // A property that happens to be called `format` is a schema, not a format.
                "format": {"type": "string", "format": "uint"},
                "nested": {"anyOf": [{"type": "number", "format": "double"}, {"type": "null"}]},
            },
            "required": ["format"],
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let cleaned = Value::Object(standard_formats_only(&schema));
        assert_eq!(
            cleaned,
            json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer", "minimum": 0},
                    "at": {"type": "string", "format": "date-time"},
                    "format": {"type": "string"},
                    "nested": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                },
                "required": ["format"],
            })
        );
    }
}
