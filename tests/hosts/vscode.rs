//! VS Code's built-in MCP client (GitHub Copilot Chat uses it): its own OAuth code, not the
//! SDK's.
//!
//! Where each step comes from (microsoft/vscode `src/vs/base/common/oauth.ts` and
//! `extHostAuthentication.ts`):
//! - discovery: `resource_metadata` from the 401's `WWW-Authenticate`; the resource metadata's
//!   `resource` must equal the MCP URL after `new URL(...).toString()`, or VS Code stops; the
//!   authorization server's metadata at the path-inserted name first;
//! - registration (`fetchDynamicRegistration`): `client_name` the product's name, `client_uri`,
//!   `grant_types` filtered from the server's list, four redirect URIs, `scope` the resource
//!   metadata's `scopes_supported`, `none`, `application_type: native`;
//! - redirect: the loopback listener on `127.0.0.1:33418` first, `http://127.0.0.1:33418/`;
//!   `resource` is the resource metadata's string verbatim, on authorize, the exchange and every
//!   refresh; no `iss` check was found;
//! - `initialize` at 2025-11-25 with roots, sampling and elicitation.

use http::StatusCode;
use serde_json::{Value, json};

use crate::common::Backend;
use crate::replay::{
    MCP_URL, VERIFIER, authorize_query, first_tool_call, hearth, initialize, pkce_challenge,
};

const REDIRECT: &str = "http://127.0.0.1:33418/";

pub async fn links(backend: Backend) {
    let hearth = hearth(backend, &[]).await;
    let hello = initialize(
        json!(1),
        "2025-11-25",
        json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {"form": {}, "url": {}}}),
        ("Visual Studio Code", "1.107.0"),
    );
    let resource_metadata = hearth.challenge(&hello).await;
    let resource = hearth
        .get(
            &resource_metadata,
            &[("mcp-protocol-version", "2025-11-25")],
        )
        .await;
    let prm_resource = resource.body["resource"].as_str().unwrap().to_owned();
    let normalized = |text: &str| url::Url::parse(text).unwrap().to_string();
    assert_eq!(
        normalized(&prm_resource),
        normalized(MCP_URL),
        "VS Code stops unless these match"
    );
    let (_, server) = hearth
        .first_found(&[
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ])
        .await;
    let offered = [
        "authorization_code",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:device_code",
    ];
    let grant_types: Vec<Value> = server["grant_types_supported"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|grant| offered.contains(&grant.as_str().unwrap()))
        .cloned()
        .collect();
    let scopes: Vec<&str> = resource.body["scopes_supported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|scope| scope.as_str().unwrap())
        .collect();
    let scope = scopes.join(" ");
    let registered = hearth
        .post_json(
            "/oauth/register",
            &[],
            &json!({
                "client_name": "Visual Studio Code",
                "client_uri": "https://code.visualstudio.com",
                "grant_types": grant_types,
                "response_types": ["code"],
                "redirect_uris": ["https://insiders.vscode.dev/redirect", "https://vscode.dev/redirect",
                    "http://127.0.0.1/", "http://127.0.0.1:33418/"],
                "scope": scope,
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            }),
        )
        .await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.raw);
    assert_eq!(
        registered.body["redirect_uris"].as_array().unwrap().len(),
        4
    );
    let client_id = registered.body["client_id"].as_str().unwrap().to_owned();

    let household = hearth.household("VS Code Home").await;
    let challenge = pkce_challenge();
    let query = authorize_query(
        &client_id,
        REDIRECT,
        "vscode-state",
        &challenge,
        &[("resource", &prm_resource), ("scope", &scope)],
    );
    let callback = hearth
        .person_links(&household, &query, "Visual Studio Code")
        .await;
    let tokens = hearth
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", &callback["code"]),
                ("redirect_uri", REDIRECT),
                ("client_id", &client_id),
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
                ("client_id", &client_id),
                (
                    "refresh_token",
                    tokens.body["refresh_token"].as_str().unwrap(),
                ),
                ("resource", &prm_resource),
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
