//! Cursor (closed source; its error texts are the TypeScript SDK's, so it very likely runs the
//! SDK's OAuth code).
//!
//! Where each step comes from:
//! - discovery: a 401 on the MCP URL, the path-suffixed resource metadata, then the
//!   authorization server's metadata (a capture of Cursor 3.2.16, 2026-08-16, in public notes);
//!   it asks for every scope the resource metadata lists (a server's Cursor guide);
//! - registration, exactly as captured: three redirect URIs (`cursor://anysphere.cursor-mcp/…`,
//!   `https://www.cursor.com/agents/mcp/oauth/callback`, `http://localhost:8787/callback`),
//!   `none`, `client_name: Cursor` (the same three in erp-mafia/accounted#2225). Hearth keeps the
//!   two it can send codes to and sets `cursor://` aside (a scheme any app may claim);
//! - the desktop callback `http://localhost:8787/callback` (Cursor's docs): Hearth's local
//!   default moved to 8790 so that both fit on one machine. One capture shows Cursor
//!   authorizing with `cursor://` first even when the server dropped it: that request gets
//!   the error page, and the manual says what to do (an operator's client with that callback);
//! - `initialize` at 2025-11-25 as `cursor-vscode 1.0.0` (public capture).

use http::StatusCode;
use serde_json::{Value, json};

use crate::common::Backend;
use crate::replay::{
    MCP_URL, VERIFIER, authorize_query, first_tool_call, hearth, initialize, pkce_challenge,
};

const CURSOR_SCHEME: &str = "cursor://anysphere.cursor-mcp/oauth/callback";
const DESKTOP: &str = "http://localhost:8787/callback";

pub async fn links(backend: Backend) {
    let hearth = hearth(backend, &[]).await;
    let hello = initialize(
        json!(0),
        "2025-11-25",
        json!({"roots": {}}),
        ("cursor-vscode", "1.0.0"),
    );
    let resource_metadata = hearth.challenge(&hello).await;
    let resource = hearth.get(&resource_metadata, &[]).await;
    assert_eq!(resource.status, StatusCode::OK);
    let scope = resource.body["scopes_supported"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    let server = hearth
        .get("/.well-known/oauth-authorization-server", &[])
        .await;
    let registration = server.body["registration_endpoint"].as_str().unwrap();
    let path = url::Url::parse(registration).unwrap().path().to_owned();
    let registered = hearth
        .post_json(
            &path,
            &[],
            &json!({"redirect_uris": [CURSOR_SCHEME, "https://www.cursor.com/agents/mcp/oauth/callback", DESKTOP],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"], "client_name": "Cursor"}),
        )
        .await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.raw);
    assert_eq!(
        registered.body["redirect_uris"],
        json!(["https://www.cursor.com/agents/mcp/oauth/callback", DESKTOP])
    );
    let client_id = registered.body["client_id"].as_str().unwrap().to_owned();

    let household = hearth.household("Cursor Home").await;
    let challenge = pkce_challenge();
    let set_aside = authorize_query(
        &client_id,
        CURSOR_SCHEME,
        "c",
        &challenge,
        &[("resource", MCP_URL)],
    );
    let refused = hearth
        .get(
            &format!(
                "/oauth/authorize?{}",
                crate::common::oauth::encode_pairs(&set_aside)
            ),
            &[],
        )
        .await;
    assert_eq!(
        refused.status,
        StatusCode::BAD_REQUEST,
        "no code goes to a claimed scheme"
    );
    assert!(refused.header("location").is_empty());

    let query = authorize_query(
        &client_id,
        DESKTOP,
        "cursor-state",
        &challenge,
        &[("resource", MCP_URL), ("scope", &scope)],
    );
    let callback = hearth.person_links(&household, &query, "Cursor").await;
    let tokens = hearth
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", &callback["code"]),
                ("redirect_uri", DESKTOP),
                ("client_id", &client_id),
                ("code_verifier", VERIFIER),
                ("resource", MCP_URL),
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
                ("client_id", &client_id),
                (
                    "refresh_token",
                    tokens.body["refresh_token"].as_str().unwrap(),
                ),
                ("resource", MCP_URL),
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
