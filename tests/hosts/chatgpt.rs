//! ChatGPT (connectors and the Apps SDK).
//!
//! Where each step comes from:
//! - identity: a per-app Client ID Metadata Document, `https://chatgpt.com/oauth/<id>/client.json`,
//!   declaring `private_key_jwt`, `RS256` and `jwks_uri: https://chatgpt.com/oauth/jwks.json`
//!   (Altinity/altinity-mcp#118; pomerium/pomerium#6692); it signs even where `none` is offered
//!   (engram-app/Engram#1633). Here the document and its keys are served by a loopback stand-in
//!   for chatgpt.com, with a key pair made in the test;
//! - the assertion: `iss` = `sub` = the client id, `aud` the token endpoint, `exp`, `iat`,
//!   `jti`, header `alg: RS256` and `kid` (the verifiers that work with ChatGPT: Altinity's
//!   `client_assertion.go`); on the code exchange, every refresh and revocation (servers that
//!   serve ChatGPT do so: directus/directus#27629);
//! - redirect `https://chatgpt.com/connector/oauth/<callback id>`; `resource` is the MCP URL on
//!   authorize and token (OpenAI's Apps SDK auth page, quoted in public notes);
//! - a `server/discover` probe, then `initialize` at 2025-11-25 with OpenAI's capabilities
//!   (a public capture of `openai-mcp/1.0.0`).

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_SHA256};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use serde_json::{Value, json};

use crate::common::Backend;
use crate::replay::{
    ISSUER, MCP_URL, VERIFIER, Website, authorize_query, first_tool_call, hearth, initialize,
    pkce_challenge,
};

const REDIRECT: &str = "https://chatgpt.com/connector/oauth/kDmjx77UnKOM";
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const KID: &str = "cimd-20260428030119";

/// ChatGPT's signing key, made here.
struct Signer(KeyPair);

impl Signer {
    fn jwk(&self) -> Value {
        let public = self.0.public_key();
        json!({"kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
            "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero())})
    }

    /// A client assertion for `client_id`, issued now, for the token endpoint.
    fn assertion(&self, client_id: &str, jti: &str, now: i64) -> String {
        let header = json!({"alg": "RS256", "typ": "JWT", "kid": KID});
        let claims = json!({"iss": client_id, "sub": client_id,
            "aud": format!("{ISSUER}/oauth/token"), "iat": now, "exp": now + 300, "jti": jti});
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0u8; self.0.public_modulus_len()];
        self.0
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                message.as_bytes(),
                &mut signature,
            )
            .unwrap();
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

pub async fn links(backend: Backend) {
    let hearth = hearth(backend, &[]).await;
    let chatgpt = Website::start().await;
    let signer = Signer(KeyPair::generate(KeySize::Rsa2048).unwrap());
    let client_id = chatgpt.url("oauth/kDmjx77UnKOM/client.json");
    chatgpt.publish(
        "oauth/kDmjx77UnKOM/client.json",
        &json!({
            "client_id": client_id,
            "client_uri": "https://chatgpt.com/",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "client_name": "ChatGPT",
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "RS256",
            "jwks_uri": chatgpt.url("oauth/jwks.json"),
        }),
    );
    chatgpt.publish("oauth/jwks.json", &json!({"keys": [signer.jwk()]}));

    let hello = initialize(
        json!(1),
        "2025-11-25",
        json!({"experimental": {"openai/visibility": {"enabled": true}}}),
        ("openai-mcp", "1.0.0"),
    );
    let resource_metadata = hearth.challenge(&hello).await;
    assert_eq!(
        resource_metadata,
        "/.well-known/oauth-protected-resource/mcp"
    );
    let server = hearth
        .get("/.well-known/oauth-authorization-server", &[])
        .await;
    for advertised in [
        "token_endpoint_auth_methods_supported",
        "revocation_endpoint_auth_methods_supported",
    ] {
        assert!(
            server.body[advertised]
                .as_array()
                .unwrap()
                .contains(&json!("private_key_jwt")),
            "{advertised}"
        );
    }
    assert!(
        server.body["token_endpoint_auth_signing_alg_values_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("RS256"))
    );

    let household = hearth.household("ChatGPT Home").await;
    let challenge = pkce_challenge();
    let query = authorize_query(
        &client_id,
        REDIRECT,
        "chatgpt-state",
        &challenge,
        &[
            ("resource", MCP_URL),
            ("scope", "mcp:service offline_access"),
        ],
    );
    let callback = hearth.person_links(&household, &query, "ChatGPT").await;
    let now = || {
        use hearth_core::clock::Clock;
        hearth.h.clock.now().unix_timestamp()
    };
    let tokens = hearth
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", &callback["code"]),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
                ("resource", MCP_URL),
                ("client_assertion_type", ASSERTION_TYPE),
                (
                    "client_assertion",
                    &signer.assertion(&client_id, "exchange-1", now()),
                ),
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
                ("client_assertion_type", ASSERTION_TYPE),
                (
                    "client_assertion",
                    &signer.assertion(&client_id, "refresh-1", now()),
                ),
            ],
        )
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    let token = refreshed.body["access_token"].as_str().unwrap();
    let discover = hearth.discover(token, ("openai-mcp", "1.0.0")).await;
    assert_eq!(discover.status, StatusCode::OK, "{}", discover.raw);
    first_tool_call(&hearth, token, &hello, "2025-11-25", &household).await;
}
