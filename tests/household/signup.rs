//! Sign-up, through its own routes and the consent page, on both stores: a person with no
//! household makes one, becomes its first guardian with a new passkey and links an assistant
//! with it; the household starts unable to buy anything; sign-up is counted per address and
//! per day, at each limit and one past it; a household never linked is gone after 24 hours;
//! an operator's sign-up link works once; and with sign-up off there is none of it.

use std::net::SocketAddr;

use hearth_core::household::signup::{SIGNUPS_PER_ADDRESS, SignupLinks, UNLINKED_SIGNUP_MS};
use hearth_testkit::passkey::SoftPasskey;
use http::StatusCode;
use serde_json::{Value, json};

use super::common::{Backend, Reply, request, request_from};
use super::{LINKED_REDIRECT, ORIGIN, RP_ID, World, call, linked_code, record, world_with};

const OPEN: &[(&str, &str)] = &[("HEARTH_SIGNUP", "open")];

fn from(address: &str) -> SocketAddr {
    format!("{address}:50000").parse().unwrap()
}

impl World {
    /// Asks for a household from client address `peer`, as the pages' script does.
    async fn sign_up_from(&self, peer: SocketAddr, body: &Value) -> Reply {
        request_from(
            &self.h.router,
            peer,
            "POST",
            "/household/signup",
            &[("content-type", "application/json"), ("origin", ORIGIN)],
            &body.to_string(),
        )
        .await
    }

    /// Makes a household named `name` from `peer`, and its first guardian's passkey through
    /// the enrolment page sign-up answered with.
    async fn signed_up(&self, peer: SocketAddr, name: &str) -> SoftPasskey {
        let made = self
            .sign_up_from(
                peer,
                &json!({"household_name": name, "member_name": "Robin Ash", "time_zone": "Europe/Paris"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.raw);
        let mut passkey = SoftPasskey::es256(ORIGIN, RP_ID);
        let enrolled = self.enrol_first(&made, &mut passkey).await;
        assert_eq!(enrolled.status, StatusCode::CREATED, "{}", enrolled.raw);
        assert_eq!(
            enrolled.body["status"], "enrolled",
            "the first guardian counts at once"
        );
        passkey
    }

    /// Creates `passkey` through the enrolment page a sign-up answered with (`made`).
    async fn enrol_first(&self, made: &Reply, passkey: &mut SoftPasskey) -> Reply {
        let page = made.body["enrolment_url"]
            .as_str()
            .unwrap()
            .strip_prefix(ORIGIN)
            .unwrap()
            .to_owned();
        self.enrol_at(&page, passkey).await
    }

    /// Creates `passkey` through the enrolment page at `page` (a path).
    async fn enrol_at(&self, page: &str, passkey: &mut SoftPasskey) -> Reply {
        let origin = [("origin", ORIGIN)];
        let options = self
            .post(&format!("{page}/options"), &origin, &json!({}))
            .await;
        if options.status != StatusCode::OK {
            return options;
        }
        let credential = passkey.register(&options.body);
        self.post(page, &origin, &json!({"credential": credential}))
            .await
    }

    /// Links an assistant on the consent page with `passkey`: the access token it gets.
    async fn linked_with(&self, passkey: &mut SoftPasskey) -> String {
        let page = self.consent(LINKED_REDIRECT).await;
        let options = self.link_options(&page).await;
        assert_eq!(options.status, StatusCode::OK, "{}", options.raw);
        let answer = passkey.sign(options.body["challenge"].as_str().unwrap());
        let linked = self.link_with(&page, &answer).await;
        let code = linked_code(&linked).unwrap_or_else(|| panic!("no code: {}", linked.raw));
        self.exchange(&code).await
    }

    /// The households `household list` shows.
    async fn households(&self) -> Vec<Value> {
        let listing = serde_json::to_value(self.admin.list().await.unwrap()).unwrap();
        listing["households"].as_array().unwrap().clone()
    }
}

async fn a_person_signs_up_on_the_consent_page_and_links_with_the_new_passkey(backend: Backend) {
    let w = world_with(backend, OPEN).await;
    let page = w.consent(LINKED_REDIRECT).await;
    // Offered after both ways to link; the link-code form is still first and unchanged.
    let code_form = page
        .raw
        .find(r#"<form method="post" action="authorize">"#)
        .unwrap();
    let passkey_form = page.raw.find(r#"id="passkey-form""#).unwrap();
    let signup_form = page.raw.find(r#"id="signup-form""#).unwrap();
    assert!(code_form < passkey_form && passkey_form < signup_form);
    assert!(page.raw[signup_form..].contains("Create a household"));
    assert!(
        page.raw
            .contains(r#"<script src="../household/signup.js" defer>"#)
    );

    let mut robin = w.signed_up(from("192.0.2.10"), "Ash Lane").await;
    let token = w.linked_with(&mut robin).await;
    let household = record(&w, &token, "signup.test", "robin-ash").await;
    let account = w.admin.show(&household).await.unwrap();
    assert_eq!(account.name, "Ash Lane");
    // It starts able to buy nothing: no merchant, no budget, no per-order allowance, the
    // person its one member and guardian, its weeks in the browser's time zone.
    let policy = account.policy.unwrap();
    assert_eq!(policy["known_merchants"], json!([]));
    assert_eq!(policy["weekly_budget_cents"], 0);
    assert_eq!(policy["roles"]["parent"]["per_order_limit_cents"], 0);
    assert_eq!(
        policy["members"],
        json!([{"id": "robin-ash", "name": "Robin Ash", "role": "parent"}])
    );
    assert_eq!(policy["guardians"], json!(["robin-ash"]));
    assert_eq!(policy["time_zone"], "Europe/Paris");
    let proposed = call(
        &w,
        &token,
        "propose_purchase",
        json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}),
    )
    .await;
    assert_eq!(proposed["status"], "blocked", "{proposed}");
    assert!(
        proposed["say"]
            .as_str()
            .unwrap()
            .contains("weekly budget of $0.00")
    );
    // Linked, it is kept: a day later it is still there.
    w.advance_ms(UNLINKED_SIGNUP_MS * 2);
    assert_eq!(w.households().await.len(), 1);
    assert!(
        w.households().await[0]
            .get("signup_expires_at_ms")
            .is_none()
    );
    assert_eq!(
        record(&w, &token, "signup.later", "robin-ash").await,
        household
    );
}

async fn sign_up_is_counted_per_address_and_per_day(backend: Backend) {
    let w = world_with(
        backend,
        &[("HEARTH_SIGNUP", "open"), ("HEARTH_SIGNUP_PER_DAY", "4")],
    )
    .await;
    let ask = |name: &str| json!({"household_name": name, "member_name": "Robin"});
    // A request refused before the limits is not counted.
    let too_long = w
        .sign_up_from(
            from("192.0.2.1"),
            &json!({"household_name": "x".repeat(101), "member_name": "Robin"}),
        )
        .await;
    assert_eq!(too_long.status, StatusCode::BAD_REQUEST, "{}", too_long.raw);
    assert!(
        too_long.body["message"]
            .as_str()
            .unwrap()
            .contains("1 to 100")
    );
    let at_the_limit = w
        .sign_up_from(
            from("192.0.2.1"),
            &json!({"household_name": "x".repeat(100), "member_name": "y".repeat(100)}),
        )
        .await;
    assert_eq!(
        at_the_limit.status,
        StatusCode::CREATED,
        "{}",
        at_the_limit.raw
    );
    // Up to three from one address (an IPv6 network by its /64), and one past is refused.
    for n in 2..=SIGNUPS_PER_ADDRESS {
        let made = w
            .sign_up_from(from("192.0.2.1"), &ask(&format!("Home {n}")))
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{n}: {}", made.raw);
    }
    let fourth = w.sign_up_from(from("192.0.2.1"), &ask("Home 4")).await;
    assert_eq!(
        fourth.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        fourth.raw
    );
    assert!(
        fourth.body["message"]
            .as_str()
            .unwrap()
            .contains("your network")
    );
    assert!(fourth.header("retry-after").parse::<u64>().unwrap() > 0);
    // The deployment's cap: the fourth of the day is its edge, the fifth one past it.
    let fourth_of_day = w.sign_up_from(from("[2001:db8::1]"), &ask("Home 5")).await;
    assert_eq!(
        fourth_of_day.status,
        StatusCode::CREATED,
        "{}",
        fourth_of_day.raw
    );
    let past_the_cap = w.sign_up_from(from("198.51.100.7"), &ask("Home 6")).await;
    assert_eq!(
        past_the_cap.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        past_the_cap.raw
    );
    assert!(
        past_the_cap.body["message"]
            .as_str()
            .unwrap()
            .contains("today")
    );
    assert_eq!(w.households().await.len(), 4, "nothing refused was kept");
    // A new UTC day starts both counts again.
    w.advance_ms(24 * 60 * 60_000);
    let next_day = w.sign_up_from(from("192.0.2.1"), &ask("Home 7")).await;
    assert_eq!(next_day.status, StatusCode::CREATED, "{}", next_day.raw);
}

async fn a_household_never_linked_is_gone_after_a_day(backend: Backend) {
    let w = world_with(backend, OPEN).await;
    let mut robin = w.signed_up(from("192.0.2.20"), "Short Stay").await;
    let listed = w.households().await;
    assert_eq!(listed.len(), 1);
    assert!(listed[0]["signup_expires_at_ms"].is_i64());
    // A millisecond before the day is out the guardian can still sign in to the page.
    w.advance_ms(UNLINKED_SIGNUP_MS - 1);
    let credential = w.assertion(&mut robin).await;
    let signed_in = w.sign_in_with(&credential).await;
    assert_eq!(signed_in.status, StatusCode::OK, "{}", signed_in.raw);
    // At the day's end it is gone: no sign-in, no link, not listed.
    w.advance_ms(1);
    let credential = w.assertion(&mut robin).await;
    let refused = w.sign_in_with(&credential).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.raw);
    let page = w.consent(LINKED_REDIRECT).await;
    let options = w.link_options(&page).await;
    let answer = robin.sign(options.body["challenge"].as_str().unwrap());
    let linked = w.link_with(&page, &answer).await;
    assert_eq!(linked_code(&linked), None, "{}", linked.raw);
    assert!(w.households().await.is_empty());
}

async fn an_operators_sign_up_link_works_once(backend: Backend) {
    let w = world_with(backend, &[("HEARTH_SIGNUP", "invite")]).await;
    let links = SignupLinks::new(
        w.stores.grants.clone(),
        w.h.clock.clone(),
        ORIGIN.to_owned(),
    );
    let ask = |invite: Option<&str>| {
        let mut body = json!({"household_name": "Invited", "member_name": "Sam"});
        if let Some(invite) = invite {
            body["invite"] = invite.into();
        }
        body
    };
    // The consent page does not offer sign-up to everyone; the sign-up page needs the link.
    assert!(!w.consent(LINKED_REDIRECT).await.raw.contains("signup-form"));
    let page = request(&w.h.router, "GET", "/household/signup", &[], "").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.raw.contains(r#"data-mode="invite""#));
    let without = w.sign_up_from(from("192.0.2.30"), &ask(None)).await;
    assert_eq!(without.status, StatusCode::FORBIDDEN, "{}", without.raw);
    let made_up = w
        .sign_up_from(from("192.0.2.30"), &ask(Some("not-a-link")))
        .await;
    assert_eq!(made_up.status, StatusCode::GONE, "{}", made_up.raw);

    let link = links.create().await.unwrap();
    let (_, token) = link.url.split_once("#invite=").unwrap();
    assert!(
        link.url
            .starts_with(&format!("{ORIGIN}/household/signup#invite="))
    );
    let first = w.sign_up_from(from("192.0.2.30"), &ask(Some(token))).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.raw);
    // The passkey was not made in time (the enrolment's 15 minutes ran out): the same link
    // asks again for that household's first passkey, and makes nothing new.
    w.advance_ms(16 * 60_000);
    let late = w
        .enrol_first(&first, &mut SoftPasskey::es256(ORIGIN, RP_ID))
        .await;
    assert_eq!(late.status, StatusCode::GONE, "{}", late.raw);
    let again = w.sign_up_from(from("192.0.2.31"), &ask(Some(token))).await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.raw);
    assert_ne!(again.body["enrolment_url"], first.body["enrolment_url"]);
    assert_eq!(w.households().await.len(), 1);
    let mut sam = SoftPasskey::es256(ORIGIN, RP_ID);
    let enrolled = w.enrol_first(&again, &mut sam).await;
    assert_eq!(enrolled.status, StatusCode::CREATED, "{}", enrolled.raw);
    // Once the household has its guardian's passkey, the link makes nothing more.
    let used = w.sign_up_from(from("192.0.2.31"), &ask(Some(token))).await;
    assert_eq!(used.status, StatusCode::GONE, "{}", used.raw);
    assert!(
        used.body["message"]
            .as_str()
            .unwrap()
            .contains("Ask whoever runs")
    );
    assert_eq!(w.households().await.len(), 1);
    // A link not used within 7 days no longer works.
    let late = links.create().await.unwrap();
    let (_, late) = late.url.split_once("#invite=").unwrap();
    w.advance_ms(7 * 24 * 60 * 60_000);
    let expired = w.sign_up_from(from("192.0.2.32"), &ask(Some(late))).await;
    assert_eq!(expired.status, StatusCode::GONE, "{}", expired.raw);
}

async fn with_sign_up_off_there_is_none_and_open_takes_anyone(backend: Backend) {
    let w = world_with(backend, &[]).await;
    assert!(!w.consent(LINKED_REDIRECT).await.raw.contains("signup-form"));
    let page = request(&w.h.router, "GET", "/household/signup", &[], "").await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    let refused = w
        .sign_up_from(
            from("192.0.2.40"),
            &json!({"household_name": "Home", "member_name": "Sam"}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND, "{}", refused.raw);
    assert!(w.households().await.is_empty());
    // Where it is open, only the pages' own origin may ask.
    let w = world_with(backend, OPEN).await;
    let foreign = request_from(
        &w.h.router,
        from("192.0.2.41"),
        "POST",
        "/household/signup",
        &[
            ("content-type", "application/json"),
            ("origin", "https://attacker.example"),
        ],
        &json!({"household_name": "Home", "member_name": "Sam"}).to_string(),
    )
    .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{}", foreign.raw);
    assert!(w.households().await.is_empty());
    // Where anyone may sign up, a link that does not work is no reason to refuse.
    let stale = w
        .sign_up_from(
            from("192.0.2.41"),
            &json!({"household_name": "Home", "member_name": "Sam", "invite": "used-long-ago"}),
        )
        .await;
    assert_eq!(stale.status, StatusCode::CREATED, "{}", stale.raw);
    // So is one that made its household, whose guardian has a passkey.
    let links = SignupLinks::new(
        w.stores.grants.clone(),
        w.h.clock.clone(),
        ORIGIN.to_owned(),
    );
    let link = links.create().await.unwrap();
    let (_, token) = link.url.split_once("#invite=").unwrap();
    let ask = json!({"household_name": "Linked", "member_name": "Ola", "invite": token});
    let made = w.sign_up_from(from("192.0.2.42"), &ask).await;
    let enrolled = w
        .enrol_first(&made, &mut SoftPasskey::es256(ORIGIN, RP_ID))
        .await;
    assert_eq!(enrolled.status, StatusCode::CREATED, "{}", enrolled.raw);
    let spent = w.sign_up_from(from("192.0.2.42"), &ask).await;
    assert_eq!(spent.status, StatusCode::CREATED, "{}", spent.raw);
    assert_ne!(spent.body["enrolment_url"], made.body["enrolment_url"]);
    assert_eq!(w.households().await.len(), 3);
}

async fn a_sign_ups_input_is_checked_at_its_limits(backend: Backend) {
    let w = world_with(backend, OPEN).await;
    let peer = from("192.0.2.50");
    // A person's name at 100 characters, and one past.
    let past = w
        .sign_up_from(
            peer,
            &json!({"household_name": "Home", "member_name": "y".repeat(101)}),
        )
        .await;
    assert_eq!(past.status, StatusCode::BAD_REQUEST, "{}", past.raw);
    assert!(
        past.body["message"]
            .as_str()
            .unwrap()
            .contains("your own name")
    );
    for missing in [
        json!({"household_name": "Home"}),
        json!({"member_name": "Sam"}),
    ] {
        let refused = w.sign_up_from(peer, &missing).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.raw);
    }
    // A time zone Hearth does not know: the weeks are counted in UTC.
    let made = w
        .sign_up_from(
            peer,
            &json!({"household_name": "Home", "member_name": "Sam", "time_zone": "Mars/Olympus_Mons"}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.raw);
    let household = w.households().await[0]["household_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let policy = w.admin.show(&household).await.unwrap().policy.unwrap();
    assert_eq!(policy["time_zone"], "UTC");
    // The body at its 16 KiB limit is read (and refused for its name); one byte past is not.
    let body = |length: usize| {
        let padding = length
            - json!({"household_name": "", "member_name": "Sam"})
                .to_string()
                .len();
        json!({"household_name": "h".repeat(padding), "member_name": "Sam"})
    };
    assert_eq!(body(16 * 1024).to_string().len(), 16 * 1024);
    let at = w.sign_up_from(peer, &body(16 * 1024)).await;
    assert_eq!(at.status, StatusCode::BAD_REQUEST, "{}", at.raw);
    let over = w.sign_up_from(peer, &body(16 * 1024 + 1)).await;
    assert_eq!(over.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", over.raw);
    // Sent as a form instead of JSON (a press before the page's script ran): refused, and
    // nothing is made.
    let form = request_from(
        &w.h.router,
        peer,
        "POST",
        "/household/signup",
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("origin", ORIGIN),
        ],
        "household_name=Home&member_name=Sam",
    )
    .await;
    assert_eq!(
        form.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "{}",
        form.raw
    );
    assert_eq!(w.households().await.len(), 1);
}

async fn what_an_expired_sign_up_leaves_is_deleted_or_taken_over(backend: Backend) {
    let w = world_with(backend, OPEN).await;
    let first = w.signed_up(from("192.0.2.60"), "Gone One").await;
    let mut second = w.signed_up(from("192.0.2.61"), "Gone Two").await;
    let ids: Vec<String> = w
        .households()
        .await
        .iter()
        .map(|household| household["household_id"].as_str().unwrap().to_owned())
        .collect();
    let owner_of = |passkey: &SoftPasskey| {
        let id = passkey.id();
        let owners = w.passkeys.owners().clone();
        async move { owners.owner(&id, 0).await.unwrap() }
    };
    let first_household = owner_of(&first).await.unwrap().household_id;
    assert!(ids.contains(&first_household));
    w.advance_ms(UNLINKED_SIGNUP_MS);
    assert!(w.households().await.is_empty());
    // The operator deletes what the store still holds of one, its passkey's entry with it.
    let removed = w.admin.delete(&first_household).await.unwrap();
    assert_eq!(removed.household_id, first_household);
    assert_eq!(owner_of(&first).await, None);
    // The other's entry is left behind by the store; its passkey id is not stuck there: it
    // enrols in another household, and signs in to that one.
    let household = w.household("After").await;
    let enrolled = w.enrol(&household, "dana", &mut second).await;
    assert_eq!(enrolled.status, StatusCode::CREATED, "{}", enrolled.raw);
    assert_eq!(owner_of(&second).await.unwrap().household_id, household);
    let credential = w.assertion(&mut second).await;
    let signed_in = w.sign_in_with(&credential).await;
    assert_eq!(signed_in.status, StatusCode::OK, "{}", signed_in.raw);
    // A standing household's entry stays its own.
    let kept = w.household("Kept").await;
    let refused = w.enrol(&kept, "dana", &mut second).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.raw);
}

crate::on_both_stores!(
    a_person_signs_up_on_the_consent_page_and_links_with_the_new_passkey,
    sign_up_is_counted_per_address_and_per_day,
    a_household_never_linked_is_gone_after_a_day,
    an_operators_sign_up_link_works_once,
    with_sign_up_off_there_is_none_and_open_takes_anyone,
    a_sign_ups_input_is_checked_at_its_limits,
    what_an_expired_sign_up_leaves_is_deleted_or_taken_over,
);
