//! MCP 2026-07-28, the stateless revision, beside the older ones: `server/discover` instead of
//! `initialize`, each request's version and the client's capabilities in `_meta`, the
//! `Mcp-Method` and `Mcp-Name` headers, caching hints on lists, and errors that carry the
//! request's id. Then rmcp's own 2026-07-28 client lists the tools and calls one with a
//! household's token over TCP.

mod common;

use std::net::SocketAddr;

use common::{Backend, Harness, Reply, TOKEN, harness, request, settings};
use hearth_core::mcp::{LIST_TTL_MS, PROTOCOL_VERSIONS};
use hearth_testkit::moto::Moto;
use http::StatusCode;
use serde_json::{Value, json};

const V2026: &str = "2026-07-28";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1.0"},
    })
}

/// A 2026-07-28 request: the version header, `Mcp-Method` (and `Mcp-Name` where the method
/// names something), and `_meta` in the params, each overridable by `headers` (an empty value
/// removes one).
async fn send_2026(
    router: &axum::Router,
    bearer: &str,
    id: Value,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> Reply {
    let mut params = params;
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let authorization = format!("Bearer {bearer}");
    let mut all: Vec<(&str, &str)> = vec![
        ("authorization", authorization.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", V2026),
        ("mcp-method", method),
    ];
    if let Some(name) = &name {
        all.push(("mcp-name", name));
    }
    for (header, value) in headers {
        all.retain(|(name, _)| !name.eq_ignore_ascii_case(header));
        if !value.is_empty() {
            all.push((header, value));
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    request(router, "POST", "/mcp", &all, &body.to_string()).await
}

async fn discover(h: &Harness) -> Reply {
    send_2026(
        &h.router,
        TOKEN,
        json!(1),
        "server/discover",
        json!({}),
        &[],
    )
    .await
}

#[tokio::test]
async fn discover_names_every_revision_and_what_the_server_offers() {
    let h = harness(&[]);
    let reply = discover(&h).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    let result = &reply.body["result"];
    assert_eq!(reply.body["id"], 1);
    assert_eq!(result["supportedVersions"], json!(PROTOCOL_VERSIONS));
    for capability in ["tools", "prompts", "resources"] {
        assert!(result["capabilities"][capability].is_object(), "{result}");
    }
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "hearth"
    );
    assert!(
        result["instructions"]
            .as_str()
            .unwrap()
            .contains("record_decision")
    );
    assert_eq!(result["ttlMs"], LIST_TTL_MS);
    assert_eq!(result["cacheScope"], "public");
}

#[tokio::test]
async fn lists_carry_caching_hints_on_the_new_revision_only() {
    let h = harness(&[]);
    for method in ["tools/list", "prompts/list", "resources/list"] {
        let reply = send_2026(&h.router, TOKEN, json!(2), method, json!({}), &[]).await;
        assert_eq!(reply.status, StatusCode::OK, "{method}: {}", reply.raw);
        assert_eq!(reply.body["result"]["ttlMs"], LIST_TTL_MS, "{method}");
        assert_eq!(reply.body["result"]["cacheScope"], "public", "{method}");
        // The same list for a 2025-11-25 client keeps exactly its old shape.
        let old = common::rpc(
            &h.router,
            &json!({"jsonrpc": "2.0", "id": 3, "method": method}),
        )
        .await;
        assert_eq!(old.status, StatusCode::OK, "{method}: {}", old.raw);
        assert!(old.body["result"].get("ttlMs").is_none(), "{}", old.raw);
        assert!(
            old.body["result"].get("cacheScope").is_none(),
            "{}",
            old.raw
        );
    }
}

#[tokio::test]
async fn a_tool_call_works_without_initialize_and_its_headers_must_match() {
    let h = harness(&[]);
    let arguments = json!({"household_id": "stateless", "action": "opened the window",
        "reason": "stuffy", "inputs": {}, "approver": "Ana"});
    let params = json!({"name": "record_decision", "arguments": arguments});
    let called = send_2026(
        &h.router,
        TOKEN,
        json!("call-1"),
        "tools/call",
        params.clone(),
        &[],
    )
    .await;
    assert_eq!(called.status, StatusCode::OK, "{}", called.raw);
    assert_eq!(called.body["id"], "call-1");
    assert_eq!(called.body["result"]["isError"], false, "{}", called.raw);

    // rmcp checks the headers against the body: -32020 and HTTP 400, with the request's id.
    let refusals: [(&str, &[(&str, &str)]); 4] = [
        ("a wrong Mcp-Name", &[("mcp-name", "explain_why")]),
        ("no Mcp-Name", &[("mcp-name", "")]),
        ("a wrong Mcp-Method", &[("mcp-method", "tools/list")]),
        ("no Mcp-Method", &[("mcp-method", "")]),
    ];
    for (what, headers) in refusals {
        let reply = send_2026(
            &h.router,
            TOKEN,
            json!(9),
            "tools/call",
            params.clone(),
            headers,
        )
        .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{what}: {}",
            reply.raw
        );
        assert_eq!(reply.body["error"]["code"], -32020, "{what}: {}", reply.raw);
        assert_eq!(reply.body["id"], 9, "{what}: {}", reply.raw);
    }
}

#[tokio::test]
async fn every_refusal_on_the_new_revision_carries_the_request_id() {
    let h = harness(&[]);
    // No `_meta`, or one without the client's capabilities: invalid params.
    let no_meta = send_2026(
        &h.router,
        TOKEN,
        json!(11),
        "server/discover",
        json!({"_meta": {}}),
        &[],
    )
    .await;
    assert_eq!(no_meta.status, StatusCode::BAD_REQUEST, "{}", no_meta.raw);
    assert_eq!(no_meta.body["error"]["code"], -32602);
    assert_eq!(no_meta.body["id"], 11);
    let no_capabilities = send_2026(
        &h.router,
        TOKEN,
        json!(12),
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V2026}}),
        &[],
    )
    .await;
    assert_eq!(no_capabilities.status, StatusCode::BAD_REQUEST);
    assert_eq!(no_capabilities.body["error"]["code"], -32602);
    assert_eq!(no_capabilities.body["id"], 12);
    // The revision dropped `ping` and `initialize`'s handshake: method not found, 404.
    for method in ["ping", "logging/setLevel", "no/such/method"] {
        let reply = send_2026(&h.router, TOKEN, json!(13), method, json!({}), &[]).await;
        assert_eq!(
            reply.status,
            StatusCode::NOT_FOUND,
            "{method}: {}",
            reply.raw
        );
        assert_eq!(reply.body["error"]["code"], -32601, "{method}");
        assert_eq!(reply.body["id"], 13, "{method}");
    }
    // A `_meta` version the server lacks: the supported ones, and what was asked.
    let future = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}});
    let unsupported = send_2026(
        &h.router,
        TOKEN,
        json!(14),
        "server/discover",
        future,
        &[("mcp-protocol-version", "2099-01-01")],
    )
    .await;
    assert_eq!(
        unsupported.status,
        StatusCode::BAD_REQUEST,
        "{}",
        unsupported.raw
    );
    assert_eq!(unsupported.body["id"], 14);
    assert_eq!(unsupported.body["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(
        unsupported.body["error"]["data"]["supported"],
        json!(PROTOCOL_VERSIONS)
    );
    // A header that disagrees with `_meta`.
    let mismatch = send_2026(
        &h.router,
        TOKEN,
        json!(15),
        "tools/list",
        json!({}),
        &[("mcp-protocol-version", "2025-11-25")],
    )
    .await;
    assert_eq!(mismatch.status, StatusCode::BAD_REQUEST, "{}", mismatch.raw);
    assert_eq!(mismatch.body["error"]["code"], -32020);
    assert_eq!(mismatch.body["id"], 15);
}

/// A household's data is never shared between callers: reading the household's rules (with a
/// signed speaker) on the new revision is marked private and not to be kept.
#[tokio::test]
async fn a_household_read_is_private_and_not_kept() {
    use common::device::{Device, HOST_KEY, Turn};
    let h = harness(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)]);
    let device = Device::new(h.router.clone(), h.clock.clone());
    let (attestation, signature) =
        device.headers(&Turn::new("mia", &["what are the rules"]), HOST_KEY);
    let read = send_2026(
        &h.router,
        TOKEN,
        json!(21),
        "resources/read",
        json!({"uri": "countersign://household/rules"}),
        &[
            ("x-countersign-attestation", &attestation),
            ("x-countersign-signature", &signature),
        ],
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.raw);
    assert!(
        read.body["result"]["contents"][0]["text"].is_string(),
        "{}",
        read.raw
    );
    assert_eq!(read.body["result"]["ttlMs"], 0);
    assert_eq!(read.body["result"]["cacheScope"], "private");
}

/// A header naming a revision Hearth does not speak (rmcp knows 2024-11-05, Hearth does not),
/// with no version in `_meta`: refused at the edge, with the id and the supported versions.
#[tokio::test]
async fn a_header_naming_an_unspoken_revision_is_refused_with_the_id() {
    let h = harness(&[]);
    for version in ["2024-11-05", "2099-01-01", "latest"] {
        let body = json!({"jsonrpc": "2.0", "id": "v", "method": "tools/list"}).to_string();
        let bearer = format!("Bearer {TOKEN}");
        let reply = request(
            &h.router,
            "POST",
            "/mcp",
            &[
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                ("mcp-protocol-version", version),
            ],
            &body,
        )
        .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{version}");
        assert_eq!(reply.body["id"], "v", "{version}: {}", reply.raw);
        assert_eq!(reply.body["error"]["code"], -32022, "{version}");
        assert_eq!(reply.body["error"]["data"]["requested"], version);
    }
}

/// `server/discover` is Tier 1 and needs no scope, like `initialize`: a client-credentials
/// token where account linking is configured, and a token scoped to resources only, both
/// discover.
#[tokio::test]
async fn discover_needs_no_scope_and_is_tier_one() {
    let vars = settings(&[("MCP_REDIRECT_URIS", "https://alexa.example/cb")]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let h = common::harness_with(&common::config(&vars));
    for scope in ["mcp:service", "mcp:resources"] {
        let service = common::access_token(&h.router, Some(scope)).await;
        let reply = send_2026(
            &h.router,
            &service,
            json!(1),
            "server/discover",
            json!({}),
            &[],
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{scope}: {}", reply.raw);
        assert!(reply.body["result"]["supportedVersions"].is_array());
    }
    // A Tier-2 call with the service token still needs a household: 401 with the id.
    let service = common::access_token(&h.router, None).await;
    let params = json!({"name": "explain_why", "arguments": {"action": "x"}});
    let refused = send_2026(&h.router, &service, json!(5), "tools/call", params, &[]).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.raw);
    assert_eq!(refused.body["id"], 5);
    assert_eq!(
        refused.body["error"]["data"]["reason"],
        "account_linking_required"
    );
}

/// Alexa+ keeps working exactly as before: `initialize` with 2025-03-26 is answered with
/// 2025-03-26, and a client asking `initialize` for 2026-07-28 (which has no handshake) is
/// offered 2025-11-25.
#[tokio::test]
async fn initialize_keeps_its_old_answers() {
    let h = harness(&[]);
    for (asked, answered) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-11-25", "2025-11-25"),
        (V2026, "2025-11-25"),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {},
            "clientInfo": {"name": "Alexa", "version": "1"}}});
        let reply = common::rpc(&h.router, &body).await;
        assert_eq!(reply.status, StatusCode::OK, "{asked}: {}", reply.raw);
        assert_eq!(reply.body["result"]["protocolVersion"], answered, "{asked}");
    }
}

/// rmcp's own client, on 2026-07-28 (discover, never initialize), over TCP with a household's
/// token from `hearth admin token`: it lists the tools and records a decision.
#[tokio::test]
async fn rmcps_client_on_the_new_revision_lists_and_calls_with_a_household_token() {
    use rmcp::model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
    };
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let vars = settings(&[]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let config = common::config(&vars);
    let (h, admin) = common::operated(
        &config,
        Backend::Sqlite,
        Moto::shared().dynamodb_client(),
        "hearth-stateless",
    )
    .await;
    let household = admin
        .create("Stateless Home", None)
        .await
        .unwrap()
        .household_id;
    let token = admin.token(&household, 1).await.unwrap().access_token;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let service = h
        .router
        .clone()
        .into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await.unwrap() });

    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{address}/mcp"))
            .auth_header(token),
    );
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("stateless-test", "1.0"),
    )
    .serve_with_lifecycle(
        transport,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("discover");
    let tools = client.list_tools(None).await.expect("tools/list");
    assert!(
        tools
            .tools
            .iter()
            .any(|tool| tool.name == "record_decision")
    );
    assert_eq!(tools.ttl_ms, Some(LIST_TTL_MS));
    let mut arguments = serde_json::Map::new();
    arguments.insert("action".into(), json!("lit the fire"));
    arguments.insert("reason".into(), json!("cold evening"));
    arguments.insert("inputs".into(), json!({}));
    arguments.insert("approver".into(), json!("rmcp"));
    let result = client
        .call_tool(CallToolRequestParams::new("record_decision").with_arguments(arguments))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let structured = result.structured_content.expect("structured content");
    assert_eq!(structured["household_id"], household);
    client.cancel().await.unwrap();
}
