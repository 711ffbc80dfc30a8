//! Members' passkeys, through the pages' own routes, on the SQLite store and on DynamoDB
//! (moto): enrolment on a single-use invite, guardians first, later passkeys waiting for a
//! guardian's signed approval, and every way an approval must fail (another household's
//! passkey, a revoked one, a replay, a statement for something else, a counter that went
//! backwards, a link past its time or voided by an unlink), with the limits at N and N+1.
//! The authenticator is the testkit's software passkey; the browser tests drive the same pages
//! with Chromium's virtual authenticators.

mod common;

use std::sync::Arc;

use common::{Backend, Harness, Reply, request};
use hearth_core::admin::Admin;
use hearth_core::countersign::household::built_in_policy;
use hearth_core::passkeys::{
    INVITE_TTL_MS, MAX_OPEN_INVITES, MAX_PASSKEYS_PER_MEMBER, PasskeyError, Passkeys,
};
use hearth_core::store::Stores;
use hearth_testkit::moto::Moto;
use hearth_testkit::passkey::SoftPasskey;
use http::StatusCode;
use serde_json::{Value, json};

const ORIGIN: &str = "http://localhost:8787";
const RP_ID: &str = "localhost";

struct World {
    h: Harness,
    admin: Admin,
    passkeys: Passkeys,
}

async fn world(backend: Backend) -> World {
    let config = common::config_with(&[]);
    let (h, admin, stores) = common::operated_with_stores(
        &config,
        backend,
        Moto::shared().dynamodb_client(),
        "hearth-passkeys",
    )
    .await;
    let passkeys = passkeys_over(&config, &stores, &h);
    World { h, admin, passkeys }
}

fn passkeys_over(config: &hearth_core::config::Config, stores: &Stores, h: &Harness) -> Passkeys {
    let accounts = Arc::new(hearth_core::accounts::Accounts::new(
        stores.accounts.clone(),
        h.clock.clone(),
    ));
    hearth_core::app::passkeys(
        config,
        accounts,
        &hearth_core::app::household_data(config).unwrap(),
    )
    .expect("the local server has a public URL")
}

/// The demo household's policy as an account's (members dana and chris are guardians).
fn policy() -> Value {
    let mut policy = built_in_policy();
    let fields = policy.as_object_mut().unwrap();
    fields.remove("household_id");
    fields.remove("name");
    policy
}

/// The path of a printed link, for the router.
fn path_of(url: &str) -> String {
    url.strip_prefix(ORIGIN)
        .expect("links use the pages' origin")
        .to_owned()
}

impl World {
    async fn household(&self, name: &str) -> String {
        self.admin
            .create(name, Some(policy()))
            .await
            .unwrap()
            .household_id
    }

    async fn get(&self, path: &str) -> Reply {
        request(&self.h.router, "GET", path, &[], "").await
    }

    async fn post(&self, path: &str, body: &Value) -> Reply {
        self.post_from(ORIGIN, path, body).await
    }

    async fn post_from(&self, origin: &str, path: &str, body: &Value) -> Reply {
        request(
            &self.h.router,
            "POST",
            path,
            &[("content-type", "application/json"), ("origin", origin)],
            &body.to_string(),
        )
        .await
    }

    /// An invite's page path for `member`.
    async fn invite(&self, household: &str, member: &str) -> String {
        path_of(&self.passkeys.invite(household, member).await.unwrap().url)
    }

    /// Runs an enrolment page with `passkey`: its status and body.
    async fn enrol_with(&self, page: &str, passkey: &mut SoftPasskey) -> Reply {
        let options = self.post(&format!("{page}/options"), &json!({})).await;
        if options.status != StatusCode::OK {
            return options;
        }
        let credential = passkey.register(&options.body);
        self.post(page, &json!({"credential": credential})).await
    }

    /// A new passkey for `member`, enrolled through an invite.
    async fn enrolled(&self, household: &str, member: &str) -> (SoftPasskey, Reply) {
        let mut passkey = SoftPasskey::es256(ORIGIN, RP_ID);
        let page = self.invite(household, member).await;
        let reply = self.enrol_with(&page, &mut passkey).await;
        (passkey, reply)
    }

    async fn listed(&self, household: &str) -> Vec<Value> {
        serde_json::to_value(self.passkeys.list(household).await.unwrap())
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    /// The approval page path of `member`'s pending passkey.
    async fn approval_page(&self, household: &str, credential_id: &str) -> String {
        let listed = self.listed(household).await;
        let entry = listed
            .iter()
            .find(|entry| entry["credential_id"] == credential_id)
            .unwrap();
        assert_eq!(entry["pending"], true, "{entry}");
        path_of(entry["approval_url"].as_str().unwrap())
    }

    /// A guardian's approval on `page` signed by `signer`: the challenge, then the assertion.
    async fn approve_with(&self, page: &str, signer: &mut SoftPasskey) -> (Value, Reply) {
        let request = self
            .post(
                &format!("{page}/challenge"),
                &json!({"decision": "approve"}),
            )
            .await;
        assert_eq!(request.status, StatusCode::OK, "{}", request.raw);
        let body = json!({
            "decision": "approve",
            "statement": request.body["statement"],
            "credential": signer.sign_request(&request.body),
        });
        let reply = self.post(page, &body).await;
        (body, reply)
    }
}

async fn a_guardian_enrols_and_the_invite_then_is_gone(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let page = w.invite(&home, "dana").await;
    let shown = w.get(&page).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(
        shown.raw.contains(">Create passkey</button>"),
        "{}",
        shown.raw
    );
    assert!(shown.raw.contains("Dana"));
    let csp = shown.header("content-security-policy");
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );

    let mut passkey = SoftPasskey::es256(ORIGIN, RP_ID);
    let enrolled = w.enrol_with(&page, &mut passkey).await;
    assert_eq!(enrolled.status, StatusCode::CREATED, "{}", enrolled.raw);
    assert_eq!(enrolled.body["status"], "enrolled");
    let listed = w.listed(&home).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["credential_id"], passkey.id());
    assert_eq!(listed[0]["member_id"], "dana");
    assert_eq!(listed[0]["algorithm"], "ES256");
    assert_eq!(listed[0]["pending"], false);
    assert!(listed[0].get("approval_url").is_none());
    // The SPKI is DER: SEQUENCE, 89 bytes long, for a P-256 key.
    assert!(
        listed[0]["public_key_spki"]
            .as_str()
            .unwrap()
            .starts_with("MFkw")
    );

    // The invite was used: its page, its options and a second credential are all refused.
    assert_eq!(w.get(&page).await.status, StatusCode::GONE);
    let again = w
        .enrol_with(&page, &mut SoftPasskey::es256(ORIGIN, RP_ID))
        .await;
    assert_eq!(again.status, StatusCode::GONE, "{}", again.raw);
    assert!(again.body["message"].as_str().unwrap().contains("new one"));
    assert_eq!(w.listed(&home).await.len(), 1);
}

async fn an_ed25519_passkey_enrols_too(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let page = w.invite(&home, "dana").await;
    let mut passkey = SoftPasskey::ed25519(ORIGIN, RP_ID);
    let enrolled = w.enrol_with(&page, &mut passkey).await;
    assert_eq!(enrolled.status, StatusCode::CREATED, "{}", enrolled.raw);
    let listed = w.listed(&home).await;
    assert_eq!(listed[0]["algorithm"], "Ed25519");
    assert!(
        listed[0]["public_key_spki"]
            .as_str()
            .unwrap()
            .starts_with("MCow")
    );
}

async fn the_first_passkey_must_be_a_guardians(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let refused = w.passkeys.invite(&home, "mia").await.unwrap_err();
    assert!(matches!(refused, PasskeyError::Refused(_)), "{refused}");
    assert!(refused.to_string().contains("guardian"));
    let unknown = w.passkeys.invite(&home, "nobody").await.unwrap_err();
    assert!(unknown.to_string().contains("not a member"), "{unknown}");
}

async fn a_later_passkey_waits_for_a_guardian_and_nobody_approves_twice(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let (mut dana, _) = w.enrolled(&home, "dana").await;
    let (mia, reply) = w.enrolled(&home, "mia").await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.raw);
    assert_eq!(reply.body["status"], "pending");
    let page = w.approval_page(&home, &mia.id()).await;
    let shown = w.get(&page).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(shown.raw.contains(">Approve</button>"), "{}", shown.raw);

    let (body, approved) = w.approve_with(&page, &mut dana).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.raw);
    let statement = body["statement"].as_str().unwrap();
    assert_eq!(statement.lines().next(), Some("hearth-enrolment/v1"));
    assert!(statement.contains(&mia.id()));
    let listed = w.listed(&home).await;
    assert!(listed.iter().all(|entry| entry["pending"] == false));
    let dana_entry = listed.iter().find(|e| e["member_id"] == "dana").unwrap();
    assert!(dana_entry["last_used_at"].is_string());

    // The same assertion again, and the page itself: nothing waits any more.
    let replayed = w.post(&page, &body).await;
    assert_eq!(replayed.status, StatusCode::GONE, "{}", replayed.raw);
    assert_eq!(w.get(&page).await.status, StatusCode::GONE);
}

async fn a_pending_passkey_cannot_approve_itself_nor_a_child_another(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let (_dana, _) = w.enrolled(&home, "dana").await;
    let (mut mia, _) = w.enrolled(&home, "mia").await;
    let page = w.approval_page(&home, &mia.id()).await;
    let (_, own) = w.approve_with(&page, &mut mia).await;
    assert_eq!(own.status, StatusCode::FORBIDDEN, "{}", own.raw);
    assert!(own.body["message"].as_str().unwrap().contains("waits"));
    assert_eq!(
        w.listed(&home)
            .await
            .iter()
            .filter(|e| e["pending"] == true)
            .count(),
        1
    );
}

async fn another_households_passkey_cannot_approve(backend: Backend) {
    let w = world(backend).await;
    let maple = w.household("Maple House").await;
    let birch = w.household("Birch House").await;
    let (_maple_dana, _) = w.enrolled(&maple, "dana").await;
    let (mut birch_dana, _) = w.enrolled(&birch, "dana").await;
    let (leo, _) = w.enrolled(&maple, "leo").await;
    let page = w.approval_page(&maple, &leo.id()).await;
    let (_, refused) = w.approve_with(&page, &mut birch_dana).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    assert!(
        refused.body["message"]
            .as_str()
            .unwrap()
            .contains("not one of this household's")
    );
}

async fn a_revoked_passkey_signs_nothing(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let (mut dana, _) = w.enrolled(&home, "dana").await;
    let (mut chris, _) = w.enrolled(&home, "chris").await;
    let chris_page = w.approval_page(&home, &chris.id()).await;
    assert_eq!(
        w.approve_with(&chris_page, &mut dana).await.1.status,
        StatusCode::OK
    );
    let revoked = w.passkeys.revoke(&home, &dana.id()).await.unwrap();
    assert!(revoked.revoked_at.is_some());

    let (rose, _) = w.enrolled(&home, "rose").await;
    let page = w.approval_page(&home, &rose.id()).await;
    let (_, refused) = w.approve_with(&page, &mut dana).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    assert!(
        refused.body["message"]
            .as_str()
            .unwrap()
            .contains("revoked")
    );
    let (_, approved) = w.approve_with(&page, &mut chris).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.raw);
    // Revoked passkeys stay listed, for older approvals.
    assert_eq!(w.listed(&home).await.len(), 3);
}

async fn a_statement_for_something_else_or_an_old_nonce_is_refused(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let (mut dana, _) = w.enrolled(&home, "dana").await;
    let (mia, _) = w.enrolled(&home, "mia").await;
    let page = w.approval_page(&home, &mia.id()).await;

    // A statement naming another passkey, signed properly.
    let first = w
        .post(
            &format!("{page}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    let other = first.body["statement"]
        .as_str()
        .unwrap()
        .replace(&mia.id(), &dana.id());
    let challenge = base64_url(&sha256(other.as_bytes()));
    let body =
        json!({"decision": "approve", "statement": other, "credential": dana.sign(&challenge)});
    let refused = w.post(&page, &body).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);

    // An assertion over the first nonce, sent after the page asked again.
    let old = json!({"decision": "approve", "statement": first.body["statement"], "credential": dana.sign_request(&first.body)});
    let _second = w
        .post(
            &format!("{page}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    let stale = w.post(&page, &old).await;
    assert_eq!(stale.status, StatusCode::FORBIDDEN, "{}", stale.raw);
    assert_eq!(
        w.listed(&home)
            .await
            .iter()
            .filter(|e| e["pending"] == true)
            .count(),
        1
    );
}

async fn a_counter_that_goes_backwards_marks_the_passkey_suspect(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let (mut dana, _) = w.enrolled(&home, "dana").await;
    let (mia, _) = w.enrolled(&home, "mia").await;
    let page = w.approval_page(&home, &mia.id()).await;
    // The registration counted 1; a copy of the key that counted less answers now.
    dana.sign_count = 0;
    let (_, refused) = w.approve_with(&page, &mut dana).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    assert!(refused.body["message"].as_str().unwrap().contains("copied"));
    let listed = w.listed(&home).await;
    let entry = listed.iter().find(|e| e["member_id"] == "dana").unwrap();
    assert!(entry["suspect_at"].is_string(), "{entry}");
    // Even a counter that moves on again is refused now: the page finds no guardian's
    // passkey to ask for, and an assertion sent anyway is refused too.
    let asked = w
        .post(
            &format!("{page}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(asked.status, StatusCode::FORBIDDEN, "{}", asked.raw);
    dana.sign_count = 50;
    let body = json!({"decision": "approve", "statement": "x", "credential": dana.sign("eA")});
    assert_eq!(w.post(&page, &body).await.status, StatusCode::FORBIDDEN);
}

async fn a_passkey_without_a_counter_signs_again_and_again(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let mut dana = SoftPasskey::es256(ORIGIN, RP_ID);
    dana.keeps_counter = false;
    let page = w.invite(&home, "dana").await;
    assert_eq!(
        w.enrol_with(&page, &mut dana).await.status,
        StatusCode::CREATED
    );
    for member in ["mia", "leo"] {
        let (pending, _) = w.enrolled(&home, member).await;
        let page = w.approval_page(&home, &pending.id()).await;
        assert_eq!(
            w.approve_with(&page, &mut dana).await.1.status,
            StatusCode::OK
        );
    }
}

async fn an_invite_works_for_15_minutes_and_not_after_an_unlink(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let page = w.invite(&home, "dana").await;
    w.h.clock
        .advance(time::Duration::milliseconds(INVITE_TTL_MS - 1));
    assert_eq!(w.get(&page).await.status, StatusCode::OK);
    w.h.clock.advance(time::Duration::milliseconds(1));
    assert_eq!(w.get(&page).await.status, StatusCode::GONE);

    let page = w.invite(&home, "dana").await;
    assert_eq!(w.get(&page).await.status, StatusCode::OK);
    w.admin.unlink(&home).await.unwrap();
    let gone = w.get(&page).await;
    assert_eq!(gone.status, StatusCode::GONE);
    assert!(gone.raw.contains("new one"));
}

async fn a_registration_must_verify_the_person_and_come_from_the_page(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let page = w.invite(&home, "dana").await;
    let mut unverified = SoftPasskey::es256(ORIGIN, RP_ID);
    unverified.verifies_user = false;
    let refused = w.enrol_with(&page, &mut unverified).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    let mut elsewhere = SoftPasskey::es256("https://evil.example", RP_ID);
    assert_eq!(
        w.enrol_with(&page, &mut elsewhere).await.status,
        StatusCode::FORBIDDEN
    );
    let mut other_rp = SoftPasskey::es256(ORIGIN, "evil.example");
    assert_eq!(
        w.enrol_with(&page, &mut other_rp).await.status,
        StatusCode::FORBIDDEN
    );
    let cross_site = w
        .post_from(
            "https://evil.example",
            &format!("{page}/options"),
            &json!({}),
        )
        .await;
    assert_eq!(cross_site.status, StatusCode::FORBIDDEN);
    // Nothing was stored, and the invite still works.
    assert!(w.listed(&home).await.is_empty());
    let mut good = SoftPasskey::es256(ORIGIN, RP_ID);
    assert_eq!(
        w.enrol_with(&page, &mut good).await.status,
        StatusCode::CREATED
    );
}

async fn five_passkeys_per_member_and_twenty_open_invites(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    for n in 0..MAX_PASSKEYS_PER_MEMBER {
        let (_, reply) = w.enrolled(&home, "dana").await;
        assert_eq!(
            reply.status,
            StatusCode::CREATED,
            "passkey {n}: {}",
            reply.raw
        );
    }
    let full = w.passkeys.invite(&home, "dana").await.unwrap_err();
    assert!(matches!(full, PasskeyError::Full(_)), "{full}");
    // A revoked passkey makes room.
    let first = w.listed(&home).await[0]["credential_id"]
        .as_str()
        .unwrap()
        .to_owned();
    w.passkeys.revoke(&home, &first).await.unwrap();
    w.passkeys.invite(&home, "dana").await.unwrap();

    let other = w.household("Birch House").await;
    for _ in 0..MAX_OPEN_INVITES {
        w.passkeys.invite(&other, "dana").await.unwrap();
    }
    let too_many = w.passkeys.invite(&other, "chris").await.unwrap_err();
    assert!(matches!(too_many, PasskeyError::Full(_)), "{too_many}");
    // Expired invites free their places.
    w.h.clock
        .advance(time::Duration::milliseconds(INVITE_TTL_MS));
    w.passkeys.invite(&other, "chris").await.unwrap();
}

/// A later enrolment is announced to the guardians' webhook with its approval page, signed,
/// and before the enrolment answers (under Lambda a task left running may be frozen).
#[tokio::test]
async fn a_waiting_passkey_is_announced_before_the_enrolment_answers() {
    use std::sync::Mutex;
    const KEY: &str = "the household's notification key";
    type Received = Arc<Mutex<Vec<(http::HeaderMap, Vec<u8>)>>>;
    let received: Received = Arc::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/notify",
        axum::routing::post(move |headers: http::HeaderMap, body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push((headers, body.to_vec()));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/notify", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let config = common::config_with(&[
        ("COUNTERSIGN_NOTIFY_URL", url.as_str()),
        ("COUNTERSIGN_NOTIFY_KEY", KEY),
    ]);
    let (h, admin, stores) = common::operated_with_stores(
        &config,
        Backend::Sqlite,
        Moto::shared().dynamodb_client(),
        "hearth-passkeys",
    )
    .await;
    let w = World {
        passkeys: passkeys_over(&config, &stores, &h),
        h,
        admin,
    };
    let home = w.household("Maple House").await;
    let (_dana, first) = w.enrolled(&home, "dana").await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert!(
        received.lock().unwrap().is_empty(),
        "the first guardian is not announced"
    );
    let (mia, waiting) = w.enrolled(&home, "mia").await;
    assert_eq!(waiting.body["status"], "pending");
    // Already there when the enrolment answered: no waiting for a background task.
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    let (headers, body) = &got[0];
    assert_eq!(
        headers[hearth_core::countersign::notify::SIGNATURE_HEADER],
        hearth_core::countersign::notify::sign(KEY, body).as_str()
    );
    let notice: Value = serde_json::from_slice(body).unwrap();
    let approval = w.approval_page(&home, &mia.id()).await;
    assert_eq!(notice["kind"], "passkey_enrolment");
    assert_eq!(notice["household_id"], home.as_str());
    assert_eq!(notice["requester_role"], "child");
    assert_eq!(path_of(notice["approval_url"].as_str().unwrap()), approval);
    assert!(notice["sent_at"].is_i64());
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).to_vec()
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

on_both_stores!(
    a_guardian_enrols_and_the_invite_then_is_gone,
    an_ed25519_passkey_enrols_too,
    the_first_passkey_must_be_a_guardians,
    a_later_passkey_waits_for_a_guardian_and_nobody_approves_twice,
    a_pending_passkey_cannot_approve_itself_nor_a_child_another,
    another_households_passkey_cannot_approve,
    a_revoked_passkey_signs_nothing,
    a_statement_for_something_else_or_an_old_nonce_is_refused,
    a_counter_that_goes_backwards_marks_the_passkey_suspect,
    a_passkey_without_a_counter_signs_again_and_again,
    an_invite_works_for_15_minutes_and_not_after_an_unlink,
    a_registration_must_verify_the_person_and_come_from_the_page,
    five_passkeys_per_member_and_twenty_open_invites,
);
