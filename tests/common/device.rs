//! A simulated household device for tests: it signs who is speaking and their words on every
//! MCP request, the way Countersign's host contract asks, with a fresh turn per call unless
//! a test reuses one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use hearth_core::auth::attestation::{Attestation, sign};
use hearth_core::clock::{Clock, ManualClock};
use http::StatusCode;
use serde_json::{Value, json};

use super::{Reply, TOKEN, request};

/// The host key every device test signs with.
pub const HOST_KEY: &str = "test-host-key-shared-with-the-device";

pub struct Device {
    pub router: Router,
    pub clock: Arc<ManualClock>,
    turns: AtomicU64,
}

/// One spoken turn: who, what they said, and which request's question they answer.
pub struct Turn<'a> {
    pub member: &'a str,
    pub words: &'a [&'a str],
    pub answering: Option<&'a str>,
    /// Reuse a turn id (to test "a later turn"); a fresh one otherwise.
    pub turn_id: Option<String>,
}

impl<'a> Turn<'a> {
    pub fn new(member: &'a str, words: &'a [&'a str]) -> Self {
        Self {
            member,
            words,
            answering: None,
            turn_id: None,
        }
    }

    pub fn answering(mut self, request_id: &'a str) -> Self {
        self.answering = Some(request_id);
        self
    }

    pub fn in_turn(mut self, turn_id: &str) -> Self {
        self.turn_id = Some(turn_id.to_owned());
        self
    }
}

impl Device {
    pub fn new(router: Router, clock: Arc<ManualClock>) -> Self {
        Self {
            router,
            clock,
            turns: AtomicU64::new(0),
        }
    }

    /// A fresh turn id.
    pub fn next_turn(&self) -> String {
        format!("turn-{}", self.turns.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// The two attestation headers for `turn`, signed with `key`.
    pub fn headers(&self, turn: &Turn<'_>, key: &str) -> (String, String) {
        let attestation = Attestation {
            member_id: turn.member.to_owned(),
            turn_id: turn.turn_id.clone().unwrap_or_else(|| self.next_turn()),
            utterances: turn.words.iter().map(|w| w.to_string()).collect(),
            issued_at: self.clock.now().unix_timestamp(),
            answering: turn.answering.map(str::to_owned),
        };
        let encoded = attestation.encode();
        let signature = sign(key, &encoded);
        (encoded, signature)
    }

    /// Sends a JSON-RPC body with the fixture token and the given extra headers.
    pub async fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Reply {
        let bearer = format!("Bearer {TOKEN}");
        let mut headers = vec![
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        headers.extend_from_slice(extra);
        request(&self.router, "POST", "/mcp", &headers, &body.to_string()).await
    }

    /// Calls `tool` in `turn`, signed with the shared host key; returns the tool result.
    pub async fn call(&self, turn: Turn<'_>, tool: &str, arguments: Value) -> Value {
        let (attestation, signature) = self.headers(&turn, HOST_KEY);
        self.call_with(
            &[
                ("x-countersign-attestation", &attestation),
                ("x-countersign-signature", &signature),
            ],
            tool,
            arguments,
        )
        .await
    }

    /// Calls `tool` with exactly the given extra headers.
    pub async fn call_with(&self, extra: &[(&str, &str)], tool: &str, arguments: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let reply = self.post(&body, extra).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        reply.body["result"].clone()
    }
}

/// The structured content of a successful tool result (panics on an error result). Its
/// `say`, if it has one, is read aloud, so it must name nothing internal.
pub fn ok(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "tool failed: {result}");
    if let Some(say) = result["structuredContent"]["say"].as_str()
        && let Err(broken) = hearth_core::countersign::refusal::check_no_internals(say)
    {
        panic!("the say read aloud has {broken}: {say:?}");
    }
    &result["structuredContent"]
}

/// The message of an error result (panics on success).
pub fn refusal(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected a refusal: {result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The fixed code of a refusal a voice may read (its `_meta`), after checking that its text
/// keeps the rules for spoken text.
pub fn refusal_code(result: &Value) -> String {
    let say = refusal(result);
    if let Err(broken) = hearth_core::countersign::refusal::check_spoken(&say) {
        panic!("the refusal read aloud has {broken}: {say:?}");
    }
    result["_meta"]["hearth/code"]
        .as_str()
        .unwrap_or_else(|| panic!("no refusal code: {result}"))
        .to_owned()
}

/// The technical reason of a refusal, for developers (its `_meta`).
pub fn refusal_reason(result: &Value) -> String {
    result["_meta"]["hearth/reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no refusal reason: {result}"))
        .to_owned()
}
