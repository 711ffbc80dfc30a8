//! The passkey routes, served by the MCP function (the local server serves them too):
//!
//! - `GET /passkeys/enrol/{token}`: the enrolment page; `POST …/options` gives the page its
//!   creation options, `POST /passkeys/enrol/{token}` takes the new credential.
//! - `GET /passkeys/confirm/{token}`: a guardian's page to let a later passkey in;
//!   `POST …/challenge` gives it the statement to sign, `POST /passkeys/confirm/{token}`
//!   takes the signed assertion.
//! - `GET /passkeys/page.js`: the pages' script.
//!
//! Every POST must come from the pages' own origin (`Origin` is compared exactly) and carry
//! at most [`BODY_LIMIT`] bytes of JSON. Answers are `{"status", "message"}` or
//! `{"error", "message"}`; the message is for the person holding the phone.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{StatusCode, header};
use serde_json::{Value, json};

use super::{Enrolled, PasskeyError, Passkeys, pages};
use crate::countersign::notify::{ENROLMENT_NOTIFY_BUDGET, EnrolmentNotice, Notifier};

/// The largest POST body: a WebAuthn answer is a few kilobytes.
pub const BODY_LIMIT: usize = 16 * 1024;

/// What the routes share: the passkeys, and the guardians' webhook when one is configured.
#[derive(Clone)]
pub struct Endpoint {
    passkeys: Arc<Passkeys>,
    notifier: Option<Arc<Notifier>>,
}

pub fn router(passkeys: Arc<Passkeys>, notifier: Option<Arc<Notifier>>) -> Router {
    Router::new()
        .route("/passkeys/page.js", get(|| async { pages::script() }))
        .route("/passkeys/enrol/{token}", get(enrolment_page).post(enrol))
        .route("/passkeys/enrol/{token}/options", post(creation_options))
        .route(
            "/passkeys/confirm/{token}",
            get(confirmation_page).post(confirm),
        )
        .route(
            "/passkeys/confirm/{token}/challenge",
            post(confirmation_challenge),
        )
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(Endpoint { passkeys, notifier })
}

async fn enrolment_page(
    State(Endpoint { passkeys, .. }): State<Endpoint>,
    Path(token): Path<String>,
) -> Response {
    match passkeys.enrolment_view(&token).await {
        Ok(view) => pages::enrolment(&view.household_name, &view.member_name, view.needs_guardian),
        Err(error) => problem_page(&error),
    }
}

async fn confirmation_page(
    State(Endpoint { passkeys, .. }): State<Endpoint>,
    Path(token): Path<String>,
) -> Response {
    match passkeys.confirmation_view(&token).await {
        Ok(view) => pages::confirmation(&view.household_name, &view.member_name),
        Err(error) => problem_page(&error),
    }
}

async fn creation_options(
    State(Endpoint { passkeys, .. }): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Err(error) = same_origin(&passkeys, &headers).and_then(|()| json_body(&body)) {
        return failure(&error);
    }
    match passkeys.creation_options(&token).await {
        Ok(options) => answer(StatusCode::OK, options),
        Err(error) => failure(&error),
    }
}

async fn enrol(
    State(Endpoint { passkeys, notifier }): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let credential = match same_origin(&passkeys, &headers)
        .and_then(|()| json_body(&body))
        .and_then(|body| field(&body, "credential"))
    {
        Ok(credential) => credential,
        Err(error) => return failure(&error),
    };
    match passkeys.enrol(&token, &credential).await {
        Ok(enrolled) if enrolled.pending => {
            tracing::info!(target: "hearth::passkeys", "a passkey was enrolled and waits for a guardian");
            if let Some(notifier) = &notifier {
                announce(&passkeys, notifier, &token, &enrolled).await;
            }
            answer(
                StatusCode::CREATED,
                json!({
                    "status": "pending",
                    "message": "Your passkey is created. A guardian approves it with their own passkey before it counts.",
                }),
            )
        }
        Ok(_) => {
            tracing::info!(target: "hearth::passkeys", "a passkey was enrolled");
            answer(
                StatusCode::CREATED,
                json!({
                    "status": "enrolled",
                    "message": "Your passkey is ready. When the assistant asks to buy something, Hearth sends this phone a page to approve or decline it.",
                }),
            )
        }
        Err(error) => failure(&error),
    }
}

async fn confirmation_challenge(
    State(Endpoint { passkeys, .. }): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let decision = same_origin(&passkeys, &headers)
        .and_then(|()| json_body(&body))
        .and_then(|body| field(&body, "decision"));
    match decision {
        Ok(Value::String(decision)) if decision == "approve" => {}
        Ok(_) => {
            return failure(&PasskeyError::Invalid(
                "a new passkey can only be approved here".into(),
            ));
        }
        Err(error) => return failure(&error),
    }
    match passkeys.confirmation_request(&token).await {
        Ok(request) => answer(StatusCode::OK, json!(request)),
        Err(error) => failure(&error),
    }
}

async fn confirm(
    State(Endpoint { passkeys, .. }): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let parts = same_origin(&passkeys, &headers)
        .and_then(|()| json_body(&body))
        .and_then(|body| Ok((field(&body, "statement")?, field(&body, "credential")?)));
    let (statement, credential) = match parts {
        Ok((Value::String(statement), credential)) => (statement, credential),
        Ok(_) => return failure(&PasskeyError::Invalid("statement must be a string".into())),
        Err(error) => return failure(&error),
    };
    match passkeys.confirm(&token, &statement, &credential).await {
        Ok(_) => {
            tracing::info!(target: "hearth::passkeys", "a guardian approved a new passkey");
            answer(
                StatusCode::OK,
                json!({
                    "status": "approved",
                    "message": "Approved. The new passkey can now approve orders.",
                }),
            )
        }
        Err(error) => failure(&error),
    }
}

/// Tells the guardians a passkey waits, before answering: under Lambda a task left running
/// after the answer may be frozen, and the link with it. A receiver slower than
/// [`ENROLMENT_NOTIFY_BUDGET`] is a warning; the approval link stays in `passkey list`.
async fn announce(passkeys: &Passkeys, notifier: &Notifier, token: &str, enrolled: &Enrolled) {
    let (Some(approval_url), Some((household_id, _))) =
        (&enrolled.approval_url, token.split_once('.'))
    else {
        return;
    };
    let notice = EnrolmentNotice {
        kind: "passkey_enrolment",
        household_id: household_id.to_owned(),
        requester_role: Some(enrolled.member_role.clone()).filter(|role| !role.is_empty()),
        approval_url: approval_url.clone(),
        sent_at: passkeys.clock().now().unix_timestamp(),
    };
    match tokio::time::timeout(ENROLMENT_NOTIFY_BUDGET, notifier.post(&notice)).await {
        Ok(Ok(())) => {}
        Ok(Err(failure)) => {
            tracing::warn!(target: "hearth::passkeys", %failure, "guardian notification not delivered");
        }
        Err(_) => {
            tracing::warn!(target: "hearth::passkeys", "guardian notification not delivered in time");
        }
    }
}

/// A POST must come from the pages' origin: another site's script cannot drive a ceremony.
fn same_origin(passkeys: &Passkeys, headers: &HeaderMap) -> Result<(), PasskeyError> {
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok());
    if origin == Some(passkeys.site().site.origin.as_str()) {
        Ok(())
    } else {
        Err(PasskeyError::Refused(
            "This can only be done from Hearth's own page.".into(),
        ))
    }
}

fn json_body(body: &[u8]) -> Result<Value, PasskeyError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => Err(PasskeyError::Invalid(
            "the body must be a JSON object".into(),
        )),
    }
}

fn field(body: &Value, name: &str) -> Result<Value, PasskeyError> {
    body.get(name)
        .cloned()
        .ok_or_else(|| PasskeyError::Invalid(format!("the body has no {name}")))
}

fn status_of(error: &PasskeyError) -> (StatusCode, &'static str) {
    match error {
        PasskeyError::NotFound(_) => (StatusCode::GONE, "gone"),
        PasskeyError::Gone(_) => (StatusCode::GONE, "gone"),
        PasskeyError::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
        PasskeyError::Refused(_) => (StatusCode::FORBIDDEN, "refused"),
        PasskeyError::Full(_) => (StatusCode::CONFLICT, "limit_reached"),
        PasskeyError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    }
}

/// What the person is told: a link that never worked reads like one that stopped working,
/// so a page does not reveal which households exist.
fn message(error: &PasskeyError) -> String {
    match error {
        PasskeyError::NotFound(_) => {
            "This link is not valid or no longer works. Ask whoever runs Hearth for a new one."
                .to_owned()
        }
        other => other.to_string(),
    }
}

fn failure(error: &PasskeyError) -> Response {
    let (status, code) = status_of(error);
    if status.is_server_error() {
        tracing::warn!(target: "hearth::passkeys", code, "a passkey request failed");
    }
    answer(status, json!({"error": code, "message": message(error)}))
}

fn problem_page(error: &PasskeyError) -> Response {
    pages::problem(status_of(error).0, &message(error))
}

fn answer(status: StatusCode, body: Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    pages::secure_headers(response.headers_mut());
    response
}
