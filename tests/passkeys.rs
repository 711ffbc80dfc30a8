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
use hearth_core::passkeys::approvals::LinkTo;
use hearth_core::passkeys::{
    CHALLENGES_PER_LINK, INVITE_TTL_MS, MAX_OPEN_INVITES, MAX_PASSKEYS_PER_MEMBER, PasskeyError,
    Passkeys,
};
use hearth_core::store::Stores;
use hearth_testkit::moto::Moto;
use hearth_testkit::passkey::SoftPasskey;
use http::StatusCode;
use serde_json::{Value, json};

const ORIGIN: &str = "http://localhost:8790";
const RP_ID: &str = "localhost";

struct World {
    h: Harness,
    admin: Admin,
    passkeys: Passkeys,
    stores: Stores,
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
    World {
        h,
        admin,
        passkeys,
        stores,
    }
}

fn passkeys_over(config: &hearth_core::config::Config, stores: &Stores, h: &Harness) -> Passkeys {
    let accounts = Arc::new(hearth_core::accounts::Accounts::new(
        stores.accounts.clone(),
        h.clock.clone(),
    ));
    hearth_core::app::passkeys(
        config,
        accounts,
        stores.grants.clone(),
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

    /// A new approval page path for `member`'s pending passkey, as the operator asks for one
    /// (`passkey approval-link`).
    async fn approval_page(&self, household: &str, credential_id: &str) -> String {
        let listed = self.listed(household).await;
        let entry = listed
            .iter()
            .find(|entry| entry["credential_id"] == credential_id)
            .unwrap();
        assert_eq!(entry["pending"], true, "{entry}");
        assert!(
            entry.get("approval_url").is_none(),
            "no link is kept to list"
        );
        path_of(
            &self
                .passkeys
                .confirmation_link(household, credential_id)
                .await
                .unwrap(),
        )
    }

    /// `signer` decides an order on `page`: the challenge, then the signed statement.
    async fn decide(&self, page: &str, decision: &str, signer: &mut SoftPasskey) -> Reply {
        let asked = self
            .post(&format!("{page}/challenge"), &json!({"decision": decision}))
            .await;
        if asked.status != StatusCode::OK {
            return asked;
        }
        let body = json!({
            "decision": decision,
            "statement": asked.body["statement"],
            "credential": signer.sign_request(&asked.body),
        });
        self.post(page, &body).await
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
    // An attestation object naming authData twice, one with the UV flag and one without,
    // in either order: a reader taking the first and one taking the last disagree, so it is
    // refused whole.
    for verified_first in [true, false] {
        let options = w.post(&format!("{page}/options"), &json!({})).await;
        let mut passkey = SoftPasskey::es256(ORIGIN, RP_ID);
        let mut credential = passkey.register(&options.body);
        let field = &mut credential["response"]["attestationObject"];
        let twice = with_auth_data_twice(field.as_str().unwrap(), verified_first);
        *field = Value::String(twice);
        let reply = w.post(&page, &json!({"credential": credential})).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "authData twice, verified first {verified_first}: {}",
            reply.raw
        );
    }
    // Nothing was stored, and the invite still works.
    assert!(w.listed(&home).await.is_empty());
    let mut good = SoftPasskey::es256(ORIGIN, RP_ID);
    assert_eq!(
        w.enrol_with(&page, &mut good).await.status,
        StatusCode::CREATED
    );
}

/// `credential`'s attestation object with the public key's first coordinate (the COSE map's
/// `-2`, 32 bytes) replaced by `make(original)`.
fn with_key_coordinate(credential: &mut Value, make: impl Fn(&[u8]) -> Vec<u8>) {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use ciborium::Value as Cbor;
    let field = &mut credential["response"]["attestationObject"];
    let bytes = URL_SAFE_NO_PAD.decode(field.as_str().unwrap()).unwrap();
    let object: Cbor = ciborium::from_reader(bytes.as_slice()).unwrap();
    let mut entries = object.into_map().unwrap();
    let (_, auth_data) = entries
        .iter_mut()
        .find(|(key, _)| key.as_text() == Some("authData"))
        .unwrap();
    let Cbor::Bytes(auth) = auth_data else {
        panic!("authData is bytes")
    };
    // COSE key label -2 (0x21), then a 32-byte byte string (0x58 0x20).
    let at = auth
        .windows(3)
        .position(|window| window == [0x21, 0x58, 0x20])
        .unwrap()
        + 3;
    let replaced = make(&auth[at..at + 32]);
    auth[at..at + 32].copy_from_slice(&replaced);
    let mut out = Vec::new();
    ciborium::into_writer(&Cbor::Map(entries), &mut out).unwrap();
    *field = Value::String(URL_SAFE_NO_PAD.encode(out));
}

/// A replacement for a key's coordinate, given the original.
type Coordinate = fn(&[u8]) -> Vec<u8>;

/// With attestation `none` nothing signs over the key, so it is checked itself: a P-256 point
/// off its curve and a small-order Ed25519 point are refused, and nothing is stored.
async fn a_registration_with_a_key_that_is_no_key_is_refused(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let page = w.invite(&home, "dana").await;
    let cases: [(SoftPasskey, Coordinate); 2] = [
        (SoftPasskey::es256(ORIGIN, RP_ID), |x| {
            let mut off_curve = x.to_vec();
            off_curve[31] ^= 1;
            off_curve
        }),
        // The identity point: it decompresses, and has order 1.
        (SoftPasskey::ed25519(ORIGIN, RP_ID), |_| {
            let mut identity = vec![0u8; 32];
            identity[0] = 1;
            identity
        }),
    ];
    for (mut passkey, make) in cases {
        let options = w.post(&format!("{page}/options"), &json!({})).await;
        let mut credential = passkey.register(&options.body);
        with_key_coordinate(&mut credential, make);
        let reply = w.post(&page, &json!({"credential": credential})).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.raw);
        assert!(reply.raw.contains("not a valid key"), "{}", reply.raw);
    }
    assert!(w.listed(&home).await.is_empty());
}

/// `attestation_object` (base64url CBOR) with its authData entry twice: once with the
/// user-verified flag and once without, the verified one first or last.
fn with_auth_data_twice(attestation_object: &str, verified_first: bool) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use ciborium::Value as Cbor;
    const USER_VERIFIED: u8 = 0x04;
    let bytes = URL_SAFE_NO_PAD.decode(attestation_object).unwrap();
    let object: Cbor = ciborium::from_reader(bytes.as_slice()).unwrap();
    let mut entries = object.into_map().unwrap();
    let at = entries
        .iter()
        .position(|(key, _)| key.as_text() == Some("authData"))
        .unwrap();
    let (key, value) = entries.remove(at);
    let verified = value.into_bytes().unwrap();
    let mut unverified = verified.clone();
    unverified[32] &= !USER_VERIFIED;
    let (first, last) = if verified_first {
        (verified, unverified)
    } else {
        (unverified, verified)
    };
    entries.push((key.clone(), Cbor::Bytes(first)));
    entries.push((key, Cbor::Bytes(last)));
    let mut out = Vec::new();
    ciborium::into_writer(&Cbor::Map(entries), &mut out).unwrap();
    URL_SAFE_NO_PAD.encode(out)
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
    // Invites an unlink voided free their places, as expired ones do.
    w.admin.unlink(&other).await.unwrap();
    for _ in 0..MAX_OPEN_INVITES {
        w.passkeys.invite(&other, "dana").await.unwrap();
    }
    w.h.clock
        .advance(time::Duration::milliseconds(INVITE_TTL_MS));
    w.passkeys.invite(&other, "chris").await.unwrap();
}

/// A passkey route reads a body of 16 KiB and refuses one byte more with 413, before any
/// ceremony; what the invite allows is unchanged.
#[tokio::test]
async fn passkey_bodies_are_read_up_to_16_kib_and_larger_ones_are_413() {
    let w = world(Backend::Sqlite).await;
    let home = w.household("Maple House").await;
    let page = w.invite(&home, "dana").await;
    let limit = hearth_core::passkeys::http::BODY_LIMIT;
    let padded = |size: usize| {
        let body = json!({"credential": {}, "padding": ""}).to_string();
        let padding = "x".repeat(size - body.len());
        json!({"credential": {}, "padding": padding}).to_string()
    };
    for (size, status) in [
        (limit, StatusCode::BAD_REQUEST),
        (limit + 1, StatusCode::PAYLOAD_TOO_LARGE),
    ] {
        let body = padded(size);
        assert_eq!(body.len(), size);
        let reply = request(
            &w.h.router,
            "POST",
            &page,
            &[("content-type", "application/json"), ("origin", ORIGIN)],
            &body,
        )
        .await;
        assert_eq!(reply.status, status, "{size} bytes: {}", reply.raw);
    }
    assert_eq!(w.get(&page).await.status, StatusCode::OK);
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
        stores,
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
    assert_eq!(notice["kind"], "passkey_enrolment");
    assert_eq!(notice["household_id"], home.as_str());
    assert_eq!(notice["requester_role"], "child");
    assert!(notice["sent_at"].is_i64());
    // The announced page opens, and so does a new link the operator asks for later: the
    // first is kept only as a hash, and keeps working beside it.
    let announced = path_of(notice["approval_url"].as_str().unwrap());
    let later = w.approval_page(&home, &mia.id()).await;
    assert_ne!(announced, later);
    for page in [&announced, &later] {
        let shown = w.get(page).await;
        assert_eq!(shown.status, StatusCode::OK, "{page}: {}", shown.raw);
        assert!(shown.raw.contains(">Approve</button>"), "{}", shown.raw);
    }
}

// ---- orders approved on a phone ------------------------------------------------------------

const BATTERIES: &str = "aa-batteries";

/// A household with dana's (guardian) and mia's (child) passkeys, and a household token.
struct Approving {
    w: World,
    home: String,
    token: String,
    dana: SoftPasskey,
    mia: SoftPasskey,
}

async fn approving(backend: Backend) -> Approving {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let (mut dana, _) = w.enrolled(&home, "dana").await;
    let (mia, _) = w.enrolled(&home, "mia").await;
    let page = w.approval_page(&home, &mia.id()).await;
    assert_eq!(
        w.approve_with(&page, &mut dana).await.1.status,
        StatusCode::OK
    );
    let token = w.admin.token(&home, 30).await.unwrap().access_token;
    Approving {
        w,
        home,
        token,
        dana,
        mia,
    }
}

impl Approving {
    /// A tool called with the household token and no device: `result`.
    async fn call(&self, tool: &str, arguments: Value) -> Value {
        let bearer = format!("Bearer {}", self.token);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let reply = request(
            &self.w.h.router,
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
        reply.body["result"].clone()
    }

    /// Batteries proposed without a device: the structured result.
    async fn propose(&self) -> Value {
        let result = self
            .call(
                "propose_purchase",
                json!({"product_id": BATTERIES, "variant_id": "4-pack", "quantity": 1}),
            )
            .await;
        assert_ne!(result["isError"], true, "{result}");
        result["structuredContent"].clone()
    }

    /// The approval page path of a proposal.
    fn page_of(proposed: &Value) -> String {
        path_of(proposed["approval_url"].as_str().expect("an approval_url"))
    }

    /// The hash of the proposal entry behind an approval link's token.
    async fn proposal_hash(&self, token: &str) -> String {
        let (_, link) = self
            .w
            .passkeys
            .approval_link(LinkTo::Token(token))
            .await
            .unwrap();
        self.ledger()
            .await
            .iter()
            .find(|e| e["request_id"] == link.request_id.as_str() && e["kind"] == "proposal")
            .unwrap()["entry_hash"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn ledger(&self) -> Vec<Value> {
        self.w
            .admin
            .export_ledger(&self.home)
            .await
            .unwrap()
            .entries
    }
}

async fn a_proposal_without_a_device_waits_and_a_parents_passkey_places_it(backend: Backend) {
    let mut a = approving(backend).await;
    let proposed = a.propose().await;
    assert_eq!(proposed["status"], "waiting_for_approval", "{proposed}");
    assert_eq!(proposed["outcome"], "needs_approval");
    let request_id = proposed["request_id"].as_str().unwrap().to_owned();
    let say = proposed["say"].as_str().unwrap();
    assert!(say.contains("phones"), "{say}");
    assert!(
        !say.contains("http") && !say.contains("REQ-") && !say.contains("hh-"),
        "{say}"
    );

    let page = Approving::page_of(&proposed);
    let shown = a.w.get(&page).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.raw);
    for text in [
        "PowerCell AA Alkaline Batteries",
        "4 pack",
        "$5.49",
        ">Approve</button>",
        ">Decline</button>",
        "weekly budget",
    ] {
        assert!(shown.raw.contains(text), "{text}: {}", shown.raw);
    }

    let asked =
        a.w.post(
            &format!("{page}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    let statement = asked.body["statement"].as_str().unwrap().to_owned();
    let lines: Vec<&str> = statement.lines().collect();
    assert_eq!(lines.len(), 6);
    assert!(statement.ends_with('\n'));
    assert_eq!(lines[0], "hearth-approval/v1");
    assert_eq!(lines[1], a.home);
    assert_eq!(lines[2], request_id);
    assert_eq!(lines[3].len(), 64);
    assert_eq!(lines[4], "approve");
    let body = json!({"decision": "approve", "statement": statement, "credential": a.dana.sign_request(&asked.body)});
    let placed = a.w.post(&page, &body).await;
    assert_eq!(placed.status, StatusCode::OK, "{}", placed.raw);
    assert_eq!(placed.body["status"], "placed");

    // In the ledger: the proposal (nobody known) and the decision with its approval.
    let entries = a.ledger().await;
    let proposal = entries
        .iter()
        .find(|e| e["request_id"] == request_id.as_str() && e["kind"] == "proposal")
        .unwrap();
    assert_eq!(proposal["member_id"], "unattested");
    assert!(proposal["turn_id"].as_str().unwrap().starts_with("call-"));
    assert_eq!(lines[3], proposal["entry_hash"].as_str().unwrap());
    let decided = entries.last().unwrap();
    assert_eq!(decided["kind"], "passkey_decision", "{decided}");
    assert_eq!(decided["member_id"], "dana");
    assert_eq!(decided["result"], "placed");
    assert_eq!(decided["approval"]["statement"], statement.as_str());
    assert_eq!(decided["approval"]["credential_id"], a.dana.id().as_str());
    for field in ["authenticator_data", "client_data_json", "signature"] {
        assert!(
            decided["approval"][field]
                .as_str()
                .is_some_and(|v| !v.contains('=')),
            "{field}"
        );
    }
    // Offline, with the standard library only: the approval checks against the passkeys.
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export.json");
    let listed = dir.path().join("passkeys.json");
    std::fs::write(&export, json!({"entries": entries}).to_string()).unwrap();
    std::fs::write(
        &listed,
        json!({"passkeys": a.w.passkeys.list(&a.home).await.unwrap()}).to_string(),
    )
    .unwrap();
    let verdict = |origin: &str| {
        let output = std::process::Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scripts/verify_approvals.py"
            ))
            .args([&export, &listed])
            .args(["--rp-id", RP_ID, "--origin", origin])
            .output()
            .expect("python3 runs the verifier");
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(verdict(ORIGIN), "OK\n");
    assert!(verdict("https://evil.example").starts_with("FAIL"));

    // The week's spending counts it, and the link is closed.
    let week = a.call("household_activity", json!({})).await;
    assert_eq!(week["structuredContent"]["spent_cents"], 549, "{week}");
    // The approver took the requester's place.
    assert_eq!(
        week["structuredContent"]["placed"][0]["requested_by"], "dana",
        "{week}"
    );
    assert_eq!(a.w.get(&page).await.status, StatusCode::GONE);
    // The same signed decision again: nothing waits.
    assert_eq!(a.w.post(&page, &body).await.status, StatusCode::GONE);
}

async fn a_decline_places_nothing(backend: Backend) {
    let mut a = approving(backend).await;
    let proposed = a.propose().await;
    let page = Approving::page_of(&proposed);
    let declined = a.w.decide(&page, "decline", &mut a.dana).await;
    assert_eq!(declined.status, StatusCode::OK, "{}", declined.raw);
    assert_eq!(declined.body["status"], "declined");
    let week = a.call("household_activity", json!({})).await;
    assert_eq!(week["structuredContent"]["spent_cents"], 0, "{week}");
}

async fn a_childs_approval_waits_for_a_guardians(backend: Backend) {
    let mut a = approving(backend).await;
    let proposed = a.propose().await;
    let page = Approving::page_of(&proposed);
    let first = a.w.decide(&page, "approve", &mut a.mia).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.raw);
    assert_eq!(first.body["status"], "waiting_for_approval");
    assert!(first.body["message"].as_str().unwrap().contains("guardian"));
    // The page now says who approved; mia cannot approve twice (she is not asked again).
    let shown = a.w.get(&page).await;
    assert!(
        shown.raw.contains("Mia approved this order"),
        "{}",
        shown.raw
    );
    let again = a.w.decide(&page, "approve", &mut a.mia).await;
    assert_eq!(again.status, StatusCode::FORBIDDEN, "{}", again.raw);
    let placed = a.w.decide(&page, "approve", &mut a.dana).await;
    assert_eq!(placed.status, StatusCode::OK, "{}", placed.raw);
    assert_eq!(placed.body["status"], "placed");
    let entries = a.ledger().await;
    let decisions: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "passkey_decision")
        .collect();
    assert_eq!(decisions.len(), 2);
    assert_eq!(decisions[0]["member_id"], "mia");
    assert_eq!(decisions[0]["result"], "needs_guardian");
    assert_eq!(decisions[1]["member_id"], "dana");
}

async fn approvals_refuse_strangers_revoked_keys_replays_and_other_statements(backend: Backend) {
    let mut a = approving(backend).await;
    let proposed = a.propose().await;
    let page = Approving::page_of(&proposed);

    // Another household's guardian passkey.
    let other = a.w.household("Birch House").await;
    let (mut stranger, _) = a.w.enrolled(&other, "dana").await;
    let refused = a.w.decide(&page, "approve", &mut stranger).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);

    // A statement for another decision than the one asked for.
    let asked =
        a.w.post(
            &format!("{page}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    let other_statement = asked.body["statement"]
        .as_str()
        .unwrap()
        .replace("\napprove\n", "\ndecline\n");
    let challenge = base64_url(&sha256(other_statement.as_bytes()));
    let body = json!({"decision": "approve", "statement": other_statement, "credential": a.dana.sign(&challenge)});
    assert_eq!(a.w.post(&page, &body).await.status, StatusCode::FORBIDDEN);
    // The nonce asked for, replayed after it was used by a decision.
    let asked =
        a.w.post(
            &format!("{page}/challenge"),
            &json!({"decision": "decline"}),
        )
        .await;
    let body = json!({"decision": "decline", "statement": asked.body["statement"], "credential": a.dana.sign_request(&asked.body)});
    assert_eq!(a.w.post(&page, &body).await.status, StatusCode::OK);
    assert_eq!(a.w.post(&page, &body).await.status, StatusCode::GONE);

    // A revoked passkey, on a new proposal.
    let proposed = a.propose().await;
    let page = Approving::page_of(&proposed);
    a.w.passkeys.revoke(&a.home, &a.mia.id()).await.unwrap();
    let asked =
        a.w.post(
            &format!("{page}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    let body = json!({"decision": "approve", "statement": asked.body["statement"], "credential": a.mia.sign_request(&asked.body)});
    let revoked = a.w.post(&page, &body).await;
    assert_eq!(revoked.status, StatusCode::FORBIDDEN, "{}", revoked.raw);
    assert!(
        revoked.body["message"]
            .as_str()
            .unwrap()
            .contains("revoked")
    );
    // A counter that went backwards.
    let mut copy = a.dana.duplicate();
    copy.sign_count = 0;
    let copied = a.w.decide(&page, "approve", &mut copy).await;
    assert_eq!(copied.status, StatusCode::FORBIDDEN, "{}", copied.raw);
    assert!(copied.body["message"].as_str().unwrap().contains("copied"));
}

async fn a_link_lasts_30_minutes_and_not_past_an_unlink(backend: Backend) {
    let a = approving(backend).await;
    let proposed = a.propose().await;
    let page = Approving::page_of(&proposed);
    a.w.h.clock.advance(time::Duration::minutes(30));
    assert_eq!(a.w.get(&page).await.status, StatusCode::OK);
    a.w.h.clock.advance(time::Duration::milliseconds(1));
    let gone = a.w.get(&page).await;
    assert_eq!(gone.status, StatusCode::GONE, "{}", gone.raw);

    let proposed = a.propose().await;
    let page = Approving::page_of(&proposed);
    a.w.admin.unlink(&a.home).await.unwrap();
    assert_eq!(a.w.get(&page).await.status, StatusCode::GONE);
}

/// Every challenge is a write to the household's account, and anyone holding a link can ask
/// for one: a link answers 10 in five minutes, the 11th is 429 and says when to try again,
/// and the window moves on. A pending passkey's page and an invite are held to the same.
async fn a_link_answers_ten_challenges_in_five_minutes(backend: Backend) {
    let a = approving(backend).await;
    let proposed = a.propose().await;
    let page = Approving::page_of(&proposed);
    let challenge = format!("{page}/challenge");
    let mut last = None;
    for n in 1..=CHALLENGES_PER_LINK {
        let asked = a.w.post(&challenge, &json!({"decision": "approve"})).await;
        assert_eq!(asked.status, StatusCode::OK, "challenge {n}: {}", asked.raw);
        last = Some(asked);
    }
    a.w.h.clock.advance(time::Duration::seconds(1));
    let flooded = a.w.post(&challenge, &json!({"decision": "decline"})).await;
    assert_eq!(
        flooded.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        flooded.raw
    );
    assert!(
        flooded.body["message"]
            .as_str()
            .unwrap()
            .contains("few minutes"),
        "{}",
        flooded.raw
    );
    // The first challenge leaves the window 4 minutes 59 seconds from now.
    assert_eq!(flooded.header("retry-after"), "299");
    // The ceremony started last still completes: the refusal wrote nothing.
    let last = last.unwrap();
    let mut dana = a.dana.duplicate();
    let body = json!({
        "decision": "approve",
        "statement": last.body["statement"],
        "credential": dana.sign_request(&last.body),
    });
    let approved = a.w.post(&page, &body).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.raw);

    let (leo, _) = a.w.enrolled(&a.home, "leo").await;
    let pending = a.w.approval_page(&a.home, &leo.id()).await;
    let challenge = format!("{pending}/challenge");
    for n in 1..=CHALLENGES_PER_LINK {
        let asked = a.w.post(&challenge, &json!({"decision": "approve"})).await;
        assert_eq!(asked.status, StatusCode::OK, "challenge {n}: {}", asked.raw);
    }
    let flooded = a.w.post(&challenge, &json!({"decision": "approve"})).await;
    assert_eq!(
        flooded.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        flooded.raw
    );
    a.w.h.clock.advance(time::Duration::minutes(5));
    let asked = a.w.post(&challenge, &json!({"decision": "approve"})).await;
    assert_eq!(
        asked.status,
        StatusCode::OK,
        "after the window: {}",
        asked.raw
    );

    // An invite's registration options are held to the same.
    let invite = a.w.invite(&a.home, "chris").await;
    let options = format!("{invite}/options");
    for n in 1..=CHALLENGES_PER_LINK {
        let asked = a.w.post(&options, &json!({})).await;
        assert_eq!(asked.status, StatusCode::OK, "options {n}: {}", asked.raw);
    }
    let flooded = a.w.post(&options, &json!({})).await;
    assert_eq!(
        flooded.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        flooded.raw
    );
}

async fn confirm_and_decide_point_to_the_phone(backend: Backend) {
    let a = approving(backend).await;
    let proposed = a.propose().await;
    let request_id = proposed["request_id"].as_str().unwrap();
    for (tool, arguments) in [
        ("confirm_purchase", json!({"request_id": request_id})),
        (
            "decide_request",
            json!({"request_id": request_id, "decision": "approve"}),
        ),
    ] {
        let refused = a.call(tool, arguments).await;
        assert_eq!(refused["isError"], true, "{tool}: {refused}");
        assert_eq!(
            refused["_meta"]["hearth/code"], "decided_on_phones",
            "{refused}"
        );
        let say = refused["content"][0]["text"].as_str().unwrap();
        assert!(say.contains("phones") && !say.contains("REQ-"), "{say}");
    }
}

async fn twenty_requests_wait_at_once_and_a_household_without_passkeys_is_told(backend: Backend) {
    let a = approving(backend).await;
    for n in 0..hearth_core::countersign::service::MAX_WAITING_APPROVALS {
        let proposed = a.propose().await;
        assert_eq!(
            proposed["status"], "waiting_for_approval",
            "{n}: {proposed}"
        );
    }
    // The window's count of proposals without a device is spent too; in the next window the
    // waiting requests are what stops the 21st.
    let counted = a
        .call(
            "propose_purchase",
            json!({"product_id": BATTERIES, "variant_id": "4-pack", "quantity": 1}),
        )
        .await;
    assert_eq!(
        counted["_meta"]["hearth/code"], "too_many_unattested",
        "{counted}"
    );
    a.w.h.clock.advance(time::Duration::minutes(10));
    let full = a
        .call(
            "propose_purchase",
            json!({"product_id": BATTERIES, "variant_id": "4-pack", "quantity": 1}),
        )
        .await;
    assert_eq!(
        full["_meta"]["hearth/code"], "too_many_waiting_approvals",
        "{full}"
    );

    let bare = a.w.household("Birch House").await;
    let token = a.w.admin.token(&bare, 30).await.unwrap().access_token;
    let b = Approving {
        token,
        home: bare,
        ..a
    };
    let refused = b
        .call(
            "propose_purchase",
            json!({"product_id": BATTERIES, "variant_id": "4-pack", "quantity": 1}),
        )
        .await;
    assert_eq!(refused["_meta"]["hearth/code"], "no_passkeys", "{refused}");
}

/// A passkey revoked, or a copy of it used, between the check of its assertion and the write
/// that records the decision: the write refuses (and marks a copy suspect).
async fn a_revocation_or_a_copy_between_check_and_write_is_refused(backend: Backend) {
    let mut a = approving(backend).await;
    let passkeys = &a.w.passkeys;
    let proposed = a.propose().await;
    let token = proposed["approval_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let hash = a.proposal_hash(&token).await;
    let request = passkeys
        .approval_request(LinkTo::Token(&token), "approve", &hash, |_| true)
        .await
        .unwrap();
    let credential = a
        .dana
        .sign_request(&serde_json::to_value(&request).unwrap());
    let (account, link) = passkeys.approval_link(LinkTo::Token(&token)).await.unwrap();
    let assertion = passkeys
        .check_signer(&account, &credential, &request.statement, |_| true)
        .await
        .unwrap();
    passkeys.revoke(&a.home, &a.dana.id()).await.unwrap();
    let nonce = link.nonce.unwrap().nonce;
    let refused = passkeys
        .consume_approval(LinkTo::Token(&token), &nonce, &assertion)
        .await;
    assert!(
        matches!(refused, Err(PasskeyError::Refused(_))),
        "{refused:?}"
    );

    // Mia's key and a copy of it, each answering with the same counter: the second write
    // finds the counter already there, refuses and marks the passkey suspect.
    let proposed = a.propose().await;
    let token = proposed["approval_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let hash = a.proposal_hash(&token).await;
    let mut copy = a.mia.duplicate();
    let first = passkeys
        .approval_request(LinkTo::Token(&token), "approve", &hash, |_| true)
        .await
        .unwrap();
    let by_mia = a.mia.sign_request(&serde_json::to_value(&first).unwrap());
    let (account, link) = passkeys.approval_link(LinkTo::Token(&token)).await.unwrap();
    let original = passkeys
        .check_signer(&account, &by_mia, &first.statement, |_| true)
        .await
        .unwrap();
    let by_copy = copy.sign_request(&serde_json::to_value(&first).unwrap());
    let copied = passkeys
        .check_signer(&account, &by_copy, &first.statement, |_| true)
        .await
        .unwrap();
    let nonce = link.nonce.unwrap().nonce;
    passkeys
        .consume_approval(LinkTo::Token(&token), &nonce, &original)
        .await
        .unwrap();
    // The page asks again, so the copy's answer reaches a write with a fresh nonce.
    passkeys
        .approval_request(LinkTo::Token(&token), "approve", &hash, |_| true)
        .await
        .unwrap();
    let nonce = passkeys
        .approval_link(LinkTo::Token(&token))
        .await
        .unwrap()
        .1
        .nonce
        .unwrap()
        .nonce;
    let refused = passkeys
        .consume_approval(LinkTo::Token(&token), &nonce, &copied)
        .await;
    assert!(
        matches!(refused, Err(PasskeyError::Refused(_))),
        "{refused:?}"
    );
    let listed = a.w.listed(&a.home).await;
    let mia = listed.iter().find(|e| e["member_id"] == "mia").unwrap();
    assert!(mia["suspect_at"].is_string(), "{mia}");
}

/// A pending passkey's approval page stops working with an unlink, as invites do.
async fn a_pending_passkey_cannot_be_approved_after_an_unlink(backend: Backend) {
    let w = world(backend).await;
    let home = w.household("Maple House").await;
    let (_dana, _) = w.enrolled(&home, "dana").await;
    let (mia, _) = w.enrolled(&home, "mia").await;
    let page = w.approval_page(&home, &mia.id()).await;
    w.admin.unlink(&home).await.unwrap();
    assert_eq!(w.get(&page).await.status, StatusCode::GONE);
    let asked = w
        .post(
            &format!("{page}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(asked.status, StatusCode::GONE, "{}", asked.raw);
    let listed = w.listed(&home).await;
    let entry = listed.iter().find(|e| e["member_id"] == "mia").unwrap();
    assert!(entry.get("approval_url").is_none(), "{entry}");
}

/// Web Push: a phone subscribes with the push token its enrolment answered (once), and is
/// told, encrypted and VAPID-signed, when a passkey waits for a guardian and when an order
/// waits for approval. (The browser test decrypts the messages; this one counts them.)
#[tokio::test]
async fn a_subscribed_phone_is_pushed_what_waits_for_it() {
    use std::sync::Mutex;
    type Received = Arc<Mutex<Vec<(http::HeaderMap, Vec<u8>)>>>;
    let received: Received = Arc::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/push/{id}",
        axum::routing::post(move |headers: http::HeaderMap, body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push((headers, body.to_vec()));
                StatusCode::CREATED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/push/phone-1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let phone_key = phone_push_key();
    let subscription = json!({"endpoint": endpoint, "keys": {"p256dh": phone_key, "auth": base64_url(&[7u8; 16])}});

    let config = common::config_with(&[("HEARTH_PUSH_ALLOW_HTTP_LOOPBACK", "true")]);
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
        stores,
    };
    let home = w.household("Maple House").await;
    let (_dana, enrolled) = w.enrolled(&home, "dana").await;
    let push_token = enrolled.body["push_token"]
        .as_str()
        .expect("a push token")
        .to_owned();
    let subscribe = format!("/passkeys/push/{push_token}");
    let subscribed = w.post(&subscribe, &subscription).await;
    assert_eq!(subscribed.status, StatusCode::CREATED, "{}", subscribed.raw);
    // Once only.
    assert_eq!(
        w.post(&subscribe, &subscription).await.status,
        StatusCode::GONE
    );

    let (_mia, _) = w.enrolled(&home, "mia").await;
    assert_eq!(
        received.lock().unwrap().len(),
        1,
        "the guardian's phone is told of mia's passkey"
    );
    let token = w.admin.token(&home, 30).await.unwrap().access_token;
    let a = Approving {
        w,
        home,
        token,
        dana: SoftPasskey::es256(ORIGIN, RP_ID),
        mia: SoftPasskey::es256(ORIGIN, RP_ID),
    };
    a.propose().await;
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 2, "the order is pushed too");
    for (headers, body) in &got {
        assert_eq!(headers["content-encoding"], "aes128gcm");
        assert!(
            headers["authorization"]
                .to_str()
                .unwrap()
                .starts_with("vapid t=")
        );
        assert!(
            !String::from_utf8_lossy(body).contains("passkeys"),
            "the message is encrypted"
        );
    }
}

/// A phone's push key as the browser gives it: an uncompressed P-256 point, base64url.
fn phone_push_key() -> String {
    let rng = ring::rand::SystemRandom::new();
    let private =
        ring::agreement::EphemeralPrivateKey::generate(&ring::agreement::ECDH_P256, &rng).unwrap();
    base64_url(private.compute_public_key().unwrap().as_ref())
}

/// A subscription is checked before it is kept: an https endpoint of at most 1,024 bytes (no
/// plain http without the local flag), a P-256 key, a 16-byte secret; and the push token
/// works for 15 minutes, once.
#[tokio::test]
async fn push_subscriptions_are_checked_and_their_token_lasts_15_minutes() {
    let w = world(Backend::Sqlite).await;
    let home = w.household("Maple House").await;
    let key = phone_push_key();
    let subscription = |endpoint: &str, p256dh: &str, auth: &str| json!({"endpoint": endpoint, "keys": {"p256dh": p256dh, "auth": auth}});
    let good_auth = base64_url(&[7u8; 16]);
    let at_length = |length: usize| {
        let head = "https://push.example.net/send/";
        format!("{head}{}", "a".repeat(length - head.len()))
    };
    let (_dana, enrolled) = w.enrolled(&home, "dana").await;
    let path = format!(
        "/passkeys/push/{}",
        enrolled.body["push_token"].as_str().unwrap()
    );
    for (body, says) in [
        (subscription(&at_length(1025), &key, &good_auth), "too long"),
        (
            subscription("http://127.0.0.1:9/send/x", &key, &good_auth),
            "refused",
        ),
        (subscription(&at_length(100), "BAAA", &good_auth), "P-256"),
        (
            subscription(&at_length(100), &key, &base64_url(&[7u8; 15])),
            "16 bytes",
        ),
        (json!({"keys": {}}), "no endpoint"),
    ] {
        let refused = w.post(&path, &body).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.raw);
        assert!(
            refused.body["message"].as_str().unwrap().contains(says),
            "{}",
            refused.raw
        );
    }
    let kept = w
        .post(&path, &subscription(&at_length(1024), &key, &good_auth))
        .await;
    assert_eq!(kept.status, StatusCode::CREATED, "{}", kept.raw);

    // Later passkeys' tokens: at 15 minutes still good, a millisecond past gone.
    for (wait, status) in [
        (time::Duration::minutes(15), StatusCode::CREATED),
        (
            time::Duration::minutes(15) + time::Duration::milliseconds(1),
            StatusCode::GONE,
        ),
    ] {
        let (_mia, enrolled) = w.enrolled(&home, "mia").await;
        let path = format!(
            "/passkeys/push/{}",
            enrolled.body["push_token"].as_str().unwrap()
        );
        w.h.clock.advance(wait);
        let answer = w
            .post(&path, &subscription(&at_length(200), &key, &good_auth))
            .await;
        assert_eq!(answer.status, status, "{}", answer.raw);
    }
}

/// A browser has five minutes between the page's challenge and its answer, and not a
/// millisecond more.
#[tokio::test]
async fn a_registration_answers_within_five_minutes() {
    let w = world(Backend::Sqlite).await;
    let home = w.household("Maple House").await;
    for (wait, status) in [
        (time::Duration::minutes(5), StatusCode::CREATED),
        (
            time::Duration::minutes(5) + time::Duration::milliseconds(1),
            StatusCode::FORBIDDEN,
        ),
    ] {
        let page = w.invite(&home, "dana").await;
        let options = w.post(&format!("{page}/options"), &json!({})).await;
        w.h.clock.advance(wait);
        let credential = SoftPasskey::es256(ORIGIN, RP_ID).register(&options.body);
        let answer = w.post(&page, &json!({"credential": credential})).await;
        assert_eq!(answer.status, status, "{}", answer.raw);
    }
}

/// A household keeps 100 passkeys, revoked ones included; the 101st is refused.
#[tokio::test]
async fn a_household_keeps_100_passkeys_and_not_101() {
    let w = world(Backend::Sqlite).await;
    let home = w.household("Maple House").await;
    for n in 0..hearth_core::passkeys::MAX_KEPT_PASSKEYS {
        let (passkey, reply) = w.enrolled(&home, "dana").await;
        assert_eq!(
            reply.status,
            StatusCode::CREATED,
            "passkey {n}: {}",
            reply.raw
        );
        // Revoked, it stays kept and frees the member's place.
        w.passkeys.revoke(&home, &passkey.id()).await.unwrap();
    }
    assert_eq!(
        w.listed(&home).await.len(),
        hearth_core::passkeys::MAX_KEPT_PASSKEYS
    );
    let full = w.passkeys.invite(&home, "dana").await.unwrap_err();
    assert!(matches!(full, PasskeyError::Full(_)), "{full}");
    assert!(full.to_string().contains("100"), "{full}");
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).to_vec()
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Whatever a link fails on (no such household, a token that was never issued, one used up or
/// past its time), a stranger is shown one page with one status: nothing tells which
/// households exist, or that a token once worked.
async fn every_link_that_does_not_work_gives_one_page(backend: Backend) {
    let a = approving(backend).await;
    let never = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let no_household = format!("hh-0123456789abcdef0123456789abcdef.{never}");
    let used_invite = a.w.invite(&a.home, "chris").await;
    a.w.enrol_with(&used_invite, &mut SoftPasskey::es256(ORIGIN, RP_ID))
        .await;
    let past_its_time = Approving::page_of(&a.propose().await);
    a.w.h.clock.advance(time::Duration::minutes(31));
    let mut pages = Vec::new();
    for kind in ["enrol", "confirm", "approve"] {
        pages.push(format!("/passkeys/{kind}/{no_household}"));
        pages.push(format!("/passkeys/{kind}/{}.{never}", a.home));
    }
    pages.push(used_invite);
    pages.push(past_its_time);
    let first = a.w.get(&pages[0]).await;
    assert_eq!(first.status, StatusCode::GONE, "{}", first.raw);
    for page in &pages[1..] {
        let shown = a.w.get(page).await;
        assert_eq!(shown.status, first.status, "{page}");
        assert_eq!(shown.raw, first.raw, "{page} shows the same page");
    }
    // The pages' own requests answer alike too.
    let asked: Vec<Reply> = first_posts(&a.w, &pages).await;
    for (page, reply) in pages.iter().zip(&asked) {
        assert_eq!(reply.status, asked[0].status, "{page}: {}", reply.raw);
        assert_eq!(reply.body, asked[0].body, "{page}");
    }
}

/// Each page's first POST: the creation options of an invite, the challenge of the others.
async fn first_posts(w: &World, pages: &[String]) -> Vec<Reply> {
    let mut replies = Vec::new();
    for page in pages {
        let reply = if page.starts_with("/passkeys/enrol/") {
            w.post(&format!("{page}/options"), &json!({})).await
        } else {
            w.post(
                &format!("{page}/challenge"),
                &json!({"decision": "approve"}),
            )
            .await
        };
        replies.push(reply);
    }
    replies
}

/// A pending passkey's page and an order's approval page are stored as hashes of their
/// tokens, as invites are: a copy of the store opens neither.
async fn link_tokens_are_stored_only_as_hashes(backend: Backend) {
    let a = approving(backend).await;
    let (chris, _) = a.w.enrolled(&a.home, "chris").await;
    let pending = a.w.approval_page(&a.home, &chris.id()).await;
    let approval = Approving::page_of(&a.propose().await);
    let stored = a.w.stores.accounts.account(&a.home).await.unwrap().unwrap();
    let stored = serde_json::to_string(&stored).unwrap();
    for page in [&pending, &approval] {
        let secret = page.rsplit('.').next().unwrap();
        assert_eq!(secret.len(), 43, "{page}");
        assert!(!stored.contains(secret), "{page}'s token is stored");
        assert_eq!(a.w.get(page).await.status, StatusCode::OK, "{page} opens");
    }
}

/// A link an older release stored with its token in plain text keeps working until its time,
/// and the next write of the account keeps only the token's hash. (The stored JSON is
/// rewritten by hand, as that release wrote it, on the SQLite file.)
#[tokio::test]
async fn a_plain_token_from_an_older_release_works_and_is_not_written_again() {
    let a = approving(Backend::Sqlite).await;
    let page = Approving::page_of(&a.propose().await);
    let token = page.rsplit('/').next().unwrap().to_owned();
    let hash = hearth_core::store::token_hash(&token);
    let db = rusqlite::Connection::open(a.w.h.db_path()).unwrap();
    let stored = || -> String {
        db.query_row(
            "SELECT body FROM accounts WHERE household_id = ?1",
            [&a.home],
            |row| row.get(0),
        )
        .unwrap()
    };
    let body = stored();
    let hashed = format!(r#""token_hashes":["{hash}"]"#);
    assert!(body.contains(&hashed), "{body}");
    let legacy = body.replace(&hashed, &format!(r#""token":"{token}""#));
    db.execute(
        "UPDATE accounts SET body = ?1 WHERE household_id = ?2",
        [&legacy, &a.home],
    )
    .unwrap();

    assert_eq!(a.w.get(&page).await.status, StatusCode::OK, "honoured");
    let asked =
        a.w.post(
            &format!("{page}/challenge"),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.raw);
    let body = stored();
    let secret = token.rsplit('.').next().unwrap();
    assert!(
        !body.contains(secret),
        "written again in plain text: {body}"
    );
    assert!(body.contains(&hashed), "{body}");
    a.w.h.clock.advance(time::Duration::minutes(31));
    assert_eq!(
        a.w.get(&page).await.status,
        StatusCode::GONE,
        "until it expires"
    );
}

on_both_stores!(
    every_link_that_does_not_work_gives_one_page,
    link_tokens_are_stored_only_as_hashes,
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
    a_registration_with_a_key_that_is_no_key_is_refused,
    five_passkeys_per_member_and_twenty_open_invites,
    a_proposal_without_a_device_waits_and_a_parents_passkey_places_it,
    a_decline_places_nothing,
    a_childs_approval_waits_for_a_guardians,
    approvals_refuse_strangers_revoked_keys_replays_and_other_statements,
    a_link_lasts_30_minutes_and_not_past_an_unlink,
    a_link_answers_ten_challenges_in_five_minutes,
    confirm_and_decide_point_to_the_phone,
    twenty_requests_wait_at_once_and_a_household_without_passkeys_is_told,
    a_revocation_or_a_copy_between_check_and_write_is_refused,
    a_pending_passkey_cannot_be_approved_after_an_unlink,
);
