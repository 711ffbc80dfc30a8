//! `POST /mcp` as layers, in the order their verdicts are given. Each layer either refuses
//! with its own status or hands what it learned to the next, and each is a function that can
//! be tested alone (see the tests below; the whole path is tested over HTTP in `tests/`).
//!
//! Admission's rate counters and account check, the chain window the called tool reads
//! first ([`crate::toolset::Toolset::read_ahead`]) and, for a household token, the account a
//! device attestation is checked against or the called tool starts from, go out together once
//! the token checks out in memory: one round trip before a read-only tool answers. Layers 4
//! and 5 run in memory beside admission; admission's verdict still comes first, and its
//! refusal drops what was read, and what the log would have learned of the message.
//!
//! 1. [`origin`]: POST only (405), an allowed `Origin` (403), no token in the query (400).
//! 2. [`token`]: who the bearer token says the caller is, in memory; its 401 waits for
//!    admission, so that a failed attempt still counts against the address.
//! 3. [`admission`]: the rate limits of the address and, when known, the subject (429, or 503
//!    with the limiter out of reach), then the token's 401, then the household's standing in
//!    the store (401), asked beside the counters.
//! 4. [`body`]: JSON in (415) and out (406; no header, `*/*` and `application/json` alone are
//!    served), at most 64 KiB (413).
//! 5. [`tier`]: the JSON-RPC message's head: UTF-8 and JSON (400, -32700), a JSON-RPC message
//!    nesting at most [`body::MAX_NESTING_DEPTH`] deep (400, -32600), a protocol version
//!    Hearth speaks (400), the token's scopes (403 `insufficient_scope`), its tier (401
//!    `account_linking_required`: a client-credentials token, where account linking is
//!    configured, beyond Tier 1; see [`super::http::is_tier_one`]); for `tools/call`,
//!    `arguments` an object (-32602) holding no integer beyond 64 bits (an `isError` result).
//! 6. [`dispatch`]: who is speaking (the device attestation, for the methods that act or
//!    read household data), then rmcp's stateless Streamable HTTP service in JSON-response
//!    mode with the authenticated caller attached.

use std::sync::Arc;

use axum::body::Body;
use axum::body::Bytes;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures_util::future::join;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::Full;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;
use serde_json::value::RawValue;

use super::body;
use super::http::{McpEndpoint, Tiers, is_tier_one};
use super::{MAX_BODY_BYTES, PROTOCOL_VERSIONS, ToolOutcome};
use crate::auth::attestation::{
    ATTESTATION_HEADER, AccountRead, AttestationRefusal, HostClaim, SIGNATURE_HEADER,
};
use crate::auth::{AuthFailure, Authenticator, Caller, Grant, Scope};
use crate::gate::{Gate, Refusal, admission_first};
use crate::media::{accepts_json, has_media_type, read_body};
use crate::store::ChainRead;
use crate::telemetry::RequestLog;

/// MCP methods whose names may appear in logs; anything else is logged as `other`.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "server/discover",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "notifications/initialized",
    "notifications/cancelled",
];

/// The request path: each layer in turn, the first refusal answering.
pub(super) async fn handle(
    endpoint: &McpEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Response {
    match through_the_layers(endpoint, request, log).await {
        Ok(response) | Err(response) => response,
    }
}

async fn through_the_layers(
    endpoint: &McpEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Result<Response, Response> {
    origin(&endpoint.gate, &request)?;
    let ip = endpoint.gate.client_ip(&request);
    let (grant, provisional) = match token(&endpoint.auth, request.headers()) {
        Ok(known) => known,
        Err(failure) => {
            // A failed attempt still counts against the address before it is refused.
            endpoint.gate.admit(ip, None).await.map_err(refused)?;
            return Err(unauthorized(&endpoint.tiers.challenge, failure));
        }
    };
    // Admission (the store's rate counters and account) and the message's head (read in
    // memory, then the chain window the called tool reads first) go together: one round trip
    // on the critical path. Admission answers first, and its refusal drops the rest unread.
    let admitted = admission(endpoint, ip, &grant, &provisional);
    // What the head learns for the log is kept apart until admission lets the request in.
    let mut facts = RequestLog::new(String::new());
    let head = async {
        let (parts, bytes) = body(request).await?;
        let known_tool = |name: &str| endpoint.server.knows_tool(name);
        let call = tier(
            &endpoint.tiers,
            &grant,
            &parts.headers,
            &bytes,
            known_tool,
            &mut facts,
        )?;
        let (chain, account) = join(
            read_ahead(endpoint, &provisional, &call, &bytes),
            account_ahead(endpoint, &provisional, &call, &parts.headers),
        )
        .await;
        Ok::<_, Response>((parts, bytes, call, chain, account))
    };
    let (mut caller, head) = admission_first(admitted, head).await?;
    log.subject(&caller);
    log.adopt(facts);
    let (parts, bytes, call, chain, account) = head?;
    caller.read_ahead = chain;
    Ok(dispatch(endpoint, parts, bytes, caller, call, account, log).await)
}

/// Layer 1: a POST, from an allowed origin, with no access token in its URL.
#[expect(
    clippy::result_large_err,
    reason = "a layer's refusal is the response sent, made at most once per request"
)]
pub(super) fn origin(gate: &Gate, request: &Request) -> Result<(), Response> {
    if request.method() != Method::POST {
        let mut response = rpc_error(
            StatusCode::METHOD_NOT_ALLOWED,
            -32000,
            "Method not allowed: this stateless endpoint accepts POST only",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return Err(response);
    }
    gate.check_origin(request.headers()).map_err(refused)?;
    if token_in_query(request.uri()) {
        let mut response = rpc_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad request: access tokens are accepted only in the Authorization header",
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="hearth", error="invalid_request""#),
        );
        return Err(response);
    }
    Ok(())
}

/// What the bearer token says, before the store is asked: the grant and the caller as far as
/// the token alone tells (see [`Grant::provisional_caller`]).
pub(super) type Token = Result<(Grant, Caller), AuthFailure>;

/// Layer 2: the bearer token, checked in memory (signature, expiry, known hashes).
pub(super) fn token(auth: &Authenticator, headers: &HeaderMap) -> Token {
    auth.authenticate(headers).map(|grant| {
        let caller = grant.provisional_caller();
        (grant, caller)
    })
}

/// Layer 3: one limiter call counts the subject the token names (and checks the client
/// address's budget), while a household token's standing (or a stored client's existence) is
/// confirmed against the store; the limiter's refusal comes first.
pub(super) async fn admission(
    endpoint: &McpEndpoint,
    ip: Option<std::net::IpAddr>,
    grant: &Grant,
    provisional: &Caller,
) -> Result<Caller, Response> {
    let (admitted, confirmed) = join(
        endpoint.gate.admit(ip, Some(provisional)),
        endpoint.auth.confirm(grant),
    )
    .await;
    admitted.map_err(refused)?;
    confirmed.map_err(|failure| unauthorized(&endpoint.tiers.challenge, failure))
}

/// Layer 4: a JSON body, answered in JSON, within the size limit.
pub(super) async fn body(request: Request) -> Result<(Parts, Bytes), Response> {
    let headers = request.headers();
    if !has_media_type(headers, "application/json") {
        return Err(rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32000,
            "Content-Type must be application/json",
        ));
    }
    if !accepts_json(headers) {
        return Err(rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: Hearth answers every request with application/json",
        ));
    }
    let (parts, body) = request.into_parts();
    let Some(bytes) = read_body(&parts.headers, body, MAX_BODY_BYTES).await else {
        return Err(too_large());
    };
    Ok((parts, bytes))
}

/// What [`tier`] read of a message that may go on.
#[derive(Debug)]
pub(super) struct Call {
    /// The request's id, kept for rmcp's own refusals, which answer in plain text without it.
    request_id: Option<Box<RawValue>>,
    /// A `tools/call` or `resources/read`: the methods that act on who is speaking or reveal
    /// household data, and so need the speaker checked.
    acts_or_reads: bool,
    /// A `tools/call` of a tool this server serves: its name and arguments, for its toolset
    /// to say which chain it reads first.
    tool: Option<ToolHead>,
}

#[derive(Debug)]
struct ToolHead {
    name: String,
    /// Where the arguments' JSON text lies in the body: not copied, as most tools read
    /// nothing ahead and arguments may be most of 64 KiB.
    arguments: Option<std::ops::Range<usize>>,
}

/// The chain window the called tool reads first, read for the caller the token names (see
/// [`crate::toolset::Toolset::read_ahead`]); `body` is the message [`tier`] read.
async fn read_ahead(
    endpoint: &McpEndpoint,
    caller: &Caller,
    call: &Call,
    body: &[u8],
) -> Option<Arc<ChainRead>> {
    let tool = call.tool.as_ref()?;
    let arguments = match &tool.arguments {
        // A JSON value's whole text within UTF-8 that tier checked: always UTF-8 itself.
        Some(place) => Some(std::str::from_utf8(body.get(place.clone())?).ok()?),
        None => None,
    };
    endpoint
        .server
        .read_ahead(caller, &tool.name, arguments)
        .await
        .map(Arc::new)
}

/// A household token's account, read beside admission when the call will need it: to check
/// a device's attestation (the request carries one), or because the called tool starts from
/// the household's rules (see [`crate::toolset::Toolset::reads_household_account`]). Other
/// calls read nothing here.
async fn account_ahead(
    endpoint: &McpEndpoint,
    caller: &Caller,
    call: &Call,
    headers: &HeaderMap,
) -> Option<AccountRead> {
    let household = caller.household.as_ref()?;
    let accounts = endpoint.auth.accounts()?;
    if !call.acts_or_reads {
        return None;
    }
    let attested =
        headers.contains_key(ATTESTATION_HEADER) || headers.contains_key(SIGNATURE_HEADER);
    let from_rules = call
        .tool
        .as_ref()
        .is_some_and(|tool| endpoint.server.reads_household_account(&tool.name));
    if !attested && !from_rules {
        return None;
    }
    Some(accounts.fresh(&household.id).await)
}

/// Layer 5: the message's head, read once without building it (a borrowed peek), against the
/// versions Hearth speaks and what the token may reach. `known_tool` says which tool names
/// may be logged (any other is logged as unknown: a name is the caller's text).
#[expect(
    clippy::result_large_err,
    reason = "a layer's refusal is the response sent, made at most once per request"
)]
pub(super) fn tier(
    tiers: &Tiers,
    grant: &Grant,
    headers: &HeaderMap,
    bytes: &[u8],
    known_tool: impl Fn(&str) -> bool,
    log: &mut RequestLog,
) -> Result<Call, Response> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(rpc_error(
            StatusCode::BAD_REQUEST,
            -32700,
            "Parse error: the body is not valid UTF-8",
        ));
    };
    if body::nesting_depth(text.as_bytes()) > body::MAX_NESTING_DEPTH {
        return Err(rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            &format!(
                "Invalid request: the body nests deeper than {} levels of objects and arrays",
                body::MAX_NESTING_DEPTH
            ),
        ));
    }
    let peek = match serde_json::from_str::<Peek<'_>>(text) {
        Ok(peek) => peek,
        Err(_) if serde_json::from_str::<IgnoredAny>(text).is_ok() => {
            return Err(invalid_request());
        }
        Err(_) => {
            return Err(rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                "Parse error: the body is not valid JSON",
            ));
        }
    };
    if let Some(refusal) = unspoken_version(headers, &peek) {
        return Err(refusal);
    }
    if let Err(needed) = grant.scopes.allow(peek.method.as_deref()) {
        return Err(insufficient_scope(&tiers.challenge, needed, peek.id));
    }
    let method = peek.method.as_deref().unwrap_or_default();
    log.method(
        KNOWN_METHODS
            .iter()
            .find(|known| **known == method)
            .copied(),
    );
    let params = peek.params.as_ref();
    let tool = params.and_then(|params| params.name.as_deref());
    // A client an operator added is always Tier 1: it exists to link households.
    let tier_one_only = grant.is_service && (tiers.linking_required || grant.stored_client);
    if tier_one_only && !is_tier_one(method, tool) {
        return Err(linking_required(&tiers.challenge, peek.id));
    }
    let mut head = None;
    if method == "tools/call" {
        if let Some(name) = tool.filter(|name| known_tool(name)) {
            log.tool(name);
            head = Some(ToolHead {
                name: name.to_owned(),
                arguments: params
                    .and_then(|params| params.arguments)
                    .and_then(|arguments| place_in(text, arguments.get())),
            });
        }
        if let Some(arguments) = params.and_then(|params| params.arguments) {
            if !matches!(
                arguments.get().trim_start().as_bytes().first(),
                Some(b'{' | b'n')
            ) {
                return Err(rpc_error_for(
                    peek.id,
                    -32602,
                    "Invalid params: `arguments` must be a JSON object",
                ));
            }
            if let Some(place) = body::oversized_integer(arguments) {
                log.tool_failed();
                return Err(tool_error(
                    peek.id,
                    &format!(
                        "`{place}` is an integer beyond 64 bits, which would not be stored exactly; send it as a string."
                    ),
                ));
            }
        }
    }
    Ok(Call {
        request_id: peek.id.map(ToOwned::to_owned),
        acts_or_reads: method == "tools/call" || method == "resources/read",
        tool: head,
    })
}

/// Where `part` lies in `whole`, if it is borrowed from it (as serde borrows a `RawValue`).
fn place_in(whole: &str, part: &str) -> Option<std::ops::Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= whole.len()).then_some(start..end)
}

/// Layer 6: who is speaking, then rmcp. Its refusals in plain text are answered as JSON-RPC
/// errors with the request's id. `account` is a household token's account if
/// [`account_ahead`] read it.
pub(super) async fn dispatch(
    endpoint: &McpEndpoint,
    mut parts: Parts,
    bytes: Bytes,
    mut caller: Caller,
    call: Call,
    account: Option<AccountRead>,
    log: &mut RequestLog,
) -> Response {
    // Only tool calls and resource reads act on who is speaking or reveal household data;
    // other methods skip the HMAC.
    if call.acts_or_reads {
        caller.host = speaker(endpoint, &mut caller, &parts.headers, account).await;
    }
    parts.extensions.insert(caller);
    let outcome = ToolOutcome::default();
    parts.extensions.insert(outcome.clone());
    // Hearth answers JSON only (rmcp runs in JSON-response mode), so any client that takes
    // JSON is served, including curl's `*/*` and no Accept header; rmcp itself insists that
    // both JSON and an event stream are named.
    parts.headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    let response = endpoint
        .service
        .handle(http::Request::from_parts(parts, Full::new(bytes)))
        .await;
    // rmcp answers 415 when the JSON is not a JSON-RPC message; the media type was already
    // checked above, so that can only mean an invalid request.
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return invalid_request();
    }
    if outcome.failed() {
        log.tool_failed();
        log.reason(outcome.reason());
    }
    // rmcp's own refusals (a Host outside the allowed list, for one) are plain text; every
    // refusal on /mcp carries a JSON-RPC error body instead, with the same status and words,
    // and the request's id.
    if !response.status().is_success() && !has_media_type(response.headers(), "application/json") {
        let status = response.status();
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_default();
        let message = String::from_utf8_lossy(&bytes);
        let message = match message.trim() {
            "" => status.canonical_reason().unwrap_or("Refused"),
            text => text,
        };
        let body = json!({"jsonrpc": "2.0", "id": call.request_id, "error": {
            "code": -32000, "message": message}});
        return (status, axum::Json(body)).into_response();
    }
    response.map(Body::new)
}

/// The device attestation's claim of who is speaking: a household token's against its own
/// account's device keys (the account read once, ahead or now, and kept on the caller for the
/// tools), any other token's against the configured host key.
async fn speaker(
    endpoint: &McpEndpoint,
    caller: &mut Caller,
    headers: &HeaderMap,
    account: Option<AccountRead>,
) -> HostClaim {
    match (&mut caller.household, endpoint.auth.accounts()) {
        (Some(household), Some(accounts)) => {
            let (claim, account) = endpoint
                .attestations
                .check_household(headers, accounts, &household.id, account)
                .await;
            household.account = account;
            claim
        }
        (Some(_), None) => HostClaim::Refused(AttestationRefusal::KeysUnavailable),
        (None, _) => endpoint.attestations.check(headers),
    }
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<PeekParams<'a>>,
}

#[derive(Deserialize)]
struct PeekParams<'a> {
    #[serde(borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: Option<PeekMeta>,
}

#[derive(Deserialize)]
struct PeekMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<IgnoredAny>,
}

/// A request whose `MCP-Protocol-Version` header names a revision Hearth does not speak, when
/// its `_meta` names none: 400 with the request's id and the supported versions.
///
/// rmcp checks the header against every revision it knows (2024-11-05 included), not the ones
/// this server speaks, and checks only a version named in `_meta` against those; so this one
/// case is decided here. Everything else about versions (a `_meta` version, a header and
/// `_meta` that disagree, unknown header values) is rmcp's.
fn unspoken_version(headers: &http::HeaderMap, peek: &Peek<'_>) -> Option<Response> {
    let header = headers.get("mcp-protocol-version")?.to_str().ok()?;
    let names_its_own = peek
        .params
        .as_ref()
        .and_then(|params| params.meta.as_ref())
        .is_some_and(|meta| meta.protocol_version.is_some());
    if names_its_own || PROTOCOL_VERSIONS.contains(&header) {
        return None;
    }
    let body = json!({"jsonrpc": "2.0", "id": peek.id, "error": {
        "code": rmcp::model::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0,
        "message": format!(
            "Unsupported MCP-Protocol-Version; supported: {}",
            PROTOCOL_VERSIONS.join(", ")
        ),
        "data": {"requested": header, "supported": PROTOCOL_VERSIONS},
    }});
    Some((StatusCode::BAD_REQUEST, axum::Json(body)).into_response())
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

/// A JSON-RPC error answering the request `id` (HTTP 200, as rmcp answers its own).
fn rpc_error_for(id: Option<&RawValue>, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// A tool result with `isError` answering the request `id`: MCP reports a tool's argument
/// problems this way, so the model can correct them.
fn tool_error(id: Option<&RawValue>, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": message}], "isError": true}});
    (StatusCode::OK, axum::Json(body)).into_response()
}

fn invalid_request() -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        -32600,
        "Invalid request: the body is not a JSON-RPC 2.0 message",
    )
}

fn too_large() -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        -32000,
        &format!("Request body exceeds {MAX_BODY_BYTES} bytes"),
    )
}

fn refused(refusal: Refusal) -> Response {
    let mut response = rpc_error(refusal.status(), -32000, refusal.message());
    refusal.decorate(&mut response);
    response
}

/// Whether the query string carries an access token, which MCP forbids (tokens in URLs end up
/// in logs and histories). Such a request is refused even with a valid header.
fn token_in_query(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|query| {
        form_urlencoded::parse(query.as_bytes()).any(|(name, _)| name == "access_token")
    })
}

fn unauthorized(challenge: &str, failure: AuthFailure) -> Response {
    let mut response = rpc_error(
        StatusCode::UNAUTHORIZED,
        -32000,
        &format!("Unauthorized: {failure}"),
    );
    let challenge = match failure {
        AuthFailure::Invalid | AuthFailure::Expired => {
            format!(r#"{challenge}, error="invalid_token", error_description="{failure}""#)
        }
        AuthFailure::Missing | AuthFailure::WrongScheme => challenge.to_owned(),
    };
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).expect("challenge is ASCII"),
    );
    response
}

/// HTTP 401 for a Tier-1 token on a Tier-2 method: Alexa+ starts account linking on it, and
/// other clients follow the challenge to the metadata.
fn linking_required(challenge: &str, id: Option<&RawValue>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": "Unauthorized: this needs a household's own token; link the household's account first",
        "data": {"reason": "account_linking_required"},
    }});
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(challenge).expect("challenge is ASCII"),
    );
    response
}

fn insufficient_scope(challenge: &str, needed: Scope, id: Option<&RawValue>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!("Forbidden: this method needs the {} scope", needed.as_str()),
    }});
    let mut response = (StatusCode::FORBIDDEN, axum::Json(body)).into_response();
    let challenge = format!(
        r#"{}, error="insufficient_scope", scope="{}""#,
        challenge,
        needed.as_str()
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).expect("challenge is ASCII"),
    );
    response
}

/// Each layer alone, as the spec of its own refusals; the path as a whole is tested over HTTP
/// (`tests/http.rs`, `tests/authorization.rs` and the conformance suite).
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::auth::{Scopes, Subject};
    use crate::clock::SystemClock;
    use crate::config::RateLimits;
    use crate::ratelimit::RateLimiter;
    use crate::store::sqlite::SqliteStore;

    fn request(method: &str, uri: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Request {
        let mut builder = http::Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(Body::from(body)).unwrap()
    }

    fn gate(directory: &tempfile::TempDir) -> Gate {
        let store = Arc::new(SqliteStore::open(&directory.path().join("hearth.db")).unwrap());
        let limits = RateLimits {
            per_subject: 60,
            per_ip: 120,
        };
        let limiter = RateLimiter::new(store, Arc::new(SystemClock), limits);
        Gate::new(vec!["https://host.example".into()], limiter)
    }

    async fn error_of(response: Response) -> (StatusCode, serde_json::Value) {
        let status = response.status();
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn origin_admits_a_post_from_an_allowed_origin_and_nothing_else() {
        let directory = tempfile::tempdir().unwrap();
        let gate = gate(&directory);
        let allowed = [("origin", "https://host.example")];
        assert!(origin(&gate, &request("POST", "/mcp", &allowed, vec![])).is_ok());
        assert!(origin(&gate, &request("POST", "/mcp", &[], vec![])).is_ok());

        let get = origin(&gate, &request("GET", "/mcp", &allowed, vec![])).unwrap_err();
        assert_eq!(get.headers()[header::ALLOW], "POST");
        assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);

        let elsewhere = [("origin", "https://elsewhere.example")];
        let foreign = origin(&gate, &request("POST", "/mcp", &elsewhere, vec![])).unwrap_err();
        assert_eq!(foreign.status(), StatusCode::FORBIDDEN);

        let in_query = request("POST", "/mcp?access_token=abc", &allowed, vec![]);
        let (status, error) = error_of(origin(&gate, &in_query).unwrap_err()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Authorization header")
        );
    }

    #[tokio::test]
    async fn body_takes_json_answered_in_json_up_to_the_limit() {
        let json = [("content-type", "application/json")];
        let (_, bytes) = body(request("POST", "/mcp", &json, vec![b' '; MAX_BODY_BYTES]))
            .await
            .unwrap();
        assert_eq!(bytes.len(), MAX_BODY_BYTES);

        let past = body(request(
            "POST",
            "/mcp",
            &json,
            vec![b' '; MAX_BODY_BYTES + 1],
        ));
        assert_eq!(
            past.await.unwrap_err().status(),
            StatusCode::PAYLOAD_TOO_LARGE
        );

        let text = [("content-type", "text/plain")];
        let plain = body(request("POST", "/mcp", &text, b"{}".to_vec())).await;
        assert_eq!(
            plain.unwrap_err().status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );

        let html_only = [
            ("content-type", "application/json"),
            ("accept", "text/html"),
        ];
        let refused = body(request("POST", "/mcp", &html_only, b"{}".to_vec())).await;
        assert_eq!(refused.unwrap_err().status(), StatusCode::NOT_ACCEPTABLE);
    }

    fn tiers(linking_required: bool) -> Tiers {
        Tiers {
            challenge: r#"Bearer realm="hearth""#.into(),
            linking_required,
        }
    }

    fn grant(scopes: &str, is_service: bool) -> Grant {
        Grant {
            subject: Subject::of_client("client"),
            scopes: Scopes::parse(scopes).unwrap(),
            household_generation: None,
            household_family: None,
            is_service,
            stored_client: false,
        }
    }

    /// The message `body` through the tier layer with `grant`, where account linking is or is
    /// not configured; a refusal as its status and JSON body.
    async fn through_tier(
        linking_required: bool,
        grant: &Grant,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Call, (StatusCode, serde_json::Value)> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        let mut log = RequestLog::new("test".into());
        match tier(
            &tiers(linking_required),
            grant,
            &map,
            body,
            |_| true,
            &mut log,
        ) {
            Ok(call) => Ok(call),
            Err(response) => Err(error_of(response).await),
        }
    }

    #[test]
    fn place_in_finds_a_borrowed_part_and_nothing_else() {
        let body = r#"{"arguments": {"household_id": "home"}}"#;
        let part = &body[14..body.len() - 1];
        assert_eq!(place_in(body, part), Some(14..body.len() - 1));
        assert_eq!(place_in(body, &body[..0]), Some(0..0));
        let elsewhere = String::from(part);
        assert_eq!(
            place_in(body, &elsewhere),
            None,
            "a copy is not in the body"
        );
        assert_eq!(place_in(part, body), None, "the body is not in its part");
    }

    #[tokio::test]
    async fn tier_reads_the_message_head_against_the_token() {
        let tools = grant("mcp:tools mcp:resources", false);
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{}}}"#;
        let passed = through_tier(false, &tools, &[], call).await.unwrap();
        assert!(passed.acts_or_reads);
        assert_eq!(passed.request_id.unwrap().get(), "7");
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(
            !through_tier(false, &tools, &[], list)
                .await
                .unwrap()
                .acts_or_reads
        );

        let (status, error) = through_tier(false, &tools, &[], b"\xff").await.unwrap_err();
        assert_eq!(
            (status, error["error"]["code"].as_i64()),
            (StatusCode::BAD_REQUEST, Some(-32700))
        );
        let (status, error) = through_tier(false, &tools, &[], b"{").await.unwrap_err();
        assert_eq!(
            (status, error["error"]["code"].as_i64()),
            (StatusCode::BAD_REQUEST, Some(-32700))
        );
        let (status, error) = through_tier(false, &tools, &[], b"[1]").await.unwrap_err();
        assert_eq!(
            (status, error["error"]["code"].as_i64()),
            (StatusCode::BAD_REQUEST, Some(-32600))
        );
        let deep = "[".repeat(body::MAX_NESTING_DEPTH + 1);
        let (_, error) = through_tier(false, &tools, &[], deep.as_bytes())
            .await
            .unwrap_err();
        assert_eq!(error["error"]["code"], -32600);

        let old = [("mcp-protocol-version", "2024-11-05")];
        let (status, error) = through_tier(false, &tools, &old, list).await.unwrap_err();
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error["id"], 1);

        let resources_only = grant("mcp:resources", false);
        let (status, error) = through_tier(false, &resources_only, &[], call)
            .await
            .unwrap_err();
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("mcp:tools")
        );

        let service = grant("mcp:service", true);
        assert!(through_tier(false, &service, &[], call).await.is_ok());
        let (status, error) = through_tier(true, &service, &[], call).await.unwrap_err();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["error"]["data"]["reason"], "account_linking_required");
        let scholia = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"scholia_validate"}}"#;
        assert!(through_tier(true, &service, &[], scholia).await.is_ok());
    }

    #[tokio::test]
    async fn tier_answers_bad_arguments_as_the_tool_call_they_belong_to() {
        let tools = grant("mcp:tools", false);
        let listed = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":[1]}}"#;
        let (status, error) = through_tier(false, &tools, &[], listed).await.unwrap_err();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            (error["id"].as_i64(), error["error"]["code"].as_i64()),
            (Some(3), Some(-32602))
        );

        let huge = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","arguments":{"n":18446744073709551616}}}"#;
        let (status, result) = through_tier(false, &tools, &[], huge).await.unwrap_err();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(result["result"]["isError"], true);
        assert!(
            result["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("`n`")
        );
        let largest = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{"n":18446744073709551615}}}"#;
        assert!(through_tier(false, &tools, &[], largest).await.is_ok());
    }
}
