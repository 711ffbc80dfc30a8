//! Structured JSON logs. One line per `/mcp` request with only what operators need and nothing
//! a caller wrote: method, known tool name, status, latency, hashed subject, request id and,
//! for a refused tool call, the refusal's fixed code (`reason`).
//! Tokens, arguments, reasons and utterances are never logged.
//!
//! Each request line is also a CloudWatch Embedded Metric Format record (namespace
//! [`METRIC_NAMESPACE`]): `Requests`, `Errors` (5xx), `Throttled` (429), `ToolErrors` (a tool
//! result with `isError`) and `Latency` in milliseconds, by `Function` (the Lambda function's
//! name, `local` off Lambda) and, for a tool call, by `Function` and `Tool`. CloudWatch Logs
//! turns them into metrics as it ingests the line: no API call, and nothing on the request
//! path beyond formatting the line.

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

use axum::extract::Request;

use crate::config::LogSettings;
use http::StatusCode;
use lambda_http::RequestExt;
use rand::RngExt;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::auth::Caller;

/// Log lines that may wait for the writer thread; a bounded queue keeps memory bounded.
const QUEUED_LINES: usize = 4096;

/// Keeps the background log writer alive; dropping it flushes what is still queued.
#[must_use = "logs are flushed when this guard is dropped; keep it for the life of main"]
pub struct LogGuard(#[allow(dead_code)] tracing_appender::non_blocking::WorkerGuard);

/// Installs the JSON log subscriber (level from `RUST_LOG`, default `info` with rmcp silenced:
/// rmcp's own log lines quote what the client sent, such as peer info, unknown tool names and
/// method names, which must never reach the logs). Lines are written to stderr by a
/// background thread, so a request never waits on the write; if the queue ever fills, lines
/// are dropped rather than slowing requests. Calling it twice keeps the first subscriber.
pub fn init(settings: &LogSettings) -> LogGuard {
    let _ = FUNCTION.set(
        settings
            .function_name
            .clone()
            .unwrap_or_else(|| "local".to_owned()),
    );
    let _ = FILTER.set(settings.filter.clone());
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUED_LINES)
        .lossy(true)
        .finish(std::io::stderr());
    let _ = tracing::subscriber::set_global_default(subscriber(writer));
    LogGuard(guard)
}

/// Installs the log subscriber: JSON as [`init`] does when `json`, else lines for a person at a
/// terminal (the same events and fields, without the metrics a log pipeline reads).
pub fn init_with(json: bool, settings: &LogSettings) -> LogGuard {
    if json {
        return init(settings);
    }
    let _ = FILTER.set(settings.filter.clone());
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUED_LINES)
        .lossy(true)
        .finish(std::io::stderr());
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(writer)
        .finish();
    let _ = tracing::subscriber::set_global_default(subscriber);
    LogGuard(guard)
}

/// The JSON subscriber every entry point logs through, writing to `writer`. Tests capture
/// exactly what production writes by giving it their own writer.
pub fn subscriber<W>(writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'writer> tracing_subscriber::fmt::MakeWriter<'writer> + Send + Sync + 'static,
{
    let filter = filter();
    let json = tracing_subscriber::fmt::format()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false);
    tracing_subscriber::fmt()
        .json()
        .event_format(RequestMetrics { json })
        .with_env_filter(filter)
        .with_writer(writer)
        .finish()
}

/// The level filter `RUST_LOG` gave (see [`LogSettings`]), set once by `init`.
static FILTER: OnceLock<Option<String>> = OnceLock::new();

/// The function name the metrics carry (Lambda's, or `local`), set once by `init`.
static FUNCTION: OnceLock<String> = OnceLock::new();

/// The level filter: `RUST_LOG` (as the configuration read it), else `info` with rmcp
/// silenced (its lines quote client input).
fn filter() -> EnvFilter {
    FILTER
        .get()
        .and_then(Option::as_deref)
        .and_then(|directives| EnvFilter::try_new(directives).ok())
        .unwrap_or_else(|| EnvFilter::new("info,rmcp=off"))
}

/// The CloudWatch namespace of the request metrics.
pub const METRIC_NAMESPACE: &str = "Hearth";

/// The target of the one line per request.
const REQUEST_TARGET: &str = "hearth::request";

/// The target of witness refusals (ERROR, counted as `WitnessRefusals`) and timeouts (WARN):
/// [`crate::witnessing::WITNESS_TARGET`], named here because telemetry sits below it.
const WITNESS_TARGET: &str = "hearth::witness";

/// Formats every line as tracing's JSON does, and the request lines as JSON with their
/// metrics embedded (the `_aws` object EMF reads must be a JSON object, which tracing's
/// formatter cannot write, so those lines are written here).
struct RequestMetrics {
    json: Format<Json>,
}

impl<S, N> FormatEvent<S, N> for RequestMetrics
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let metadata = event.metadata();
        let refusal = metadata.target() == WITNESS_TARGET && *metadata.level() == Level::ERROR;
        if metadata.target() != REQUEST_TARGET && !refusal {
            return self.json.format_event(context, writer, event);
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let now = time::OffsetDateTime::now_utc();
        let line = if refusal {
            refusal_line(&fields, now, function_name())
        } else {
            metric_line(fields, now, function_name())
        };
        writeln!(writer, "{line}")
    }
}

/// A line's fields as recorded, in order. The line is written straight from them: a JSON map
/// built per request, and the constant EMF part with it, cost the hot path allocations for
/// nothing (issue 32).
#[derive(Default)]
struct Fields(Vec<(&'static str, FieldValue)>);

enum FieldValue {
    Unsigned(u64),
    Signed(i64),
    Bool(bool),
    Text(String),
}

impl Fields {
    fn get(&self, name: &str) -> Option<&FieldValue> {
        self.0
            .iter()
            .find(|(field, _)| *field == name)
            .map(|(_, value)| value)
    }

    fn unsigned(&self, name: &str) -> u64 {
        match self.get(name) {
            Some(FieldValue::Unsigned(value)) => *value,
            _ => 0,
        }
    }

    fn text(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(FieldValue::Text(text)) => Some(text),
            _ => None,
        }
    }

    /// Removes field `name`, saying whether it was `true`.
    fn take_flag(&mut self, name: &str) -> bool {
        let flag = matches!(self.get(name), Some(FieldValue::Bool(true)));
        self.0.retain(|(field, _)| *field != name);
        flag
    }
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push((field.name(), FieldValue::Unsigned(value)));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.push((field.name(), FieldValue::Signed(value)));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.push((field.name(), FieldValue::Bool(value)));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .push((field.name(), FieldValue::Text(value.to_owned())));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.0.push((field.name(), FieldValue::Text(text)));
    }
}

impl Serialize for FieldValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            FieldValue::Unsigned(value) => serializer.serialize_u64(*value),
            FieldValue::Signed(value) => serializer.serialize_i64(*value),
            FieldValue::Bool(value) => serializer.serialize_bool(*value),
            FieldValue::Text(text) => serializer.serialize_str(text),
        }
    }
}

/// The function name the metrics carry: Lambda's, or `local`.
fn function_name() -> &'static str {
    FUNCTION.get().map_or("local", String::as_str)
}

/// The EMF directive's metric definitions (`Name`, `Unit`).
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct MetricDefinition {
    name: &'static str,
    unit: &'static str,
}

const REQUEST_METRICS: &[MetricDefinition] = &[
    MetricDefinition {
        name: "Requests",
        unit: "Count",
    },
    MetricDefinition {
        name: "Errors",
        unit: "Count",
    },
    MetricDefinition {
        name: "Throttled",
        unit: "Count",
    },
    MetricDefinition {
        name: "ToolErrors",
        unit: "Count",
    },
    MetricDefinition {
        name: "Latency",
        unit: "Milliseconds",
    },
];

const REFUSAL_METRICS: &[MetricDefinition] = &[MetricDefinition {
    name: "WitnessRefusals",
    unit: "Count",
}];

const BY_FUNCTION: &[&[&str]] = &[&["Function"]];
const BY_FUNCTION_AND_TOOL: &[&[&str]] = &[&["Function"], &["Function", "Tool"]];

/// The `_aws` object of an EMF record: one directive.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Emf {
    timestamp: i64,
    cloud_watch_metrics: [Directive; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Directive {
    namespace: &'static str,
    dimensions: &'static [&'static [&'static str]],
    metrics: &'static [MetricDefinition],
}

impl Emf {
    fn new(
        now: time::OffsetDateTime,
        dimensions: &'static [&'static [&'static str]],
        metrics: &'static [MetricDefinition],
    ) -> Self {
        Self {
            timestamp: (now.unix_timestamp_nanos() / 1_000_000) as i64,
            cloud_watch_metrics: [Directive {
                namespace: METRIC_NAMESPACE,
                dimensions,
                metrics,
            }],
        }
    }
}

/// A metric line: the time, level and target as tracing writes them, the logged fields, the
/// function the metrics are counted by, then the metrics' own members and `_aws`.
struct Line<'a> {
    now: time::OffsetDateTime,
    level: &'static str,
    target: &'static str,
    fields: &'a Fields,
    function: &'a str,
    /// Members after the fields and `Function`: the dimension values and metric values.
    metrics: &'a [(&'static str, Metric<'a>)],
    emf: Emf,
}

enum Metric<'a> {
    Text(&'a str),
    Count(u8),
    Milliseconds(f64),
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let timestamp = self
            .now
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("timestamp", &timestamp)?;
        map.serialize_entry("level", self.level)?;
        map.serialize_entry("target", self.target)?;
        for (name, value) in &self.fields.0 {
            // The line's own members (capitalised, or tracing's three, or `_aws`) are never
            // taken from a field: a duplicate key would make the record invalid EMF.
            if name.starts_with(|c: char| c.is_ascii_uppercase())
                || matches!(*name, "timestamp" | "level" | "target" | "_aws")
            {
                continue;
            }
            map.serialize_entry(name, value)?;
        }
        map.serialize_entry("Function", self.function)?;
        for (name, metric) in self.metrics {
            match metric {
                Metric::Text(text) => map.serialize_entry(name, text)?,
                Metric::Count(count) => map.serialize_entry(name, count)?,
                Metric::Milliseconds(ms) => map.serialize_entry(name, ms)?,
            }
        }
        map.serialize_entry("_aws", &self.emf)?;
        map.end()
    }
}

impl Line<'_> {
    fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One request line: the logged fields, the time and level as tracing writes them, and the
/// EMF metrics.
fn metric_line(mut fields: Fields, now: time::OffsetDateTime, function: &str) -> String {
    let status = fields.unsigned("status");
    let latency_us = fields.unsigned("latency_us");
    let tool_failed = fields.take_flag("tool_failed");
    let tool = fields.text("tool").filter(|tool| *tool != "-");
    let counts = [
        ("Requests", Metric::Count(1)),
        ("Errors", Metric::Count(u8::from(status >= 500))),
        ("Throttled", Metric::Count(u8::from(status == 429))),
        ("ToolErrors", Metric::Count(u8::from(tool_failed))),
        ("Latency", Metric::Milliseconds(latency_us as f64 / 1000.0)),
    ];
    let mut metrics = Vec::with_capacity(counts.len() + 1);
    if let Some(tool) = tool {
        metrics.push(("Tool", Metric::Text(tool)));
    }
    metrics.extend(counts);
    let dimensions = match tool {
        Some(_) => BY_FUNCTION_AND_TOOL,
        None => BY_FUNCTION,
    };
    Line {
        now,
        level: "INFO",
        target: REQUEST_TARGET,
        fields: &fields,
        function,
        metrics: &metrics,
        emf: Emf::new(now, dimensions, REQUEST_METRICS),
    }
    .to_json()
}

/// A witness's refusal: its fields, and `WitnessRefusals` = 1 by function, as EMF.
fn refusal_line(fields: &Fields, now: time::OffsetDateTime, function: &str) -> String {
    Line {
        now,
        level: "ERROR",
        target: WITNESS_TARGET,
        fields,
        function,
        metrics: &[("WitnessRefusals", Metric::Count(1))],
        emf: Emf::new(now, BY_FUNCTION, REFUSAL_METRICS),
    }
    .to_json()
}

/// The request id API Gateway assigned, or a fresh random one off Lambda.
pub fn request_id(request: &Request) -> String {
    request
        .lambda_context_ref()
        .map(|context| context.request_id.clone())
        .filter(|id| !id.is_empty() && id.len() <= 64)
        .unwrap_or_else(|| {
            let bytes: [u8; 8] = rand::rng().random();
            hex::encode(bytes)
        })
}

/// Collects the loggable facts of one request and writes them as one line when it ends.
pub struct RequestLog {
    request_id: String,
    method: Option<&'static str>,
    tool: Option<String>,
    subject: Option<String>,
    tool_failed: bool,
    reason: Option<&'static str>,
    refused_origin: Option<String>,
}

impl RequestLog {
    pub fn new(request_id: String) -> Self {
        Self {
            request_id,
            method: None,
            tool: None,
            subject: None,
            tool_failed: false,
            reason: None,
            refused_origin: None,
        }
    }

    /// The browser origin a CORS refusal turned away, as `scheme://host[:port]` (an origin
    /// carries nothing more; anything that does not read as one is logged as `invalid`).
    pub fn refused_origin(&mut self, origin: &str) {
        let shown = url::Url::parse(origin)
            .ok()
            .map(|url| url.origin())
            .filter(url::Origin::is_tuple)
            .map(|origin| origin.ascii_serialization())
            .unwrap_or_else(|| "invalid".to_owned());
        self.refused_origin = Some(shown);
    }

    /// The tool call answered with an `isError` result (counted as `ToolErrors`).
    pub fn tool_failed(&mut self) {
        self.tool_failed = true;
    }

    /// Why a tool refused: a fixed code chosen by Hearth, never words a caller sent.
    pub fn reason(&mut self, code: Option<&'static str>) {
        self.reason = code;
    }

    /// A known MCP method name, or `None` for anything else.
    pub fn method(&mut self, method: Option<&'static str>) {
        self.method = Some(method.unwrap_or("other"));
    }

    /// Only called with names of tools this server serves.
    pub fn tool(&mut self, name: &str) {
        self.tool = Some(name.to_owned());
    }

    /// What another log of the same request learned of the message (its method, tool and
    /// whether the tool failed), taken once the request is admitted: a refused request's line
    /// names no more than admission saw.
    pub fn adopt(&mut self, facts: RequestLog) {
        self.method = facts.method.or(self.method);
        self.tool = facts.tool.or(self.tool.take());
        self.tool_failed |= facts.tool_failed;
        self.reason = facts.reason.or(self.reason);
    }

    /// The first 16 hex digits of the caller's data scope, itself a hash of the subject.
    pub fn subject(&mut self, caller: &Caller) {
        self.subject = Some(caller.scope.chars().take(16).collect());
    }

    pub fn finish(self, status: StatusCode, latency: Duration) {
        tracing::info!(
            target: REQUEST_TARGET,
            request_id = %self.request_id,
            method = self.method.unwrap_or("-"),
            tool = self.tool.as_deref().unwrap_or("-"),
            status = status.as_u16(),
            latency_us = latency.as_micros() as u64,
            subject = self.subject.as_deref().unwrap_or("-"),
            tool_failed = self.tool_failed,
            // Present only on a refused tool call's line.
            reason = self.reason,
            // Present only on a CORS refusal's line.
            origin = self.refused_origin,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The fields as tracing would record them, in order, from a JSON object of them.
    fn fields(object: Value) -> Fields {
        let Value::Object(object) = object else {
            unreachable!()
        };
        let mut fields = Fields::default();
        for (name, value) in object {
            let name: &'static str = Box::leak(name.into_boxed_str());
            let value = match value {
                Value::Bool(flag) => FieldValue::Bool(flag),
                Value::Number(n) if n.is_u64() => FieldValue::Unsigned(n.as_u64().unwrap()),
                Value::Number(n) => FieldValue::Signed(n.as_i64().unwrap()),
                Value::String(text) => FieldValue::Text(text),
                other => FieldValue::Text(other.to_string()),
            };
            fields.0.push((name, value));
        }
        fields
    }

    fn parsed(line: &str) -> Value {
        assert!(!line.contains('\n'), "one line: {line}");
        serde_json::from_str(line).expect("a line is one JSON object")
    }

    #[test]
    fn a_tool_calls_line_is_an_emf_record_by_function_and_tool() {
        let fields = fields(json!({"request_id": "r1", "method": "tools/call",
            "tool": "explain_why", "status": 200, "latency_us": 1500, "subject": "abcd",
            "tool_failed": true}));
        let now = time::macros::datetime!(2026-12-01 12:00:00 UTC);
        let line = parsed(&metric_line(fields, now, "hearth-McpFunction-1"));
        assert_eq!(
            (&line["timestamp"], &line["level"], &line["target"]),
            (
                &json!("2026-12-01T12:00:00Z"),
                &json!("INFO"),
                &json!("hearth::request")
            )
        );
        assert_eq!(
            (&line["request_id"], &line["status"], &line["subject"]),
            (&json!("r1"), &json!(200), &json!("abcd")),
            "the logged fields as they were"
        );
        assert_eq!(line["Function"], "hearth-McpFunction-1");
        assert_eq!(line["Tool"], "explain_why");
        assert_eq!(
            (line["Requests"].clone(), line["Errors"].clone()),
            (json!(1), json!(0))
        );
        assert_eq!(
            (line["ToolErrors"].clone(), line["Throttled"].clone()),
            (json!(1), json!(0))
        );
        assert_eq!(line["Latency"], 1.5);
        assert!(
            line.get("tool_failed").is_none(),
            "the flag becomes the metric"
        );
        let emf = &line["_aws"];
        assert_eq!(emf["Timestamp"], 1_796_126_400_000_i64);
        let directive = &emf["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Hearth");
        assert_eq!(
            directive["Dimensions"],
            json!([["Function"], ["Function", "Tool"]])
        );
        // Every metric the directive names is a number on the line.
        for metric in directive["Metrics"].as_array().unwrap() {
            assert!(
                line[metric["Name"].as_str().unwrap()].is_number(),
                "{metric}"
            );
        }
    }

    #[test]
    fn a_field_never_doubles_a_member_of_the_line() {
        let fields = fields(
            json!({"status": 200, "latency_us": 10, "Tool": "x", "level": "x",
            "timestamp": "x", "Requests": 9, "_aws": "x"}),
        );
        let line = metric_line(fields, time::OffsetDateTime::UNIX_EPOCH, "local");
        for member in ["Tool", "level", "timestamp", "Requests", "_aws"] {
            let key = format!("\"{member}\":");
            assert!(line.matches(&key).count() <= 1, "{member} twice: {line}");
        }
        let line = parsed(&line);
        assert_eq!(
            (&line["level"], &line["Requests"]),
            (&json!("INFO"), &json!(1))
        );
        assert!(line.get("Tool").is_none(), "no tool was logged: {line}");
    }

    #[test]
    fn a_witness_refusal_is_an_error_line_counted_by_function() {
        let fields = fields(
            json!({"witness": "home", "status": 422, "message": "a witness refused a checkpoint"}),
        );
        let line = parsed(&refusal_line(
            &fields,
            time::OffsetDateTime::UNIX_EPOCH,
            "local",
        ));
        assert_eq!(
            (line["level"].as_str(), line["witness"].as_str()),
            (Some("ERROR"), Some("home"))
        );
        assert_eq!(line["WitnessRefusals"], 1);
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Hearth");
        assert_eq!(directive["Metrics"][0]["Name"], "WitnessRefusals");
        assert_eq!(directive["Dimensions"], json!([["Function"]]));
    }

    #[test]
    fn other_lines_are_by_function_only_and_count_5xx_and_429() {
        for (status, errors, throttled) in [(503, 1, 0), (429, 0, 1), (401, 0, 0)] {
            let fields = fields(
                json!({"method": "initialize", "tool": "-", "status": status, "latency_us": 10}),
            );
            let line = parsed(&metric_line(
                fields,
                time::OffsetDateTime::UNIX_EPOCH,
                "local",
            ));
            assert!(line.get("Tool").is_none());
            assert_eq!(
                line["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
                json!([["Function"]])
            );
            assert_eq!(
                (line["Errors"].as_u64(), line["Throttled"].as_u64()),
                (Some(errors), Some(throttled))
            );
        }
    }
}
