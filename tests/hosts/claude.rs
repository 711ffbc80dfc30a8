//! claude.ai, Claude Desktop and Claude mobile: one backend, brokered from Anthropic's cloud.
//!
//! Where each step comes from:
//! - discovery: a 401 with `resource_metadata` is followed (anthropics/claude-ai-mcp#199, a
//!   staff answer), then the path-suffixed protected-resource name and the root one, then
//!   `/.well-known/oauth-authorization-server` (Anthropic's troubleshooting page, quoted in
//!   public notes; anthropics/claude-ai-mcp#76 shows the wire order);
//! - identity: the Client ID Metadata Document `https://claude.ai/oauth/mcp-oauth-client-metadata`,
//!   chosen only when the server advertises both CIMD and `none`; its bytes are in
//!   `data/cimd/claude-ai.json` (as served 2026-08-03). Its fetch from a cloud address has met
//!   a Cloudflare 403 (anthropics/claude-ai-mcp#650, #518): here no host name resolves, so the
//!   pinned copy stands in, as it would then;
//! - redirect `https://claude.ai/api/mcp/auth_callback`, `none` and PKCE S256; `resource` is
//!   the canonical MCP URL; `offline_access` is asked for so that a refresh token is used
//!   (anthropics/claude-ai-mcp#228); `iss` is not checked (issue reports);
//! - `initialize` at 2025-11-25 (anthropics/claude-ai-mcp#764).

use http::StatusCode;
use serde_json::json;

use crate::common::Backend;
use crate::replay::{
    ISSUER, MCP_URL, VERIFIER, authorize_query, first_tool_call, hearth, initialize, pkce_challenge,
};

const CLIENT_ID: &str = "https://claude.ai/oauth/mcp-oauth-client-metadata";
const REDIRECT: &str = "https://claude.ai/api/mcp/auth_callback";

pub async fn links(backend: Backend) {
    let hearth = hearth(backend, &[]).await;
    let hello = initialize(json!(0), "2025-11-25", json!({}), ("claude-ai", "0.1.0"));
    let resource_metadata = hearth.challenge(&hello).await;
    let (_, resource) = hearth
        .first_found(&[&resource_metadata, "/.well-known/oauth-protected-resource"])
        .await;
    assert_eq!(resource["resource"], MCP_URL);
    assert_eq!(resource["authorization_servers"][0], ISSUER);
    let (_, server) = hearth
        .first_found(&[
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ])
        .await;
    // Claude names itself by its document only when both are advertised.
    assert_eq!(server["client_id_metadata_document_supported"], true);
    assert!(
        server["token_endpoint_auth_methods_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("none"))
    );

    let household = hearth.household("Claude Home").await;
    let challenge = pkce_challenge();
    let query = authorize_query(
        CLIENT_ID,
        REDIRECT,
        "claude-state",
        &challenge,
        &[
            ("resource", MCP_URL),
            ("scope", "mcp:service offline_access"),
        ],
    );
    let callback = hearth.person_links(&household, &query, "Claude").await;
    assert_eq!(callback["state"], "claude-state");
    let tokens = hearth
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", &callback["code"]),
                ("redirect_uri", REDIRECT),
                ("client_id", CLIENT_ID),
                ("code_verifier", VERIFIER),
                ("resource", MCP_URL),
            ],
        )
        .await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    assert!(
        tokens.body["scope"]
            .as_str()
            .unwrap()
            .contains("offline_access"),
        "granted, so claude.ai will use the refresh token: {}",
        tokens.raw
    );
    let refreshed = hearth
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "refresh_token"),
                (
                    "refresh_token",
                    tokens.body["refresh_token"].as_str().unwrap(),
                ),
                ("client_id", CLIENT_ID),
            ],
        )
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    first_tool_call(
        &hearth,
        refreshed.body["access_token"].as_str().unwrap(),
        &hello,
        "2025-11-25",
        &household,
    )
    .await;
}
