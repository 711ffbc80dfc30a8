//! Structured JSON logs. One line per `/mcp` request with only what operators need and nothing
//! a caller wrote: method, known tool name, status, latency, hashed subject and request id.
//! Tokens, arguments, reasons and utterances are never logged.

use std::time::Duration;

use axum::extract::Request;
use http::StatusCode;
use lambda_http::RequestExt;
use rand::RngExt;
use tracing_subscriber::EnvFilter;

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
pub fn init() -> LogGuard {
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUED_LINES)
        .lossy(true)
        .finish(std::io::stderr());
    let _ = tracing::subscriber::set_global_default(subscriber(writer));
    LogGuard(guard)
}

/// The JSON subscriber every entry point logs through, writing to `writer`. Tests capture
/// exactly what production writes by giving it their own writer.
pub fn subscriber<W>(writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'writer> tracing_subscriber::fmt::MakeWriter<'writer> + Send + Sync + 'static,
{
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=off"));
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_env_filter(filter)
        .with_writer(writer)
        .finish()
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
}

impl RequestLog {
    pub fn new(request_id: String) -> Self {
        Self {
            request_id,
            method: None,
            tool: None,
            subject: None,
        }
    }

    /// A known MCP method name, or `None` for anything else.
    pub fn method(&mut self, method: Option<&'static str>) {
        self.method = Some(method.unwrap_or("other"));
    }

    /// Only called with names of tools this server serves.
    pub fn tool(&mut self, name: &str) {
        self.tool = Some(name.to_owned());
    }

    /// The first 16 hex digits of the caller's data scope, itself a hash of the subject.
    pub fn subject(&mut self, caller: &Caller) {
        self.subject = Some(caller.scope.chars().take(16).collect());
    }

    pub fn finish(self, status: StatusCode, latency: Duration) {
        tracing::info!(
            target: "hearth::request",
            request_id = %self.request_id,
            method = self.method.unwrap_or("-"),
            tool = self.tool.as_deref().unwrap_or("-"),
            status = status.as_u16(),
            latency_us = latency.as_micros() as u64,
            subject = self.subject.as_deref().unwrap_or("-"),
        );
    }
}
