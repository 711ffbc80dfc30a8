//! Account linking as Alexa+ drives it, on the SQLite store and on DynamoDB (moto): the
//! consent page turns a link code into an authorization code, the code becomes the
//! household's own tokens, refresh tokens rotate, and every refusal the issue lists is named.
//! A client-credentials token is Tier 1 only once linking is configured.

mod common;

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::oauth::{VERIFIER, challenge, encode, hidden_fields};
use common::{
    Backend, CLIENT_ID, CLIENT_SECRET, Harness, RESOURCE, Reply, basic, request, settings,
};
use hearth_core::accounts::GENERATION_CACHE_MS;
use hearth_core::admin::Admin;
use hearth_core::config::Config;
use hearth_core::linking::{
    AUTHORIZATION_CODE_LIFETIME_MS, LINK_CODE_LIFETIME_MS, REFRESH_GRACE_MS, REFRESH_IDLE_MS,
};
use hearth_core::oauth::{LINK_CODE_ATTEMPTS, MAX_STATE_BYTES};
use hearth_testkit::moto::Moto;
use http::StatusCode;
use serde_json::{Value, json};

const REDIRECT: &str = "https://alexa.example/api/skill/link/M2TEST";
const OTHER_REDIRECT: &str = "https://alexa.example/api/skill/link/OTHER";
const STATE: &str = "alexa-state-Zm9v";
const ISSUER: &str = "http://127.0.0.1:8790";

struct World {
    h: Harness,
    admin: Admin,
    /// The store's OAuth clients, as `hearth admin client` manages them.
    clients: hearth_core::clients::Clients,
}

fn config() -> Config {
    let redirects = format!("{REDIRECT},{OTHER_REDIRECT}");
    let vars = settings(&[("MCP_REDIRECT_URIS", redirects.as_str())]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    common::config(&vars)
}

async fn world(backend: Backend) -> World {
    world_over(backend, Moto::shared().dynamodb_client()).await
}

async fn world_over(backend: Backend, client: aws_sdk_dynamodb::Client) -> World {
    let config = config();
    let (h, admin, stores) =
        common::operated_with_stores(&config, backend, client, "hearth-linking").await;
    let clients = hearth_core::clients::Clients::new(stores.clients, None, h.clock.clone());
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

    async fn get(&self, uri: &str, headers: &[(&str, &str)]) -> Reply {
        request(&self.h.router, "GET", uri, headers, "").await
    }

    async fn form(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        request(&self.h.router, "POST", path, &all, body).await
    }

    /// Opens the consent page for `query` and returns the page, its cookie and its form.
    async fn consent(&self, query: &str) -> Consent {
        let page = self.get(&format!("/oauth/authorize?{query}"), &[]).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
        let cookie = page
            .header("set-cookie")
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let fields = hidden_fields(&page.raw);
        Consent {
            page,
            cookie,
            fields,
        }
    }

    /// Submits a consent form with `decision` and `link_code`.
    async fn submit(&self, consent: &Consent, decision: &str, link_code: Option<&str>) -> Reply {
        let mut fields = consent.fields.clone();
        fields.insert("decision".into(), decision.into());
        if let Some(code) = link_code {
            fields.insert("link_code".into(), code.into());
        }
        self.form(
            "/oauth/authorize",
            &[("cookie", &consent.cookie)],
            &encode(&fields),
        )
        .await
    }

    /// Links `household` through the consent page and returns the authorization code.
    async fn authorization_code(&self, household: &str) -> String {
        let code = self.link_code(household).await;
        let consent = self.consent(&authorize_query(&[])).await;
        let reply = self.submit(&consent, "allow", Some(&code)).await;
        assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.raw);
        let location = redirect_parameters(&reply);
        assert_eq!(location["state"], STATE);
        assert_eq!(location["iss"], ISSUER);
        location["code"].clone()
    }

    async fn token(&self, body: &str) -> Reply {
        let client = basic(CLIENT_ID, CLIENT_SECRET);
        self.form("/oauth/token", &[("authorization", &client)], body)
            .await
    }

    async fn exchange(&self, code: &str) -> Reply {
        self.token(&exchange_body(code, VERIFIER)).await
    }

    async fn refresh(&self, refresh_token: &str) -> Reply {
        self.token(&encode(&HashMap::from([
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), refresh_token.to_owned()),
        ])))
        .await
    }

    /// Links `household` and returns the token response.
    async fn link(&self, household: &str) -> Value {
        let code = self.authorization_code(household).await;
        let reply = self.exchange(&code).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        reply.body
    }

    async fn mcp(&self, bearer: &str, body: &Value) -> Reply {
        let authorization = format!("Bearer {bearer}");
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

    async fn call(&self, bearer: &str, tool: &str, arguments: Value) -> Reply {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        self.mcp(bearer, &body).await
    }
}

struct Consent {
    page: Reply,
    cookie: String,
    fields: HashMap<String, String>,
}

/// An authorization request as Alexa+ sends it, with `overrides` (an empty value removes a
/// parameter).
fn authorize_query(overrides: &[(&str, &str)]) -> String {
    let challenge = challenge(VERIFIER);
    let mut parameters: Vec<(&str, String)> = vec![
        ("response_type", "code".into()),
        ("client_id", CLIENT_ID.into()),
        ("redirect_uri", REDIRECT.into()),
        ("state", STATE.into()),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256".into()),
        ("resource", RESOURCE.into()),
        ("scope", "mcp:service".into()),
    ];
    for (name, value) in overrides {
        parameters.retain(|(n, _)| n != name);
        if !value.is_empty() {
            parameters.push((name, value.to_string()));
        }
    }
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in &parameters {
        query.append_pair(name, value);
    }
    query.finish()
}

fn exchange_body(code: &str, verifier: &str) -> String {
    encode(&HashMap::from([
        ("grant_type".to_owned(), "authorization_code".to_owned()),
        ("code".to_owned(), code.to_owned()),
        ("redirect_uri".to_owned(), REDIRECT.to_owned()),
        ("code_verifier".to_owned(), verifier.to_owned()),
        ("resource".to_owned(), RESOURCE.to_owned()),
    ]))
}

/// The query parameters of a redirect's `Location`, which must point at the redirect URI.
fn redirect_parameters(reply: &Reply) -> HashMap<String, String> {
    let location = url::Url::parse(reply.header("location")).expect("an absolute Location");
    let base = format!(
        "{}://{}{}",
        location.scheme(),
        location.host_str().unwrap(),
        location.path()
    );
    assert!(
        base == REDIRECT || base == OTHER_REDIRECT,
        "redirected to {base}"
    );
    location.query_pairs().into_owned().collect()
}

/// The query parameters of a redirect's `Location`, which must be `redirect_uri` exactly.
fn redirect_parameters_to(reply: &Reply, redirect_uri: &str) -> HashMap<String, String> {
    let mut location = url::Url::parse(reply.header("location")).expect("an absolute Location");
    let parameters = location.query_pairs().into_owned().collect();
    location.set_query(None);
    assert_eq!(location.as_str(), redirect_uri);
    parameters
}

fn is_error_page(reply: &Reply) -> bool {
    reply.header("location").is_empty()
        && reply.header("content-type").starts_with("text/html")
        && !reply.status.is_success()
}

async fn a_household_links_through_the_consent_page_and_uses_its_own_token(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("The Kitchen").await;
    let other = w.household("Next Door").await;
    let code = w.link_code(&household).await;
    let consent = w.consent(&authorize_query(&[])).await;
    // The page says what is granted, and is locked down. Its link code works without script;
    // the passkey's ceremony loads this origin's scripts and asks it for a challenge, and the
    // policy allows that and no more (no inline script, nothing from elsewhere).
    assert!(consent.page.raw.contains("Link your household to Hearth"));
    assert!(consent.page.raw.contains("propose purchases"));
    let scripts: Vec<&str> = consent.page.raw.split("<script src=\"").skip(1).collect();
    assert_eq!(scripts.len(), 2, "{}", consent.page.raw);
    assert!(scripts[0].starts_with("../passkeys/page.js\" defer></script>"));
    assert!(scripts[1].starts_with("consent.js\" defer></script>"));
    let csp = consent.page.header("content-security-policy");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(
        csp.contains("script-src 'self'; connect-src 'self';"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe"), "{csp}");
    assert!(
        csp.contains("form-action 'self' https://alexa.example"),
        "{csp}"
    );
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(consent.cookie.starts_with("hearth_consent="));
    assert!(
        consent
            .page
            .header("set-cookie")
            .contains("SameSite=Strict")
    );
    let reply = w
        .submit(&consent, "allow", Some(&code.to_lowercase()))
        .await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.raw);
    let location = redirect_parameters(&reply);
    assert_eq!(location["state"], STATE);
    let tokens = w.exchange(&location["code"]).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    assert_eq!(tokens.header("cache-control"), "no-store");
    assert_eq!(tokens.body["token_type"], "Bearer");
    assert_eq!(tokens.body["expires_in"], 3600);
    assert_eq!(tokens.body["scope"], "mcp:service");
    let access = tokens.body["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens.body["refresh_token"].as_str().unwrap().to_owned();
    assert!(refresh.starts_with("hrt3."));

    // The token is the household's: no household_id needed, another one is refused.
    let recorded = w
        .call(
            &access,
            "record_decision",
            json!({"action": "dimmed the lights", "reason": "movie night", "approver": "Sam"}),
        )
        .await;
    assert_eq!(recorded.status, StatusCode::OK, "{}", recorded.raw);
    assert_eq!(
        recorded.body["result"]["isError"], false,
        "{}",
        recorded.raw
    );
    let elsewhere = w
        .call(&access, "explain_why", json!({"household_id": other}))
        .await;
    assert_eq!(
        elsewhere.body["result"]["isError"], true,
        "{}",
        elsewhere.raw
    );
    let shown = w.admin.show(&household).await.unwrap();
    assert!(shown.linked, "an exchange counts as a token issued");

    // A refresh rotates: a new refresh token and a new access token, both working.
    let rotated = w.refresh(&refresh).await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.raw);
    let refresh_2 = rotated.body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(refresh_2, refresh);
    let access_2 = rotated.body["access_token"].as_str().unwrap().to_owned();
    let why = w
        .call(
            &access_2,
            "explain_why",
            json!({"action": "dimmed the lights"}),
        )
        .await;
    assert_eq!(why.body["result"]["isError"], false, "{}", why.raw);
    assert!(why.raw.contains("movie night"), "{}", why.raw);
    let next = w.refresh(&refresh_2).await;
    assert_eq!(next.status, StatusCode::OK, "{}", next.raw);
}

/// `offline_access`, which claude.ai and ChatGPT ask for before they use refresh tokens: it is
/// advertised, accepted at authorize and at the token endpoint, granted (the token response
/// says so) without a line of its own on the consent page, and a list naming nothing else
/// means the household's default scopes. Client credentials ignore it.
async fn offline_access_is_granted_and_opens_nothing_of_its_own(backend: Backend) {
    let w = world(backend).await;
    let metadata = w.get("/.well-known/oauth-authorization-server", &[]).await;
    assert!(
        metadata.body["scopes_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("offline_access")),
        "{}",
        metadata.raw
    );
    let household = w.household("Offline Home").await;
    let code = w.link_code(&household).await;
    let consent = w
        .consent(&authorize_query(&[("scope", "offline_access")]))
        .await;
    let permissions = |page: &str| {
        let start = page.find("<ul>").unwrap();
        page[start..start + page[start..].find("</ul>").unwrap()].to_owned()
    };
    let default = w.consent(&authorize_query(&[("scope", "")])).await;
    assert_eq!(
        permissions(&consent.page.raw),
        permissions(&default.page.raw),
        "offline_access adds no permission to the page"
    );
    let reply = w.submit(&consent, "allow", Some(&code)).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.raw);
    let tokens = w.exchange(&redirect_parameters(&reply)["code"]).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    assert_eq!(
        tokens.body["scope"], "mcp:service countersign:read offline_access",
        "the household's default, kept offline"
    );
    let refresh = tokens.body["refresh_token"].as_str().unwrap();
    let refreshed = w
        .token(&format!(
            "grant_type=refresh_token&refresh_token={refresh}&scope=countersign%3Aread+offline_access"
        ))
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    assert_eq!(refreshed.body["scope"], "countersign:read offline_access");

    let machine = w
        .token(&format!(
            "grant_type=client_credentials&resource={RESOURCE}&scope=offline_access"
        ))
        .await;
    assert_eq!(machine.status, StatusCode::OK, "{}", machine.raw);
    assert_eq!(machine.body["scope"], "mcp:service");
    assert!(machine.body.get("refresh_token").is_none());
}

async fn a_lost_refresh_response_may_be_retried_within_the_grace_window_and_not_after(
    backend: Backend,
) {
    let w = world(backend).await;
    let household = w.household("Retry House").await;
    let first = w.link(&household).await;
    let refresh = first["refresh_token"].as_str().unwrap().to_owned();
    let lost = w.refresh(&refresh).await;
    assert_eq!(lost.status, StatusCode::OK);
    let lost_token = lost.body["refresh_token"].as_str().unwrap().to_owned();
    // The response was lost; the client retries with the old token at the edge of the window.
    w.advance_ms(REFRESH_GRACE_MS);
    let retried = w.refresh(&refresh).await;
    assert_eq!(retried.status, StatusCode::OK, "{}", retried.raw);
    let kept = retried.body["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(
        w.refresh(&lost_token).await.body["error"],
        "invalid_grant",
        "the token whose response was lost stops working"
    );
    // That counted as reuse: the family is gone, the retried token with it.
    assert_eq!(w.refresh(&kept).await.body["error"], "invalid_grant");

    // One millisecond past the window, presenting a rotated token revokes the family.
    let second = w.link(&household).await;
    let refresh = second["refresh_token"].as_str().unwrap().to_owned();
    let access = second["access_token"].as_str().unwrap().to_owned();
    let rotated = w.refresh(&refresh).await;
    let current = rotated.body["refresh_token"].as_str().unwrap().to_owned();
    w.advance_ms(REFRESH_GRACE_MS + 1);
    let reused = w.refresh(&refresh).await;
    assert_eq!(reused.status, StatusCode::BAD_REQUEST);
    assert_eq!(reused.body["error"], "invalid_grant");
    assert!(
        reused.body["error_description"]
            .as_str()
            .unwrap()
            .contains("revoked")
    );
    assert_eq!(w.refresh(&current).await.body["error"], "invalid_grant");
    // Its access tokens stop too, within the generation cache's minute.
    w.advance_ms(GENERATION_CACHE_MS);
    let refused = w.call(&access, "explain_why", json!({})).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.raw);
}

async fn a_family_lives_90_idle_days_and_not_one_millisecond_more(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Idle House").await;
    let linked = w.link(&household).await;
    w.advance_ms(REFRESH_IDLE_MS - 1);
    let kept = w.refresh(linked["refresh_token"].as_str().unwrap()).await;
    assert_eq!(kept.status, StatusCode::OK, "{}", kept.raw);
    // Each refresh starts the idle time again.
    w.advance_ms(REFRESH_IDLE_MS);
    let expired = w
        .refresh(kept.body["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(expired.body["error"], "invalid_grant", "{}", expired.raw);
}

async fn a_replayed_code_is_refused_and_revokes_what_it_issued(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Replay House").await;
    let code = w.authorization_code(&household).await;
    let first = w.exchange(&code).await;
    assert_eq!(first.status, StatusCode::OK);
    let access = first.body["access_token"].as_str().unwrap().to_owned();
    let refresh = first.body["refresh_token"].as_str().unwrap().to_owned();
    let replay = w.exchange(&code).await;
    assert_eq!(replay.status, StatusCode::BAD_REQUEST);
    assert_eq!(replay.body["error"], "invalid_grant");
    assert_eq!(w.refresh(&refresh).await.body["error"], "invalid_grant");
    w.advance_ms(GENERATION_CACHE_MS);
    let refused = w.call(&access, "explain_why", json!({})).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
}

async fn unlinking_ends_every_family_and_unused_link_code(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Unlink House").await;
    let linked = w.link(&household).await;
    let unused = w.link_code(&household).await;
    w.admin.unlink(&household).await.unwrap();
    let refresh = linked["refresh_token"].as_str().unwrap();
    let refused = w.refresh(refresh).await;
    assert_eq!(refused.body["error"], "invalid_grant", "{}", refused.raw);
    let consent = w.consent(&authorize_query(&[])).await;
    let reply = w.submit(&consent, "allow", Some(&unused)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.raw);
    assert!(reply.raw.contains("not valid"));
    w.advance_ms(GENERATION_CACHE_MS);
    let access = linked["access_token"].as_str().unwrap();
    let call = w.call(access, "explain_why", json!({})).await;
    assert_eq!(call.status, StatusCode::UNAUTHORIZED);
    // Linking again works with a new code.
    w.link(&household).await;
}

async fn revocation_ends_a_family_and_answers_200_for_anything(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Revoke House").await;
    let linked = w.link(&household).await;
    let client = basic(CLIENT_ID, CLIENT_SECRET);
    let refresh = linked["refresh_token"].as_str().unwrap();
    let revoke = |token: &str| {
        let body = encode(&HashMap::from([("token".to_owned(), token.to_owned())]));
        let client = client.clone();
        let w = &w;
        async move {
            w.form("/oauth/revoke", &[("authorization", &client)], &body)
                .await
        }
    };
    assert_eq!(revoke("not-a-token").await.status, StatusCode::OK);
    assert_eq!(revoke(refresh).await.status, StatusCode::OK);
    assert_eq!(w.refresh(refresh).await.body["error"], "invalid_grant");
    // An access token revokes its family too.
    let linked = w.link(&household).await;
    let access = linked["access_token"].as_str().unwrap();
    assert_eq!(revoke(access).await.status, StatusCode::OK);
    let refresh = linked["refresh_token"].as_str().unwrap();
    assert_eq!(w.refresh(refresh).await.body["error"], "invalid_grant");
    // Revocation needs client authentication.
    let unauthenticated = w
        .form("/oauth/revoke", &[], &format!("token={refresh}"))
        .await;
    assert_eq!(unauthenticated.status, StatusCode::UNAUTHORIZED);
    assert_eq!(unauthenticated.body["error"], "invalid_client");
}

/// The family id is public: every access token names it in `fam`. A refresh token made up
/// around it (anyone with the client's credentials and one access token can write one) is a
/// plain `invalid_grant` and revokes nothing; only a genuine token presented again is reuse.
async fn a_refresh_token_made_up_around_a_known_family_revokes_nothing(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Forged House").await;
    let tokens = w.link(&household).await;
    let access = tokens["access_token"].as_str().unwrap();
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(access.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    let family = claims["fam"].as_str().unwrap();
    let random = URL_SAFE_NO_PAD.encode([7u8; 32]);
    for forged in [
        format!("hrt1.{family}.{random}"),
        format!("hrt2.{family}.1.{random}"),
        format!("hrt2.{family}.0.{random}"),
        format!("hrt3.{family}.{household}.1.{random}"),
    ] {
        let refused = w.refresh(&forged).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.raw);
        assert_eq!(refused.body["error"], "invalid_grant");
        let reason = refused.body["error_description"].as_str().unwrap();
        assert!(!reason.contains("revoked"), "{forged}: {reason}");
    }
    // The household stays linked: its own token still rotates...
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let rotated = w.refresh(&refresh).await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.raw);
    let next = rotated.body["refresh_token"].as_str().unwrap().to_owned();
    assert!(next.starts_with("hrt3."), "{next}");
    let again = w.refresh(&next).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.raw);
    // ...and a genuine token rotated away, presented after the grace window, is still reuse.
    w.advance_ms(REFRESH_GRACE_MS + 1);
    let reused = w.refresh(&next).await;
    assert_eq!(reused.body["error"], "invalid_grant");
    assert!(
        reused.body["error_description"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{}",
        reused.raw
    );
    let current = again.body["refresh_token"].as_str().unwrap();
    assert_eq!(w.refresh(current).await.body["error"], "invalid_grant");
}

/// Links `household` through the consent page for a stored client (`client_id`, its
/// `redirect_uri`), and exchanges the code with `authentication` (Basic, or the public
/// client's id in the body).
async fn link_stored(
    w: &World,
    household: &str,
    client_id: &str,
    redirect_uri: &str,
    authentication: &[(&str, &str)],
    public_id: Option<&str>,
) -> Reply {
    let code = w.link_code(household).await;
    let consent = w
        .consent(&authorize_query(&[
            ("client_id", client_id),
            ("redirect_uri", redirect_uri),
        ]))
        .await;
    let reply = w.submit(&consent, "allow", Some(&code)).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.raw);
    let code = redirect_parameters_to(&reply, redirect_uri)["code"].clone();
    let mut fields = HashMap::from([
        ("grant_type".to_owned(), "authorization_code".to_owned()),
        ("code".to_owned(), code),
        ("redirect_uri".to_owned(), redirect_uri.to_owned()),
        ("code_verifier".to_owned(), VERIFIER.to_owned()),
        ("resource".to_owned(), RESOURCE.to_owned()),
    ]);
    if let Some(id) = public_id {
        fields.insert("client_id".into(), id.into());
    }
    w.form("/oauth/token", authentication, &encode(&fields))
        .await
}

/// Clients an operator adds link households like the configured one: a confidential one
/// with its secret, a public one with PKCE alone and a loopback redirect on any port. Only
/// the confidential one may use client credentials, and then only for Tier 1. Deleting a
/// client stops its refresh tokens and its client-credentials tokens at once.
async fn clients_an_operator_adds_link_households_until_deleted(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Stored Clients").await;
    let desktop = w
        .clients
        .add(
            "Desktop App",
            &["http://127.0.0.1/callback".to_owned()],
            false,
        )
        .await
        .unwrap();
    let secret = desktop.client_secret.clone().unwrap();
    let basic_auth = basic(&desktop.client_id, &secret);
    // The consent page names the client and shows where it sends the person back to.
    let page = w
        .consent(&authorize_query(&[
            ("client_id", &desktop.client_id),
            ("redirect_uri", "http://127.0.0.1:53100/callback"),
        ]))
        .await
        .page;
    assert!(page.raw.contains("Desktop App"), "{}", page.raw);
    assert!(
        page.raw
            .contains("<strong><bdi>127.0.0.1:53100</bdi></strong>")
    );
    assert!(page.raw.contains("loopback address"));
    assert!(!page.raw.contains(r#"class="unverified""#));
    let tokens = link_stored(
        &w,
        &household,
        &desktop.client_id,
        "http://127.0.0.1:53100/callback",
        &[("authorization", &basic_auth)],
        None,
    )
    .await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.raw);
    let access = tokens.body["access_token"].as_str().unwrap();
    let recorded = w
        .call(
            access,
            "record_decision",
            json!({"action": "dim the lights", "reason": "movie", "inputs": {}, "approver": "Dana"}),
        )
        .await;
    assert_eq!(
        recorded.body["result"]["isError"], false,
        "{}",
        recorded.raw
    );

    // Client credentials: Tier 1 only.
    let service = w
        .form(
            "/oauth/token",
            &[("authorization", &basic_auth)],
            &format!("grant_type=client_credentials&resource={RESOURCE}"),
        )
        .await;
    assert_eq!(service.status, StatusCode::OK, "{}", service.raw);
    let service_token = service.body["access_token"].as_str().unwrap().to_owned();
    let listed = w
        .mcp(
            &service_token,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.raw);
    let household_tool = w
        .call(&service_token, "explain_why", json!({"question": "why?"}))
        .await;
    assert_eq!(
        household_tool.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        household_tool.raw
    );

    // A public client: PKCE is its proof; it presents no secret, and has no Tier 1.
    let phone = w
        .clients
        .add(
            "Phone App",
            &["https://app.example/callback".to_owned()],
            true,
        )
        .await
        .unwrap();
    assert!(phone.client_secret.is_none());
    let public_tokens = link_stored(
        &w,
        &household,
        &phone.client_id,
        "https://app.example/callback",
        &[],
        Some(&phone.client_id),
    )
    .await;
    assert_eq!(
        public_tokens.status,
        StatusCode::OK,
        "{}",
        public_tokens.raw
    );
    let refreshed = w
        .form(
            "/oauth/token",
            &[],
            &format!(
                "grant_type=refresh_token&client_id={}&refresh_token={}",
                phone.client_id,
                public_tokens.body["refresh_token"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.raw);
    let no_tier_one = w
        .form(
            "/oauth/token",
            &[],
            &format!(
                "grant_type=client_credentials&client_id={}&resource={RESOURCE}",
                phone.client_id
            ),
        )
        .await;
    assert_eq!(
        no_tier_one.body["error"], "unauthorized_client",
        "{}",
        no_tier_one.raw
    );
    let with_secret = w
        .form(
            "/oauth/token",
            &[(
                "authorization",
                &basic(&phone.client_id, "a made-up secret"),
            )],
            "grant_type=refresh_token&refresh_token=x",
        )
        .await;
    assert_eq!(with_secret.body["error"], "invalid_client");

    // Deleted: its refresh token and its client-credentials token stop at once.
    w.clients.delete(&desktop.client_id).await.unwrap();
    let gone = w
        .form(
            "/oauth/token",
            &[("authorization", &basic_auth)],
            &format!(
                "grant_type=refresh_token&refresh_token={}",
                tokens.body["refresh_token"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(gone.status, StatusCode::UNAUTHORIZED, "{}", gone.raw);
    assert_eq!(gone.body["error"], "invalid_client");
    let stale = w
        .mcp(
            &service_token,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert_eq!(stale.status, StatusCode::UNAUTHORIZED, "{}", stale.raw);
    // A client nobody knows is refused on the consent page, never redirected to.
    let unknown = w
        .get(
            &format!(
                "/oauth/authorize?{}",
                authorize_query(&[("client_id", &desktop.client_id)])
            ),
            &[],
        )
        .await;
    assert!(is_error_page(&unknown), "{}", unknown.raw);
}

on_both_stores!(
    offline_access_is_granted_and_opens_nothing_of_its_own,
    clients_an_operator_adds_link_households_until_deleted,
    a_refresh_token_made_up_around_a_known_family_revokes_nothing,
    a_household_links_through_the_consent_page_and_uses_its_own_token,
    a_lost_refresh_response_may_be_retried_within_the_grace_window_and_not_after,
    a_replayed_code_is_refused_and_revokes_what_it_issued,
    a_family_lives_90_idle_days_and_not_one_millisecond_more,
    unlinking_ends_every_family_and_unused_link_code,
    revocation_ends_a_family_and_answers_200_for_anything,
);

/// Every way an authorization request can be wrong: the ones that must not redirect, and the
/// ones that redirect with an error and the state.
#[tokio::test]
async fn every_authorization_refusal_is_a_page_or_a_redirect_as_rfc_6749_says() {
    let w = world(Backend::Sqlite).await;
    let pages: &[(&str, &[(&str, &str)])] = &[
        ("no client", &[("client_id", "")]),
        ("unregistered client", &[("client_id", "someone-else")]),
        ("no redirect", &[("redirect_uri", "")]),
        (
            "unregistered redirect",
            &[("redirect_uri", "https://evil.example/cb")],
        ),
        (
            "redirect differing in one character",
            &[(
                "redirect_uri",
                "https://alexa.example/api/skill/link/M2TESt",
            )],
        ),
    ];
    for (case, overrides) in pages {
        let reply = w
            .get(
                &format!("/oauth/authorize?{}", authorize_query(overrides)),
                &[],
            )
            .await;
        assert!(
            is_error_page(&reply),
            "{case}: {} {}",
            reply.status,
            reply.raw
        );
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{case}");
        assert!(!reply.raw.contains("evil.example"), "{case}");
    }
    // The query holds 4,096 bytes and not one more (a parameter the request does not know is
    // ignored, so it pads).
    let base = format!("{}&pad=", authorize_query(&[]));
    let at_limit = format!(
        "{base}{}",
        "p".repeat(hearth_core::oauth::MAX_FORM_BYTES - base.len())
    );
    let page = w.get(&format!("/oauth/authorize?{at_limit}"), &[]).await;
    assert_eq!(page.status, StatusCode::OK, "at the limit");
    let past = w.get(&format!("/oauth/authorize?{at_limit}p"), &[]).await;
    assert_eq!(past.status, StatusCode::URI_TOO_LONG, "one past it");
    assert!(is_error_page(&past));
    let repeated = w
        .get(
            &format!("/oauth/authorize?{}&client_id=x", authorize_query(&[])),
            &[],
        )
        .await;
    assert!(is_error_page(&repeated), "a repeated parameter");

    let long_state = "s".repeat(MAX_STATE_BYTES);
    let state_at_limit = w
        .get(
            &format!(
                "/oauth/authorize?{}",
                authorize_query(&[("state", &long_state)])
            ),
            &[],
        )
        .await;
    assert_eq!(state_at_limit.status, StatusCode::OK, "state at the limit");
    let plain = "plain".to_owned();
    let malformed = challenge(VERIFIER)[1..].to_owned();
    let too_long_state = "s".repeat(MAX_STATE_BYTES + 1);
    /// A case's name, its parameter overrides, and the error the redirect must carry.
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);
    let redirects: Vec<Case> = vec![
        (
            "no response_type",
            vec![("response_type", "")],
            "invalid_request",
        ),
        (
            "token response_type",
            vec![("response_type", "token")],
            "unsupported_response_type",
        ),
        (
            "no challenge",
            vec![("code_challenge", "")],
            "invalid_request",
        ),
        (
            "plain",
            vec![("code_challenge_method", plain.as_str())],
            "invalid_request",
        ),
        (
            "no method (plain by default)",
            vec![("code_challenge_method", "")],
            "invalid_request",
        ),
        (
            "malformed challenge",
            vec![("code_challenge", malformed.as_str())],
            "invalid_request",
        ),
        ("no resource", vec![("resource", "")], "invalid_target"),
        (
            "other resource",
            vec![("resource", "https://elsewhere.example/mcp")],
            "invalid_target",
        ),
        (
            "unknown scope",
            vec![("scope", "mcp:admin")],
            "invalid_scope",
        ),
        (
            "state one past the limit",
            vec![("state", too_long_state.as_str())],
            "invalid_request",
        ),
    ];
    for (case, overrides, error) in redirects {
        let reply = w
            .get(
                &format!("/oauth/authorize?{}", authorize_query(&overrides)),
                &[],
            )
            .await;
        assert_eq!(reply.status, StatusCode::SEE_OTHER, "{case}: {}", reply.raw);
        let location = redirect_parameters(&reply);
        assert_eq!(location["error"], error, "{case}");
        assert_eq!(location["iss"], ISSUER, "{case}");
        if case.starts_with("state") {
            assert!(!location.contains_key("state"), "{case}");
        } else {
            assert_eq!(location["state"], STATE, "{case}");
        }
    }
}

#[tokio::test]
async fn the_consent_form_holds_only_for_its_own_page_and_request() {
    let w = world(Backend::Sqlite).await;
    let household = w.household("Form House").await;
    let consent = w.consent(&authorize_query(&[])).await;
    let code = w.link_code(&household).await;

    // No cookie, another cookie, a changed parameter, a missing token: 403, no redirect.
    let mut fields = consent.fields.clone();
    fields.insert("decision".into(), "allow".into());
    fields.insert("link_code".into(), code.clone());
    let cases: Vec<(&str, String, HashMap<String, String>)> = vec![
        ("no cookie", String::new(), fields.clone()),
        (
            "another page's cookie",
            "hearth_consent=AAAAAAAAAAAAAAAAAAAAAA".into(),
            fields.clone(),
        ),
        ("a changed redirect", consent.cookie.clone(), {
            let mut changed = fields.clone();
            changed.insert("redirect_uri".into(), OTHER_REDIRECT.into());
            changed
        }),
        ("a widened scope", consent.cookie.clone(), {
            let mut changed = fields.clone();
            changed.insert("scope".into(), "mcp:service mcp:tools".into());
            changed
        }),
        ("no csrf field", consent.cookie.clone(), {
            let mut changed = fields.clone();
            changed.remove("csrf");
            changed
        }),
    ];
    for (case, cookie, fields) in cases {
        let headers: Vec<(&str, &str)> = if cookie.is_empty() {
            vec![]
        } else {
            vec![("cookie", cookie.as_str())]
        };
        let reply = w.form("/oauth/authorize", &headers, &encode(&fields)).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{case}: {}", reply.raw);
        assert!(is_error_page(&reply), "{case}");
    }
    // The code was not spent by any of them.
    let reply = w.submit(&consent, "allow", Some(&code)).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.raw);

    // A form older than 15 minutes is refused.
    let stale = w.consent(&authorize_query(&[])).await;
    w.advance_ms(15 * 60_000);
    let reply = w.submit(&stale, "deny", None).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);

    // Deny redirects with access_denied and the state.
    let fresh = w.consent(&authorize_query(&[])).await;
    let reply = w.submit(&fresh, "deny", None).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let location = redirect_parameters(&reply);
    assert_eq!(location["error"], "access_denied");
    assert_eq!(location["state"], STATE);
    assert!(!location.contains_key("code"));
}

#[tokio::test]
async fn link_codes_are_single_use_live_15_minutes_and_attempts_are_limited() {
    let w = world(Backend::Sqlite).await;
    let household = w.household("Code House").await;
    let code = w.link_code(&household).await;
    w.advance_ms(LINK_CODE_LIFETIME_MS - 1);
    let consent = w.consent(&authorize_query(&[])).await;
    let reply = w.submit(&consent, "allow", Some(&code)).await;
    assert_eq!(
        reply.status,
        StatusCode::SEE_OTHER,
        "live until its last millisecond"
    );
    let reused = w.submit(&consent, "allow", Some(&code)).await;
    assert_eq!(reused.status, StatusCode::BAD_REQUEST, "single use");
    let expired = w.link_code(&household).await;
    w.advance_ms(LINK_CODE_LIFETIME_MS);
    let consent = w.consent(&authorize_query(&[])).await;
    let reply = w.submit(&consent, "allow", Some(&expired)).await;
    assert_eq!(
        reply.status,
        StatusCode::BAD_REQUEST,
        "expired at 15 minutes"
    );
    assert!(reply.raw.contains("not valid"), "{}", reply.raw);
    assert!(!reply.raw.contains(&expired), "the code is not echoed");

    // A new window: 10 attempts, then 429 for the 11th, even with the right code.
    w.advance_ms(hearth_core::oauth::LINK_CODE_WINDOW_MS);
    let consent = w.consent(&authorize_query(&[])).await;
    for attempt in 1..LINK_CODE_ATTEMPTS {
        let reply = w.submit(&consent, "allow", Some("AAAA-AAAA-AAAA")).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "attempt {attempt}");
    }
    let good = w.link_code(&household).await;
    let tenth = w.submit(&consent, "allow", Some(&good)).await;
    assert_eq!(
        tenth.status,
        StatusCode::SEE_OTHER,
        "the 10th attempt counts"
    );
    let another = w.link_code(&household).await;
    let eleventh = w.submit(&consent, "allow", Some(&another)).await;
    assert_eq!(eleventh.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(!eleventh.header("retry-after").is_empty());
}

#[tokio::test]
async fn every_token_refusal_is_named() {
    let w = world(Backend::Sqlite).await;
    let household = w.household("Token House").await;
    let client = basic(CLIENT_ID, CLIENT_SECRET);

    // The wrong verifier, a missing one, another redirect, a missing or other resource: the
    // code survives each of them, and the right request then works.
    let code = w.authorization_code(&household).await;
    let other_verifier = "another-verifier-of-at-least-43-characters-9876543210";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "wrong verifier",
            exchange_body(&code, other_verifier),
            "invalid_grant",
        ),
        (
            "no verifier",
            exchange_body(&code, VERIFIER).replace(&format!("code_verifier={VERIFIER}"), ""),
            "invalid_request",
        ),
        (
            "another redirect",
            exchange_body(&code, VERIFIER).replace(
                &form_urlencoded::byte_serialize(REDIRECT.as_bytes()).collect::<String>(),
                &form_urlencoded::byte_serialize(OTHER_REDIRECT.as_bytes()).collect::<String>(),
            ),
            "invalid_grant",
        ),
        (
            "no resource",
            exchange_body(&code, VERIFIER).replace(
                &format!(
                    "resource={}",
                    form_urlencoded::byte_serialize(RESOURCE.as_bytes()).collect::<String>()
                ),
                "",
            ),
            "invalid_target",
        ),
        (
            "other resource",
            exchange_body(&code, VERIFIER).replace("8790", "8788"),
            "invalid_target",
        ),
        (
            "unknown code",
            exchange_body("not-a-code", VERIFIER),
            "invalid_grant",
        ),
        (
            "no code",
            "grant_type=authorization_code".to_owned(),
            "invalid_request",
        ),
    ];
    for (case, body, error) in cases {
        let reply = w.token(&body).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{case}: {}",
            reply.raw
        );
        assert_eq!(reply.body["error"], error, "{case}");
        assert!(!reply.raw.contains(&code), "{case}: the code is not echoed");
    }
    // The wrong client: its credentials do not authenticate.
    let wrong_client = w
        .form(
            "/oauth/token",
            &[("authorization", &basic("someone-else", CLIENT_SECRET))],
            &exchange_body(&code, VERIFIER),
        )
        .await;
    assert_eq!(wrong_client.status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong_client.body["error"], "invalid_client");
    // client_secret_post works as well as Basic.
    let posted = format!(
        "{}&client_id={CLIENT_ID}&client_secret={CLIENT_SECRET}",
        exchange_body(&code, VERIFIER)
    );
    let exchanged = w.form("/oauth/token", &[], &posted).await;
    assert_eq!(exchanged.status, StatusCode::OK, "{}", exchanged.raw);

    // A code is good for five minutes: at the limit it is not.
    let at_edge = w.authorization_code(&household).await;
    w.advance_ms(AUTHORIZATION_CODE_LIFETIME_MS - 1);
    assert_eq!(w.exchange(&at_edge).await.status, StatusCode::OK);
    let expired = w.authorization_code(&household).await;
    w.advance_ms(AUTHORIZATION_CODE_LIFETIME_MS);
    let reply = w.exchange(&expired).await;
    assert_eq!(reply.body["error"], "invalid_grant", "{}", reply.raw);

    // Refresh refusals: unknown, malformed, and a scope wider than the grant.
    let narrow_code = {
        let code = w.link_code(&household).await;
        let consent = w.consent(&authorize_query(&[("scope", "mcp:tools")])).await;
        let reply = w.submit(&consent, "allow", Some(&code)).await;
        redirect_parameters(&reply)["code"].clone()
    };
    let narrow = w.exchange(&narrow_code).await;
    assert_eq!(narrow.body["scope"], "mcp:tools");
    let refresh = narrow.body["refresh_token"].as_str().unwrap();
    let wider = w
        .form(
            "/oauth/token",
            &[("authorization", &client)],
            &format!("grant_type=refresh_token&refresh_token={refresh}&scope=mcp:service"),
        )
        .await;
    assert_eq!(wider.body["error"], "invalid_scope", "{}", wider.raw);
    let other_resource = w
        .form(
            "/oauth/token",
            &[("authorization", &client)],
            &format!(
                "grant_type=refresh_token&refresh_token={refresh}&resource=https://elsewhere.example/mcp"
            ),
        )
        .await;
    assert_eq!(other_resource.body["error"], "invalid_target");
    for bad in ["hrt1.nope", "anything"] {
        assert_eq!(w.refresh(bad).await.body["error"], "invalid_grant", "{bad}");
    }
    let with_resource = w
        .form(
            "/oauth/token",
            &[("authorization", &client)],
            &format!(
                "grant_type=refresh_token&refresh_token={refresh}&resource={}",
                form_urlencoded::byte_serialize(RESOURCE.as_bytes()).collect::<String>()
            ),
        )
        .await;
    assert_eq!(
        with_resource.status,
        StatusCode::OK,
        "{}",
        with_resource.raw
    );
}

#[tokio::test]
async fn a_tier_one_token_reaches_only_what_needs_no_household() {
    let w = world(Backend::Sqlite).await;
    let service = common::access_token(&w.h.router, None).await;
    let listed = w
        .mcp(
            &service,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert_eq!(listed.status, StatusCode::OK);
    let ping = w
        .mcp(
            &service,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        )
        .await;
    assert_eq!(ping.status, StatusCode::OK);
    let guide = w
        .call(
            &service,
            "ask_aion",
            json!({"question": "what is a hearth?"}),
        )
        .await;
    assert_eq!(guide.status, StatusCode::OK, "{}", guide.raw);
    let reference = w.call(&service, "scholia_catalog", json!({})).await;
    assert_eq!(reference.status, StatusCode::OK, "{}", reference.raw);
    assert_eq!(
        reference.body["result"]["isError"], false,
        "{}",
        reference.raw
    );
    for (tool, arguments) in [
        ("explain_why", json!({"household_id": "kitchen"})),
        (
            "record_decision",
            json!({"household_id": "kitchen", "action": "a", "reason": "b"}),
        ),
        ("propose_purchase", json!({"household_id": "kitchen"})),
    ] {
        let refused = w.call(&service, tool, arguments).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{tool}");
        assert_eq!(refused.body["id"], 7, "{tool}");
        assert_eq!(
            refused.body["error"]["data"]["reason"], "account_linking_required",
            "{tool}"
        );
        assert!(
            refused
                .header("www-authenticate")
                .contains("resource_metadata="),
            "{tool}"
        );
    }
    let read = w
        .mcp(
            &service,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                "params": {"uri": "hearth://x"}}),
        )
        .await;
    assert_eq!(read.status, StatusCode::UNAUTHORIZED);
    // Without linking configured, the same token keeps reaching every tool.
    let unlinked = common::harness(&[]);
    let service = common::access_token(&unlinked.router, None).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "explain_why", "arguments": {"household_id": "kitchen"}}});
    let authorization = format!("Bearer {service}");
    let reply = request(
        &unlinked.router,
        "POST",
        "/mcp",
        &[
            ("authorization", authorization.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &body.to_string(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
}

/// What each step of linking costs on DynamoDB, in SDK calls (each one round trip).
#[tokio::test]
async fn each_linking_step_costs_a_known_number_of_dynamodb_calls() {
    let (client, counter) = Moto::shared().counted_dynamodb_client();
    let w = world_over(Backend::Dynamo, client).await;
    let household = w.household("Counted House").await;
    let link_code = w.link_code(&household).await;
    counter.take();
    let consent = w.consent(&authorize_query(&[])).await;
    assert_eq!(counter.take(), 1, "the consent page: the rate limiter");
    let reply = w.submit(&consent, "allow", Some(&link_code)).await;
    let code = redirect_parameters(&reply)["code"].clone();
    assert_eq!(
        counter.take(),
        6,
        "the form: the rate limiter, the attempt counter, GetItem and DeleteItem of the link code, GetItem of the account, PutItem of the code"
    );
    let tokens = w.exchange(&code).await;
    assert_eq!(tokens.status, StatusCode::OK);
    assert_eq!(
        counter.take(),
        6,
        "the exchange: the rate limiter, GetItem and PutItem (claim) of the code, the account's read and write, PutItem of the family"
    );
    let refreshed = w
        .refresh(tokens.body["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(refreshed.status, StatusCode::OK);
    assert_eq!(
        counter.take(),
        4,
        "a refresh: the rate limiter, GetItem of the family and of the account, PutItem of the family"
    );
    let access = refreshed.body["access_token"].as_str().unwrap();
    assert_eq!(
        w.call(access, "explain_why", json!({"action": "anything"}))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        counter.take(),
        4,
        "the first call: the rate limiter's subject counter and address read, GetItem of the account (standing, then cached), Query"
    );
    assert_eq!(
        w.call(access, "explain_why", json!({"action": "anything"}))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        counter.take(),
        3,
        "every call within the minute: the rate limiter's subject counter and address read (sent together) and the Query, as with any token"
    );
}
