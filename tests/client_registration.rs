//! Hosts that link a household without anyone configuring them, on the SQLite store and on
//! DynamoDB (moto), with no `MCP_CLIENT_ID` set:
//! - Dynamic Client Registration (RFC 7591) at `POST /oauth/register`;
//! - Client ID Metadata Documents, served here by a loopback stand-in for the host's website
//!   (`HEARTH_CIMD_ALLOW_HTTP_LOOPBACK=true`), and every refusal the fetch rules name.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use common::oauth::{VERIFIER, challenge, encode_pairs, hidden_fields};
use common::{Backend, Harness, LOG_KEY, RESOURCE, Reply, basic, request};
use hearth_core::clients::Clients;
use hearth_core::clients::metadata_document::MAX_DOCUMENT_BYTES;
use hearth_core::oauth::{MAX_REGISTRATION_BYTES, REGISTRATIONS_PER_WINDOW};
use hearth_testkit::moto::Moto;
use http::StatusCode;
use serde_json::{Value, json};

const ISSUER: &str = "http://127.0.0.1:8790";
const JWT_SECRET: &str = "registration-jwt-signing-key-of-32-bytes";
const STATE: &str = "host-state-1";
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

struct World {
    h: Harness,
    admin: hearth_core::admin::Admin,
    clients: Clients,
}

/// No configured client at all: only hosts that register or name themselves can link.
fn config(allow_loopback_documents: bool) -> hearth_core::config::Config {
    let allow = if allow_loopback_documents {
        "true"
    } else {
        "false"
    };
    common::config(&[
        ("MCP_JWT_SECRET", JWT_SECRET),
        ("HEARTH_LOG_KEY", LOG_KEY),
        ("HEARTH_RATE_LIMIT_PER_SUBJECT", "1000000"),
        ("HEARTH_RATE_LIMIT_PER_IP", "1000000"),
        ("HEARTH_CIMD_ALLOW_HTTP_LOOPBACK", allow),
    ])
}

async fn world(backend: Backend, allow_loopback_documents: bool) -> World {
    let config = config(allow_loopback_documents);
    assert!(config.credentials.client_id.is_none());
    let (h, admin, stores) = common::operated_with_stores(
        &config,
        backend,
        Moto::shared().dynamodb_client(),
        "hearth-registration",
    )
    .await;
    let clients = Clients::new(stores.clients, None, h.clock.clone());
    World { h, admin, clients }
}

impl World {
    async fn household(&self, name: &str) -> String {
        self.admin.create(name, None).await.unwrap().household_id
    }

    async fn link_code(&self, household: &str) -> String {
        self.admin.link_code(household).await.unwrap().code
    }

    fn advance_ms(&self, ms: i64) {
        self.h.clock.advance(time::Duration::milliseconds(ms));
    }

    async fn register(&self, metadata: &Value) -> Reply {
        self.register_raw(&metadata.to_string()).await
    }

    async fn register_raw(&self, body: &str) -> Reply {
        request(
            &self.h.router,
            "POST",
            "/oauth/register",
            &[("content-type", "application/json")],
            body,
        )
        .await
    }

    async fn form(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        request(&self.h.router, "POST", path, &all, body).await
    }

    async fn authorize_page(&self, client_id: &str, redirect_uri: &str) -> Reply {
        authorize_page(&self.h.router, client_id, redirect_uri).await
    }

    /// The person's part: the consent page, the link code, allow. Returns the code.
    async fn consent(&self, household: &str, client_id: &str, redirect_uri: &str) -> String {
        let page = self.authorize_page(client_id, redirect_uri).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
        let cookie = common::oauth::consent_cookie(&page);
        let mut fields = hidden_fields(&page.raw);
        fields.insert("decision".into(), "allow".into());
        fields.insert("link_code".into(), self.link_code(household).await);
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let answer = self
            .form(
                "/oauth/authorize",
                &[("cookie", &cookie)],
                &encode_pairs(&pairs),
            )
            .await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.raw);
        let location = url::Url::parse(answer.header("location")).unwrap();
        let query: HashMap<String, String> = location.query_pairs().into_owned().collect();
        assert_eq!(query["state"], STATE);
        assert_eq!(query["iss"], ISSUER);
        query["code"].clone()
    }

    /// The public client's code exchange: its id and the verifier are all it has.
    async fn exchange_public(&self, client_id: &str, code: &str, redirect_uri: &str) -> Reply {
        self.form(
            "/oauth/token",
            &[],
            &encode_pairs(&[
                ("grant_type", "authorization_code"),
                ("client_id", client_id),
                ("code", code),
                ("redirect_uri", redirect_uri),
                ("code_verifier", VERIFIER),
                ("resource", RESOURCE),
            ]),
        )
        .await
    }

    async fn refresh_public(&self, client_id: &str, refresh_token: &str) -> Reply {
        self.form(
            "/oauth/token",
            &[],
            &encode_pairs(&[
                ("grant_type", "refresh_token"),
                ("client_id", client_id),
                ("refresh_token", refresh_token),
            ]),
        )
        .await
    }

    async fn record(&self, bearer: &str, action: &str) -> Reply {
        let authorization = format!("Bearer {bearer}");
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "record_decision",
            "arguments": {"action": action, "reason": "asked for", "inputs": {}, "approver": "Sam"}}});
        request(
            &self.h.router,
            "POST",
            "/mcp",
            &[
                ("authorization", authorization.as_str()),
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            &body.to_string(),
        )
        .await
    }
}

/// Opens the consent page for a host's authorization request.
async fn authorize_page(router: &axum::Router, client_id: &str, redirect_uri: &str) -> Reply {
    let query = common::oauth::authorize_query(client_id, redirect_uri, STATE, "mcp:service");
    request(router, "GET", &format!("/oauth/authorize?{query}"), &[], "").await
}

fn is_error_page(reply: &Reply) -> bool {
    reply.header("location").is_empty()
        && reply.header("content-type").starts_with("text/html")
        && reply.status == StatusCode::BAD_REQUEST
}

/// The `fam` claim of an access token, which anyone holding the token can read.
fn family_of(access_token: &str) -> String {
    use base64::Engine;
    let payload = access_token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    claims["fam"].as_str().unwrap().to_owned()
}

/// A host that registers itself as a public client (Claude Code's way): the consent page
/// marks its name unverified and warns of the loopback redirect, PKCE is its only proof, its
/// refresh tokens rotate, a made-up token around its public family id revokes nothing, and
/// reuse of a rotated one ends the family. A confidential registration gets a secret that
/// never expires, and no client-credentials grant.
async fn a_host_that_registers_itself_links_a_household_and_calls_a_tool(backend: Backend) {
    let w = world(backend, false).await;
    let discovery = request(
        &w.h.router,
        "GET",
        "/.well-known/oauth-authorization-server",
        &[],
        "",
    )
    .await;
    assert_eq!(
        discovery.body["registration_endpoint"],
        format!("{ISSUER}/oauth/register")
    );
    let registered = w
        .register(&json!({
            "client_name": "Claude Code",
            "redirect_uris": ["http://localhost/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
        .await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.raw);
    assert_eq!(registered.header("cache-control"), "no-store");
    let body = &registered.body;
    let client_id = body["client_id"].as_str().unwrap().to_owned();
    assert!(client_id.starts_with("hc_"), "{client_id}");
    assert_eq!(body["client_name"], "Claude Code");
    assert_eq!(body["redirect_uris"], json!(["http://localhost/callback"]));
    assert_eq!(body["token_endpoint_auth_method"], "none");
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert!(body.get("client_secret").is_none(), "{body}");
    assert!(body.get("client_secret_expires_at").is_none(), "{body}");
    assert!(body["client_id_issued_at"].as_i64().unwrap() > 0);

    // A loopback redirect matches on any port; the page says who asks, and that it named
    // itself.
    let redirect = "http://localhost:53682/callback";
    let page = w.authorize_page(&client_id, redirect).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    assert!(
        page.raw.contains("<strong><bdi>Claude Code</bdi></strong>"),
        "{}",
        page.raw
    );
    assert!(page.raw.contains("unverified: the app named itself"));
    assert!(
        page.raw
            .contains("<strong><bdi>localhost:53682</bdi></strong>")
    );
    assert!(page.raw.contains("loopback address"));

    let household = w.household("Registered Home").await;
    let code = w.consent(&household, &client_id, redirect).await;
    let tokens = w.exchange_public(&client_id, &code, redirect).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    let access = tokens.body["access_token"].as_str().unwrap();
    let recorded = w.record(access, "closed the blinds").await;
    assert_eq!(
        recorded.body["result"]["isError"], false,
        "{}",
        recorded.raw
    );

    // The fam finding, for a public client: a token made up around the family's public id is
    // a plain invalid_grant, and the family lives on.
    let first = tokens.body["refresh_token"].as_str().unwrap().to_owned();
    let made_up = format!("hrt1.{}.{}", family_of(access), "A".repeat(43));
    let refused = w.refresh_public(&client_id, &made_up).await;
    assert_eq!(refused.body["error"], "invalid_grant", "{}", refused.raw);
    let second = w.refresh_public(&client_id, &first).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.raw);
    let second_token = second.body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second_token, first);
    let third = w.refresh_public(&client_id, &second_token).await;
    assert_eq!(third.status, StatusCode::OK, "{}", third.raw);
    // Reuse of a genuine token two rotations back ends the family.
    let reused = w.refresh_public(&client_id, &first).await;
    assert_eq!(reused.body["error"], "invalid_grant", "{}", reused.raw);
    let current = third.body["refresh_token"].as_str().unwrap();
    assert_eq!(
        w.refresh_public(&client_id, current).await.body["error"],
        "invalid_grant"
    );

    // A confidential registration: a secret, which never expires; still no Tier 1.
    let confidential = w
        .register(&json!({
            "client_name": "ChatGPT",
            "redirect_uris": ["https://chatgpt.com/connector_platform_oauth_redirect"],
        }))
        .await;
    assert_eq!(
        confidential.status,
        StatusCode::CREATED,
        "{}",
        confidential.raw
    );
    assert_eq!(
        confidential.body["token_endpoint_auth_method"],
        "client_secret_basic"
    );
    assert_eq!(confidential.body["client_secret_expires_at"], 0);
    let confidential_id = confidential.body["client_id"].as_str().unwrap();
    let secret = confidential.body["client_secret"].as_str().unwrap();
    let tier_one = w
        .form(
            "/oauth/token",
            &[("authorization", &basic(confidential_id, secret))],
            &format!("grant_type=client_credentials&resource={RESOURCE}"),
        )
        .await;
    assert_eq!(tier_one.status, StatusCode::BAD_REQUEST, "{}", tier_one.raw);
    assert_eq!(tier_one.body["error"], "unauthorized_client");

    // Both show in the operator's list as registrations; deleting one stops it at once.
    let listed = w.clients.list().await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(
        listed
            .iter()
            .all(|client| client.created_by == hearth_core::store::ClientOrigin::Registration)
    );
    let again = w.consent(&household, &client_id, redirect).await;
    w.clients.delete(&client_id).await.unwrap();
    let deleted = w.exchange_public(&client_id, &again, redirect).await;
    assert_eq!(deleted.status, StatusCode::UNAUTHORIZED, "{}", deleted.raw);
    assert_eq!(deleted.body["error"], "invalid_client");
    assert!(is_error_page(&w.authorize_page(&client_id, redirect).await));
}

/// RFC 7009 §2.1: a client may revoke only its own tokens. Another registered client holding
/// a household's access token answers 200 at `/oauth/revoke` and unlinks nothing; the owner
/// revoking it ends its family, as before.
async fn a_client_revokes_only_its_own_access_tokens(backend: Backend) {
    let w = world(backend, false).await;
    let register = |name: &'static str| {
        let w = &w;
        async move {
            let registered = w
                .register(&json!({
                    "client_name": name,
                    "redirect_uris": ["http://localhost/callback"],
                    "token_endpoint_auth_method": "none",
                }))
                .await;
            assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.raw);
            registered.body["client_id"].as_str().unwrap().to_owned()
        }
    };
    let owner = register("Owner").await;
    let stranger = register("Stranger").await;
    let household = w.household("Revocation Home").await;
    let redirect = "http://localhost:5000/callback";
    let code = w.consent(&household, &owner, redirect).await;
    let tokens = w.exchange_public(&owner, &code, redirect).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    let access = tokens.body["access_token"].as_str().unwrap();
    let revoke_as = |client_id: &str| {
        let body = encode_pairs(&[("token", access), ("client_id", client_id)]);
        let w = &w;
        async move { w.form("/oauth/revoke", &[], &body).await }
    };
    let by_stranger = revoke_as(&stranger).await;
    assert_eq!(by_stranger.status, StatusCode::OK, "{}", by_stranger.raw);
    // Past the minute a revocation may take to reach every instance, the token still works.
    w.advance_ms(hearth_core::accounts::GENERATION_CACHE_MS);
    let still = w.record(access, "turned the heating down").await;
    assert_eq!(still.body["result"]["isError"], false, "{}", still.raw);
    let refreshed = w
        .refresh_public(&owner, tokens.body["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);

    let by_owner = revoke_as(&owner).await;
    assert_eq!(by_owner.status, StatusCode::OK, "{}", by_owner.raw);
    let rotated = refreshed.body["refresh_token"].as_str().unwrap();
    let ended = w.refresh_public(&owner, rotated).await;
    assert_eq!(ended.body["error"], "invalid_grant", "{}", ended.raw);
    w.advance_ms(hearth_core::accounts::GENERATION_CACHE_MS);
    let after = w.record(access, "turned the heating down").await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED, "{}", after.raw);
}

/// A client's name is shown on the consent page in bold: Unicode format characters (a
/// right-to-left override turns "(unverified: the app named itself)" backwards) and the
/// configured client's own name are refused at registration, and every name a client wrote
/// is isolated in `<bdi>` on the page.
#[tokio::test]
async fn client_names_cannot_hide_or_borrow_a_name() {
    let config = common::config(&[
        ("MCP_JWT_SECRET", JWT_SECRET),
        ("HEARTH_LOG_KEY", LOG_KEY),
        ("HEARTH_RATE_LIMIT_PER_IP", "1000000"),
        ("MCP_CLIENT_ID", "alexa-home-skill"),
        ("MCP_CLIENT_SECRET", "a-configured-client-secret-of-length"),
        ("MCP_REDIRECT_URIS", "https://alexa.example/link"),
    ]);
    let h = common::harness_with(&config);
    let register = |name: String| {
        let router = h.router.clone();
        async move {
            let body = json!({
                "client_name": name,
                "redirect_uris": ["https://host.example/cb"],
                "token_endpoint_auth_method": "none",
            });
            request(
                &router,
                "POST",
                "/oauth/register",
                &[("content-type", "application/json")],
                &body.to_string(),
            )
            .await
        }
    };
    for name in [
        "Helper\u{202e}fles ti deman ppa eht",
        "Zero\u{200b}width",
        "Soft\u{ad}hyphen",
        "ALEXA-Home-Skill",
        " alexa-home-skill ",
    ] {
        let refused = register(name.to_owned()).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{name:?}: {}",
            refused.raw
        );
        assert_eq!(refused.body["error"], "invalid_client_metadata", "{name:?}");
    }
    let accepted = register("Claude (Anthropic) — café ✓".to_owned()).await;
    assert_eq!(accepted.status, StatusCode::CREATED, "{}", accepted.raw);
    let client_id = accepted.body["client_id"].as_str().unwrap();
    let page = authorize_page(&h.router, client_id, "https://host.example/cb").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    assert!(
        page.raw.contains("<bdi>Claude (Anthropic) — café ✓</bdi>"),
        "{}",
        page.raw
    );
}

/// Hosts list a callback for every platform they run on. Cursor registers its own
/// `cursor://` scheme beside a website and loopback: the scheme any app may claim is set
/// aside, the rest is stored, and Cursor links over loopback. A native app's private-use
/// scheme (RFC 8252 §7.1, reverse-domain) is usable by a public client: the page names the
/// scheme and warns, and the redirect to it is allowed by the page's CSP. Only an operator
/// can add a claimed scheme.
async fn a_host_with_native_callbacks_registers_what_can_be_used(backend: Backend) {
    let w = world(backend, false).await;
    let cursor = w
        .register(&json!({
            "client_name": "Cursor",
            "redirect_uris": [
                "cursor://anysphere.cursor-mcp/oauth/callback",
                "https://cursor.com/oauth/callback",
                "http://localhost:8787/callback",
            ],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        }))
        .await;
    assert_eq!(cursor.status, StatusCode::CREATED, "{}", cursor.raw);
    assert_eq!(
        cursor.body["redirect_uris"],
        json!([
            "https://cursor.com/oauth/callback",
            "http://localhost:8787/callback"
        ])
    );
    let cursor_id = cursor.body["client_id"].as_str().unwrap();
    let household = w.household("Native Home").await;
    let code = w
        .consent(&household, cursor_id, "http://localhost:8787/callback")
        .await;
    let tokens = w
        .exchange_public(cursor_id, &code, "http://localhost:8787/callback")
        .await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    assert!(is_error_page(
        &w.authorize_page(cursor_id, "cursor://anysphere.cursor-mcp/oauth/callback")
            .await
    ));

    let app = "com.example.hearthapp:/oauth2redirect";
    let native = w
        .register(&json!({
            "client_name": "Example App",
            "redirect_uris": [app],
            "token_endpoint_auth_method": "none",
        }))
        .await;
    assert_eq!(native.status, StatusCode::CREATED, "{}", native.raw);
    let native_id = native.body["client_id"].as_str().unwrap();
    let page = w.authorize_page(native_id, app).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    assert!(
        page.raw
            .contains("<strong><bdi>com.example.hearthapp:</bdi></strong>"),
        "{}",
        page.raw
    );
    assert!(page.raw.contains("not a website"), "{}", page.raw);
    assert!(
        page.header("content-security-policy")
            .contains("form-action 'self' com.example.hearthapp:"),
        "{}",
        page.header("content-security-policy")
    );
    let code = w.consent(&household, native_id, app).await;
    let tokens = w.exchange_public(native_id, &code, app).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);

    // A confidential client has a secret to keep: an app's scheme is not for it.
    let confidential = w
        .register(&json!({"client_name": "Server App", "redirect_uris": [app]}))
        .await;
    assert_eq!(
        confidential.body["error"], "invalid_redirect_uri",
        "{}",
        confidential.raw
    );
    // An operator may choose a claimed scheme.
    let added = w
        .clients
        .add(
            "Cursor (desktop)",
            &["cursor://anysphere.cursor-mcp/oauth/callback".to_owned()],
            true,
        )
        .await
        .unwrap();
    let page = w
        .authorize_page(
            &added.client_id,
            "cursor://anysphere.cursor-mcp/oauth/callback",
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    assert!(
        page.raw.contains("<strong><bdi>cursor:</bdi></strong>"),
        "{}",
        page.raw
    );
}

/// A registration never used to obtain a token is forgotten 24 hours after it was made, to
/// the millisecond; one that was used is kept.
async fn an_unused_registration_expires_after_a_day(backend: Backend) {
    let w = world(backend, false).await;
    let metadata = json!({
        "client_name": "Cursor",
        "redirect_uris": ["http://127.0.0.1/callback"],
        "token_endpoint_auth_method": "none",
    });
    let unused = w.register(&metadata).await.body["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let used = w.register(&metadata).await.body["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let household = w.household("Expiring Home").await;
    let redirect = "http://127.0.0.1:4000/callback";
    let code = w.consent(&household, &used, redirect).await;
    let tokens = w.exchange_public(&used, &code, redirect).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);

    w.advance_ms(DAY_MS - 1);
    let page = w.authorize_page(&unused, redirect).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    w.advance_ms(1);
    let expired = w.authorize_page(&unused, redirect).await;
    assert!(is_error_page(&expired), "{}", expired.raw);
    assert!(expired.raw.contains("does not know"), "{}", expired.raw);
    let kept = w
        .refresh_public(&used, tokens.body["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(kept.status, StatusCode::OK, "{}", kept.raw);
}

/// Every registration the rules refuse, with its error code, and every limit at the limit and
/// one past it. Nothing refused is stored.
#[tokio::test]
async fn every_registration_refusal_is_named() {
    let w = world(Backend::Sqlite, false).await;
    let good = json!({"client_name": "Inspector", "redirect_uris": ["https://inspector.example/cb"],
        "token_endpoint_auth_method": "none"});
    let with = |field: &str, value: Value| {
        let mut metadata = good.clone();
        metadata[field] = value;
        metadata
    };
    let refusals: Vec<(Value, &str)> = vec![
        (
            with("redirect_uris", json!(["http://example.com/cb"])),
            "invalid_redirect_uri",
        ),
        (
            with(
                "redirect_uris",
                json!(["cursor://anysphere.cursor-retrieval/oauth/callback"]),
            ),
            "invalid_redirect_uri",
        ),
        (
            with("redirect_uris", json!(["https://example.com/cb#x"])),
            "invalid_redirect_uri",
        ),
        (with("redirect_uris", json!([])), "invalid_redirect_uri"),
        (
            json!({"client_name": "No redirects", "token_endpoint_auth_method": "none"}),
            "invalid_redirect_uri",
        ),
        (
            with(
                "redirect_uris",
                json!(
                    (0..11)
                        .map(|n| format!("https://a.example/{n}"))
                        .collect::<Vec<_>>()
                ),
            ),
            "invalid_redirect_uri",
        ),
        (
            with("grant_types", json!(["client_credentials"])),
            "invalid_client_metadata",
        ),
        (
            with(
                "grant_types",
                json!(["authorization_code", "client_credentials"]),
            ),
            "invalid_client_metadata",
        ),
        (
            with("grant_types", json!(["implicit"])),
            "invalid_client_metadata",
        ),
        (
            with("grant_types", json!(["refresh_token"])),
            "invalid_client_metadata",
        ),
        (
            with("response_types", json!(["token"])),
            "invalid_client_metadata",
        ),
        (
            with("token_endpoint_auth_method", json!("private_key_jwt")),
            "invalid_client_metadata",
        ),
        (with("scope", json!("admin")), "invalid_client_metadata"),
        (
            with("redirect_uris", json!("https://inspector.example/cb")),
            "invalid_client_metadata",
        ),
        (
            with("client_name", json!("x".repeat(101))),
            "invalid_client_metadata",
        ),
        (
            with("client_name", json!("bell\u{7}")),
            "invalid_client_metadata",
        ),
    ];
    for (metadata, error) in &refusals {
        let reply = w.register(metadata).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{metadata}: {}",
            reply.raw
        );
        assert_eq!(reply.body["error"], *error, "{metadata}: {}", reply.raw);
        assert!(reply.body["error_description"].as_str().unwrap().len() > 10);
    }
    let not_json = w.register_raw("{\"redirect_uris\": [").await;
    assert_eq!(not_json.body["error"], "invalid_client_metadata");
    let as_form = w
        .form("/oauth/register", &[], "redirect_uris=https://a.example/cb")
        .await;
    assert_eq!(as_form.status, StatusCode::BAD_REQUEST);
    assert_eq!(as_form.body["error"], "invalid_client_metadata");
    let get = request(&w.h.router, "GET", "/oauth/register", &[], "").await;
    assert_eq!(get.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        w.clients.list().await.unwrap().is_empty(),
        "nothing refused is stored"
    );

    // At each limit, and one past it.
    let name = w
        .register(&with("client_name", json!("x".repeat(100))))
        .await;
    assert_eq!(name.status, StatusCode::CREATED, "{}", name.raw);
    let ten = (0..10)
        .map(|n| format!("https://a.example/{n}"))
        .collect::<Vec<_>>();
    let ten_redirects = w.register(&with("redirect_uris", json!(ten))).await;
    assert_eq!(
        ten_redirects.status,
        StatusCode::CREATED,
        "{}",
        ten_redirects.raw
    );
    let padded = |size: usize| {
        let mut metadata = good.clone();
        metadata["software_id"] = json!("");
        let base = metadata.to_string().len();
        metadata["software_id"] = json!("p".repeat(size - base));
        let body = metadata.to_string();
        assert_eq!(body.len(), size);
        body
    };
    let at_limit = w.register_raw(&padded(MAX_REGISTRATION_BYTES)).await;
    assert_eq!(at_limit.status, StatusCode::CREATED, "{}", at_limit.raw);
    let too_large = w.register_raw(&padded(MAX_REGISTRATION_BYTES + 1)).await;
    assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(too_large.body["error"], "invalid_client_metadata");
    assert_eq!(w.clients.list().await.unwrap().len(), 3);
}

/// Registrations are counted per address in the shared counters: the limit is met, the next
/// is 429 with `Retry-After`, and the count starts again with the next window.
#[tokio::test]
async fn registrations_are_limited_per_address() {
    let w = world(Backend::Sqlite, false).await;
    let metadata =
        json!({"redirect_uris": ["https://host.example/cb"], "token_endpoint_auth_method": "none"});
    for n in 0..REGISTRATIONS_PER_WINDOW {
        let reply = w.register(&metadata).await;
        assert_eq!(
            reply.status,
            StatusCode::CREATED,
            "registration {n}: {}",
            reply.raw
        );
        // A client that names itself nothing is shown by where it sends people back.
        assert_eq!(reply.body["client_name"], "host.example");
    }
    let limited = w.register(&metadata).await;
    assert_eq!(
        limited.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        limited.raw
    );
    assert!(limited.header("retry-after").parse::<u64>().unwrap() >= 1);
    w.advance_ms(hearth_core::oauth::REGISTRATION_WINDOW_MS);
    assert_eq!(w.register(&metadata).await.status, StatusCode::CREATED);
}

on_both_stores!(
    a_client_revokes_only_its_own_access_tokens,
    a_host_with_native_callbacks_registers_what_can_be_used,
    a_host_that_registers_itself_links_a_household_and_calls_a_tool,
    an_unused_registration_expires_after_a_day,
    a_host_named_by_its_metadata_document_links_a_household,
);

/// The host's website, on loopback: serves metadata documents by name and counts fetches.
struct DocumentHost {
    base: String,
    fetches: Arc<HashMapCounter>,
}

#[derive(Default)]
struct HashMapCounter(std::sync::Mutex<HashMap<String, usize>>, AtomicUsize);

impl HashMapCounter {
    fn hit(&self, name: &str) {
        *self.0.lock().unwrap().entry(name.to_owned()).or_default() += 1;
        self.1.fetch_add(1, Ordering::SeqCst);
    }

    fn of(&self, name: &str) -> usize {
        self.0.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

const HOST_REDIRECT: &str = "https://host.example/oauth/callback";

impl DocumentHost {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let fetches = Arc::new(HashMapCounter::default());
        let app = axum::Router::new()
            .route("/{name}", axum::routing::get(document))
            .with_state((base.clone(), fetches.clone()));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base, fetches }
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }
}

/// One document per name: what a host might serve, good and bad.
async fn document(
    State((base, fetches)): State<(String, Arc<HashMapCounter>)>,
    Path(name): Path<String>,
) -> Response {
    fetches.hit(&name);
    let url = format!("{base}/{name}");
    let body = |client_id: &str| {
        json!({
            "client_id": client_id,
            "client_name": "Example Host",
            "client_uri": "https://host.example",
            "redirect_uris": [HOST_REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        })
    };
    let json = |value: Value, cache: &'static str| {
        (
            [
                (http::header::CONTENT_TYPE, "application/json"),
                (http::header::CACHE_CONTROL, cache),
            ],
            value.to_string(),
        )
            .into_response()
    };
    // A document of exactly `size` bytes, padded in a field the server ignores.
    let sized = |size: usize| {
        let mut value = body(&url);
        value["logo_uri"] = json!("");
        let base_len = value.to_string().len();
        value["logo_uri"] = json!("l".repeat(size - base_len));
        assert_eq!(value.to_string().len(), size);
        json(value, "max-age=600")
    };
    match name.as_str() {
        "client.json" => json(body(&url), "max-age=600"),
        "fresh.json" => json(body(&url), "no-store"),
        "exact.json" => sized(MAX_DOCUMENT_BYTES),
        "big.json" => sized(MAX_DOCUMENT_BYTES + 1),
        "mismatch.json" => json(body(&format!("{base}/client.json")), "max-age=600"),
        "redirect.json" => (
            StatusCode::FOUND,
            [(http::header::LOCATION, format!("{base}/client.json"))],
        )
            .into_response(),
        "slow.json" => {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            json(body(&url), "max-age=600")
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A host named by its metadata document's URL (claude.ai's and VS Code's way): fetched once
/// and kept as its cache headers say, shown unverified, public, and linked with PKCE alone.
async fn a_host_named_by_its_metadata_document_links_a_household(backend: Backend) {
    let host = DocumentHost::start().await;
    let w = world(backend, true).await;
    let client_id = host.url("client.json");
    let page = w.authorize_page(&client_id, HOST_REDIRECT).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    assert!(
        page.raw
            .contains("<strong><bdi>Example Host</bdi></strong>"),
        "{}",
        page.raw
    );
    assert!(page.raw.contains("unverified: the app named itself"));
    assert!(
        page.raw
            .contains("<strong><bdi>host.example</bdi></strong>")
    );

    let household = w.household("Document Home").await;
    let code = w.consent(&household, &client_id, HOST_REDIRECT).await;
    let tokens = w.exchange_public(&client_id, &code, HOST_REDIRECT).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    let recorded = w
        .record(
            tokens.body["access_token"].as_str().unwrap(),
            "ran the bath",
        )
        .await;
    assert_eq!(
        recorded.body["result"]["isError"], false,
        "{}",
        recorded.raw
    );
    let refreshed = w
        .refresh_public(&client_id, tokens.body["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    // Kept for its max-age: the page, the form, the exchange and the refresh read one fetch.
    assert_eq!(host.fetches.of("client.json"), 1);
    // A client named by URL is public: a secret beside it is refused, not ignored.
    let with_secret = w
        .form(
            "/oauth/token",
            &[("authorization", &basic(&client_id, "a secret"))],
            "grant_type=refresh_token&refresh_token=x",
        )
        .await;
    assert_eq!(
        with_secret.body["error"], "invalid_client",
        "{}",
        with_secret.raw
    );
    // After its max-age it is fetched again.
    w.advance_ms(600_000);
    assert_eq!(
        w.authorize_page(&client_id, HOST_REDIRECT).await.status,
        StatusCode::OK
    );
    assert_eq!(host.fetches.of("client.json"), 2);
    // One that may not be kept is fetched each time it is needed.
    let fresh = host.url("fresh.json");
    for _ in 0..2 {
        assert_eq!(
            w.authorize_page(&fresh, HOST_REDIRECT).await.status,
            StatusCode::OK
        );
    }
    assert_eq!(host.fetches.of("fresh.json"), 2);
}

/// Every document the rules refuse shows the error page, names why, and redirects nowhere.
#[tokio::test]
async fn every_metadata_document_refusal_shows_a_page_and_redirects_nowhere() {
    let host = DocumentHost::start().await;
    let w = world(Backend::Sqlite, true).await;
    let at_limit = w
        .authorize_page(&host.url("exact.json"), HOST_REDIRECT)
        .await;
    assert_eq!(at_limit.status, StatusCode::OK, "{}", at_limit.raw);
    let refusals: Vec<(String, &str, &str)> = vec![
        (
            host.url("big.json"),
            HOST_REDIRECT,
            "larger than 5120 bytes",
        ),
        (
            host.url("redirect.json"),
            HOST_REDIRECT,
            "a redirect, which is not followed",
        ),
        (
            host.url("mismatch.json"),
            HOST_REDIRECT,
            "client_id is not the URL",
        ),
        (host.url("missing.json"), HOST_REDIRECT, "answered 404"),
        (
            host.url("client.json"),
            "https://host.example/other",
            "not one of the client",
        ),
        (
            "http://host.example/client.json".into(),
            HOST_REDIRECT,
            "must use https",
        ),
        (
            "https://10.0.0.1/client.json".into(),
            HOST_REDIRECT,
            "not a public internet address",
        ),
        (
            "https://169.254.169.254/latest/meta-data".into(),
            HOST_REDIRECT,
            "not a public internet address",
        ),
        ("https://host.example/".into(), HOST_REDIRECT, "has no path"),
        (
            host.url("slow.json"),
            HOST_REDIRECT,
            "could not be fetched in time",
        ),
    ];
    for (client_id, redirect, why) in &refusals {
        let page = w.authorize_page(client_id, redirect).await;
        assert!(is_error_page(&page), "{client_id}: {}", page.raw);
        assert!(
            page.raw.contains(why),
            "{client_id}: expected {why:?} in {}",
            page.raw
        );
    }
    // The redirect answer was not followed: the document it pointed to was never fetched
    // through it (only the direct fetch for the unknown-redirect case above counts).
    assert_eq!(host.fetches.of("client.json"), 1);
    // At the token endpoint the same refusal is invalid_client.
    let token = w
        .form(
            "/oauth/token",
            &[],
            &encode_pairs(&[
                ("grant_type", "refresh_token"),
                ("client_id", &host.url("big.json")),
                ("refresh_token", "x"),
            ]),
        )
        .await;
    assert_eq!(token.status, StatusCode::UNAUTHORIZED, "{}", token.raw);
    assert!(
        token.body["error_description"]
            .as_str()
            .unwrap()
            .contains("larger than")
    );
}

/// Off loopback, a refused document tells the person only that the app's registration could
/// not be checked: why (a status, a size) would let anyone probe public hosts from the
/// server's address. The operator's log has the reason; the token endpoint says no more.
#[tokio::test]
async fn a_public_server_names_no_reason_for_a_refused_document() {
    const PUBLIC: &str = "https://hearth.example/mcp";
    let (log, _guard) = common::capture::Captured::installed();
    let host = DocumentHost::start().await;
    let config = common::config(&[
        ("MCP_JWT_SECRET", JWT_SECRET),
        ("HEARTH_LOG_KEY", LOG_KEY),
        ("HEARTH_RATE_LIMIT_PER_IP", "1000000"),
        ("HEARTH_CIMD_ALLOW_HTTP_LOOPBACK", "true"),
        ("MCP_RESOURCE_URL", PUBLIC),
    ]);
    let h = common::harness_with(&config);
    for (name, why) in [
        ("missing.json", "answered 404"),
        ("big.json", "larger than 5120 bytes"),
    ] {
        let query = encode_pairs(&[
            ("response_type", "code"),
            ("client_id", &host.url(name)),
            ("redirect_uri", HOST_REDIRECT),
            ("state", STATE),
            ("code_challenge", &challenge(VERIFIER)),
            ("code_challenge_method", "S256"),
            ("resource", PUBLIC),
        ]);
        let page = request(
            &h.router,
            "GET",
            &format!("/oauth/authorize?{query}"),
            &[("host", "hearth.example")],
            "",
        )
        .await;
        assert!(is_error_page(&page), "{name}: {}", page.raw);
        assert!(
            page.raw
                .contains("this app&#39;s registration could not be checked")
                || page
                    .raw
                    .contains("this app's registration could not be checked"),
            "{name}: {}",
            page.raw
        );
        assert!(!page.raw.contains(why), "{name} names why: {}", page.raw);
        assert!(log.text().contains(why), "the operator's log says {why:?}");
    }
    let token = request(
        &h.router,
        "POST",
        "/oauth/token",
        &[("content-type", "application/x-www-form-urlencoded")],
        &encode_pairs(&[
            ("grant_type", "refresh_token"),
            ("client_id", &host.url("big.json")),
            ("refresh_token", "x"),
        ]),
    )
    .await;
    assert_eq!(token.status, StatusCode::UNAUTHORIZED, "{}", token.raw);
    assert!(!token.raw.contains("larger than"), "{}", token.raw);
}

/// Without `HEARTH_CIMD_ALLOW_HTTP_LOOPBACK`, a document on this machine is refused: over
/// http because it is not https, and over https because the name resolves to a loopback
/// address (checked after resolution, before any connection).
#[tokio::test]
async fn a_document_on_a_private_address_is_never_fetched() {
    let host = DocumentHost::start().await;
    let w = world(Backend::Sqlite, false).await;
    let over_http = w
        .authorize_page(&host.url("client.json"), HOST_REDIRECT)
        .await;
    assert!(is_error_page(&over_http), "{}", over_http.raw);
    assert!(over_http.raw.contains("must use https"));
    let port = host.base.rsplit(':').next().unwrap();
    for name in ["localhost", "127.0.0.1", "[::1]"] {
        let url = format!("https://{name}:{port}/client.json");
        let page = w.authorize_page(&url, HOST_REDIRECT).await;
        assert!(is_error_page(&page), "{url}: {}", page.raw);
        assert!(
            page.raw.contains("not a public internet address"),
            "{url}: {}",
            page.raw
        );
    }
    assert_eq!(host.fetches.of("client.json"), 0);
}

/// A host that runs in a browser (the MCP Inspector) fetches the metadata, registers and
/// exchanges codes from its own origin: with that origin in `MCP_ALLOWED_ORIGINS`, preflights
/// and answers carry CORS permission; any other origin gets none (and the gate's 403).
#[tokio::test]
async fn a_browser_host_on_an_allowed_origin_may_fetch_and_no_other_may() {
    // The Inspector's page is at either spelling of loopback, a different origin each.
    const INSPECTOR: &str = "http://localhost:6274";
    const INSPECTOR_BY_IP: &str = "http://127.0.0.1:6274";
    let (log, _guard) = common::capture::Captured::installed();
    let config = common::config(&[
        ("MCP_JWT_SECRET", JWT_SECRET),
        ("HEARTH_RATE_LIMIT_PER_IP", "1000000"),
        (
            "MCP_ALLOWED_ORIGINS",
            "http://localhost:6274, http://127.0.0.1:6274",
        ),
    ]);
    let h = common::harness_with(&config);
    let preflight = |path: &'static str, origin: &'static str| {
        let router = h.router.clone();
        async move {
            request(
                &router,
                "OPTIONS",
                path,
                &[
                    ("origin", origin),
                    ("access-control-request-method", "POST"),
                    (
                        "access-control-request-headers",
                        "content-type, authorization, mcp-protocol-version",
                    ),
                ],
                "",
            )
            .await
        }
    };
    for path in [
        "/oauth/register",
        "/oauth/token",
        "/oauth/revoke",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource/mcp",
        "/mcp",
    ] {
        let allowed = preflight(path, INSPECTOR).await;
        assert!(allowed.status.is_success(), "{path}: {}", allowed.status);
        assert_eq!(
            allowed.header("access-control-allow-origin"),
            INSPECTOR,
            "{path}"
        );
        let methods = allowed.header("access-control-allow-methods").to_owned();
        assert!(methods.contains("POST"), "{path}: {methods}");
        let headers = allowed
            .header("access-control-allow-headers")
            .to_ascii_lowercase();
        assert!(
            headers.contains("mcp-protocol-version"),
            "{path}: {headers}"
        );
        assert!(
            allowed
                .header("access-control-allow-credentials")
                .is_empty()
        );
        let by_ip = preflight(path, INSPECTOR_BY_IP).await;
        assert_eq!(
            by_ip.header("access-control-allow-origin"),
            INSPECTOR_BY_IP,
            "{path}"
        );
        let other = preflight(path, "https://evil.example").await;
        assert_eq!(other.status, StatusCode::FORBIDDEN, "{path}");
        assert!(
            other.header("access-control-allow-origin").is_empty(),
            "{path}"
        );
    }
    // Each refused preflight left a line naming the origin, and nothing more of the request.
    let refused_preflights: Vec<_> = log
        .request_lines()
        .into_iter()
        .filter(|line| line["method"] == "cors_preflight")
        .collect();
    assert_eq!(refused_preflights.len(), 6, "{refused_preflights:?}");
    assert!(
        refused_preflights
            .iter()
            .all(|line| line["origin"] == "https://evil.example" && line["status"] == 403)
    );
    let registered = request(
        &h.router,
        "POST",
        "/oauth/register",
        &[("content-type", "application/json"), ("origin", INSPECTOR)],
        &json!({"redirect_uris": ["http://localhost:6274/oauth/callback"],
            "token_endpoint_auth_method": "none"})
        .to_string(),
    )
    .await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.raw);
    assert_eq!(registered.header("access-control-allow-origin"), INSPECTOR);
    let refused = request(
        &h.router,
        "POST",
        "/oauth/register",
        &[
            ("content-type", "application/json"),
            ("origin", "https://evil.example"),
        ],
        &json!({"redirect_uris": ["https://evil.example/cb"]}).to_string(),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    assert!(refused.header("access-control-allow-origin").is_empty());
    // The consent page is navigated to, not fetched: no CORS there.
    let page = preflight("/oauth/authorize", INSPECTOR).await;
    assert!(page.header("access-control-allow-origin").is_empty());
}

/// What a registered public client costs on DynamoDB beyond the configured client's calls
/// (tests/linking.rs counts those): registering is the rate limiter, the registration counter
/// and one transaction; each token request reads the client once more; its first token also
/// keeps the registration (a read and a transaction); later ones within a day write nothing.
#[tokio::test]
async fn a_registered_client_costs_a_known_number_of_dynamodb_calls() {
    let (client, counter) = Moto::shared().counted_dynamodb_client();
    let (h, admin, stores) = common::operated_with_stores(
        &config(false),
        Backend::Dynamo,
        client,
        "hearth-registration-calls",
    )
    .await;
    let w = World {
        clients: Clients::new(stores.clients, None, h.clock.clone()),
        h,
        admin,
    };
    let household = w.household("Counted Registration").await;
    counter.take();
    let registered = w
        .register(&json!({"redirect_uris": ["http://127.0.0.1/cb"],
            "token_endpoint_auth_method": "none"}))
        .await;
    assert_eq!(registered.status, StatusCode::CREATED);
    assert_eq!(
        counter.take(),
        3,
        "registering: the rate limiter, the registration counter, one TransactWriteItems"
    );
    let client_id = registered.body["client_id"].as_str().unwrap().to_owned();
    let redirect = "http://127.0.0.1:5000/cb";
    let code = w.consent(&household, &client_id, redirect).await;
    counter.take();
    let tokens = w.exchange_public(&client_id, &code, redirect).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    assert_eq!(
        counter.take(),
        6 + 1 + 2,
        "the first exchange: the configured client's six, GetItem of the client, and keeping the registration (GetItem, TransactWriteItems)"
    );
    let refreshed = w
        .refresh_public(&client_id, tokens.body["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    assert_eq!(
        counter.take(),
        4 + 1,
        "a refresh within the day: the configured client's four and GetItem of the client"
    );
    w.advance_ms(hearth_core::clients::USE_NOTED_EVERY_MS);
    let later = w
        .refresh_public(
            &client_id,
            refreshed.body["refresh_token"].as_str().unwrap(),
        )
        .await;
    assert_eq!(later.status, StatusCode::OK, "{}", later.raw);
    assert_eq!(
        counter.take(),
        4 + 1 + 2,
        "a day later its use is noted again: GetItem and TransactWriteItems"
    );
}

/// With the client store out of reach, a registration is 503 and names nothing stored, a
/// token request for a stored client is 503, and the consent page says to try again; the
/// configured client and everything else keep working.
#[tokio::test]
async fn an_unreachable_client_store_is_503_and_nothing_else_breaks() {
    use hearth_core::store::Stores;
    use hearth_core::store::unconfigured::Unconfigured;
    let h = common::harness_over(&config(true), |sqlite| Stores {
        cosigned: sqlite.clone(),
        grants: sqlite.clone(),
        clients: std::sync::Arc::new(Unconfigured),
        chains: sqlite.clone(),
        accounts: sqlite.clone(),
        counters: sqlite,
    });
    let registered = request(
        &h.router,
        "POST",
        "/oauth/register",
        &[("content-type", "application/json")],
        &json!({"redirect_uris": ["https://host.example/cb"], "token_endpoint_auth_method": "none"})
            .to_string(),
    )
    .await;
    assert_eq!(
        registered.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        registered.raw
    );
    assert_eq!(registered.body["error"], "temporarily_unavailable");
    assert!(registered.body.get("client_id").is_none());
    let token = request(
        &h.router,
        "POST",
        "/oauth/token",
        &[("content-type", "application/x-www-form-urlencoded")],
        "grant_type=refresh_token&client_id=hc_0123&refresh_token=x",
    )
    .await;
    assert_eq!(
        token.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        token.raw
    );
    let page = authorize_page(&h.router, "hc_0123", "https://host.example/cb").await;
    assert_eq!(page.status, StatusCode::SERVICE_UNAVAILABLE, "{}", page.raw);
    assert!(page.raw.contains("try again"), "{}", page.raw);
    assert!(page.header("location").is_empty());
}
