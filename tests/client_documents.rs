//! Hosts named by a Client ID Metadata Document, as their sites really behave, on the SQLite
//! store and on DynamoDB (moto): a site that starts refusing Hearth's fetch (kept copies, for
//! seven days and not a second more), a first fetch that is refused (the pinned copies of
//! Claude's documents), an operator's import, a removal that holds until it is lifted,
//! `HEARTH_CIMD=off`, and ChatGPT's signed client assertions (RFC 7523 `private_key_jwt`)
//! with every refusal at its limit and one past it.
//!
//! The host's website is a loopback stand-in whose answers the test changes as it goes
//! (`HEARTH_CIMD_ALLOW_HTTP_LOOPBACK=true`); no host name resolves in tests, so the pinned
//! copies are what stands in for claude.ai.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_SHA256, RSA_PSS_SHA256};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::oauth::{VERIFIER, challenge, encode_pairs, hidden_fields};
use common::{Backend, Harness, LOG_KEY, RESOURCE, Reply, request};
use hearth_core::clients::{Clients, KEPT_COPY_MS};
use hearth_testkit::moto::Moto;
use http::StatusCode;
use serde_json::{Value, json};

const JWT_SECRET: &str = "documents-jwt-signing-key-of-32-bytes-x";
const ISSUER: &str = "http://127.0.0.1:8790";
const TOKEN_ENDPOINT: &str = "http://127.0.0.1:8790/oauth/token";
const HOST_REDIRECT: &str = "https://host.example/oauth/callback";
const CLAUDE: &str = "https://claude.ai/oauth/mcp-oauth-client-metadata";
const CLAUDE_REDIRECT: &str = "https://claude.ai/api/mcp/auth_callback";
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// One answer of the stand-in site: status, body and `Cache-Control`.
#[derive(Clone)]
struct Answer {
    status: StatusCode,
    body: String,
    cache: &'static str,
}

/// The host's website on loopback: answers by name, changeable, counting fetches.
#[derive(Clone, Default)]
struct Site {
    answers: Arc<Mutex<HashMap<String, Answer>>>,
    fetches: Arc<Mutex<HashMap<String, usize>>>,
    base: String,
}

impl Site {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let site = Site {
            base: format!("http://{}", listener.local_addr().unwrap()),
            ..Site::default()
        };
        let app = axum::Router::new()
            .route("/{name}", axum::routing::get(serve))
            .with_state(site.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        site
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    fn answer(&self, name: &str, status: StatusCode, body: &Value, cache: &'static str) {
        self.answers.lock().unwrap().insert(
            name.to_owned(),
            Answer {
                status,
                body: body.to_string(),
                cache,
            },
        );
    }

    /// The site starts refusing `name`, as a bot wall answers a cloud address.
    fn refuse(&self, name: &str) {
        self.answer(name, StatusCode::FORBIDDEN, &json!({}), "no-store");
    }

    fn fetches(&self, name: &str) -> usize {
        self.fetches.lock().unwrap().get(name).copied().unwrap_or(0)
    }

    /// A public client's document at `name`.
    fn public_document(&self, name: &str, cache: &'static str) -> String {
        let url = self.url(name);
        self.answer(
            name,
            StatusCode::OK,
            &json!({
                "client_id": url,
                "client_name": "Example Host",
                "redirect_uris": [HOST_REDIRECT],
                "token_endpoint_auth_method": "none",
            }),
            cache,
        );
        url
    }
}

async fn serve(State(site): State<Site>, Path(name): Path<String>) -> Response {
    *site
        .fetches
        .lock()
        .unwrap()
        .entry(name.clone())
        .or_default() += 1;
    let answer = site.answers.lock().unwrap().get(&name).cloned();
    match answer {
        Some(answer) => (
            answer.status,
            [
                (http::header::CONTENT_TYPE, "application/json"),
                (http::header::CACHE_CONTROL, answer.cache),
            ],
            answer.body,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

struct World {
    h: Harness,
    admin: hearth_core::admin::Admin,
    clients: Clients,
}

fn settings(extra: &[(&'static str, &'static str)]) -> hearth_core::config::Config {
    let mut vars = vec![
        ("MCP_JWT_SECRET", JWT_SECRET),
        ("HEARTH_LOG_KEY", LOG_KEY),
        ("HEARTH_RATE_LIMIT_PER_SUBJECT", "1000000"),
        ("HEARTH_RATE_LIMIT_PER_IP", "1000000"),
        ("HEARTH_CIMD_ALLOW_HTTP_LOOPBACK", "true"),
    ];
    vars.extend_from_slice(extra);
    common::config(&vars)
}

async fn world_with(backend: Backend, config: hearth_core::config::Config) -> World {
    let (h, admin, stores) = common::operated_with_stores(
        &config,
        backend,
        Moto::shared().dynamodb_client(),
        "hearth-documents",
    )
    .await;
    // As `hearth admin client …` builds them, with the server's settings.
    let clients = Clients::new(stores.clients, None, h.clock.clone()).with_documents(
        hearth_core::clients::metadata_document::MetadataFetcher::with_resolver(
            Arc::new(hearth_core::clients::metadata_document::LocalhostOnly),
            config.cimd_allow_http_loopback,
        ),
        stores.grants,
    );
    World { h, admin, clients }
}

async fn world(backend: Backend) -> World {
    world_with(backend, settings(&[])).await
}

impl World {
    fn advance_ms(&self, ms: i64) {
        self.h.clock.advance(time::Duration::milliseconds(ms));
    }

    async fn page(&self, client_id: &str, redirect_uri: &str) -> Reply {
        let query = common::oauth::authorize_query(
            client_id,
            redirect_uri,
            "s1",
            "mcp:service offline_access",
        );
        request(
            &self.h.router,
            "GET",
            &format!("/oauth/authorize?{query}"),
            &[],
            "",
        )
        .await
    }

    /// The person's part: the page, the link code, allow; the code.
    async fn consent(&self, household: &str, client_id: &str, redirect_uri: &str) -> String {
        let page = self.page(client_id, redirect_uri).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
        let cookie = page
            .header("set-cookie")
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let mut fields = hidden_fields(&page.raw);
        fields.insert("decision".into(), "allow".into());
        fields.insert(
            "link_code".into(),
            self.admin.link_code(household).await.unwrap().code,
        );
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
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
        location
            .query_pairs()
            .find(|(name, _)| name == "code")
            .unwrap()
            .1
            .into_owned()
    }

    async fn form(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        request(&self.h.router, "POST", path, &all, body).await
    }

    async fn token(&self, pairs: &[(&str, &str)]) -> Reply {
        self.form("/oauth/token", &[], &encode_pairs(pairs)).await
    }

    async fn household(&self) -> String {
        self.admin
            .create("Document Home", None)
            .await
            .unwrap()
            .household_id
    }
}

fn is_error_page(reply: &Reply) -> bool {
    reply.status == StatusCode::BAD_REQUEST
        && reply.header("content-type").starts_with("text/html")
        && reply.header("location").is_empty()
}

// ---- kept copies, failures, pinned copies, imports, removals -------------------------------

/// A document served with `no-cache` is still kept: when the site starts refusing Hearth, the
/// kept copy carries the link (a warning is logged) through its seventh day, and not one
/// second more. A refused fetch is not tried again within the minute.
async fn a_kept_copy_carries_a_link_through_a_refused_fetch_for_seven_days(backend: Backend) {
    let site = Site::start().await;
    let w = world(backend).await;
    let client_id = site.public_document("client.json", "no-cache");
    assert_eq!(
        w.page(&client_id, HOST_REDIRECT).await.status,
        StatusCode::OK
    );
    assert_eq!(site.fetches("client.json"), 1);

    site.refuse("client.json");
    let household = w.household().await;
    let code = w.consent(&household, &client_id, HOST_REDIRECT).await;
    let fetched = site.fetches("client.json");
    assert_eq!(
        fetched, 2,
        "one refused fetch; the next requests within a minute ask nobody"
    );
    let tokens = w
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client_id),
            ("code", &code),
            ("redirect_uri", HOST_REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", RESOURCE),
        ])
        .await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    assert_eq!(site.fetches("client.json"), fetched);

    // Day seven, to the millisecond: the kept copy still stands in.
    w.advance_ms(KEPT_COPY_MS);
    let refresh = tokens.body["refresh_token"].as_str().unwrap().to_owned();
    let on_day_seven = w
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client_id),
            ("refresh_token", &refresh),
        ])
        .await;
    assert_eq!(on_day_seven.status, StatusCode::OK, "{}", on_day_seven.raw);
    // One second later it is gone, and the refusal shows.
    w.advance_ms(1000);
    let past = w
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client_id),
            (
                "refresh_token",
                on_day_seven.body["refresh_token"].as_str().unwrap(),
            ),
        ])
        .await;
    assert_eq!(past.body["error"], "invalid_client", "{}", past.raw);
    assert!(past.raw.contains("403"), "{}", past.raw);
    assert!(is_error_page(&w.page(&client_id, HOST_REDIRECT).await));
}

/// A URL that failed is remembered for a minute: a second request within it does not fetch,
/// one after it does.
async fn a_failed_fetch_is_remembered_for_a_minute(backend: Backend) {
    let site = Site::start().await;
    let w = world(backend).await;
    let missing = site.url("missing.json");
    assert!(is_error_page(&w.page(&missing, HOST_REDIRECT).await));
    w.advance_ms(hearth_core::clients::FAILURE_KEPT_MS - 1);
    let again = w.page(&missing, HOST_REDIRECT).await;
    assert!(is_error_page(&again));
    assert!(again.raw.contains("a moment ago"), "{}", again.raw);
    assert_eq!(site.fetches("missing.json"), 1);
    w.advance_ms(1);
    assert!(is_error_page(&w.page(&missing, HOST_REDIRECT).await));
    assert_eq!(site.fetches("missing.json"), 2);
}

/// claude.ai's document cannot be fetched here (no host name resolves in tests, as a bot wall
/// refuses a cloud address): Hearth's pinned copy stands in, and Claude links.
async fn claudes_pinned_document_stands_in_for_a_first_refused_fetch(backend: Backend) {
    let w = world(backend).await;
    let page = w.page(CLAUDE, CLAUDE_REDIRECT).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    assert!(
        page.raw.contains("<strong><bdi>Claude</bdi></strong>"),
        "{}",
        page.raw
    );
    assert!(page.raw.contains("unverified: the app named itself"));
    let household = w.household().await;
    let code = w.consent(&household, CLAUDE, CLAUDE_REDIRECT).await;
    let tokens = w
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", CLAUDE),
            ("code", &code),
            ("redirect_uri", CLAUDE_REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", RESOURCE),
        ])
        .await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    assert!(tokens.body["refresh_token"].is_string());
}

/// An operator imports a host's document by hand: it is checked, never fetched, shown as the
/// host's named client, and only `client delete` removes it. A deleted URL stays refused,
/// fetch or no fetch, until `client allow`.
async fn an_import_holds_until_deleted_and_a_deletion_until_allowed(backend: Backend) {
    let site = Site::start().await;
    let w = world(backend).await;
    let client_id = site.url("imported.json");
    let document = json!({
        "client_id": client_id,
        "client_name": "Imported Host",
        "redirect_uris": [HOST_REDIRECT],
        "token_endpoint_auth_method": "none",
    });
    let wrong = json!({"client_id": "https://elsewhere.example/client.json", "redirect_uris": [HOST_REDIRECT]});
    assert!(
        w.clients
            .import(&client_id, &wrong.to_string())
            .await
            .is_err()
    );
    w.clients
        .import(&client_id, &document.to_string())
        .await
        .unwrap();
    let page = w.page(&client_id, HOST_REDIRECT).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
    assert!(
        page.raw
            .contains("<strong><bdi>Imported Host</bdi></strong>")
    );
    assert!(!page.raw.contains("(unverified"), "{}", page.raw);
    w.advance_ms(30 * DAY_MS);
    assert_eq!(
        w.page(&client_id, HOST_REDIRECT).await.status,
        StatusCode::OK
    );
    assert_eq!(
        site.fetches("imported.json"),
        0,
        "an import is never fetched"
    );

    w.clients.delete(&client_id).await.unwrap();
    site.public_document("imported.json", "max-age=600");
    let removed = w.page(&client_id, HOST_REDIRECT).await;
    assert!(is_error_page(&removed));
    assert!(removed.raw.contains("removed"), "{}", removed.raw);
    assert_eq!(
        site.fetches("imported.json"),
        0,
        "a removal is not fetched around"
    );
    let listed = w.clients.list().await.unwrap();
    assert!(listed.iter().any(|client| client.client_id == client_id
        && client.created_by == hearth_core::store::ClientOrigin::Refused));
    w.clients.allow(&client_id).await.unwrap();
    assert!(
        w.clients.allow(&client_id).await.is_err(),
        "nothing more to lift"
    );
    assert_eq!(
        w.page(&client_id, HOST_REDIRECT).await.status,
        StatusCode::OK
    );
    assert_eq!(site.fetches("imported.json"), 1);
}

/// `HEARTH_CIMD=off`: the metadata says nothing of documents, a URL client id is refused with a
/// message naming the setting (even on a public server, where other reasons are not given),
/// and registration still works.
async fn with_cimd_off_hosts_register_instead(backend: Backend) {
    let w = world_with(
        backend,
        settings(&[
            ("HEARTH_CIMD", "off"),
            ("MCP_RESOURCE_URL", "https://hearth.example/mcp"),
        ]),
    )
    .await;
    let metadata = request(
        &w.h.router,
        "GET",
        "/.well-known/oauth-authorization-server",
        &[],
        "",
    )
    .await;
    assert!(
        metadata
            .body
            .get("client_id_metadata_document_supported")
            .is_none(),
        "{}",
        metadata.raw
    );
    let query = encode_pairs(&[
        ("response_type", "code"),
        ("client_id", CLAUDE),
        ("redirect_uri", CLAUDE_REDIRECT),
        ("code_challenge", &challenge(VERIFIER)),
        ("code_challenge_method", "S256"),
        ("resource", "https://hearth.example/mcp"),
    ]);
    let page = request(
        &w.h.router,
        "GET",
        &format!("/oauth/authorize?{query}"),
        &[("host", "hearth.example")],
        "",
    )
    .await;
    assert!(is_error_page(&page), "{}", page.raw);
    assert!(page.raw.contains("HEARTH_CIMD=off"), "{}", page.raw);
    let registered = request(
        &w.h.router,
        "POST",
        "/oauth/register",
        &[("content-type", "application/json")],
        &json!({"client_name": "Claude", "redirect_uris": [CLAUDE_REDIRECT], "token_endpoint_auth_method": "none"}).to_string(),
    )
    .await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.raw);
}

on_both_stores!(
    a_kept_copy_carries_a_link_through_a_refused_fetch_for_seven_days,
    a_failed_fetch_is_remembered_for_a_minute,
    claudes_pinned_document_stands_in_for_a_first_refused_fetch,
    an_import_holds_until_deleted_and_a_deletion_until_allowed,
    with_cimd_off_hosts_register_instead,
    a_signing_host_links_and_must_sign_every_token_request,
    every_bad_assertion_is_refused,
);

// ---- signed client assertions (private_key_jwt) --------------------------------------------

/// An RSA key made for the test, and its public half as a JWK.
struct SigningKey {
    pair: KeyPair,
    kid: String,
}

impl SigningKey {
    fn new(kid: &str) -> Self {
        Self {
            pair: KeyPair::generate(KeySize::Rsa2048).unwrap(),
            kid: kid.to_owned(),
        }
    }

    fn jwk(&self) -> Value {
        let public = self.pair.public_key();
        json!({
            "kty": "RSA",
            "kid": self.kid,
            "use": "sig",
            "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
            "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero()),
        })
    }

    /// A JWT with `header` and `claims`, signed RS256 (or PS256 when the header says so).
    fn sign(&self, header: &Value, claims: &Value) -> String {
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let padding: &'static dyn aws_lc_rs::signature::RsaEncoding = if header["alg"] == "PS256" {
            &RSA_PSS_SHA256
        } else {
            &RSA_PKCS1_SHA256
        };
        let mut signature = vec![0u8; self.pair.public_modulus_len()];
        self.pair
            .sign(
                padding,
                &SystemRandom::new(),
                message.as_bytes(),
                &mut signature,
            )
            .unwrap();
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

/// A signing host (ChatGPT's document shape, from Altinity/altinity-mcp#118 and
/// django-oauth/django-oauth-toolkit#1845) on the stand-in site, with `keys` at its
/// `jwks_uri`.
fn signing_document(site: &Site, keys: &[&SigningKey]) -> String {
    let client_id = site.url("client.json");
    site.answer(
        "client.json",
        StatusCode::OK,
        &json!({
            "client_id": client_id,
            "client_uri": "https://chatgpt.com/",
            "redirect_uris": [HOST_REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "client_name": "ChatGPT",
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "RS256",
            "jwks_uri": site.url("jwks.json"),
        }),
        "max-age=300",
    );
    site.answer(
        "jwks.json",
        StatusCode::OK,
        &json!({"keys": keys.iter().map(|key| key.jwk()).collect::<Vec<_>>()}),
        "max-age=300",
    );
    client_id
}

/// The claims of an assertion issued `iat` (Hearth's clock, in seconds) and living `lifetime`.
fn claims(client_id: &str, iat: i64, lifetime: i64, jti: &str) -> Value {
    json!({
        "iss": client_id,
        "sub": client_id,
        "aud": TOKEN_ENDPOINT,
        "iat": iat,
        "exp": iat + lifetime,
        "jti": jti,
    })
}

fn header(key: &SigningKey) -> Value {
    json!({"alg": "RS256", "typ": "JWT", "kid": key.kid})
}

fn now_secs(w: &World) -> i64 {
    use hearth_core::clock::Clock;
    w.h.clock.now().unix_timestamp()
}

/// ChatGPT's flow: its document says it signs, so every token request carries an assertion
/// (the code exchange, each refresh, revocation); PKCE alone is not enough, and the same
/// assertion is not taken twice.
async fn a_signing_host_links_and_must_sign_every_token_request(backend: Backend) {
    let site = Site::start().await;
    let key = SigningKey::new("cimd-20260428030119");
    let w = world(backend).await;
    let client_id = signing_document(&site, &[&key]);
    let household = w.household().await;
    let code = w.consent(&household, &client_id, HOST_REDIRECT).await;
    let exchange = |assertion: Option<String>, code: String| {
        let w = &w;
        let client_id = client_id.clone();
        async move {
            let mut pairs = vec![
                ("grant_type", "authorization_code".to_owned()),
                ("client_id", client_id),
                ("code", code),
                ("redirect_uri", HOST_REDIRECT.to_owned()),
                ("code_verifier", VERIFIER.to_owned()),
                ("resource", RESOURCE.to_owned()),
            ];
            if let Some(assertion) = assertion {
                pairs.push(("client_assertion_type", ASSERTION_TYPE.to_owned()));
                pairs.push(("client_assertion", assertion));
            }
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
            w.token(&pairs).await
        }
    };
    let unsigned = exchange(None, code.clone()).await;
    assert_eq!(unsigned.body["error"], "invalid_client", "{}", unsigned.raw);
    assert!(unsigned.raw.contains("private_key_jwt"), "{}", unsigned.raw);
    let signed = key.sign(
        &header(&key),
        &claims(&client_id, now_secs(&w), 300, "jti-1"),
    );
    let tokens = exchange(Some(signed.clone()), code).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);

    let refresh = tokens.body["refresh_token"].as_str().unwrap().to_owned();
    let refreshed = w
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_assertion_type", ASSERTION_TYPE),
            (
                "client_assertion",
                &key.sign(
                    &header(&key),
                    &claims(&client_id, now_secs(&w), 300, "jti-2"),
                ),
            ),
        ])
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    let next = refreshed.body["refresh_token"].as_str().unwrap().to_owned();
    let pkce_alone = w
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client_id),
            ("refresh_token", &next),
        ])
        .await;
    assert_eq!(
        pkce_alone.body["error"], "invalid_client",
        "{}",
        pkce_alone.raw
    );
    let replayed = w
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &next),
            ("client_assertion_type", ASSERTION_TYPE),
            ("client_assertion", &signed),
        ])
        .await;
    assert_eq!(replayed.body["error"], "invalid_client", "{}", replayed.raw);
    assert!(replayed.raw.contains("jti"), "{}", replayed.raw);
    let revoked = w
        .form(
            "/oauth/revoke",
            &[],
            &encode_pairs(&[
                ("token", &next),
                ("client_assertion_type", ASSERTION_TYPE),
                (
                    "client_assertion",
                    &key.sign(
                        &header(&key),
                        &claims(&client_id, now_secs(&w), 300, "jti-3"),
                    ),
                ),
            ]),
        )
        .await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.raw);
    assert_eq!(site.fetches("jwks.json"), 1, "the keys are kept");
}

/// Every refusal the rules name, each at its limit and one past it: lifetime 600 s and
/// 601 s, a reused `jti`, a wrong `aud`, `alg: none`, HS256 signed with the RSA public key,
/// `iss` or `sub` not the client, a key the host rotated in (found after one fetch of its
/// keys) and an unknown one (no second fetch within the minute).
async fn every_bad_assertion_is_refused(backend: Backend) {
    let site = Site::start().await;
    let key = SigningKey::new("first");
    let w = world(backend).await;
    let client_id = signing_document(&site, &[&key]);
    let now = now_secs(&w);
    let try_with = |assertion: String| {
        let w = &w;
        async move {
            w.token(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", "hrt2.unknown.1.x"),
                ("client_assertion_type", ASSERTION_TYPE),
                ("client_assertion", &assertion),
            ])
            .await
        }
    };
    // Authenticated, the made-up refresh token is invalid_grant; refused, invalid_client.
    let authenticated = |reply: &Reply| reply.body["error"] == "invalid_grant";
    let at_limit = try_with(key.sign(&header(&key), &claims(&client_id, now, 600, "a"))).await;
    assert!(authenticated(&at_limit), "600 s: {}", at_limit.raw);
    let past = try_with(key.sign(&header(&key), &claims(&client_id, now, 601, "b"))).await;
    assert_eq!(past.body["error"], "invalid_client", "601 s: {}", past.raw);
    let reused = try_with(key.sign(&header(&key), &claims(&client_id, now, 600, "a"))).await;
    assert!(reused.raw.contains("jti"), "{}", reused.raw);

    let mut wrong_aud = claims(&client_id, now, 300, "c");
    wrong_aud["aud"] = json!("https://elsewhere.example/token");
    assert_eq!(
        try_with(key.sign(&header(&key), &wrong_aud)).await.body["error"],
        "invalid_client"
    );
    let mut issuer_aud = claims(&client_id, now, 300, "d");
    issuer_aud["aud"] = json!([ISSUER]);
    assert!(
        authenticated(&try_with(key.sign(&header(&key), &issuer_aud)).await),
        "the issuer as aud"
    );
    let mut other_iss = claims(&client_id, now, 300, "e");
    other_iss["iss"] = json!("https://elsewhere.example/client.json");
    assert_eq!(
        try_with(key.sign(&header(&key), &other_iss)).await.body["error"],
        "invalid_client"
    );
    let mut other_sub = claims(&client_id, now, 300, "f");
    other_sub["sub"] = json!("someone");
    assert_eq!(
        try_with(key.sign(&header(&key), &other_sub)).await.body["error"],
        "invalid_client"
    );
    let mut expired = claims(&client_id, now - 400, 300, "g");
    expired["exp"] = json!(now - 61);
    assert_eq!(
        try_with(key.sign(&header(&key), &expired)).await.body["error"],
        "invalid_client"
    );
    let mut no_exp = claims(&client_id, now, 300, "h");
    no_exp.as_object_mut().unwrap().remove("exp");
    assert_eq!(
        try_with(key.sign(&header(&key), &no_exp)).await.body["error"],
        "invalid_client"
    );

    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none", "typ": "JWT"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims(&client_id, now, 300, "i").to_string())
    );
    assert_eq!(
        try_with(unsigned).await.body["error"],
        "invalid_client",
        "alg none"
    );
    // The classic confusion: HS256 with the RSA public key as the HMAC secret.
    let public = key.pair.public_key();
    let confused = jsonwebtoken::encode(
        &jsonwebtoken::Header {
            kid: Some(key.kid.clone()),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256)
        },
        &claims(&client_id, now, 300, "j"),
        &jsonwebtoken::EncodingKey::from_secret(public.as_ref()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        try_with(confused).await.body["error"],
        "invalid_client",
        "HS256"
    );
    // The declared algorithm is RS256: PS256 with the same key is refused too.
    let pss = key.sign(
        &json!({"alg": "PS256", "typ": "JWT", "kid": key.kid}),
        &claims(&client_id, now, 300, "k"),
    );
    assert_eq!(
        try_with(pss).await.body["error"],
        "invalid_client",
        "PS256 against a declared RS256"
    );

    // The host rotates in a new key: past the minute since its keys were read, an unknown kid
    // fetches them once, and verifies.
    let rotated = SigningKey::new("second");
    signing_document(&site, &[&key, &rotated]);
    assert_eq!(site.fetches("jwks.json"), 1);
    w.advance_ms(hearth_core::clients::KEY_REFETCH_MS);
    let now = now_secs(&w);
    let with_new =
        try_with(rotated.sign(&header(&rotated), &claims(&client_id, now, 300, "l"))).await;
    assert!(authenticated(&with_new), "{}", with_new.raw);
    assert_eq!(site.fetches("jwks.json"), 2);
    // A kid nobody published: no second fetch within the minute, and refused.
    let stranger = SigningKey::new("third");
    let unknown =
        try_with(stranger.sign(&header(&stranger), &claims(&client_id, now, 300, "m"))).await;
    assert_eq!(unknown.body["error"], "invalid_client", "{}", unknown.raw);
    assert_eq!(
        site.fetches("jwks.json"),
        2,
        "at most one fetch a minute per client"
    );
    w.advance_ms(hearth_core::clients::KEY_REFETCH_MS);
    let later = try_with(stranger.sign(
        &header(&stranger),
        &claims(&client_id, now_secs(&w), 300, "n"),
    ))
    .await;
    assert_eq!(later.body["error"], "invalid_client");
    assert_eq!(
        site.fetches("jwks.json"),
        3,
        "a minute later, one more fetch"
    );
}

/// Keys whose host resolves to a private address are never fetched; an RSA key under 2048
/// bits never verifies anything. (Clients built directly, to give the host name an address.)
#[tokio::test]
async fn keys_on_a_private_address_or_too_short_are_refused() {
    use hearth_core::clients::metadata_document::{HostResolver, MetadataFetcher};
    struct Private;
    #[async_trait::async_trait]
    impl HostResolver for Private {
        async fn lookup(&self, _: &str) -> std::io::Result<Vec<std::net::IpAddr>> {
            Ok(vec!["10.0.0.7".parse().unwrap()])
        }
    }
    let config = settings(&[]);
    let (backing, _dir, _) =
        common::backing_with(&config, hearth_core::store::Stores::shared, None);
    let clients = Clients::new(backing.stores.clients.clone(), None, backing.clock.clone())
        .with_documents(
            MetadataFetcher::with_resolver(Arc::new(Private), false),
            backing.stores.grants.clone(),
        );
    let url = "https://app.example/client.json";
    let document = json!({
        "client_id": url,
        "client_name": "Private Keys",
        "redirect_uris": [HOST_REDIRECT],
        "token_endpoint_auth_method": "private_key_jwt",
        "jwks_uri": "https://app.example/jwks.json",
    });
    clients.import(url, &document.to_string()).await.unwrap();
    let key = SigningKey::new("k");
    let now = backing.clock.now().unix_timestamp();
    let assertion = key.sign(&header(&key), &claims(url, now, 300, "p"));
    let refused = clients
        .authenticate_assertion(None, &assertion, &[TOKEN_ENDPOINT])
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("not a public internet address"),
        "{refused}"
    );

    // A 1024-bit key inline: refused whatever it signs.
    let short = KeyPair::generate(KeySize::Rsa2048).unwrap();
    let mut jwk = SigningKey {
        pair: short,
        kid: "short".into(),
    }
    .jwk();
    let modulus = URL_SAFE_NO_PAD.decode(jwk["n"].as_str().unwrap()).unwrap();
    jwk["n"] = json!(URL_SAFE_NO_PAD.encode(&modulus[..128]));
    let inline = "https://inline.example/client.json";
    clients
        .import(
            inline,
            &json!({
                "client_id": inline,
                "redirect_uris": [HOST_REDIRECT],
                "token_endpoint_auth_method": "private_key_jwt",
                "jwks": {"keys": [jwk]},
            })
            .to_string(),
        )
        .await
        .unwrap();
    let short_signed = key.sign(
        &json!({"alg": "RS256", "kid": "short"}),
        &claims(inline, now, 300, "q"),
    );
    let refused = clients
        .authenticate_assertion(None, &short_signed, &[TOKEN_ENDPOINT])
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("2048"), "{refused}");
}
