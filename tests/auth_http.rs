//! Authorization over HTTP, as the specification of it: how tokens are obtained, which bearer
//! tokens `/mcp` refuses and why, scopes, revocation, the kill switch and the rate limits.

mod common;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{
    CLIENT_ID, CLIENT_SECRET, Harness, JWT_SECRET, RESOURCE, Reply, TOKEN, access_token, basic,
    harness, request,
};
use hearth_core::auth::jwt::Claims;
use hearth_core::chain::sha256_hex;
use hearth_core::store::{Counter, CounterStore, StoreError, Stores, Taken};
use http::StatusCode;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::sync::Arc;

const FORM: &str = "application/x-www-form-urlencoded";
const ISSUER: &str = "http://127.0.0.1:8790";

fn ping() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string()
}

/// Posts a JSON-RPC body to `/mcp` with `authorization` (none if empty).
async fn mcp(h: &Harness, authorization: &str, body: &str) -> Reply {
    mcp_at(h, "/mcp", authorization, body).await
}

async fn mcp_at(h: &Harness, uri: &str, authorization: &str, body: &str) -> Reply {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if !authorization.is_empty() {
        headers.push(("authorization", authorization));
    }
    request(&h.router, "POST", uri, &headers, body).await
}

async fn token_request(h: &Harness, authorization: Option<&str>, form: &str) -> Reply {
    let mut headers = vec![("content-type", FORM)];
    if let Some(authorization) = authorization {
        headers.push(("authorization", authorization));
    }
    request(&h.router, "POST", "/oauth/token", &headers, form).await
}

fn client() -> String {
    basic(CLIENT_ID, CLIENT_SECRET)
}

fn grant(extra: &str) -> String {
    format!("grant_type=client_credentials&resource={RESOURCE}{extra}")
}

fn now() -> u64 {
    hearth_core::auth::jwt::now_secs()
}

fn claims(subject: &str) -> Claims {
    Claims {
        iss: ISSUER.into(),
        aud: RESOURCE.into(),
        sub: subject.into(),
        scope: "mcp:service".into(),
        iat: now(),
        exp: now() + 3600,
        jti: "0123456789abcdef0123456789abcdef".into(),
        generation: None,
        family: None,
    }
}

fn sign(algorithm: Algorithm, key: &str, claims: &Claims) -> String {
    jsonwebtoken::encode(
        &Header::new(algorithm),
        claims,
        &EncodingKey::from_secret(key.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// A token with the given header and payload and a signature that proves nothing.
fn forged(header: &Value, claims: &Claims) -> String {
    let header = URL_SAFE_NO_PAD.encode(header.to_string());
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).unwrap());
    format!("{header}.{payload}.")
}

#[tokio::test]
async fn a_client_gets_a_token_from_the_token_endpoint_and_uses_it_on_mcp() {
    let h = harness(&[]);
    let reply = token_request(&h, Some(&client()), &grant("")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    assert_eq!(reply.header("cache-control"), "no-store");
    assert_eq!(reply.header("pragma"), "no-cache");
    let keys: Vec<&String> = reply.body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["access_token", "expires_in", "scope", "token_type"]);
    assert_eq!(reply.body["token_type"], "Bearer");
    assert_eq!(reply.body["expires_in"], 3600);
    assert_eq!(reply.body["scope"], "mcp:service");
    let token = reply.body["access_token"].as_str().unwrap();
    let payload = token.split('.').nth(1).unwrap();
    let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(
        (claims.iss.as_str(), claims.aud.as_str()),
        (ISSUER, RESOURCE)
    );
    assert_eq!(claims.sub, CLIENT_ID);
    let reply = mcp(&h, &format!("Bearer {token}"), &ping()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
}

#[tokio::test]
async fn every_bad_bearer_token_is_refused_on_mcp() {
    let h = harness(&[]);
    let good = claims(CLIENT_ID);
    let expired = Claims {
        iat: now() - 7200,
        exp: now() - 3600,
        ..good.clone()
    };
    let wrong_audience = Claims {
        aud: "https://elsewhere.example/mcp".into(),
        ..good.clone()
    };
    let wrong_issuer = Claims {
        iss: "https://elsewhere.example".into(),
        ..good.clone()
    };
    let unknown_subject = claims("someone-else");
    let valid = sign(Algorithm::HS256, JWT_SECRET, &good);
    let tampered = {
        let parts: Vec<&str> = valid.split('.').collect();
        let escalated = Claims {
            sub: sha256_hex("a judge nobody listed"),
            ..good.clone()
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&escalated).unwrap());
        format!("{}.{payload}.{}", parts[0], parts[2])
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("no header", String::new(), "missing"),
        ("basic auth", basic(CLIENT_ID, CLIENT_SECRET), "only bearer"),
        (
            "alg none",
            format!(
                "Bearer {}",
                forged(&json!({"alg": "none", "typ": "JWT"}), &good)
            ),
            "invalid",
        ),
        (
            "alg HS384",
            format!("Bearer {}", sign(Algorithm::HS384, JWT_SECRET, &good)),
            "invalid",
        ),
        (
            "alg HS512",
            format!("Bearer {}", sign(Algorithm::HS512, JWT_SECRET, &good)),
            "invalid",
        ),
        (
            "wrong key",
            format!(
                "Bearer {}",
                sign(
                    Algorithm::HS256,
                    "another-key-that-is-32-bytes-long!!",
                    &good
                )
            ),
            "invalid",
        ),
        (
            "wrong audience",
            format!(
                "Bearer {}",
                sign(Algorithm::HS256, JWT_SECRET, &wrong_audience)
            ),
            "invalid",
        ),
        (
            "wrong issuer",
            format!(
                "Bearer {}",
                sign(Algorithm::HS256, JWT_SECRET, &wrong_issuer)
            ),
            "invalid",
        ),
        (
            "expired",
            format!("Bearer {}", sign(Algorithm::HS256, JWT_SECRET, &expired)),
            "expired",
        ),
        ("tampered payload", format!("Bearer {tampered}"), "invalid"),
        (
            "unknown subject",
            format!(
                "Bearer {}",
                sign(Algorithm::HS256, JWT_SECRET, &unknown_subject)
            ),
            "invalid",
        ),
        ("not a token", "Bearer not-a-token".into(), "invalid"),
        ("two tokens", format!("Bearer {valid} {valid}"), "invalid"),
    ];
    for (case, authorization, reason) in cases {
        let reply = mcp(&h, &authorization, &ping()).await;
        assert_eq!(
            reply.status,
            StatusCode::UNAUTHORIZED,
            "{case}: {}",
            reply.raw
        );
        let challenge = reply.header("www-authenticate");
        assert!(
            challenge.starts_with("Bearer ")
                && challenge.contains(&format!(
                    r#"resource_metadata="{ISSUER}/.well-known/oauth-protected-resource/mcp""#
                )),
            "{case}: {challenge}"
        );
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(reason),
            "{case}: {}",
            reply.raw
        );
        if reason == "invalid" || reason == "expired" {
            assert!(challenge.contains(r#"error="invalid_token""#), "{case}");
        }
    }
    // The untampered token is fine, and a token in the query string is refused even with it.
    assert_eq!(
        mcp(&h, &format!("Bearer {valid}"), &ping()).await.status,
        StatusCode::OK
    );
    for uri in [
        format!("/mcp?access_token={valid}"),
        format!("/mcp?x=1&access_token={TOKEN}"),
    ] {
        let reply = mcp_at(&h, &uri, &format!("Bearer {valid}"), &ping()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(reply.header("www-authenticate").contains("invalid_request"));
        let without_header = mcp_at(&h, &uri, "", &ping()).await;
        assert_eq!(without_header.status, StatusCode::BAD_REQUEST, "{uri}");
    }
}

#[tokio::test]
async fn scopes_limit_methods_to_their_family() {
    let h = harness(&[]);
    let tools = access_token(&h.router, Some("mcp:tools")).await;
    let resources = access_token(&h.router, Some("mcp:resources")).await;
    let both = access_token(&h.router, Some("mcp:tools%20mcp:resources")).await;
    let method = |name: &str| json!({"jsonrpc": "2.0", "id": 1, "method": name}).to_string();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    for token in [&tools, &resources, &both] {
        let bearer = format!("Bearer {token}");
        assert_eq!(mcp(&h, &bearer, &ping()).await.status, StatusCode::OK);
        assert_eq!(mcp(&h, &bearer, &initialize).await.status, StatusCode::OK);
        let notification =
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert_eq!(
            mcp(&h, &bearer, &notification).await.status,
            StatusCode::ACCEPTED
        );
    }
    assert_eq!(
        mcp(&h, &format!("Bearer {tools}"), &method("tools/list"))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        mcp(&h, &format!("Bearer {both}"), &method("tools/list"))
            .await
            .status,
        StatusCode::OK
    );
    let refused = mcp(&h, &format!("Bearer {resources}"), &method("tools/list")).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let challenge = refused.header("www-authenticate");
    assert!(
        challenge.contains(r#"error="insufficient_scope""#),
        "{challenge}"
    );
    assert!(challenge.contains(r#"scope="mcp:tools""#), "{challenge}");
    let refused = mcp(&h, &format!("Bearer {tools}"), &method("resources/list")).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(
        refused
            .header("www-authenticate")
            .contains(r#"scope="mcp:resources""#)
    );
    let refused = mcp(&h, &format!("Bearer {both}"), &method("prompts/list")).await;
    assert_eq!(
        refused.status,
        StatusCode::FORBIDDEN,
        "only mcp:service covers other methods"
    );
}

#[tokio::test]
async fn token_endpoint_errors_name_the_problem() {
    let h = harness(&[]);
    let cases: Vec<(&str, Option<String>, String, StatusCode, &str)> = vec![
        (
            "no client auth",
            None,
            grant(""),
            StatusCode::UNAUTHORIZED,
            "invalid_client",
        ),
        (
            "wrong secret",
            Some(basic(CLIENT_ID, "nope")),
            grant(""),
            StatusCode::UNAUTHORIZED,
            "invalid_client",
        ),
        (
            "wrong client",
            Some(basic("other", CLIENT_SECRET)),
            grant(""),
            StatusCode::UNAUTHORIZED,
            "invalid_client",
        ),
        (
            "bearer instead of basic",
            Some(format!("Bearer {TOKEN}")),
            grant(""),
            StatusCode::UNAUTHORIZED,
            "invalid_client",
        ),
        (
            "wrong secret in body",
            None,
            format!("{}&client_id={CLIENT_ID}&client_secret=nope", grant("")),
            StatusCode::UNAUTHORIZED,
            "invalid_client",
        ),
        (
            "secret in body without client_id",
            None,
            format!("{}&client_secret={CLIENT_SECRET}", grant("")),
            StatusCode::UNAUTHORIZED,
            "invalid_client",
        ),
        (
            "client_id beside Basic names another client",
            Some(client()),
            format!("{}&client_id=other", grant("")),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "two methods",
            Some(client()),
            format!("{}&client_secret={CLIENT_SECRET}", grant("")),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "no grant type",
            Some(client()),
            format!("resource={RESOURCE}"),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "other grant",
            Some(client()),
            format!("grant_type=password&resource={RESOURCE}"),
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
        ),
        (
            "no resource",
            Some(client()),
            "grant_type=client_credentials".into(),
            StatusCode::BAD_REQUEST,
            "invalid_target",
        ),
        (
            "other resource",
            Some(client()),
            "grant_type=client_credentials&resource=http://127.0.0.1:8790/other/mcp".into(),
            StatusCode::BAD_REQUEST,
            "invalid_target",
        ),
        (
            "unknown scope",
            Some(client()),
            grant("&scope=mcp:admin"),
            StatusCode::BAD_REQUEST,
            "invalid_scope",
        ),
        (
            "repeated parameter",
            Some(client()),
            grant("&scope=mcp:tools&scope=mcp:tools"),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
    ];
    for (case, authorization, form, status, error) in cases {
        let reply = token_request(&h, authorization.as_deref(), &form).await;
        assert_eq!(reply.status, status, "{case}: {}", reply.raw);
        assert_eq!(reply.body["error"], error, "{case}");
        assert!(reply.body["error_description"].is_string(), "{case}");
        assert_eq!(reply.header("cache-control"), "no-store", "{case}");
        if error == "invalid_client" {
            assert!(
                reply.header("www-authenticate").starts_with("Basic "),
                "{case}"
            );
        }
        assert!(!reply.raw.contains(CLIENT_SECRET), "{case}");
    }
    let json_body = request(
        &h.router,
        "POST",
        "/oauth/token",
        &[
            ("authorization", &client()),
            ("content-type", "application/json"),
        ],
        "{}",
    )
    .await;
    assert_eq!(json_body.status, StatusCode::BAD_REQUEST);
    assert_eq!(json_body.body["error"], "invalid_request");
    for method in ["GET", "PUT", "DELETE"] {
        let reply = request(&h.router, method, "/oauth/token", &[], "").await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(reply.header("allow"), "POST");
    }
}

#[tokio::test]
async fn token_request_bodies_are_read_up_to_4096_bytes() {
    let h = harness(&[]);
    let base = grant("&pad=");
    let at_limit = format!(
        "{base}{}",
        "x".repeat(hearth_core::oauth::MAX_FORM_BYTES - base.len())
    );
    assert_eq!(at_limit.len(), 4096);
    assert_eq!(
        token_request(&h, Some(&client()), &at_limit).await.status,
        StatusCode::OK
    );
    let past = format!("{at_limit}x");
    let reply = token_request(&h, Some(&client()), &past).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(reply.body["error"], "invalid_request");
}

#[tokio::test]
async fn discovery_documents_describe_both_tiers() {
    let h = harness(&[]);
    let server = request(
        &h.router,
        "GET",
        "/.well-known/oauth-authorization-server",
        &[],
        "",
    )
    .await;
    assert_eq!(server.status, StatusCode::OK);
    assert_eq!(
        server.body,
        json!({
            "issuer": ISSUER,
            "authorization_endpoint": format!("{ISSUER}/oauth/authorize"),
            "token_endpoint": format!("{ISSUER}/oauth/token"),
            "revocation_endpoint": format!("{ISSUER}/oauth/revoke"),
            "registration_endpoint": format!("{ISSUER}/oauth/register"),
            "client_id_metadata_document_supported": true,
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none", "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256", "PS256", "ES256", "EdDSA"],
            "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none", "private_key_jwt"],
            "revocation_endpoint_auth_signing_alg_values_supported": ["RS256", "PS256", "ES256", "EdDSA"],
            "scopes_supported": ["mcp:service", "mcp:tools", "mcp:resources", "countersign:read", "offline_access"],
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
        })
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let resource = request(&h.router, "GET", path, &[], "").await;
        assert_eq!(resource.status, StatusCode::OK, "{path}");
        assert_eq!(resource.body["resource"], RESOURCE);
        assert_eq!(resource.body["authorization_servers"], json!([ISSUER]));
        assert_eq!(
            resource.body["scopes_supported"],
            json!([
                "mcp:service",
                "mcp:tools",
                "mcp:resources",
                "countersign:read",
                "offline_access"
            ])
        );
        assert_eq!(resource.body["bearer_methods_supported"], json!(["header"]));
    }
    let post = request(
        &h.router,
        "POST",
        "/.well-known/oauth-authorization-server",
        &[],
        "",
    )
    .await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn judge_tokens_are_exchanged_and_revoked_with_their_hash() {
    let judge = "a-judge-token-for-the-demo";
    let hashes = format!("{},{}", sha256_hex(TOKEN), sha256_hex(judge));
    let h = harness(&[("MCP_JUDGE_TOKEN_HASHES", hashes.as_str())]);
    let exchange = |token: &str| {
        let form = format!("judge_token={token}");
        let router = h.router.clone();
        async move {
            request(
                &router,
                "POST",
                "/oauth/judge",
                &[("content-type", FORM)],
                &form,
            )
            .await
        }
    };
    let reply = exchange(judge).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    let access = reply.body["access_token"].as_str().unwrap().to_owned();
    let payload = access.split('.').nth(1).unwrap();
    let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims.sub, sha256_hex(judge));
    let wrong = exchange("not-a-judge").await;
    assert_eq!(
        (wrong.status, wrong.body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let missing = request(
        &h.router,
        "POST",
        "/oauth/judge",
        &[("content-type", FORM)],
        "",
    )
    .await;
    assert_eq!(missing.body["error"], "invalid_request");

    // The judge token and its access token share one data scope.
    let record = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "record_decision",
        "arguments": {"household_id": "home", "action": "dim lights", "reason": "Movie time", "inputs": {}, "approver": "Parent"}}});
    let stored = mcp(&h, &format!("Bearer {judge}"), &record.to_string()).await;
    assert_eq!(stored.body["result"]["isError"], false, "{}", stored.raw);
    let explain = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "explain_why",
        "arguments": {"household_id": "home", "action": "dim lights"}}});
    let found = mcp(&h, &format!("Bearer {access}"), &explain.to_string()).await;
    assert_eq!(found.body["result"]["isError"], false, "{}", found.raw);

    // Removing the hash revokes the static token and the access token issued for it.
    let revoked = harness(&[("MCP_JUDGE_TOKEN_HASHES", sha256_hex(TOKEN).as_str())]);
    for bearer in [judge, access.as_str()] {
        assert_eq!(
            mcp(&revoked, &format!("Bearer {bearer}"), &ping())
                .await
                .status,
            StatusCode::UNAUTHORIZED
        );
    }
}

#[tokio::test]
async fn missing_or_weak_credentials_deny_instead_of_weakening() {
    // No signing key: no token is issued, and judge tokens still work.
    let vars = [
        ("MCP_JUDGE_TOKEN_HASHES", sha256_hex(TOKEN)),
        ("MCP_CLIENT_ID", CLIENT_ID.to_owned()),
        ("MCP_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let h = common::harness_with(&common::config(&vars));
    let reply = token_request(&h, Some(&client()), &grant("")).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.raw
    );
    assert_eq!(reply.body["error"], "temporarily_unavailable");
    assert_eq!(
        mcp(&h, &format!("Bearer {TOKEN}"), &ping()).await.status,
        StatusCode::OK
    );
    let stray = sign(Algorithm::HS256, JWT_SECRET, &claims(CLIENT_ID));
    assert_eq!(
        mcp(&h, &format!("Bearer {stray}"), &ping()).await.status,
        StatusCode::UNAUTHORIZED
    );

    // No client secret: nobody authenticates as the client.
    let h = common::harness_with(&common::config(&[
        ("MCP_CLIENT_ID", CLIENT_ID),
        ("MCP_JWT_SECRET", JWT_SECRET),
    ]));
    assert_eq!(
        token_request(&h, Some(&client()), &grant("")).await.body["error"],
        "invalid_client"
    );
    // A short signing key is refused at start (see also tests/local_binary.rs).
    assert!(common::try_config(&[("MCP_JWT_SECRET", &JWT_SECRET[..31])]).is_err());
}

#[tokio::test]
async fn the_kill_switch_answers_503_on_every_endpoint_before_authentication() {
    let h = harness(&[("MCP_DISABLED", "1")]);
    let routes = [
        ("POST", "/mcp"),
        ("GET", "/mcp"),
        ("GET", "/healthz"),
        ("POST", "/oauth/token"),
        ("POST", "/oauth/judge"),
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ];
    for (method, path) in routes {
        for authorization in ["", "Bearer nonsense"] {
            let mut headers = vec![("content-type", "application/json")];
            if !authorization.is_empty() {
                headers.push(("authorization", authorization));
            }
            let reply = request(&h.router, method, path, &headers, &ping()).await;
            assert_eq!(
                reply.status,
                StatusCode::SERVICE_UNAVAILABLE,
                "{method} {path}"
            );
            assert!(
                reply.header("www-authenticate").is_empty(),
                "{method} {path}"
            );
        }
    }
}

#[tokio::test]
async fn the_origin_allow_list_covers_the_oauth_routes() {
    let h = harness(&[("MCP_ALLOWED_ORIGINS", "https://demo.example")]);
    for (origin, status) in [
        ("https://evil.example", StatusCode::FORBIDDEN),
        ("https://demo.example", StatusCode::OK),
    ] {
        let headers = [("content-type", FORM), ("origin", origin)];
        let form = format!("judge_token={TOKEN}");
        let reply = request(&h.router, "POST", "/oauth/judge", &headers, &form).await;
        assert_eq!(reply.status, status, "{origin}: {}", reply.raw);
        let client = client();
        let headers = [
            ("content-type", FORM),
            ("origin", origin),
            ("authorization", client.as_str()),
        ];
        let reply = request(&h.router, "POST", "/oauth/token", &headers, &grant("")).await;
        assert_eq!(reply.status, status, "{origin}: {}", reply.raw);
    }
}

#[tokio::test]
async fn each_subject_gets_60_requests_a_minute_and_then_429() {
    let h = harness(&[
        ("HEARTH_RATE_LIMIT_PER_SUBJECT", "60"),
        ("HEARTH_RATE_LIMIT_PER_IP", "1000"),
    ]);
    let bearer = format!("Bearer {TOKEN}");
    for n in 1..=60 {
        assert_eq!(
            mcp(&h, &bearer, &ping()).await.status,
            StatusCode::OK,
            "request {n}"
        );
    }
    let limited = mcp(&h, &bearer, &ping()).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = limited.header("retry-after").parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    // Another subject has its own counter.
    let other = access_token(&h.router, None).await;
    assert_eq!(
        mcp(&h, &format!("Bearer {other}"), &ping()).await.status,
        StatusCode::OK
    );
    // The next window starts afresh.
    h.clock.advance(time::Duration::seconds(retry_after as i64));
    assert_eq!(mcp(&h, &bearer, &ping()).await.status, StatusCode::OK);
}

#[tokio::test]
async fn each_client_address_gets_120_requests_a_minute_without_a_valid_token() {
    let h = harness(&[
        ("HEARTH_RATE_LIMIT_PER_IP", "120"),
        ("HEARTH_RATE_LIMIT_PER_SUBJECT", "1000"),
    ]);
    // A valid token counts against its subject, not the address: a host serving many
    // households from one address is limited per household.
    for n in 1..=150 {
        let reply = mcp(&h, &format!("Bearer {TOKEN}"), &ping()).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "request {n} with a valid token"
        );
    }
    for n in 1..=120 {
        // Guessing tokens is what this limit slows down.
        let reply = mcp(&h, "Bearer guess", &ping()).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "guess {n}");
    }
    assert_eq!(
        mcp(&h, "Bearer guess", &ping()).await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "guess 121"
    );
    // The address's budget spent, a valid token from it is refused too.
    let limited = mcp(&h, &format!("Bearer {TOKEN}"), &ping()).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.header("retry-after").parse::<u64>().is_ok());
    let token = token_request(&h, Some(&client()), &grant("")).await;
    assert_eq!(
        token.status,
        StatusCode::TOO_MANY_REQUESTS,
        "the token endpoint shares the limit"
    );
    assert_eq!(token.body["error"], "rate_limited");
    assert!(token.header("retry-after").parse::<u64>().is_ok());
}

/// Counters that cannot be reached.
struct Unreachable;

#[async_trait::async_trait]
impl CounterStore for Unreachable {
    async fn take(&self, _: &[Counter], _: i64, _: i64) -> Result<Taken, StoreError> {
        Err(StoreError::Unavailable("connection refused".into()))
    }
}

#[tokio::test]
async fn a_counter_outage_counts_in_the_instance_with_the_same_limits() {
    let vars = common::settings(&[("HEARTH_RATE_LIMIT_PER_SUBJECT", "2")]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let h = common::harness_over(&common::config(&vars), |sqlite| Stores {
        cosigned: sqlite.clone(),
        grants: sqlite.clone(),
        clients: sqlite.clone(),
        accounts: sqlite.clone(),
        chains: sqlite,
        counters: Arc::new(Unreachable),
    });
    for _ in 0..2 {
        let reply = mcp(&h, &format!("Bearer {TOKEN}"), &ping()).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    }
    let reply = mcp(&h, &format!("Bearer {TOKEN}"), &ping()).await;
    assert_eq!(
        reply.status,
        StatusCode::TOO_MANY_REQUESTS,
        "the same limit, counted here"
    );
    let reply = token_request(&h, Some(&client()), &grant("")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
}

#[tokio::test]
async fn without_a_configured_store_the_limiter_fails_closed_with_503() {
    // Under Lambda with neither HEARTH_TABLE nor HEARTH_DB: a misconfiguration, not an outage.
    let config = common::config(&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")]);
    assert_eq!(config.store, hearth_core::config::StoreChoice::Unconfigured);
    let h = common::harness_over(&config, |sqlite| Stores {
        cosigned: sqlite.clone(),
        grants: sqlite.clone(),
        clients: sqlite.clone(),
        accounts: sqlite.clone(),
        chains: sqlite,
        counters: Arc::new(Unreachable),
    });
    let reply = mcp(&h, &format!("Bearer {TOKEN}"), &ping()).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Rate limiter unavailable")
    );
    let reply = token_request(&h, Some(&client()), &grant("")).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(reply.body["error"], "temporarily_unavailable");
}

/// Hosts send `resource` as the person typed it, or with a slash their URL type added: any
/// spelling of this server's MCP URL is it (scheme and host in any case, the default port, one
/// trailing slash), and the token's audience is the one canonical form. Another path, port or
/// host is still `invalid_target`.
#[tokio::test]
async fn a_resource_spelled_differently_is_still_this_server() {
    let h = harness(&[]);
    for spelling in [
        "http://127.0.0.1:8790/mcp/",
        "HTTP://127.0.0.1:8790/mcp",
        "http://127.0.0.1:8790/mcp",
    ] {
        let form = format!(
            "grant_type=client_credentials&resource={}",
            form_urlencoded::byte_serialize(spelling.as_bytes()).collect::<String>()
        );
        let reply = token_request(&h, Some(&client()), &form).await;
        assert_eq!(reply.status, StatusCode::OK, "{spelling}: {}", reply.raw);
        let token = reply.body["access_token"].as_str().unwrap();
        let payload: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(payload["aud"], RESOURCE, "{spelling}");
    }
    for other in [
        "http://127.0.0.1:8788/mcp",
        "http://127.0.0.2:8790/mcp",
        "http://127.0.0.1:8790/mcp//",
        "http://127.0.0.1:8790/mcp?x",
    ] {
        let form = format!(
            "grant_type=client_credentials&resource={}",
            form_urlencoded::byte_serialize(other.as_bytes()).collect::<String>()
        );
        let reply = token_request(&h, Some(&client()), &form).await;
        assert_eq!(
            reply.body["error"], "invalid_target",
            "{other}: {}",
            reply.raw
        );
    }
}

/// An issuer with a path (`…/prod`) is discoverable at RFC 8414 §3.1's path-inserted name, and
/// a resource with a path prefix at RFC 9728 §3.1's; no other path answers there.
#[tokio::test]
async fn metadata_is_served_at_the_path_inserted_names_of_a_prefixed_deployment() {
    let h = harness(&[("MCP_RESOURCE_URL", "http://127.0.0.1:8790/prod/mcp")]);
    let server = request(
        &h.router,
        "GET",
        "/.well-known/oauth-authorization-server/prod",
        &[],
        "",
    )
    .await;
    assert_eq!(server.status, StatusCode::OK, "{}", server.raw);
    assert_eq!(server.body["issuer"], "http://127.0.0.1:8790/prod");
    let resource = request(
        &h.router,
        "GET",
        "/.well-known/oauth-protected-resource/prod/mcp",
        &[],
        "",
    )
    .await;
    assert_eq!(resource.status, StatusCode::OK, "{}", resource.raw);
    assert_eq!(resource.body["resource"], "http://127.0.0.1:8790/prod/mcp");
    for elsewhere in [
        "/.well-known/oauth-authorization-server/other",
        "/.well-known/oauth-authorization-server/prod/extra",
        "/.well-known/oauth-protected-resource/other/mcp",
    ] {
        let reply = request(&h.router, "GET", elsewhere, &[], "").await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{elsewhere}");
    }
    // At the root, an issuer has no path to insert.
    let root = harness(&[]);
    let reply = request(
        &root.router,
        "GET",
        "/.well-known/oauth-authorization-server/mcp",
        &[],
        "",
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}
