//! Goose (block/goose), whose OAuth is rmcp's (modelcontextprotocol/rust-sdk
//! `crates/rmcp/src/transport/auth.rs`, rmcp 2.2 and 3.1).
//!
//! Where each step comes from:
//! - discovery: `GET` on the MCP URL with `MCP-Protocol-Version: 2024-11-05` for a challenge;
//!   Hearth's stateless endpoint answers 405, so rmcp goes on to
//!   `/.well-known/oauth-protected-resource/mcp`, checks that its `resource` is the MCP URL's
//!   origin and a path prefix of it, then `/.well-known/oauth-authorization-server`, whose
//!   `issuer` must match;
//! - identity: with `client_id_metadata_document_supported`, Goose's document
//!   `https://goose-docs.ai/oauth/client-metadata.json` (its published body, served here by a
//!   loopback stand-in under the stand-in's URL): port-less loopback callbacks;
//! - redirect `http://127.0.0.1:<ephemeral>/oauth_callback`; scopes are the resource metadata's
//!   `scopes_supported`, with `offline_access` added when the server advertises it; `resource`
//!   on authorize, the exchange and every refresh;
//! - `iss` is required when `authorization_response_iss_parameter_supported` is true, and must
//!   equal the metadata's `issuer` byte for byte (rmcp `validate_authorization_response_issuer`);
//! - `initialize` pinned at 2025-03-26, with roots, sampling and elicitation
//!   (`crates/goose/src/agents/mcp_client.rs`).

use http::StatusCode;
use serde_json::{Value, json};

use crate::common::Backend;
use crate::replay::{
    MCP_URL, VERIFIER, Website, authorize_query, first_tool_call, hearth, initialize,
    pkce_challenge,
};

pub async fn links(backend: Backend) {
    let hearth = hearth(backend, &[]).await;
    let probe = hearth
        .get(
            "/mcp",
            &[
                ("mcp-protocol-version", "2024-11-05"),
                ("accept", "text/event-stream"),
            ],
        )
        .await;
    assert_eq!(
        probe.status,
        StatusCode::METHOD_NOT_ALLOWED,
        "no challenge: rmcp tries the well-known names"
    );
    let (index, resource) = hearth
        .first_found(&[
            "/.well-known/oauth-protected-resource/mcp",
            "/mcp/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource",
        ])
        .await;
    assert_eq!(index, 0);
    let prm_resource = resource["resource"].as_str().unwrap().to_owned();
    assert!(
        MCP_URL.starts_with(&prm_resource),
        "a path prefix of the MCP URL"
    );
    let (_, server) = hearth
        .first_found(&[
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ])
        .await;
    let issuer = server["issuer"].as_str().unwrap().to_owned();
    assert_eq!(
        server["authorization_response_iss_parameter_supported"],
        true
    );
    assert_eq!(server["client_id_metadata_document_supported"], true);

    let goose_docs = Website::start().await;
    let client_id = goose_docs.url("oauth/client-metadata.json");
    goose_docs.publish(
        "oauth/client-metadata.json",
        &json!({"client_id": client_id, "client_name": "goose",
            "redirect_uris": ["http://127.0.0.1/oauth_callback", "http://[::1]/oauth_callback"],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none", "code_challenge_methods_supported": ["S256"]}),
    );
    let mut scopes: Vec<&str> = resource["scopes_supported"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if server["scopes_supported"]
        .as_array()
        .unwrap()
        .contains(&json!("offline_access"))
        && !scopes.contains(&"offline_access")
    {
        scopes.push("offline_access");
    }
    let scope = scopes.join(" ");

    let household = hearth.household("Goose Home").await;
    let redirect = "http://127.0.0.1:53682/oauth_callback";
    let challenge = pkce_challenge();
    let query = authorize_query(
        &client_id,
        redirect,
        "goose-csrf",
        &challenge,
        &[("resource", &prm_resource), ("scope", &scope)],
    );
    let callback = hearth.person_links(&household, &query, "goose").await;
    assert_eq!(
        callback.get("iss"),
        Some(&issuer),
        "required, and equal to the metadata's issuer byte for byte"
    );
    let tokens = hearth
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", &callback["code"]),
                ("redirect_uri", redirect),
                ("client_id", &client_id),
                ("code_verifier", VERIFIER),
                ("resource", &prm_resource),
            ],
        )
        .await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    let granted = tokens.body["scope"].as_str().unwrap().to_owned();
    let refreshed = hearth
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "refresh_token"),
                ("client_id", &client_id),
                (
                    "refresh_token",
                    tokens.body["refresh_token"].as_str().unwrap(),
                ),
                ("resource", &prm_resource),
                ("scope", &granted),
            ],
        )
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    let hello = initialize(
        json!(0),
        "2025-03-26",
        json!({"roots": {}, "sampling": {}, "elicitation": {}}),
        ("goose-desktop", "1.38.0"),
    );
    first_tool_call(
        &hearth,
        refreshed.body["access_token"].as_str().unwrap(),
        &hello,
        "2025-03-26",
        &household,
    )
    .await;
}
