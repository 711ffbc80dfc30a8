//! Claude Code (the CLI): the TypeScript SDK's OAuth client, with Claude Code's own document.
//!
//! Where each step comes from:
//! - identity: `https://claude.ai/oauth/claude-code-client-metadata`, whose document declares
//!   `http://localhost/callback` and `http://127.0.0.1/callback`, matched on any port
//!   (Anthropic's documentation, quoted in public notes; bytes in `data/cimd/claude-code.json`);
//!   the fetch can be refused from a cloud address (anthropics/claude-code#84263), so the pinned
//!   copy stands in here;
//! - the redirect is `http://localhost:<ephemeral port>/callback`;
//! - `resource` is `new URL(prm.resource).href` (the TypeScript SDK), and the callback's `iss`
//!   must equal the metadata's `issuer` exactly (strict RFC 9207, issue reports of Claude
//!   Code's error text);
//! - newer builds probe `server/discover` (2026-07-28) first, then `initialize` at 2025-11-25.

use http::StatusCode;
use serde_json::json;

use crate::common::Backend;
use crate::replay::{
    MCP_URL, VERIFIER, authorize_query, first_tool_call, hearth, initialize, pkce_challenge,
};

const CLIENT_ID: &str = "https://claude.ai/oauth/claude-code-client-metadata";

pub async fn links(backend: Backend) {
    let hearth = hearth(backend, &[]).await;
    let hello = initialize(
        json!(0),
        "2025-11-25",
        json!({"roots": {}}),
        ("claude-code", "2.1.30"),
    );
    let resource_metadata = hearth.challenge(&hello).await;
    let resource = hearth.get(&resource_metadata, &[]).await;
    let prm_resource = resource.body["resource"].as_str().unwrap().to_owned();
    let server = hearth
        .get("/.well-known/oauth-authorization-server", &[])
        .await;
    let issuer = server.body["issuer"].as_str().unwrap().to_owned();

    let household = hearth.household("Terminal Home").await;
    // Any port: the CLI listens wherever the OS puts it.
    let redirect = "http://localhost:49321/callback";
    let challenge = pkce_challenge();
    let query = authorize_query(
        CLIENT_ID,
        redirect,
        "cc-state",
        &challenge,
        &[
            ("resource", &prm_resource),
            ("scope", "mcp:service countersign:read offline_access"),
        ],
    );
    let callback = hearth.person_links(&household, &query, "Claude Code").await;
    assert_eq!(
        callback["iss"], issuer,
        "strict RFC 9207: the metadata's issuer, exactly"
    );
    let tokens = hearth
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", &callback["code"]),
                ("redirect_uri", redirect),
                ("client_id", CLIENT_ID),
                ("code_verifier", VERIFIER),
                ("resource", &prm_resource),
            ],
        )
        .await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
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
                ("resource", &prm_resource),
            ],
        )
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    let token = refreshed.body["access_token"].as_str().unwrap();
    let discover = hearth.discover(token, ("claude-code", "2.1.30")).await;
    assert_eq!(discover.status, StatusCode::OK, "{}", discover.raw);
    assert_eq!(
        MCP_URL, prm_resource,
        "the resource a host read is the one it calls"
    );
    first_tool_call(&hearth, token, &hello, "2025-11-25", &household).await;
}
