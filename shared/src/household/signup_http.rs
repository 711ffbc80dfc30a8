//! Sign-up's routes, served by the MCP function (and the local server) beside the household
//! page's:
//!
//! - `GET /household/signup`: the sign-up page (an operator's link opens it with its token in
//!   the fragment, `#invite=…`); 404 with `HEARTH_SIGNUP=off`.
//! - `GET /household/signup.js`: the script the sign-up page and the consent page's `Create a
//!   household` share (over the passkey pages' `page.js`).
//! - `POST /household/signup`: `{"household_name", "member_name", "time_zone", "invite"}`
//!   (the last two optional); 201 with the first guardian's `enrolment_url`, whose page's own
//!   routes then make the passkey. From the pages' own origin only.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::signup::{Signup, SignupRefusal, SignupRequest};
use crate::config::SignupMode;
use crate::gate::Gate;
use crate::html::{escape, static_asset};
use crate::passkeys::http::{BODY_LIMIT, answer, failure, json_body, page_post_body, refused};
use crate::passkeys::pages::{Policy, notice, shell};

/// The script sign-up's two pages share.
const SCRIPT: &str = include_str!("signup.js");

#[derive(Clone)]
struct Endpoint {
    signup: Arc<Signup>,
    gate: Gate,
}

/// Sign-up's routes, every one behind `gate` before any store read.
pub fn router(signup: Arc<Signup>, gate: &Gate) -> Router {
    let routes = Router::new()
        .route("/household/signup", get(page).post(create))
        .route("/household/signup.js", get(|| async { script() }))
        .layer(DefaultBodyLimit::max(BODY_LIMIT));
    crate::gate::limit(routes, gate, refused).with_state(Endpoint {
        signup,
        gate: gate.clone(),
    })
}

fn script() -> Response {
    static_asset(SCRIPT, "text/javascript; charset=utf-8")
}

/// The form both pages show: the household's name, the person's, and `Create a household`,
/// under `heading` where one is given. `action` is where the script posts it, relative to the
/// page. It stays hidden until the script shows it: without the script no passkey can be made,
/// and it is a POST, so that a press before the script runs never puts the names in a URL.
pub fn form(action: &str, mode: SignupMode, heading: Option<&str>) -> String {
    let heading = heading
        .map(|heading| format!("<h2>{}</h2>\n", escape(heading)))
        .unwrap_or_default();
    format!(
        r#"<form id="signup-form" method="post" action="{action}" data-signup="{action}" data-mode="{mode}" hidden>
{heading}<label for="household_name">Your household's name</label>
<input type="text" class="name" id="household_name" name="household_name" maxlength="100" required autocomplete="off">
<label for="member_name">Your name</label>
<input type="text" class="name" id="member_name" name="member_name" maxlength="100" required autocomplete="given-name">
<p class="small">You become its first guardian, with a passkey on this device. It starts with no shop allowed and no budget, so nothing can be bought until a guardian sets its rules. If no assistant is linked to it within a day, it is deleted.</p>
<div class="actions"><button class="allow" type="submit" id="signup">Create a household</button></div>
<p id="signup-status" role="status"></p>
</form>"#,
        action = escape(action),
        mode = mode.as_str(),
    )
}

async fn page(State(endpoint): State<Endpoint>) -> Response {
    let mode = endpoint.signup.mode();
    if mode == SignupMode::Off {
        return notice(
            StatusCode::NOT_FOUND,
            "No sign-up here",
            &SignupRefusal::Closed.to_string(),
        );
    }
    let body = format!(
        r#"<main>
<h1>Make a household on Hearth</h1>
<p>Hearth keeps what your household's assistant does honest: why it did things, and a second signature on everything it buys.</p>
{form}
<p><a id="signup-next" href="../household" hidden>Open your household's page</a></p>
</main>"#,
        form = form("signup", mode, None),
    );
    shell(
        StatusCode::OK,
        "Make a household on Hearth",
        "",
        &body,
        &["../passkeys/page.js", "signup.js"],
        Policy::Ceremony,
    )
}

async fn create(State(endpoint): State<Endpoint>, request: Request) -> Response {
    let ip = endpoint.gate.client_ip(&request);
    let bytes = match page_post_body(
        endpoint.signup.passkeys(),
        request,
        "application/json",
        BODY_LIMIT,
        ("invalid", "the sign-up form"),
    )
    .await
    {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let body = match json_body(&bytes) {
        Ok(body) => body,
        Err(error) => return failure(&error),
    };
    let text = |name: &str| body.get(name).and_then(Value::as_str).map(str::to_owned);
    let asked = SignupRequest {
        household_name: text("household_name").unwrap_or_default(),
        member_name: text("member_name").unwrap_or_default(),
        time_zone: text("time_zone"),
        invite: text("invite"),
    };
    match endpoint.signup.sign_up(ip, &asked).await {
        Ok(signed_up) => answer(
            StatusCode::CREATED,
            json!({
                "enrolment_url": signed_up.enrolment_url,
                "expires_at": signed_up.expires_at,
                "message": "Your household is made. Now create its first passkey.",
            }),
        ),
        Err(refusal) => refusal_response(&refusal),
    }
}

/// A refusal as JSON, with `Retry-After` when a limit refused it.
fn refusal_response(refusal: &SignupRefusal) -> Response {
    let (status, code, retry_after) = match refusal {
        SignupRefusal::Closed => (StatusCode::NOT_FOUND, "not_found", None),
        SignupRefusal::NeedsInvite => (StatusCode::FORBIDDEN, "invite_required", None),
        SignupRefusal::InviteUnusable => (StatusCode::GONE, "invite_unusable", None),
        SignupRefusal::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid", None),
        SignupRefusal::TooManyFromHere { retry_after_secs }
        | SignupRefusal::DayFull { retry_after_secs } => (
            StatusCode::TOO_MANY_REQUESTS,
            "too_many",
            Some(*retry_after_secs),
        ),
        SignupRefusal::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable", None),
    };
    let mut response = answer(
        status,
        json!({"error": code, "message": refusal.to_string()}),
    );
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
