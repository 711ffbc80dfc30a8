//! Amazon Alexa+ (MCP add-ons), in its two tiers.
//!
//! Where each step comes from:
//! - Tier 1: `client_credentials` with the client id and secret entered in the Alexa developer
//!   console, required in the metadata's `grant_types_supported` (Amazon's MCP Toolkit
//!   authentication page); HTTP Basic and `resource` on the token request (a third-party replay
//!   of Alexa+'s requests; Amazon's classic account linking also offers `HTTP_BASIC`);
//! - `initialize` at 2025-03-26 with only `roots: {listChanged: true}`, a string `id` and
//!   `clientInfo: Alexa+ MCP Client` (Amazon's client lifecycle page), then `tools/list`;
//! - Tier 2: account linking with Amazon's regional redirect URIs
//!   (`https://{layla,pitangui}.amazon.com/api/skill/link/<vendor id>`,
//!   `https://alexa.amazon.co.jp/api/skill/link/<vendor id>`, from public configurations),
//!   configured as `MCP_REDIRECT_URIS`; PKCE S256; the code exchanged with Basic; a refresh
//!   without `resource`, with the secret in the body (the same replay).

use http::StatusCode;
use serde_json::json;

use crate::common::{Backend, basic};
use crate::replay::{
    MCP_URL, VERIFIER, authorize_query, first_tool_call, hearth, initialize, pkce_challenge,
};

const CLIENT_ID: &str = "alexa-plus-skill-client";
const SECRET: &str = "alexa-plus-client-secret-of-some-length";
const REDIRECTS: &str = "https://pitangui.amazon.com/api/skill/link/M2AAAAAAAAAAAA,https://layla.amazon.com/api/skill/link/M2AAAAAAAAAAAA,https://alexa.amazon.co.jp/api/skill/link/M2AAAAAAAAAAAA";

pub async fn links(backend: Backend) {
    let hearth = hearth(
        backend,
        &[
            ("MCP_CLIENT_ID", CLIENT_ID),
            ("MCP_CLIENT_SECRET", SECRET),
            ("MCP_REDIRECT_URIS", REDIRECTS),
        ],
    )
    .await;
    let server = hearth
        .get("/.well-known/oauth-authorization-server", &[])
        .await;
    assert!(
        server.body["grant_types_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("client_credentials"))
    );
    let authorization = basic(CLIENT_ID, SECRET);
    let service = hearth
        .post_form(
            "/oauth/token",
            &[("authorization", &authorization)],
            &[("grant_type", "client_credentials"), ("resource", MCP_URL)],
        )
        .await;
    assert_eq!(service.status, StatusCode::OK, "{}", service.raw);
    let service_token = service.body["access_token"].as_str().unwrap();
    let hello = initialize(
        json!("4e3bdaee-0"),
        "2025-03-26",
        json!({"roots": {"listChanged": true}}),
        ("Alexa+ MCP Client", "1.0.0"),
    );
    let initialized = hearth.mcp(Some(service_token), None, &hello).await;
    assert_eq!(initialized.status, StatusCode::OK, "{}", initialized.raw);
    assert_eq!(initialized.body["id"], "4e3bdaee-0");
    let listed = hearth
        .mcp(
            Some(service_token),
            None,
            &json!({"jsonrpc": "2.0", "id": "4e3bdaee-1", "method": "tools/list"}),
        )
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.raw);
    // Tier 1 acts for no household: a household's tool needs account linking.
    let unlinked = hearth
        .mcp(
            Some(service_token),
            None,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "record_decision", "arguments": {}}}),
        )
        .await;
    assert_eq!(
        unlinked.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        unlinked.raw
    );

    let household = hearth.household("Alexa Home").await;
    let redirect = "https://layla.amazon.com/api/skill/link/M2AAAAAAAAAAAA";
    let challenge = pkce_challenge();
    let query = authorize_query(
        CLIENT_ID,
        redirect,
        "alexa-state",
        &challenge,
        &[
            ("resource", MCP_URL),
            ("scope", "mcp:service countersign:read"),
        ],
    );
    let callback = hearth.person_links(&household, &query, CLIENT_ID).await;
    let tokens = hearth
        .post_form(
            "/oauth/token",
            &[("authorization", &authorization)],
            &[
                ("grant_type", "authorization_code"),
                ("code", &callback["code"]),
                ("redirect_uri", redirect),
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
                (
                    "refresh_token",
                    tokens.body["refresh_token"].as_str().unwrap(),
                ),
                ("client_id", CLIENT_ID),
                ("client_secret", SECRET),
            ],
        )
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    first_tool_call(
        &hearth,
        refreshed.body["access_token"].as_str().unwrap(),
        &hello,
        "2025-03-26",
        &household,
    )
    .await;
}
