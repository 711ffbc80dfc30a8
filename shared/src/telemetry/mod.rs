//! Structured JSON logs. One line per `/mcp` request with only what operators need and nothing
//! a caller wrote: method, known tool name, status, latency, hashed subject, request id and,
//! for a refused tool call, the refusal's fixed code (`reason`).
//! Tokens, arguments, reasons and utterances are never logged.
//!
//! The request lines and witness refusals may also be CloudWatch Embedded Metric Format
//! records (namespace [`METRIC_NAMESPACE`]), as much as `HEARTH_METRICS` asks: see
//! [`metrics`].

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

use axum::extract::Request;

use crate::config::{LogSettings, MetricDetail};
use http::StatusCode;
use lambda_http::RequestExt;
use rand::RngExt;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::auth::Caller;

mod metrics;

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
    let local = || "local".to_owned();
    let _ = NAMES.set(metrics::Names {
        function: settings.function_name.clone().unwrap_or_else(local),
        deployment: settings.deployment.clone().unwrap_or_else(local),
    });
    let _ = FILTER.set(settings.filter.clone());
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUED_LINES)
        .lossy(true)
        .finish(std::io::stderr());
    let _ = tracing::subscriber::set_global_default(subscriber(writer, settings.metrics));
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

/// The JSON subscriber every entry point logs through, writing to `writer`, its lines carrying
/// the metrics `detail` asks for. Tests capture exactly what production writes by giving it
/// their own writer.
pub fn subscriber<W>(writer: W, detail: MetricDetail) -> impl tracing::Subscriber + Send + Sync
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
        .event_format(RequestMetrics { json, detail })
        .with_env_filter(filter)
        .with_writer(writer)
        .finish()
}

/// The level filter `RUST_LOG` gave (see [`LogSettings`]), set once by `init`.
static FILTER: OnceLock<Option<String>> = OnceLock::new();

/// The function and deployment names the metrics carry (`local` off Lambda), set once by
/// `init`, which runs before any line is written.
static NAMES: OnceLock<metrics::Names> = OnceLock::new();

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
    detail: MetricDetail,
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
            metrics::refusal_line(&fields, now, names(), self.detail)
        } else {
            metrics::request_line(fields, now, names(), self.detail)
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

/// The names the metrics carry: those `init` set, else `local` (a test's own subscriber).
fn names() -> &'static metrics::Names {
    NAMES.get_or_init(|| metrics::Names {
        function: "local".to_owned(),
        deployment: "local".to_owned(),
    })
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

    /// The tool call answered with an `isError` result (marked, or counted, as `ToolErrors`).
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
