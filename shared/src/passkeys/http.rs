//! The passkey routes, served by the MCP function (the local server serves them too):
//!
//! - `GET /passkeys/enrol/{token}`: the enrolment page; `POST …/options` gives the page its
//!   creation options, `POST /passkeys/enrol/{token}` takes the new credential.
//! - `GET /passkeys/confirm/{token}`: a guardian's page to let a later passkey in;
//!   `POST …/challenge` gives it the statement to sign, `POST /passkeys/confirm/{token}`
//!   takes the signed assertion.
//! - `GET /passkeys/approve/{token}`: the approval page of a request proposed without a
//!   device; `POST …/challenge` gives it the `hearth-approval/v1` statement to sign,
//!   `POST /passkeys/approve/{token}` takes the signed decision, which the purchase guard
//!   then applies.
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

use super::approvals::LinkTo;
use super::push::PushMessage;
use super::{Enrolled, PasskeyError, Passkeys, SigningRequest, check_statement, pages, statement};
use crate::countersign::CountersignService;
use crate::countersign::ledger::{ApprovalRecord, PasskeyDecision, Status};
use crate::countersign::notify::{EnrolmentNotice, Notifier};
use crate::countersign::service::{ApprovalView, PasskeyOutcome};
use crate::gate::{Gate, Refusal};
use crate::store::PasskeyItem;

/// The largest POST body: a WebAuthn answer is a few kilobytes.
pub const BODY_LIMIT: usize = 16 * 1024;

/// What the routes share: the passkeys, and the guardians' webhook when one is configured.
#[derive(Clone)]
pub struct Endpoint {
    passkeys: Arc<Passkeys>,
    notifier: Option<Arc<Notifier>>,
    countersign: Arc<CountersignService>,
}

/// The passkey routes, every one behind `gate` before any store read.
pub fn router(
    passkeys: Arc<Passkeys>,
    notifier: Option<Arc<Notifier>>,
    countersign: Arc<CountersignService>,
    gate: &Gate,
) -> Router {
    let base_path = passkeys.site().base_path();
    let routes = Router::new()
        .route("/passkeys/page.js", get(|| async { pages::script() }))
        .route(
            "/passkeys/sw.js",
            get(move || async move { pages::service_worker(&base_path) }),
        )
        .route("/passkeys/push/{token}", post(subscribe))
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
        .route(
            "/passkeys/approve/{token}",
            get(approval_page).post(approve),
        )
        .route(
            "/passkeys/approve/{token}/challenge",
            post(approval_challenge),
        )
        .layer(DefaultBodyLimit::max(BODY_LIMIT));
    crate::gate::limit(routes, gate, refused).with_state(Endpoint {
        passkeys,
        notifier,
        countersign,
    })
}

/// The gate's refusal as the pages answer: a page to a person opening a link, and the
/// pages' own JSON to their script, which shows its `message`.
pub fn refused(refusal: Refusal, request: &axum::extract::Request) -> Response {
    let status = refusal.status();
    if request.method() == http::Method::GET {
        let title = match refusal {
            Refusal::OriginNotAllowed => "This request was refused",
            _ => "Please wait",
        };
        return pages::notice(status, title, refusal.for_a_person());
    }
    answer(
        status,
        json!({"error": refusal.code(), "message": refusal.for_a_person()}),
    )
}

async fn enrolment_page(
    State(Endpoint { passkeys, .. }): State<Endpoint>,
    Path(token): Path<String>,
) -> Response {
    match passkeys.enrolment_view(&token).await {
        Ok(view) => pages::enrolment(
            &view.household_name,
            &view.member_name,
            view.needs_guardian,
            passkeys.push_key(),
        ),
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
    State(Endpoint {
        passkeys, notifier, ..
    }): State<Endpoint>,
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
            if let (Some(url), Some((household_id, _))) =
                (&enrolled.approval_url, token.split_once('.'))
            {
                passkeys
                    .push_to(
                        household_id,
                        |member| member.guardian,
                        PushMessage {
                            title: "Hearth".into(),
                            body: "A new passkey waits for a guardian's approval.".into(),
                            url: url.clone(),
                        },
                        Some(passkeys.household_view_url("members")),
                    )
                    .await;
            }
            answer(
                StatusCode::CREATED,
                json!({
                    "status": "pending",
                    "message": "Your passkey is created. A guardian approves it with their own passkey before it counts.",
                    "push_token": enrolled.push_token,
                }),
            )
        }
        Ok(enrolled) => {
            tracing::info!(target: "hearth::passkeys", "a passkey was enrolled");
            answer(
                StatusCode::CREATED,
                json!({
                    "status": "enrolled",
                    "message": "Your passkey is ready. When the assistant asks to buy something, Hearth sends this phone a page to approve or decline it.",
                    "push_token": enrolled.push_token,
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

async fn subscribe(
    State(Endpoint { passkeys, .. }): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let result = async {
        same_origin(&passkeys, &headers)?;
        passkeys.subscribe(&token, &json_body(&body)?).await
    };
    match result.await {
        Ok(()) => {
            tracing::info!(target: "hearth::passkeys", "a phone subscribed to notifications");
            answer(
                StatusCode::CREATED,
                json!({
                    "status": "subscribed",
                    "message": "This phone will be told when something waits for you.",
                }),
            )
        }
        Err(error) => failure(&error),
    }
}

async fn approval_page(
    State(Endpoint {
        passkeys,
        countersign,
        ..
    }): State<Endpoint>,
    Path(token): Path<String>,
) -> Response {
    let shown = async {
        let to = LinkTo::Token(&token);
        let (_, link) = passkeys.approval_link(to).await?;
        waiting_view(&countersign, to.household_id()?, &link.request_id).await
    };
    match shown.await {
        Ok(view) => pages::approval(&pages::OrderShown {
            household_name: &view.household_name,
            title: &view.order.title,
            variant: &view.order.variant,
            quantity: view.order.quantity,
            unit_price_cents: view.order.unit_price_cents,
            total_cents: view.order.total_cents,
            merchant: &view.order.merchant,
            new_merchant: view.new_merchant,
            spent_cents: view.spent_cents,
            budget_cents: view.budget_cents,
            listing_warning: view.listing_warning,
            approved_by: view.approved_by_name.as_deref(),
        }),
        Err(error) => problem_page(&error),
    }
}

async fn approval_challenge(
    State(Endpoint {
        passkeys,
        countersign,
        ..
    }): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let result = async {
        same_origin(&passkeys, &headers)?;
        let decision = decision_of(&field(&json_body(&body)?, "decision")?)?;
        decision_request(
            &passkeys,
            &countersign,
            LinkTo::Token(&token),
            decision,
            |_| true,
        )
        .await
    };
    match result.await {
        Ok(request) => answer(StatusCode::OK, json!(request)),
        Err(error) => failure(&error),
    }
}

async fn approve(
    State(Endpoint {
        passkeys,
        countersign,
        ..
    }): State<Endpoint>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let result = async {
        same_origin(&passkeys, &headers)?;
        decide(
            &passkeys,
            &countersign,
            LinkTo::Token(&token),
            &json_body(&body)?,
            |_| true,
        )
        .await
    };
    match result.await {
        Ok(outcome) => answer(
            StatusCode::OK,
            json!({"status": outcome.status, "message": outcome.message}),
        ),
        Err(error) => failure(&error),
    }
}

/// The `hearth-approval/v1` statement deciding the request of link `to`, with a fresh nonce,
/// and request options for the passkeys that may decide it and that `signer` allows (the
/// approval page allows every one; the household's page only the signed-in member's).
pub async fn decision_request(
    passkeys: &Passkeys,
    countersign: &CountersignService,
    to: LinkTo<'_>,
    decision: PasskeyDecision,
    signer: impl Fn(&PasskeyItem) -> bool,
) -> Result<SigningRequest, PasskeyError> {
    let (_, link) = passkeys.approval_link(to).await?;
    let view = waiting_view(countersign, to.household_id()?, &link.request_id).await?;
    passkeys
        .approval_request(to, decision.as_str(), &view.proposal_hash, |passkey| {
            view.deciders.contains(&passkey.member_id) && signer(passkey)
        })
        .await
}

/// Checks a signed decision (`{"decision", "statement", "credential"}`) on the request of
/// link `to`, uses its nonce up, and hands it to the purchase guard, which applies it with the
/// approver as the requester; a settled request's link closes.
pub async fn decide(
    passkeys: &Passkeys,
    countersign: &CountersignService,
    to: LinkTo<'_>,
    body: &Value,
    signer: impl Fn(&PasskeyItem) -> bool,
) -> Result<PasskeyOutcome, PasskeyError> {
    let decision = decision_of(&field(body, "decision")?)?;
    let Value::String(statement_text) = field(body, "statement")? else {
        return Err(PasskeyError::Invalid("statement must be a string".into()));
    };
    let credential = field(body, "credential")?;
    let (account, link) = passkeys.approval_link(to).await?;
    let household_id = account.household_id.clone();
    let view = waiting_view(countersign, &household_id, &link.request_id).await?;
    let nonce = link
        .nonce
        .clone()
        .filter(|nonce| nonce.decision == decision.as_str())
        .ok_or_else(|| PasskeyError::Invalid("Press Approve or Decline to start.".into()))?;
    let expected = statement::approval(
        &household_id,
        &link.request_id,
        &view.proposal_hash,
        decision.as_str(),
        &nonce.nonce,
    );
    check_statement(
        &statement_text,
        &expected,
        &nonce,
        crate::clock::unix_ms(passkeys.clock().now()),
    )?;
    let assertion = passkeys
        .check_signer(&account, &credential, &statement_text, |passkey| {
            view.deciders.contains(&passkey.member_id) && signer(passkey)
        })
        .await?;
    let approver = account
        .passkeys
        .iter()
        .find(|passkey| passkey.credential_id == assertion.credential_id)
        .map(|passkey| passkey.member_id.clone())
        .ok_or_else(|| {
            PasskeyError::Refused("That passkey is not one of this household's.".into())
        })?;
    passkeys
        .consume_approval(to, &nonce.nonce, &assertion)
        .await?;
    let outcome = countersign
        .decide_by_passkey(
            &household_id,
            &link.request_id,
            &approver,
            decision,
            ApprovalRecord {
                statement: statement_text,
                credential_id: assertion.credential_id.clone(),
                authenticator_data: assertion.authenticator_data.clone(),
                client_data_json: assertion.client_data_json.clone(),
                signature: assertion.signature.clone(),
            },
        )
        .await
        .map_err(refused_by_guard)?;
    if !outcome.status.is_waiting() {
        passkeys.close_link(to).await?;
    }
    tracing::info!(target: "hearth::passkeys", status = ?outcome.status, "a passkey decided an order");
    Ok(outcome)
}

/// The approval view of a request that still waits.
async fn waiting_view(
    countersign: &CountersignService,
    household_id: &str,
    request_id: &str,
) -> Result<ApprovalView, PasskeyError> {
    let view = countersign
        .approval_view(household_id, request_id)
        .await
        .map_err(refused_by_guard)?;
    if view.status != Status::WaitingForApproval {
        return Err(PasskeyError::Gone(format!(
            "This order is no longer waiting: it is {}.",
            view.status.spoken()
        )));
    }
    Ok(view)
}

pub fn decision_of(value: &Value) -> Result<PasskeyDecision, PasskeyError> {
    match value.as_str() {
        Some("approve") => Ok(PasskeyDecision::Approve),
        Some("decline") => Ok(PasskeyDecision::Decline),
        _ => Err(PasskeyError::Invalid(
            "decision must be approve or decline".into(),
        )),
    }
}

/// The purchase guard's refusal, for the page: what it says a person can do.
fn refused_by_guard(error: crate::countersign::service::CountersignError) -> PasskeyError {
    match &error {
        crate::countersign::service::CountersignError::Refused(_) => {
            PasskeyError::Refused(error.say())
        }
        crate::countersign::service::CountersignError::Ledger(_) => {
            PasskeyError::Unavailable(error.say())
        }
    }
}

/// Tells the guardians' webhook a passkey waits, before answering ([`Notifier::deliver`]);
/// if it is not delivered, the approval link stays in `passkey list`.
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
    notifier.deliver(&notice).await;
}

/// A POST must come from the pages' origin: another site's script cannot drive a ceremony.
pub fn same_origin(passkeys: &Passkeys, headers: &HeaderMap) -> Result<(), PasskeyError> {
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

/// What a page posts from its own origin: the body, at most `max` bytes of `media_type`, or
/// the JSON refusal (403 from elsewhere, 415, 413) whose `error` is `code` and whose words
/// name `what` was sent.
pub async fn page_post_body(
    passkeys: &Passkeys,
    request: axum::extract::Request,
    media_type: &str,
    max: usize,
    (code, what): (&str, &str),
) -> Result<axum::body::Bytes, Response> {
    same_origin(passkeys, request.headers()).map_err(|error| failure(&error))?;
    let refused = |status: StatusCode, message: String| {
        answer(status, json!({"error": code, "message": message}))
    };
    if !crate::media::has_media_type(request.headers(), media_type) {
        return Err(refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Send {what} as {media_type}."),
        ));
    }
    let (parts, body) = request.into_parts();
    crate::media::read_body(&parts.headers, body, max)
        .await
        .ok_or_else(|| {
            refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("This is longer than {max} bytes, too long for {what}."),
            )
        })
}

pub fn json_body(body: &[u8]) -> Result<Value, PasskeyError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => Err(PasskeyError::Invalid(
            "the body must be a JSON object".into(),
        )),
    }
}

pub fn field(body: &Value, name: &str) -> Result<Value, PasskeyError> {
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
        PasskeyError::TooMany(..) => (StatusCode::TOO_MANY_REQUESTS, "too_many_requests"),
        PasskeyError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    }
}

/// What the person is told: a link that never worked reads like one that stopped working,
/// so a page does not reveal which households exist.
fn message(error: &PasskeyError) -> String {
    match error {
        PasskeyError::NotFound(_) => LINK_DOES_NOT_WORK.to_owned(),
        other => other.to_string(),
    }
}

/// What every link that does not work says, whatever the reason.
const LINK_DOES_NOT_WORK: &str = "This link does not work: it was used, its time ran out, or it was never right. If you still need it, ask the assistant again, or ask whoever runs Hearth for a new one.";

pub fn failure(error: &PasskeyError) -> Response {
    let (status, code) = status_of(error);
    if status.is_server_error() {
        tracing::warn!(target: "hearth::passkeys", code, "a passkey request failed");
    }
    let mut response = answer(status, json!({"error": code, "message": message(error)}));
    if let PasskeyError::TooMany(_, seconds) = error {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, http::HeaderValue::from(*seconds));
    }
    response
}

fn problem_page(error: &PasskeyError) -> Response {
    pages::problem(status_of(error).0, &message(error))
}

pub fn answer(status: StatusCode, body: Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    pages::secure_headers(response.headers_mut());
    response
}
