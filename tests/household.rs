//! The household's page, through its own routes, on the SQLite store and on DynamoDB (moto):
//! a member signs in with a passkey and no name typed, once per challenge, only to their own
//! household; a revoked, pending or unknown passkey is told what to do instead; a session
//! ends at sign-out, after 30 idle minutes, after 12 hours, and when its passkey is revoked,
//! the household unlinked or the member's role changed; a change needs the page's origin and
//! the session's CSRF token; and what the views show is the household's own, escaped.
//! The authenticator is the testkit's software passkey; `tests/browser/household.mjs` drives
//! the same page in Chromium.

mod common;
#[path = "household/signup.rs"]
mod signup;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{Backend, Harness, Reply, request};
use hearth_core::accounts::Standing;
use hearth_core::admin::Admin;
use hearth_core::auth::Caller;
use hearth_core::countersign::household::built_in_policy;
use hearth_core::household::SEARCH_MAX;
use hearth_core::household::sessions::{SESSION_IDLE_MS, SESSION_MAX_MS};
use hearth_core::passkeys::Passkeys;
use hearth_core::store::{GrantKind, Stores};
use hearth_core::why::WhyService;
use hearth_core::why::record::NewDecision;
use hearth_testkit::moto::Moto;
use hearth_testkit::passkey::SoftPasskey;
use http::StatusCode;
use serde_json::{Map, Value, json};

const ORIGIN: &str = "http://localhost:8790";
const RP_ID: &str = "localhost";
const COOKIE: &str = "hearth_session";

struct World {
    h: Harness,
    admin: Admin,
    passkeys: Passkeys,
    stores: Stores,
}

async fn world(backend: Backend) -> World {
    world_with(backend, &[]).await
}

/// A world whose server also has `settings`.
async fn world_with(backend: Backend, settings: &[(&str, &str)]) -> World {
    // Account linking is configured, so the consent page offers a guardian's passkey too.
    let mut all = vec![("MCP_REDIRECT_URIS", LINK_REDIRECTS)];
    all.extend_from_slice(settings);
    let config = common::config_with(&all);
    let (h, admin, stores) = common::operated_with_stores(
        &config,
        backend,
        Moto::shared().dynamodb_client(),
        "hearth-household",
    )
    .await;
    let accounts = Arc::new(hearth_core::accounts::Accounts::new(
        stores.accounts.clone(),
        h.clock.clone(),
    ));
    let passkeys = hearth_core::app::passkeys(
        &config,
        accounts,
        stores.grants.clone(),
        &hearth_core::app::household_data(&config).unwrap(),
    )
    .unwrap();
    World {
        h,
        admin,
        passkeys,
        stores,
    }
}

/// The demo household's policy (dana and chris are guardians, mia and leo children).
fn policy() -> Value {
    let mut policy = built_in_policy();
    let fields = policy.as_object_mut().unwrap();
    fields.remove("household_id");
    fields.remove("name");
    policy
}

/// A signed-in browser: its cookie and the page's CSRF token.
struct Browser {
    cookie: String,
    csrf: String,
}

impl World {
    async fn household(&self, name: &str) -> String {
        self.admin
            .create(name, Some(policy()))
            .await
            .unwrap()
            .household_id
    }

    async fn post(&self, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        request(&self.h.router, "POST", path, &all, &body.to_string()).await
    }

    /// Enrols a new passkey for `member` through an invite.
    async fn enrolled(&self, household: &str, member: &str) -> (SoftPasskey, Reply) {
        let mut passkey = SoftPasskey::es256(ORIGIN, RP_ID);
        let reply = self.enrol(household, member, &mut passkey).await;
        (passkey, reply)
    }

    async fn enrol(&self, household: &str, member: &str, passkey: &mut SoftPasskey) -> Reply {
        let url = self.passkeys.invite(household, member).await.unwrap().url;
        let page = url.strip_prefix(ORIGIN).unwrap().to_owned();
        let origin = [("origin", ORIGIN)];
        let options = self
            .post(&format!("{page}/options"), &origin, &json!({}))
            .await;
        assert_eq!(options.status, StatusCode::OK, "{}", options.raw);
        let credential = passkey.register(&options.body);
        self.post(&page, &origin, &json!({"credential": credential}))
            .await
    }

    /// What `passkey` answers a fresh sign-in challenge with.
    async fn assertion(&self, passkey: &mut SoftPasskey) -> Value {
        let options = self
            .post(
                "/household/sign-in/options",
                &[("origin", ORIGIN)],
                &json!({}),
            )
            .await;
        assert_eq!(options.status, StatusCode::OK, "{}", options.raw);
        assert_eq!(options.body["userVerification"], "required");
        assert_eq!(
            options.body["allowCredentials"],
            json!([]),
            "no passkey is named"
        );
        passkey.sign(options.body["challenge"].as_str().unwrap())
    }

    async fn sign_in_with(&self, credential: &Value) -> Reply {
        self.post(
            "/household/sign-in",
            &[("origin", ORIGIN)],
            &json!({"credential": credential}),
        )
        .await
    }

    /// Signs in with `passkey`, and reads the page's CSRF token.
    async fn signed_in(&self, passkey: &mut SoftPasskey) -> Browser {
        let credential = self.assertion(passkey).await;
        let reply = self.sign_in_with(&credential).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        let cookie = session_cookie(&reply);
        let page = self.page(&cookie, "").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
        let csrf = page
            .raw
            .split(r#"<meta name="hearth-csrf" content=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a signed-in page names its CSRF token")
            .to_owned();
        Browser { cookie, csrf }
    }

    async fn page(&self, cookie: &str, query: &str) -> Reply {
        let header = format!("{COOKIE}={cookie}");
        request(
            &self.h.router,
            "GET",
            &format!("/household{query}"),
            &[("cookie", &header)],
            "",
        )
        .await
    }

    async fn sign_out(&self, browser: &Browser, origin: &str, csrf: &str) -> Reply {
        let cookie = format!("{COOKIE}={}", browser.cookie);
        self.post(
            "/household/sign-out",
            &[
                ("origin", origin),
                ("cookie", &cookie),
                ("x-hearth-csrf", csrf),
            ],
            &json!({}),
        )
        .await
    }

    fn advance_ms(&self, ms: i64) {
        self.h.clock.advance(time::Duration::milliseconds(ms));
    }
}

/// The session cookie a sign-in set, after checking its attributes.
fn session_cookie(reply: &Reply) -> String {
    let set = reply.header("set-cookie");
    assert!(set.starts_with(&format!("{COOKIE}=")), "{set}");
    for attribute in ["Path=/", "HttpOnly", "SameSite=Strict"] {
        assert!(set.contains(attribute), "{attribute} missing: {set}");
    }
    // Loopback http: a Secure cookie would never be sent back.
    assert!(!set.contains("Secure"), "{set}");
    set[COOKIE.len() + 1..]
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

/// Whether `reply` is the signed-out page.
fn signed_out(reply: &Reply) -> bool {
    reply.raw.contains("Sign in with a passkey") && !reply.raw.contains("hearth-csrf")
}

async fn a_member_signs_in_with_a_passkey_and_no_name(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("The Parks").await;
    let (mut dana, enrolled) = w.enrolled(&household, "dana").await;
    assert_eq!(enrolled.status, StatusCode::CREATED, "{}", enrolled.raw);

    let first = request(&w.h.router, "GET", "/household", &[], "").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(signed_out(&first), "{}", first.raw);

    let browser = w.signed_in(&mut dana).await;
    let today = w.page(&browser.cookie, "").await;
    assert!(today.raw.contains("The Parks"), "{}", today.raw);
    assert!(
        today.raw.contains("signed in as Dana (guardian)"),
        "{}",
        today.raw
    );
    assert!(today.raw.contains("Sign out"));
    assert_eq!(today.header("cache-control"), "no-store");
    assert!(
        today
            .header("content-security-policy")
            .contains("script-src 'self'")
    );
    // The passkey's use is recorded as for any signature.
    let listed = w.passkeys.list(&household).await.unwrap();
    assert!(listed[0].last_used_at.is_some(), "{listed:?}");
}

async fn a_challenge_signs_in_once(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Once").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let credential = w.assertion(&mut dana).await;
    assert_eq!(w.sign_in_with(&credential).await.status, StatusCode::OK);
    let again = w.sign_in_with(&credential).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{}", again.raw);
    assert_eq!(again.body["error"], "expired_challenge");
    assert!(
        again.body["message"]
            .as_str()
            .unwrap()
            .contains("Press Sign in")
    );

    // A challenge the server never gave.
    let forged = dana.sign("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(
        w.sign_in_with(&forged).await.status,
        StatusCode::BAD_REQUEST
    );

    // A challenge's five minutes, at the edge and one past.
    let in_time = w.assertion(&mut dana).await;
    w.advance_ms(5 * 60 * 1000 - 1);
    assert_eq!(w.sign_in_with(&in_time).await.status, StatusCode::OK);
    let late = w.assertion(&mut dana).await;
    w.advance_ms(5 * 60 * 1000);
    assert_eq!(w.sign_in_with(&late).await.status, StatusCode::BAD_REQUEST);

    // From another origin, nothing is asked.
    let foreign = w
        .post(
            "/household/sign-in/options",
            &[("origin", "https://evil.example")],
            &json!({}),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{}", foreign.raw);
}

async fn a_passkey_signs_in_only_to_its_own_household(backend: Backend) {
    let w = world(backend).await;
    let ours = w.household("Ours").await;
    let theirs = w.household("Theirs").await;
    let (mut dana, _) = w.enrolled(&ours, "dana").await;
    let (mut neighbour, _) = w.enrolled(&theirs, "dana").await;
    let page = w.page(&w.signed_in(&mut neighbour).await.cookie, "").await;
    assert!(page.raw.contains("<strong>Theirs</strong>"), "{}", page.raw);
    let page = w.page(&w.signed_in(&mut dana).await.cookie, "").await;
    assert!(page.raw.contains("<strong>Ours</strong>"), "{}", page.raw);

    // A credential id already ours cannot be enrolled in another household (which would
    // point sign-in at the other household and lock Dana out).
    let mut copy = dana.duplicate();
    let refused = w.enrol(&theirs, "chris", &mut copy).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.raw);
    assert!(
        refused.body["message"]
            .as_str()
            .unwrap()
            .contains("already enrolled")
    );
    let page = w.page(&w.signed_in(&mut dana).await.cookie, "").await;
    assert!(page.raw.contains("<strong>Ours</strong>"), "{}", page.raw);
}

async fn a_deleted_households_passkeys_sign_in_nowhere(backend: Backend) {
    let w = world(backend).await;
    let gone = w.household("Gone").await;
    let (mut dana, _) = w.enrolled(&gone, "dana").await;
    let browser = w.signed_in(&mut dana).await;
    w.admin.delete(&gone).await.unwrap();
    assert!(
        signed_out(&w.page(&browser.cookie, "").await),
        "its sessions end"
    );
    let credential = w.assertion(&mut dana).await;
    assert_eq!(
        w.sign_in_with(&credential).await.body["error"],
        "unknown_passkey"
    );
    // Its credential id is free again.
    let next = w.household("Next").await;
    let moved = w.enrol(&next, "dana", &mut dana.duplicate()).await;
    assert_eq!(moved.status, StatusCode::CREATED, "{}", moved.raw);
}

async fn a_passkey_enrolled_before_the_index_signs_in_once_indexed(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Older").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    // As a passkey enrolled before the sign-in index: no owner entry.
    let now = hearth_core::clock::unix_ms(hearth_core::clock::Clock::now(&*w.h.clock));
    let entry = w
        .stores
        .grants
        .grant(GrantKind::PasskeyOwner, &dana.id(), now)
        .await
        .unwrap()
        .expect("enrolment wrote the owner entry");
    assert!(
        w.stores
            .grants
            .delete_grant(GrantKind::PasskeyOwner, &dana.id(), entry.revision, now)
            .await
            .unwrap()
    );
    let credential = w.assertion(&mut dana).await;
    assert_eq!(
        w.sign_in_with(&credential).await.body["error"],
        "unknown_passkey"
    );
    // `hearth admin passkey index` writes the entries its household lacks, once.
    let indexed = w.passkeys.index(&household).await.unwrap();
    assert_eq!((indexed.added, indexed.held_elsewhere), (1, 0));
    assert_eq!(w.passkeys.index(&household).await.unwrap().added, 0);
    let credential = w.assertion(&mut dana).await;
    assert_eq!(w.sign_in_with(&credential).await.status, StatusCode::OK);
    // So does `hearth admin passkey list`, for the household it lists.
    let entry = w
        .stores
        .grants
        .grant(GrantKind::PasskeyOwner, &dana.id(), now)
        .await
        .unwrap()
        .unwrap();
    w.stores
        .grants
        .delete_grant(GrantKind::PasskeyOwner, &dana.id(), entry.revision, now)
        .await
        .unwrap();
    w.passkeys.list(&household).await.unwrap();
    let credential = w.assertion(&mut dana).await;
    assert_eq!(w.sign_in_with(&credential).await.status, StatusCode::OK);
}

async fn revoked_pending_and_unknown_passkeys_are_told_what_to_do(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Told").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let (mut mia, waits) = w.enrolled(&household, "mia").await;
    assert_eq!(waits.body["status"], "pending", "{}", waits.raw);

    let cases = [
        (&mut mia, "pending_passkey", "Ask a guardian to approve it"),
        (
            &mut SoftPasskey::es256(ORIGIN, RP_ID),
            "unknown_passkey",
            "ask a guardian for a new invite",
        ),
    ];
    for (passkey, code, next) in cases {
        let credential = w.assertion(passkey).await;
        let reply = w.sign_in_with(&credential).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.raw);
        assert_eq!(reply.body["error"], code);
        assert!(
            reply.body["message"].as_str().unwrap().contains(next),
            "{}",
            reply.raw
        );
        assert!(reply.header("set-cookie").is_empty());
    }
    w.passkeys.revoke(&household, &dana.id()).await.unwrap();
    let credential = w.assertion(&mut dana).await;
    let reply = w.sign_in_with(&credential).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.raw);
    assert_eq!(reply.body["error"], "revoked_passkey");
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("new invite")
    );
}

async fn a_session_ends_at_sign_out_and_after_its_time(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Time").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;

    // Sign out deletes it on the server: the old cookie opens nothing.
    let browser = w.signed_in(&mut dana).await;
    let out = w.sign_out(&browser, ORIGIN, &browser.csrf).await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.raw);
    assert!(out.header("set-cookie").contains("Max-Age=0"));
    let after = w.page(&browser.cookie, "").await;
    assert!(
        signed_out(&after) && after.raw.contains("session ended"),
        "{}",
        after.raw
    );

    // Thirty idle minutes: at the edge it stands (and moves on), one past it ends.
    let browser = w.signed_in(&mut dana).await;
    w.advance_ms(SESSION_IDLE_MS - 1);
    assert!(!signed_out(&w.page(&browser.cookie, "").await));
    w.advance_ms(SESSION_IDLE_MS - 1);
    assert!(
        !signed_out(&w.page(&browser.cookie, "").await),
        "each request moves it on"
    );
    w.advance_ms(SESSION_IDLE_MS);
    assert!(signed_out(&w.page(&browser.cookie, "").await));

    // Twelve hours, however busy.
    let browser = w.signed_in(&mut dana).await;
    let mut elapsed = 0;
    while elapsed + 20 * 60 * 1000 < SESSION_MAX_MS {
        w.advance_ms(20 * 60 * 1000);
        elapsed += 20 * 60 * 1000;
        assert!(
            !signed_out(&w.page(&browser.cookie, "").await),
            "at {elapsed} ms"
        );
    }
    w.advance_ms(SESSION_MAX_MS - 1 - elapsed);
    assert!(
        !signed_out(&w.page(&browser.cookie, "").await),
        "just before 12 hours"
    );
    w.advance_ms(1);
    assert!(
        signed_out(&w.page(&browser.cookie, "").await),
        "at 12 hours"
    );

    // A cookie that was never a session.
    assert!(signed_out(&w.page(&"x".repeat(43), "").await));
    assert!(signed_out(&w.page("not even close", "").await));
}

async fn revoking_unlinking_or_a_new_role_ends_a_session(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Ends").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;

    let browser = w.signed_in(&mut dana).await;
    w.admin.unlink(&household).await.unwrap();
    assert!(
        signed_out(&w.page(&browser.cookie, "").await),
        "after an unlink"
    );

    let browser = w.signed_in(&mut dana).await;
    let mut changed = policy();
    for member in changed["members"].as_array_mut().unwrap() {
        if member["id"] == "dana" {
            member["role"] = json!("older_relative");
        }
    }
    w.admin.set_policy(&household, &changed).await.unwrap();
    assert!(
        signed_out(&w.page(&browser.cookie, "").await),
        "after a new role"
    );

    let browser = w.signed_in(&mut dana).await;
    w.passkeys.revoke(&household, &dana.id()).await.unwrap();
    assert!(
        signed_out(&w.page(&browser.cookie, "").await),
        "after a revocation"
    );
}

async fn a_change_needs_the_pages_origin_and_the_sessions_csrf_token(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Csrf").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let browser = w.signed_in(&mut dana).await;
    let other = w.signed_in(&mut dana).await;

    let refused = w
        .sign_out(&browser, "https://evil.example", &browser.csrf)
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    let refused = w.sign_out(&browser, ORIGIN, "").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    // Another session's token is not this one's.
    let refused = w.sign_out(&browser, ORIGIN, &other.csrf).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    assert!(
        !signed_out(&w.page(&browser.cookie, "").await),
        "nothing changed"
    );
    // Two sign-ins are two sessions, each with its own id.
    assert_ne!(browser.cookie, other.cookie);
    assert_ne!(browser.csrf, other.csrf);
    assert_eq!(
        w.sign_out(&browser, ORIGIN, &browser.csrf).await.status,
        StatusCode::OK
    );
    assert!(
        !signed_out(&w.page(&other.cookie, "").await),
        "the other session stands"
    );
}

async fn the_views_show_the_households_records_escaped(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Views").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let why = WhyService::new(w.stores.chains.clone(), w.h.clock.clone());
    let caller = Caller::of_household(&household, Standing::Current);
    for (action, reason) in [
        (
            "heating.lower",
            "Nobody home until <script>alert(1)</script> six",
        ),
        ("lights.off", "Everyone said good night"),
    ] {
        why.record(
            &caller,
            NewDecision {
                household_id: &household,
                action,
                reason,
                inputs: &Map::new(),
                approver: "dana",
            },
        )
        .await
        .unwrap();
    }
    let browser = w.signed_in(&mut dana).await;
    let today = w.page(&browser.cookie, "").await;
    assert!(today.raw.contains("lights.off") && today.raw.contains("heating.lower"));
    assert!(
        today.raw.contains("Nothing waits for a decision."),
        "{}",
        today.raw
    );
    assert!(
        today.raw.contains("$0.00 spent of this week"),
        "{}",
        today.raw
    );

    let found = w.page(&browser.cookie, "?view=why&q=HOME+nobody").await;
    assert_eq!(found.status, StatusCode::OK);
    assert!(found.raw.contains("heating.lower") && !found.raw.contains("lights.off"));
    assert!(found.raw.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!found.raw.contains("<script>alert"));
    assert!(found.raw.contains("the assistant's words"));

    let longest = "a".repeat(SEARCH_MAX);
    let at_limit = w
        .page(&browser.cookie, &format!("?view=why&q={longest}"))
        .await;
    assert_eq!(at_limit.status, StatusCode::OK);
    let past = w
        .page(&browser.cookie, &format!("?view=why&q={longest}a"))
        .await;
    assert_eq!(past.status, StatusCode::BAD_REQUEST);
    assert!(past.raw.contains("Use fewer words"));

    for (view, shows) in [
        ("orders", "Nothing was ordered yet."),
        ("waiting", "Nothing waits for a decision."),
        ("members", "Dana"),
        ("devices", "No device keys"),
        ("assistants", "No assistant is linked"),
        ("rules", "Weekly budget"),
    ] {
        let page = w.page(&browser.cookie, &format!("?view={view}")).await;
        assert_eq!(page.status, StatusCode::OK, "{view}: {}", page.raw);
        assert!(page.raw.contains(shows), "{view}: {}", page.raw);
        assert!(page.raw.contains(r#"aria-current="page""#), "{view}");
    }
    let unknown = w.page(&browser.cookie, "?view=nowhere").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
}

/// AA batteries proposed through a host that signs nothing: the order waits for a passkey.
async fn batteries_waiting(w: &World, household: &str) -> Value {
    let token = w.admin.token(household, 30).await.unwrap().access_token;
    call(
        w,
        &token,
        "propose_purchase",
        json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}),
    )
    .await
}

/// A tool called with the household's token and no device (a host that signs nothing).
async fn call(w: &World, token: &str, tool: &str, arguments: Value) -> Value {
    let bearer = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let reply = request(
        &w.h.router,
        "POST",
        "/mcp",
        &[
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &body.to_string(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    assert_ne!(reply.body["result"]["isError"], true, "{}", reply.raw);
    reply.body["result"]["structuredContent"].clone()
}

/// Records a decision with a household's `token` (no device): the household it was kept for.
async fn record(w: &World, token: &str, action: &str, approver: &str) -> String {
    let recorded = call(
        w,
        token,
        "record_decision",
        json!({"action": action, "reason": "because", "approver": approver, "inputs": {}}),
    )
    .await;
    recorded["household_id"].as_str().unwrap().to_owned()
}

impl World {
    /// A signed-in member's POST to a decision route.
    async fn decide(&self, browser: &Browser, path: &str, body: &Value) -> Reply {
        let cookie = format!("{COOKIE}={}", browser.cookie);
        self.post(
            path,
            &[
                ("origin", ORIGIN),
                ("cookie", &cookie),
                ("x-hearth-csrf", &browser.csrf),
            ],
            body,
        )
        .await
    }
}

async fn a_waiting_order_is_approved_on_the_page_with_the_approval_statement(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Approving").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let order = batteries_waiting(&w, &household).await;
    assert_eq!(order["status"], "waiting_for_approval", "{order}");
    let request_id = order["request_id"].as_str().unwrap();
    let browser = w.signed_in(&mut dana).await;
    let waiting = w.page(&browser.cookie, "?view=waiting").await;
    assert!(
        waiting.raw.contains(r#"data-decide="approve""#),
        "{}",
        waiting.raw
    );
    assert!(waiting.raw.contains("PowerCell AA Alkaline Batteries"));
    let path = format!("/household/decide/{request_id}");

    // Without the session's CSRF token, nothing is asked.
    let cookie = format!("{COOKIE}={}", browser.cookie);
    let refused = w
        .post(
            &format!("{path}/challenge"),
            &[("origin", ORIGIN), ("cookie", &cookie)],
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);

    let asked = w
        .decide(
            &browser,
            &format!("{path}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.raw);
    let statement = asked.body["statement"].as_str().unwrap().to_owned();
    let lines: Vec<&str> = statement.lines().collect();
    assert_eq!(lines[0], "hearth-approval/v1");
    assert_eq!(lines[1], household);
    assert_eq!(lines[2], request_id);
    assert_eq!(lines[4], "approve");
    assert_eq!(
        asked.body["options"]["allowCredentials"][0]["id"],
        dana.id(),
        "only the signed-in member's passkeys"
    );
    let body = json!({
        "decision": "approve",
        "statement": statement,
        "credential": dana.sign_request(&asked.body),
    });
    let decided = w.decide(&browser, &path, &body).await;
    assert_eq!(decided.status, StatusCode::OK, "{}", decided.raw);
    assert_eq!(decided.body["status"], "placed", "{}", decided.raw);
    // Replayed, it decides nothing more.
    let again = w.decide(&browser, &path, &body).await;
    assert_eq!(again.status, StatusCode::GONE, "{}", again.raw);

    let orders = w.page(&browser.cookie, "?view=orders").await;
    assert!(orders.raw.contains("placed"), "{}", orders.raw);
    assert!(orders.raw.contains("Receipt: entry"), "{}", orders.raw);
    assert!(
        orders.raw.contains(&format!("<pre>{statement}</pre>")),
        "the statement, verbatim: {}",
        orders.raw
    );
    let ledger = w.admin.export_ledger(&household).await.unwrap().entries;
    let kept = ledger
        .iter()
        .find(|entry| entry["kind"] == "passkey_decision")
        .expect("the decision is in the ledger");
    assert_eq!(kept["approval"]["statement"], statement.as_str());
}

async fn another_members_passkey_cannot_decide_in_a_session(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Others").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let order = batteries_waiting(&w, &household).await;
    let request_id = order["request_id"].as_str().unwrap();
    let path = format!("/household/decide/{request_id}");
    // Chris, a guardian too, has a passkey (approved by Dana's).
    let (mut chris, pending) = w.enrolled(&household, "chris").await;
    assert_eq!(pending.body["status"], "pending");
    let page = w
        .passkeys
        .confirmation_link(&household, &chris.id())
        .await
        .unwrap();
    let page = page.strip_prefix(ORIGIN).unwrap();
    let asked = w
        .post(
            &format!("{page}/challenge"),
            &[("origin", ORIGIN)],
            &json!({"decision": "approve"}),
        )
        .await;
    let confirm =
        json!({"statement": asked.body["statement"], "credential": dana.sign_request(&asked.body)});
    assert_eq!(
        w.post(page, &[("origin", ORIGIN)], &confirm).await.status,
        StatusCode::OK
    );

    let browser = w.signed_in(&mut dana).await;
    let asked = w
        .decide(
            &browser,
            &format!("{path}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.raw);
    let body = json!({
        "decision": "approve",
        "statement": asked.body["statement"],
        "credential": chris.sign_request(&asked.body),
    });
    let refused = w.decide(&browser, &path, &body).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    let ledger = w.admin.export_ledger(&household).await.unwrap().entries;
    assert!(
        ledger
            .iter()
            .all(|entry| entry["kind"] != "passkey_decision")
    );
}

impl World {
    /// A guardian's action through the page: the statement asked for, then signed by
    /// `signer`. The statement and the answer.
    async fn act(
        &self,
        browser: &Browser,
        signer: &mut SoftPasskey,
        action: &str,
        target: &str,
    ) -> (String, Reply) {
        let asked = self
            .decide(
                browser,
                "/household/act/challenge",
                &json!({"action": action, "target": target}),
            )
            .await;
        if asked.status != StatusCode::OK {
            return (String::new(), asked);
        }
        let statement = asked.body["statement"].as_str().unwrap().to_owned();
        let body = json!({"statement": statement, "credential": signer.sign_request(&asked.body)});
        let reply = self.decide(browser, "/household/act", &body).await;
        (statement, reply)
    }

    /// Whether scripts/verify_approvals.py accepts the household's ledger and passkeys.
    async fn verified_offline(&self, household: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let export = dir.path().join("export.json");
        let listed = dir.path().join("passkeys.json");
        let entries = self.admin.export_ledger(household).await.unwrap().entries;
        std::fs::write(&export, json!({"entries": entries}).to_string()).unwrap();
        let passkeys = self.passkeys.list(household).await.unwrap();
        std::fs::write(&listed, json!({"passkeys": passkeys}).to_string()).unwrap();
        let output = std::process::Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scripts/verify_approvals.py"
            ))
            .args([&export, &listed])
            .args([
                "--rp-id",
                RP_ID,
                "--origin",
                ORIGIN,
                "--household",
                household,
            ])
            .output()
            .expect("python3 runs the verifier");
        String::from_utf8(output.stdout).unwrap()
    }
}

async fn a_guardian_runs_the_household_with_signed_statements_kept_in_the_ledger(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Run").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let browser = w.signed_in(&mut dana).await;

    // An invite for Mia: the statement names it, the page gets a link and a QR code.
    let (statement, invited) = w.act(&browser, &mut dana, "invite-member", "mia").await;
    assert_eq!(invited.status, StatusCode::OK, "{}", invited.raw);
    let lines: Vec<&str> = statement.lines().collect();
    assert_eq!(lines.len(), 6, "{statement}");
    assert_eq!(
        &lines[..4],
        &[
            "hearth-household-action/v1",
            "invite-member",
            household.as_str(),
            "mia"
        ]
    );
    let url = invited.body["invite_url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{ORIGIN}/passkeys/enrol/")),
        "{url}"
    );
    assert!(
        invited.body["qr_svg"]
            .as_str()
            .unwrap()
            .starts_with("<svg role=\"img\"")
    );

    // Mia enrols from it; her passkey waits, and Dana approves it on the page.
    let mut mia = SoftPasskey::es256(ORIGIN, RP_ID);
    let page = url.strip_prefix(ORIGIN).unwrap();
    let options = w
        .post(
            &format!("{page}/options"),
            &[("origin", ORIGIN)],
            &json!({}),
        )
        .await;
    let created = w
        .post(
            page,
            &[("origin", ORIGIN)],
            &json!({"credential": mia.register(&options.body)}),
        )
        .await;
    assert_eq!(created.body["status"], "pending", "{}", created.raw);
    let members = w.page(&browser.cookie, "?view=members").await;
    assert!(
        members.raw.contains(r#"data-act="approve-passkey""#),
        "{}",
        members.raw
    );
    let (_, approved) = w
        .act(&browser, &mut dana, "approve-passkey", &mia.id())
        .await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.raw);
    let mia_browser = w.signed_in(&mut mia).await;

    // A member who is not a guardian sees no controls, and is refused if she asks anyway.
    let hers = w.page(&mia_browser.cookie, "?view=members").await;
    assert!(!hers.raw.contains("data-act="), "{}", hers.raw);
    assert!(hers.raw.contains("guardians make changes"));
    let (_, refused) = w.act(&mia_browser, &mut mia, "add-device-key", "new").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    assert!(
        refused.body["message"]
            .as_str()
            .unwrap()
            .contains("Only a guardian")
    );

    // A device key, shown once, then revoked.
    let (_, added) = w.act(&browser, &mut dana, "add-device-key", "new").await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.raw);
    let key_id = added.body["device_key_id"].as_str().unwrap().to_owned();
    assert_eq!(added.body["device_key"].as_str().unwrap().len(), 64);
    let devices = w.page(&browser.cookie, "?view=devices").await;
    assert!(devices.raw.contains(&key_id));
    assert!(
        !devices
            .raw
            .contains(added.body["device_key"].as_str().unwrap()),
        "shown once"
    );
    let (_, revoked) = w
        .act(&browser, &mut dana, "revoke-device-key", &key_id)
        .await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.raw);
    assert!(
        w.admin
            .device_keys(&household)
            .await
            .unwrap()
            .device_keys
            .is_empty()
    );

    // Revoking Mia's passkey ends her session. Dana's only passkey cannot sign its own
    // revocation.
    let (_, revoked) = w
        .act(&browser, &mut dana, "revoke-passkey", &mia.id())
        .await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.raw);
    assert!(signed_out(&w.page(&mia_browser.cookie, "").await));
    let own_id = dana.id();
    let (_, own) = w.act(&browser, &mut dana, "revoke-passkey", &own_id).await;
    assert_eq!(own.status, StatusCode::FORBIDDEN, "{}", own.raw);
    assert!(
        own.body["message"]
            .as_str()
            .unwrap()
            .contains("Ask another guardian")
    );

    // Every action is in the ledger, verbatim, and checks offline.
    let entries = w.admin.export_ledger(&household).await.unwrap().entries;
    let actions: Vec<&str> = entries
        .iter()
        .filter(|entry| entry["kind"] == "household_action")
        .map(|entry| entry["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "invite-member",
            "approve-passkey",
            "add-device-key",
            "revoke-device-key",
            "revoke-passkey"
        ]
    );
    assert_eq!(entries[0]["approval"]["statement"], statement.as_str());
    assert_eq!(w.verified_offline(&household).await, "OK\n");
}

async fn an_action_is_signed_once_for_what_was_asked_in_time(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Once").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let browser = w.signed_in(&mut dana).await;
    let ask =
        |action: &'static str, target: &'static str| json!({"action": action, "target": target});

    // Signed once: the same signed statement again does nothing.
    let asked = w
        .decide(
            &browser,
            "/household/act/challenge",
            &ask("add-device-key", "new"),
        )
        .await;
    let body =
        json!({"statement": asked.body["statement"], "credential": dana.sign_request(&asked.body)});
    assert_eq!(
        w.decide(&browser, "/household/act", &body).await.status,
        StatusCode::OK
    );
    let again = w.decide(&browser, "/household/act", &body).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{}", again.raw);
    assert_eq!(
        w.admin
            .device_keys(&household)
            .await
            .unwrap()
            .device_keys
            .len(),
        1
    );

    // Asked for one thing, then another: the first statement signs nothing.
    let first = w
        .decide(
            &browser,
            "/household/act/challenge",
            &ask("invite-member", "mia"),
        )
        .await;
    let _second = w
        .decide(
            &browser,
            "/household/act/challenge",
            &ask("invite-member", "leo"),
        )
        .await;
    let body =
        json!({"statement": first.body["statement"], "credential": dana.sign_request(&first.body)});
    let refused = w.decide(&browser, "/household/act", &body).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);

    // Five minutes to sign, at the edge and one past.
    for (wait, status) in [
        (5 * 60 * 1000, StatusCode::OK),
        (5 * 60 * 1000 + 1, StatusCode::FORBIDDEN),
    ] {
        let asked = w
            .decide(
                &browser,
                "/household/act/challenge",
                &ask("invite-member", "mia"),
            )
            .await;
        w.advance_ms(wait);
        let body = json!({"statement": asked.body["statement"], "credential": dana.sign_request(&asked.body)});
        let reply = w.decide(&browser, "/household/act", &body).await;
        assert_eq!(reply.status, status, "after {wait} ms: {}", reply.raw);
    }

    // What makes no sense now is refused before anything is signed.
    for (action, target, status) in [
        ("invite-member", "nobody", StatusCode::GONE),
        ("revoke-device-key", "dk-none", StatusCode::GONE),
        ("approve-passkey", "Y3JlZA", StatusCode::GONE),
        (
            "unlink-assistant",
            "https://nobody.example/c.json",
            StatusCode::GONE,
        ),
        ("add-device-key", "dk-chosen", StatusCode::BAD_REQUEST),
        ("delete-household", "x", StatusCode::BAD_REQUEST),
    ] {
        let reply = w
            .decide(
                &browser,
                "/household/act/challenge",
                &json!({"action": action, "target": target}),
            )
            .await;
        assert_eq!(reply.status, status, "{action} {target}: {}", reply.raw);
    }
    let ledger = w.admin.export_ledger(&household).await.unwrap().entries;
    assert_eq!(
        ledger
            .iter()
            .filter(|entry| entry["kind"] == "household_action")
            .count(),
        2,
        "the device key and the invite in time"
    );
}

/// Links `household` to the configured client as the consent page and token endpoint would:
/// a link code redeemed, an authorization code issued and exchanged.
async fn link_once(
    linking: &hearth_core::linking::Linking,
    jwt: &hearth_core::auth::JwtKeys,
    household: &str,
) -> hearth_core::linking::Tokens {
    use common::oauth::{VERIFIER, challenge};
    let (code, _) = linking.new_link_code(household).await.unwrap();
    let linked = linking.redeem_link_code(&code).await.unwrap().unwrap();
    let authorization = linking
        .issue_code(
            hearth_core::linking::CodeBinding {
                client_id: common::CLIENT_ID.into(),
                redirect_uri: LINKED_REDIRECT.into(),
                code_challenge: challenge(VERIFIER),
                scope: "mcp:service".into(),
                resource: common::RESOURCE.into(),
            },
            &linked,
        )
        .await
        .unwrap();
    linking
        .exchange_code(
            jwt,
            common::CLIENT_ID,
            &authorization,
            Some(LINKED_REDIRECT),
            Some(VERIFIER),
            Some(common::RESOURCE),
        )
        .await
        .unwrap()
}

const LINKED_REDIRECT: &str = "https://alexa.example/api/skill/link/M2TEST";

async fn a_guardian_sees_and_unlinks_a_linked_assistant(backend: Backend) {
    use hearth_core::linking::Linking;
    let w = world(backend).await;
    let household = w.household("Linked").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let config = common::config_with(&[]);
    let accounts = Arc::new(hearth_core::accounts::Accounts::new(
        w.stores.accounts.clone(),
        w.h.clock.clone(),
    ));
    let linking = Linking::new(w.stores.grants.clone(), accounts, w.h.clock.clone());
    let jwt = config.jwt_keys().unwrap();
    let tokens = link_once(&linking, &jwt, &household).await;

    let browser = w.signed_in(&mut dana).await;
    let page = w.page(&browser.cookie, "?view=assistants").await;
    assert!(
        page.raw.contains("configured by whoever runs Hearth"),
        "{}",
        page.raw
    );
    assert!(
        !page.raw.contains("unlink-all"),
        "the list is whole: {}",
        page.raw
    );
    assert!(
        page.raw.contains(r#"data-act="unlink-assistant""#),
        "{}",
        page.raw
    );
    let (_, unlinked) = w
        .act(&browser, &mut dana, "unlink-assistant", common::CLIENT_ID)
        .await;
    assert_eq!(unlinked.status, StatusCode::OK, "{}", unlinked.raw);
    let page = w.page(&browser.cookie, "?view=assistants").await;
    assert!(page.raw.contains("No assistant is linked"), "{}", page.raw);
    // Its refresh token no longer works.
    let refreshed = linking
        .refresh(&jwt, common::CLIENT_ID, &tokens.refresh_token, None, None)
        .await;
    assert!(refreshed.is_err(), "{refreshed:?}");

    // Twenty links are kept; the twenty-first forgets the oldest, which the page can then
    // neither list nor unlink: it says so, and offers to unlink every assistant.
    let mut kept = Vec::new();
    for _ in 0..21 {
        kept.push(link_once(&linking, &jwt, &household).await);
    }
    let account = w
        .stores
        .accounts
        .account(&household)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(account.links.len(), hearth_core::store::MAX_LINKS_KEPT);
    assert!(!account.links_complete);
    let page = w.page(&browser.cookie, "?view=assistants").await;
    assert!(
        page.raw.contains("may have been linked before"),
        "{}",
        page.raw
    );
    assert!(
        page.raw.contains(r#"data-act="unlink-all""#),
        "{}",
        page.raw
    );
    let (_, all) = w.act(&browser, &mut dana, "unlink-all", "all").await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.raw);
    // Every family is refused, the forgotten one too, and the page's sessions have ended.
    for tokens in &kept {
        let refreshed = linking
            .refresh(&jwt, common::CLIENT_ID, &tokens.refresh_token, None, None)
            .await;
        assert!(refreshed.is_err(), "{refreshed:?}");
    }
    assert!(signed_out(&w.page(&browser.cookie, "").await));
    let browser = w.signed_in(&mut dana).await;
    let page = w.page(&browser.cookie, "?view=assistants").await;
    assert!(page.raw.contains("No assistant is linked") && !page.raw.contains("unlink-all"));
}

async fn a_passkey_left_pending_before_an_unlink_is_not_approved_on_the_page(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Stale").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let (mia, pending) = w.enrolled(&household, "mia").await;
    assert_eq!(pending.body["status"], "pending");
    w.admin.unlink(&household).await.unwrap();
    let browser = w.signed_in(&mut dana).await;
    let (_, refused) = w
        .act(&browser, &mut dana, "approve-passkey", &mia.id())
        .await;
    assert_eq!(refused.status, StatusCode::GONE, "{}", refused.raw);
    let ledger = w.admin.export_ledger(&household).await.unwrap().entries;
    assert!(
        ledger
            .iter()
            .all(|entry| entry["kind"] != "household_action")
    );
}

async fn a_forged_sign_in_learns_nothing_of_the_passkeys_state(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Forged").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let (mut mia, _) = w.enrolled(&household, "mia").await;
    w.passkeys.revoke(&household, &dana.id()).await.unwrap();
    for passkey in [&mut dana, &mut mia] {
        let mut credential = w.assertion(passkey).await;
        let signature = credential["response"]["signature"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut bytes = URL_SAFE_NO_PAD.decode(&signature).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        credential["response"]["signature"] = json!(URL_SAFE_NO_PAD.encode(bytes));
        let reply = w.sign_in_with(&credential).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.raw);
        assert_eq!(reply.body["error"], "refused", "{}", reply.raw);
        assert!(
            !reply.raw.contains("revoked") && !reply.raw.contains("waits"),
            "{}",
            reply.raw
        );
    }
}

async fn the_pages_limits_hold_at_the_limit_and_refuse_one_past(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Limits").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let browser = w.signed_in(&mut dana).await;

    // A POST body of 16 KiB is read (and refused for what it says); one byte more is not read.
    let limit = hearth_core::passkeys::http::BODY_LIMIT;
    let padded = |length: usize| {
        let mut body = String::from(r#"{"credential":""#);
        body.push_str(&"a".repeat(length - body.len() - 2));
        body.push_str(r#""}"#);
        assert_eq!(body.len(), length);
        body
    };
    let headers = [("content-type", "application/json"), ("origin", ORIGIN)];
    let at = request(
        &w.h.router,
        "POST",
        "/household/sign-in",
        &headers,
        &padded(limit),
    )
    .await;
    assert_eq!(at.status, StatusCode::BAD_REQUEST, "{}", at.raw);
    let past = request(
        &w.h.router,
        "POST",
        "/household/sign-in",
        &headers,
        &padded(limit + 1),
    )
    .await;
    assert_eq!(past.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", past.raw);

    // Ten device keys, the most a household keeps: the eleventh is refused before anything is
    // signed.
    for _ in 0..hearth_core::accounts::MAX_DEVICE_KEYS {
        let (_, added) = w.act(&browser, &mut dana, "add-device-key", "new").await;
        assert_eq!(added.status, StatusCode::OK, "{}", added.raw);
    }
    let (_, full) = w.act(&browser, &mut dana, "add-device-key", "new").await;
    assert_eq!(full.status, StatusCode::CONFLICT, "{}", full.raw);
    assert!(
        full.body["message"]
            .as_str()
            .unwrap()
            .contains("Revoke one first")
    );
}

impl World {
    /// A signed-in member's GET of `path` (no cookie with `None`).
    async fn get(&self, browser: Option<&Browser>, path: &str) -> Reply {
        let cookie = browser.map(|browser| format!("{COOKIE}={}", browser.cookie));
        let headers: Vec<(&str, &str)> = cookie.iter().map(|c| ("cookie", c.as_str())).collect();
        request(&self.h.router, "GET", path, &headers, "").await
    }
}

/// What the phone checks: each log's retained records, each with its inclusion proof against
/// the signed checkpoint, and the consistency proof from the size the phone pinned (at the
/// log's size, and refused one past it), for a signed-in member of the household only.
async fn the_phone_reads_each_logs_records_with_their_proofs(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Evidence").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let token = w.admin.token(&household, 30).await.unwrap().access_token;
    for action in ["heating.lower", "lights.off"] {
        record(&w, &token, action, "dana").await;
    }
    batteries_waiting(&w, &household).await;
    for path in [
        "/household/log/decisions",
        "/household/log/decisions/history?from_size=0",
    ] {
        let signed_out = w.get(None, path).await;
        assert_eq!(signed_out.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(signed_out.body["error"], "signed_out");
    }
    let browser = w.signed_in(&mut dana).await;

    for (log, field, held) in [("decisions", "trace_id", 2), ("ledger", "entry_hash", 1)] {
        let evidence = w
            .get(Some(&browser), &format!("/household/log/{log}"))
            .await;
        assert_eq!(evidence.status, StatusCode::OK, "{}", evidence.raw);
        let body = &evidence.body;
        assert_eq!(body["log"], log);
        assert_eq!(body["household_id"], household.as_str());
        assert_eq!(body["hash_field"], field);
        let records = body["records"].as_array().unwrap();
        let proofs = body["inclusion_proofs"].as_array().unwrap();
        assert_eq!(records.len(), held, "{}", evidence.raw);
        assert_eq!(proofs.len(), held, "every record is proved");
        for (record, proof) in records.iter().zip(proofs) {
            assert_eq!(record[field], proof["entry"]);
        }
        let checkpoint = body["checkpoint"].as_str().unwrap();
        assert_eq!(checkpoint.lines().nth(1), Some(held.to_string().as_str()));
        assert!(checkpoint.contains("/hearth/") && checkpoint.contains(&format!("/{log}/")));
    }

    // The consistency proof from the size the phone pinned: at the log's size (nothing to
    // prove), from an earlier size, and refused one past the log, which only a rollback or a
    // fork would give.
    let history = |size: &str| format!("/household/log/decisions/history?from_size={size}");
    let at = w.get(Some(&browser), &history("2")).await;
    assert_eq!(at.status, StatusCode::OK, "{}", at.raw);
    assert_eq!(at.body["consistency"], json!([]));
    let earlier = w.get(Some(&browser), &history("1")).await;
    assert_eq!(earlier.status, StatusCode::OK, "{}", earlier.raw);
    assert_eq!(earlier.body["consistency"].as_array().unwrap().len(), 1);
    let past = w.get(Some(&browser), &history("3")).await;
    assert_eq!(past.status, StatusCode::BAD_REQUEST, "{}", past.raw);
    assert!(
        past.body["message"]
            .as_str()
            .unwrap()
            .contains("truncated or forked")
    );
    for size in ["", "-1", "two", "18446744073709551616"] {
        let refused = w.get(Some(&browser), &history(size)).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{size}: {}",
            refused.raw
        );
    }
    // A household token holding countersign:read (what account linking grants) proves the
    // ledger's history too, as it reads the ledger itself without a device.
    let proved = call(
        &w,
        &token,
        "prove_history",
        json!({"log": "ledger", "from_size": 0}),
    )
    .await;
    assert_eq!(
        proved["checkpoint"].as_str().unwrap().lines().nth(1),
        Some("1")
    );
    // The ledger's history too: the page reads the household's purchases without a device.
    let ledger = w
        .get(Some(&browser), "/household/log/ledger/history?from_size=0")
        .await;
    assert_eq!(ledger.status, StatusCode::OK, "{}", ledger.raw);
    let unknown = w.get(Some(&browser), "/household/log/receipts").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.raw);

    // Another household's member reads their own logs, never these.
    let other = w.household("Elsewhere").await;
    let (mut eve, _) = w.enrolled(&other, "dana").await;
    let eve = w.signed_in(&mut eve).await;
    let theirs = w.get(Some(&eve), "/household/log/decisions").await;
    assert_eq!(theirs.status, StatusCode::OK, "{}", theirs.raw);
    assert_eq!(theirs.body["household_id"], other.as_str());
    assert_eq!(theirs.body["records"], json!([]));
    assert!(theirs.body.get("checkpoint").is_none());
}

/// Where the configured client may be sent: linking's stories use both.
const LINK_REDIRECTS: &str =
    "https://alexa.example/api/skill/link/M2TEST,https://alexa.example/api/skill/link/OTHER";
const OTHER_REDIRECT: &str = "https://alexa.example/api/skill/link/OTHER";

/// One authorization request's consent page, as a browser holds it.
struct ConsentPage {
    raw: String,
    cookie: String,
    fields: std::collections::HashMap<String, String>,
}

impl World {
    /// Opens the consent page for the configured client, sending it to `redirect_uri`.
    async fn consent(&self, redirect_uri: &str) -> ConsentPage {
        self.consent_for(common::CLIENT_ID, redirect_uri).await
    }

    /// Opens the consent page for `client_id`, sending it to `redirect_uri`.
    async fn consent_for(&self, client_id: &str, redirect_uri: &str) -> ConsentPage {
        use common::oauth::{authorize_query, consent_cookie, hidden_fields};
        let query = authorize_query(client_id, redirect_uri, "linking-state", "mcp:service");
        let page = request(
            &self.h.router,
            "GET",
            &format!("/oauth/authorize?{query}"),
            &[],
            "",
        )
        .await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
        let cookie = consent_cookie(&page);
        ConsentPage {
            fields: hidden_fields(&page.raw),
            raw: page.raw,
            cookie,
        }
    }

    /// The passkey request options for `page`'s request.
    async fn link_options(&self, page: &ConsentPage) -> Reply {
        let body = common::oauth::encode(&page.fields);
        request(
            &self.h.router,
            "POST",
            "/oauth/authorize/passkey",
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("origin", ORIGIN),
            ],
            &body,
        )
        .await
    }

    /// Submits `page`'s form with a passkey's answer instead of a link code.
    async fn link_with(&self, page: &ConsentPage, answer: &Value) -> Reply {
        let mut fields = page.fields.clone();
        fields.insert("decision".into(), "allow".into());
        fields.insert("passkey".into(), answer.to_string());
        request(
            &self.h.router,
            "POST",
            "/oauth/authorize",
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("origin", ORIGIN),
                ("cookie", &page.cookie),
            ],
            &common::oauth::encode(&fields),
        )
        .await
    }
}

impl World {
    /// The access token the configured client exchanges an authorization `code` for.
    async fn exchange(&self, code: &str) -> String {
        let exchanged = request(
            &self.h.router,
            "POST",
            "/oauth/token",
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                (
                    "authorization",
                    &format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode(format!(
                            "{}:{}",
                            common::CLIENT_ID,
                            common::CLIENT_SECRET
                        ))
                    ),
                ),
            ],
            &common::oauth::encode_pairs(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", LINKED_REDIRECT),
                ("code_verifier", common::oauth::VERIFIER),
                ("resource", common::RESOURCE),
            ]),
        )
        .await;
        assert_eq!(exchanged.status, StatusCode::OK, "{}", exchanged.raw);
        exchanged.body["access_token"].as_str().unwrap().to_owned()
    }
}

/// The `code` a consent form's redirect carries, if it redirected with one.
fn linked_code(reply: &Reply) -> Option<String> {
    let location = url::Url::parse(reply.header("location")).ok()?;
    location
        .query_pairs()
        .find(|(name, _)| name == "code")
        .map(|(_, code)| code.into_owned())
}

async fn a_guardian_links_an_assistant_with_a_passkey_and_no_code(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Linking").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let page = w.consent(LINKED_REDIRECT).await;
    // The link-code form is unchanged and first; the passkey is offered after it.
    let code_form = page
        .raw
        .find(r#"<form method="post" action="authorize">"#)
        .unwrap();
    let passkey_form = page.raw.find(r#"id="passkey-form""#).unwrap();
    assert!(code_form < passkey_form);
    assert!(page.raw[code_form..passkey_form].contains(r#"id="link_code""#));
    assert!(page.raw[code_form..passkey_form].contains("Link household"));
    assert!(page.raw.contains("Sign in with a passkey"));

    let options = w.link_options(&page).await;
    assert_eq!(options.status, StatusCode::OK, "{}", options.raw);
    assert_eq!(
        options.body["allowCredentials"],
        json!([]),
        "no passkey is named"
    );
    let answer = dana.sign(options.body["challenge"].as_str().unwrap());
    let linked = w.link_with(&page, &answer).await;
    assert_eq!(linked.status, StatusCode::SEE_OTHER, "{}", linked.raw);
    assert!(linked.header("location").starts_with(LINKED_REDIRECT));
    let code = linked_code(&linked).expect("an authorization code");

    // The code is the household's, as a link code's would be.
    let token = w.exchange(&code).await;
    assert_eq!(record(&w, &token, "link.test", "dana").await, household);
}

async fn a_passkey_links_only_the_request_it_was_asked_for_once(backend: Backend) {
    let w = world(backend).await;
    let household = w.household("Refusing").await;
    let (mut dana, _) = w.enrolled(&household, "dana").await;
    let refused = |reply: &Reply, words: &str| {
        assert_eq!(reply.header("location"), "", "it linked: {}", reply.raw);
        assert!(reply.raw.contains(words), "{words}: {}", reply.raw);
    };

    // Replayed: the challenge is used by the first answer.
    let page = w.consent(LINKED_REDIRECT).await;
    let options = w.link_options(&page).await;
    let answer = dana.sign(options.body["challenge"].as_str().unwrap());
    assert_eq!(
        w.link_with(&page, &answer).await.status,
        StatusCode::SEE_OTHER
    );
    let replayed = w.link_with(&page, &answer).await;
    assert_eq!(replayed.status, StatusCode::BAD_REQUEST);
    refused(&replayed, "already used");

    // Bound to another redirect URI, or to another client: the answer is for that request.
    let other = w.consent(OTHER_REDIRECT).await;
    let options = w.link_options(&other).await;
    let answer = dana.sign(options.body["challenge"].as_str().unwrap());
    let elsewhere = w.link_with(&page, &answer).await;
    assert_eq!(
        elsewhere.status,
        StatusCode::BAD_REQUEST,
        "{}",
        elsewhere.raw
    );
    refused(&elsewhere, "answered another request");
    let another =
        hearth_core::clients::Clients::new(w.stores.clients.clone(), None, w.h.clock.clone())
            .add("Another Assistant", &[LINKED_REDIRECT.to_owned()], true)
            .await
            .unwrap();
    let theirs = w.consent_for(&another.client_id, LINKED_REDIRECT).await;
    let options = w.link_options(&theirs).await;
    assert_eq!(options.status, StatusCode::OK, "{}", options.raw);
    let answer = dana.sign(options.body["challenge"].as_str().unwrap());
    let page = w.consent(LINKED_REDIRECT).await;
    let mismatched = w.link_with(&page, &answer).await;
    assert_eq!(
        mismatched.status,
        StatusCode::BAD_REQUEST,
        "{}",
        mismatched.raw
    );
    refused(&mismatched, "answered another request");

    // A household page's sign-in answer links nothing, and a link's answer signs in nowhere.
    let sign_in = w.assertion(&mut dana).await;
    let page = w.consent(LINKED_REDIRECT).await;
    refused(
        &w.link_with(&page, &sign_in).await,
        "answered another request",
    );
    let options = w.link_options(&page).await;
    let answer = dana.sign(options.body["challenge"].as_str().unwrap());
    let signed_in = w.sign_in_with(&answer).await;
    assert_eq!(
        signed_in.status,
        StatusCode::BAD_REQUEST,
        "{}",
        signed_in.raw
    );
    assert_eq!(signed_in.body["error"], "other_request");

    // A child's passkey, approved and in use, links nothing.
    let browser = w.signed_in(&mut dana).await;
    let (mut mia, _) = w.enrolled(&household, "mia").await;
    let (_, approved) = w
        .act(&browser, &mut dana, "approve-passkey", &mia.id())
        .await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.raw);
    let page = w.consent(LINKED_REDIRECT).await;
    let options = w.link_options(&page).await;
    let answer = mia.sign(options.body["challenge"].as_str().unwrap());
    let child = w.link_with(&page, &answer).await;
    assert_eq!(child.status, StatusCode::FORBIDDEN, "{}", child.raw);
    refused(&child, "Only a guardian");

    // The challenge is asked from the page's own origin, for a request Hearth accepts.
    let page = w.consent(LINKED_REDIRECT).await;
    let body = common::oauth::encode(&page.fields);
    let foreign = request(
        &w.h.router,
        "POST",
        "/oauth/authorize/passkey",
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("origin", "https://attacker.example"),
        ],
        &body,
    )
    .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{}", foreign.raw);
    let mut unknown = page.fields.clone();
    unknown.insert(
        "redirect_uri".into(),
        "https://attacker.example/callback".into(),
    );
    let unknown = request(
        &w.h.router,
        "POST",
        "/oauth/authorize/passkey",
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("origin", ORIGIN),
        ],
        &common::oauth::encode(&unknown),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{}", unknown.raw);
}

on_both_stores!(
    a_guardian_links_an_assistant_with_a_passkey_and_no_code,
    a_passkey_links_only_the_request_it_was_asked_for_once,
    the_phone_reads_each_logs_records_with_their_proofs,
    the_pages_limits_hold_at_the_limit_and_refuse_one_past,
    a_passkey_left_pending_before_an_unlink_is_not_approved_on_the_page,
    a_forged_sign_in_learns_nothing_of_the_passkeys_state,
    a_guardian_runs_the_household_with_signed_statements_kept_in_the_ledger,
    an_action_is_signed_once_for_what_was_asked_in_time,
    a_guardian_sees_and_unlinks_a_linked_assistant,
    a_waiting_order_is_approved_on_the_page_with_the_approval_statement,
    another_members_passkey_cannot_decide_in_a_session,
    a_member_signs_in_with_a_passkey_and_no_name,
    a_challenge_signs_in_once,
    a_passkey_signs_in_only_to_its_own_household,
    a_deleted_households_passkeys_sign_in_nowhere,
    a_passkey_enrolled_before_the_index_signs_in_once_indexed,
    revoked_pending_and_unknown_passkeys_are_told_what_to_do,
    a_session_ends_at_sign_out_and_after_its_time,
    revoking_unlinking_or_a_new_role_ends_a_session,
    a_change_needs_the_pages_origin_and_the_sessions_csrf_token,
    the_views_show_the_households_records_escaped,
);
