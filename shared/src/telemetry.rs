//! Structured JSON logs. One line per `/mcp` request with only what operators need and nothing
//! a caller wrote: method, known tool name, status, latency, hashed subject and request id.
//! Tokens, arguments, reasons and utterances are never logged.

use std::time::Duration;

use axum::extract::Request;
use http::StatusCode;
use lambda_http::RequestExt;
use rand::RngExt;
use tracing_subscriber::EnvFilter;

use crate::toolset::Caller;

/// Installs the JSON log subscriber (level from `RUST_LOG`, default `info` with rmcp at `warn`, since rmcp logs client-supplied peer info). Safe to call twice.
pub fn init() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
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
