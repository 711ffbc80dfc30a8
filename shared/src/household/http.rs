//! The household page's routes, served by the MCP function (and the local server):
//!
//! - `GET /household`: the page. Signed out, `Sign in with a passkey`; signed in, the view
//!   its `view` query names (`today`, the default, `why` with `q` to search, `orders`,
//!   `waiting`, `members`, `devices`, `assistants`, `rules`).
//! - `GET /household/page.js`: the page's script (over the passkey pages' `page.js`), and
//!   `GET /household/check.js`: its check of the history it shows, on the phone (over the demo
//!   device's `canonical.js` and `tlog.js`).
//! - `GET /household/manifest.webmanifest` and `GET /household/icon.svg`: what installs the
//!   page to a home screen. The passkey pages' service worker (`/passkeys/sw.js`, served with
//!   `Service-Worker-Allowed`) controls it: it shows pushes and caches nothing.
//! - `GET /household/log/{log}` (`decisions` or `ledger`): the log's retained records, each
//!   with its inclusion proof, and its signed checkpoint; `GET
//!   /household/log/{log}/history?from_size=N`: the checkpoint now and the consistency proof
//!   from the tree of `N` entries. The page's script checks both on the phone, against the
//!   keys and witness policy it pinned (see [`super::evidence`]).
//! - `POST /household/push`: subscribes the signed-in phone to Web Push
//!   (`PushSubscription.toJSON()`); what waits then opens on this page.
//! - `POST /household/sign-in/options`: a sign-in challenge's request options.
//! - `POST /household/sign-in`: the assertion (`{"credential"}`); sets the session cookie.
//! - `POST /household/sign-out`: ends the session on the server and clears the cookie.
//! - `POST /household/decide/{request_id}/challenge`: the `hearth-approval/v1` statement
//!   deciding a waiting order for `{"decision"}`, for the signed-in member's passkeys;
//!   `POST /household/decide/{request_id}` takes the signed decision. Both are the approval
//!   page's own steps ([`crate::passkeys::http::decision_request`] and
//!   [`crate::passkeys::http::decide`]), found by the request instead of a link's token.
//!
//! - `POST /household/act/challenge`: a guardian's `{"action", "target"}`; answers the
//!   `hearth-household-action/v1` statement to sign and its request options (see
//!   [`super::actions`]); `POST /household/act` takes the signed statement and does it.
//!
//! Every POST must come from the page's own origin (`Origin` compared exactly); one with a
//! session must also carry its CSRF token in `X-Hearth-CSRF`. Every route goes through the
//! gate before any store read. The cookie is `__Host-hearth_session` (Secure, HttpOnly,
//! SameSite=Strict, Path=/) where the pages are served over https, and `hearth_session`
//! without Secure on loopback http, since browsers drop a `__Host-` cookie that is not Secure.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use super::actions::Action;
use super::pages::{self, Paths};
use super::sessions::SESSION_MAX_MS;
use super::{HouseholdPage, PageError, Visitor};
use crate::gate::Gate;
use crate::html::static_asset;
use crate::passkeys::PasskeyError;
use crate::passkeys::approvals::LinkTo;
use crate::passkeys::http::{
    BODY_LIMIT, answer, decision_of, failure, field, json_body, refused, same_origin,
};
use crate::passkeys::sign_in::{Purpose, SignInRefusal};
use crate::transparency::LogKind;

/// The page's script.
const SCRIPT: &str = include_str!("page.js");
/// The page's check of its history on the phone (over the demo device's verification code).
const CHECK: &str = include_str!("check.js");

/// The session cookie's name over https.
pub const SECURE_COOKIE: &str = "__Host-hearth_session";
/// The session cookie's name on loopback http.
pub const LOOPBACK_COOKIE: &str = "hearth_session";
/// The header a signed-in page sends its CSRF token in.
pub const CSRF_HEADER: &str = "x-hearth-csrf";

#[derive(Clone)]
struct Endpoint {
    page: Arc<HouseholdPage>,
    paths: Arc<Paths>,
}

impl Endpoint {
    fn secure(&self) -> bool {
        self.page
            .passkeys()
            .site()
            .site
            .origin
            .starts_with("https://")
    }

    fn cookie_name(&self) -> &'static str {
        if self.secure() {
            SECURE_COOKIE
        } else {
            LOOPBACK_COOKIE
        }
    }

    /// The session id the request's cookie carries, if any.
    fn session_id(&self, headers: &HeaderMap) -> Option<String> {
        let wanted = self.cookie_name();
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == wanted)
            .map(|(_, value)| value.to_owned())
    }

    fn set_cookie(&self, response: &mut Response, id: &str, max_age_secs: i64) {
        let secure = if self.secure() { "; Secure" } else { "" };
        let cookie = format!(
            "{}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}{secure}",
            self.cookie_name()
        );
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }

    /// The signed-in visitor of this request, if its session stands.
    async fn visitor(&self, headers: &HeaderMap) -> Result<Option<Visitor>, PageError> {
        match self.session_id(headers) {
            Some(id) => self.page.visitor(&id).await,
            None => Ok(None),
        }
    }
}

/// The household page's routes, every one behind `gate` before any store read.
pub fn router(page: Arc<HouseholdPage>, gate: &Gate) -> Router {
    let base_path = page.passkeys().site().base_path();
    let routes = Router::new()
        .route("/household", get(show))
        .route("/household/page.js", get(|| async { script() }))
        .route("/household/check.js", get(|| async { check_script() }))
        .route("/household/manifest.webmanifest", get(manifest))
        .route("/household/icon.svg", get(|| async { icon() }))
        .route("/household/log/{log}", get(log_evidence))
        .route("/household/log/{log}/history", get(log_history))
        .route("/household/push", post(subscribe))
        .route("/household/sign-in/options", post(sign_in_options))
        .route("/household/sign-in", post(sign_in))
        .route("/household/sign-out", post(sign_out))
        .route(
            "/household/decide/{request_id}/challenge",
            post(decision_challenge),
        )
        .route("/household/decide/{request_id}", post(decide))
        .route("/household/act/challenge", post(action_challenge))
        .route("/household/act", post(act))
        .layer(DefaultBodyLimit::max(BODY_LIMIT));
    let paths = Arc::new(Paths {
        base_path,
        push_key: page.passkeys().push_key().map(str::to_owned),
    });
    crate::gate::limit(routes, gate, refused).with_state(Endpoint { page, paths })
}

/// The household page's web app manifest: it opens the page standalone, within its own path.
async fn manifest(State(endpoint): State<Endpoint>) -> Response {
    let base = &endpoint.paths.base_path;
    let manifest = serde_json::to_string_pretty(&json!({
        "name": "Hearth: your household",
        "short_name": "Hearth",
        "description": "What the assistant did and why, what it bought, and what waits for you.",
        "start_url": format!("{base}/household"),
        "scope": format!("{base}/household"),
        "display": "standalone",
        "background_color": "#f6f4ef",
        "theme_color": "#3d5a40",
        "icons": [{
            "src": format!("{base}/household/icon.svg"),
            "sizes": "any",
            "type": "image/svg+xml",
            "purpose": "any",
        }],
    }))
    .unwrap_or_default();
    static_asset(manifest, "application/manifest+json")
}

/// The page's icon: a hearth's flame in a house, in the page's colours.
const ICON: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 512 512"><rect width="512" height="512" rx="96" fill="#3d5a40"/><path d="M256 88 432 232v192H80V232z" fill="#f6f4ef"/><path d="M256 196c40 48 72 86 72 132a72 72 0 0 1-144 0c0-30 16-54 36-74 4 26 14 40 30 46-8-40 0-72 6-104z" fill="#a36a00"/></svg>"##;

fn icon() -> Response {
    static_asset(ICON, "image/svg+xml")
}

async fn subscribe(
    State(endpoint): State<Endpoint>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Response> {
    let visitor = signed_in_change(&endpoint, &headers, &body).await?;
    let result = async {
        let body = json_body(&body)?;
        let session = visitor.session();
        endpoint
            .page
            .passkeys()
            .subscribe_household_page(&session.household_id, &session.credential_id, &body)
            .await
    };
    let subscribed = result.await.map(|()| {
        tracing::info!(target: "hearth::household", "a phone subscribed to notifications from the household page");
        json!({"status": "subscribed", "message": "This phone will be told when something waits for you, and it opens here."})
    });
    Ok(reply(subscribed, StatusCode::CREATED))
}

/// A signed-in member's read of `log`: the visitor, or the JSON refusal.
async fn signed_in_read(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    log: &str,
) -> Result<(Visitor, LogKind), Response> {
    let visitor = match endpoint.visitor(headers).await {
        Ok(Some(visitor)) => visitor,
        Ok(None) => return Err(signed_out()),
        Err(error) => return Err(failure(&PasskeyError::Unavailable(error.to_string()))),
    };
    let kind = LogKind::parse(log).ok_or_else(|| {
        answer(
            StatusCode::NOT_FOUND,
            json!({"error": "not_found", "message": "A household keeps two logs: decisions and ledger."}),
        )
    })?;
    Ok((visitor, kind))
}

/// What a read of the evidence answers when it failed.
fn evidence_failure(error: PageError) -> Response {
    let (status, code) = match &error {
        PageError::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid"),
        PageError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        // The stored records disagree with their own signed log: the request was fine, the
        // history is not.
        PageError::Broken(_) => (StatusCode::CONFLICT, "untrusted_history"),
    };
    answer(status, json!({"error": code, "message": error.to_string()}))
}

async fn log_evidence(
    State(endpoint): State<Endpoint>,
    Path(log): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let (visitor, kind) = signed_in_read(&endpoint, &headers, &log).await?;
    let evidence = endpoint
        .page
        .evidence(&visitor, kind)
        .await
        .map_err(evidence_failure)?;
    Ok(answer(StatusCode::OK, json!(evidence)))
}

async fn log_history(
    State(endpoint): State<Endpoint>,
    Path(log): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Response> {
    let (visitor, kind) = signed_in_read(&endpoint, &headers, &log).await?;
    let from_size = query
        .get("from_size")
        .and_then(|size| size.parse::<u64>().ok())
        .ok_or_else(|| {
            answer(
                StatusCode::BAD_REQUEST,
                json!({"error": "invalid", "message": "from_size must be the number of entries in the checkpoint this phone kept."}),
            )
        })?;
    let history = endpoint
        .page
        .history(&visitor, kind, from_size)
        .await
        .map_err(evidence_failure)?;
    Ok(answer(StatusCode::OK, json!(history)))
}

fn script() -> Response {
    static_asset(SCRIPT, "text/javascript; charset=utf-8")
}

fn check_script() -> Response {
    static_asset(CHECK, "text/javascript; charset=utf-8")
}

async fn show(
    State(endpoint): State<Endpoint>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let paths = &endpoint.paths;
    let had_cookie = endpoint.session_id(&headers).is_some();
    let visitor = match endpoint.visitor(&headers).await {
        Ok(Some(visitor)) => visitor,
        Ok(None) if had_cookie => {
            let mut response =
                pages::sign_in(paths, Some("Your session ended. Sign in again to go on."));
            endpoint.set_cookie(&mut response, "", 0);
            return response;
        }
        Ok(None) => return pages::sign_in(paths, None),
        Err(error) => {
            return crate::passkeys::pages::notice(
                StatusCode::SERVICE_UNAVAILABLE,
                "Please wait",
                &error.to_string(),
            );
        }
    };
    let page = &endpoint.page;
    let view = query.get("view").map_or("today", String::as_str);
    let names = page.members(&visitor);
    let shown: Result<Response, (&str, &str, PageError)> = match view {
        "today" => page
            .today(&visitor)
            .await
            .map(|today| pages::today(paths, &visitor, &today, &names))
            .map_err(|error| ("today", "Today", error)),
        "why" => {
            let words = query.get("q").map_or("", |q| q.trim());
            page.decisions(&visitor, Some(words))
                .await
                .map(|decisions| pages::why(paths, &visitor, &decisions, words))
                .map_err(|error| ("why", "Why", error))
        }
        "orders" => page
            .orders(&visitor)
            .await
            .map(|orders| pages::orders(paths, &visitor, &orders, &names))
            .map_err(|error| ("orders", "Orders", error)),
        "waiting" => page
            .waiting(&visitor)
            .await
            .map(|requests| pages::waiting(paths, &visitor, &requests, &names))
            .map_err(|error| ("waiting", "Waiting", error)),
        "members" => page
            .passkeys()
            .list(&visitor.account.household_id)
            .await
            .map(|passkeys| pages::members(paths, &visitor, &names, &passkeys))
            .map_err(|error| ("members", "Members", PageError::from(error))),
        "devices" => Ok(pages::devices(paths, &visitor)),
        "assistants" => page
            .assistants(&visitor)
            .await
            .map(|linked| {
                let account = &visitor.account;
                let complete = account.links_complete || !account.is_linked();
                pages::assistants(paths, &visitor, &linked, complete)
            })
            .map_err(|error| ("assistants", "Assistants", error)),
        "rules" => page
            .rules(&visitor)
            .await
            .map(|rules| pages::rules(paths, &visitor, &rules, &names))
            .map_err(|error| ("rules", "Rules", error)),
        _ => {
            return crate::passkeys::pages::notice(
                StatusCode::NOT_FOUND,
                "No such page",
                "This part of the household page does not exist. Open Today from the menu.",
            );
        }
    };
    match shown {
        Ok(response) => response,
        Err((view, title, error)) => {
            let mut response = pages::trouble(paths, &visitor, view, title, &error.to_string());
            *response.status_mut() = match error {
                PageError::Invalid(_) => StatusCode::BAD_REQUEST,
                PageError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                // The page shows why the records cannot be trusted; the request itself worked.
                PageError::Broken(_) => StatusCode::OK,
            };
            response
        }
    }
}

async fn sign_in_options(
    State(endpoint): State<Endpoint>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let passkeys = endpoint.page.passkeys();
    if let Err(error) = same_origin(passkeys, &headers).and_then(|()| json_body(&body)) {
        return failure(&error);
    }
    match passkeys.sign_in_options(Purpose::HouseholdPage).await {
        Ok(options) => answer(StatusCode::OK, options),
        Err(error) => failure(&error),
    }
}

async fn sign_in(
    State(endpoint): State<Endpoint>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let credential = match same_origin(endpoint.page.passkeys(), &headers)
        .and_then(|()| json_body(&body))
        .and_then(|body| field(&body, "credential"))
    {
        Ok(credential) => credential,
        Err(error) => return failure(&error),
    };
    match endpoint.page.sign_in(&credential).await {
        Ok((id, _)) => {
            tracing::info!(target: "hearth::household", "a member signed in to the household page");
            let mut response = answer(
                StatusCode::OK,
                json!({"status": "signed_in", "message": "Signed in."}),
            );
            endpoint.set_cookie(&mut response, &id, SESSION_MAX_MS / 1000);
            response
        }
        Err(SignInRefusal::Failed(error)) => failure(&error),
        Err(refusal) => {
            let (status, code) = match refusal {
                SignInRefusal::Unknown => (StatusCode::FORBIDDEN, "unknown_passkey"),
                SignInRefusal::Revoked => (StatusCode::FORBIDDEN, "revoked_passkey"),
                SignInRefusal::Pending => (StatusCode::FORBIDDEN, "pending_passkey"),
                SignInRefusal::Suspect => (StatusCode::FORBIDDEN, "suspect_passkey"),
                SignInRefusal::Stale | SignInRefusal::Failed(_) => {
                    (StatusCode::BAD_REQUEST, "expired_challenge")
                }
                SignInRefusal::OtherRequest => (StatusCode::BAD_REQUEST, "other_request"),
            };
            tracing::info!(target: "hearth::household", code, "a household page sign-in was refused");
            answer(
                status,
                json!({"error": code, "message": refusal.to_string()}),
            )
        }
    }
}

async fn sign_out(
    State(endpoint): State<Endpoint>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Response> {
    let visitor = signed_in_change(&endpoint, &headers, &body).await?;
    if let Err(error) = endpoint.page.sign_out(&visitor).await {
        return Err(failure(&PasskeyError::Unavailable(error.to_string())));
    }
    let mut response = answer(
        StatusCode::OK,
        json!({"status": "signed_out", "message": "Signed out."}),
    );
    endpoint.set_cookie(&mut response, "", 0);
    Ok(response)
}

async fn decision_challenge(
    State(endpoint): State<Endpoint>,
    Path(request_id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Response> {
    let visitor = signed_in_change(&endpoint, &headers, &body).await?;
    let result = async {
        let body = json_body(&body)?;
        let decision = decision_of(&field(&body, "decision")?)?;
        endpoint.page.may_decide(&visitor, &request_id).await?;
        crate::passkeys::http::decision_request(
            endpoint.page.passkeys(),
            endpoint.page.countersign(),
            LinkTo::Request {
                household_id: &visitor.account.household_id,
                request_id: &request_id,
            },
            decision,
            |passkey| passkey.member_id == visitor.member.id,
        )
        .await
    };
    Ok(reply(result.await, StatusCode::OK))
}

async fn decide(
    State(endpoint): State<Endpoint>,
    Path(request_id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Response> {
    let visitor = signed_in_change(&endpoint, &headers, &body).await?;
    let result = async {
        let body = json_body(&body)?;
        crate::passkeys::http::decide(
            endpoint.page.passkeys(),
            endpoint.page.countersign(),
            LinkTo::Request {
                household_id: &visitor.account.household_id,
                request_id: &request_id,
            },
            &body,
            |passkey| passkey.member_id == visitor.member.id,
        )
        .await
    };
    let said = result
        .await
        .map(|outcome| json!({"status": outcome.status, "message": outcome.message}));
    Ok(reply(said, StatusCode::OK))
}

async fn action_challenge(
    State(endpoint): State<Endpoint>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Response> {
    let visitor = signed_in_change(&endpoint, &headers, &body).await?;
    let result = async {
        let body = json_body(&body)?;
        let action = match field(&body, "action")? {
            serde_json::Value::String(name) => Action::parse(&name)?,
            _ => return Err(PasskeyError::Invalid("action must be a string".into())),
        };
        let serde_json::Value::String(target) = field(&body, "target")? else {
            return Err(PasskeyError::Invalid("target must be a string".into()));
        };
        endpoint.page.ask(&visitor, action, &target).await
    };
    Ok(reply(result.await, StatusCode::OK))
}

async fn act(
    State(endpoint): State<Endpoint>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Response> {
    let visitor = signed_in_change(&endpoint, &headers, &body).await?;
    let result = async {
        let body = json_body(&body)?;
        let serde_json::Value::String(statement) = field(&body, "statement")? else {
            return Err(PasskeyError::Invalid("statement must be a string".into()));
        };
        let credential = field(&body, "credential")?;
        endpoint.page.act(&visitor, &statement, &credential).await
    };
    Ok(reply(result.await, StatusCode::OK))
}

/// A change's answer: `answered` as JSON with `status`, or the refusal the page shows.
fn reply<T: serde::Serialize>(answered: Result<T, PasskeyError>, status: StatusCode) -> Response {
    match answered {
        Ok(body) => answer(status, json!(body)),
        Err(error) => failure(&error),
    }
}

/// The checks every change by a signed-in member passes: the page's own origin, a session
/// that stands, and that session's CSRF token. Answers the visitor, or the refusal to send.
async fn signed_in_change(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Visitor, Response> {
    same_origin(endpoint.page.passkeys(), headers)
        .and_then(|()| json_body(body))
        .map_err(|error| failure(&error))?;
    let visitor = match endpoint.visitor(headers).await {
        Ok(Some(visitor)) => visitor,
        Ok(None) => return Err(signed_out()),
        Err(error) => return Err(failure(&PasskeyError::Unavailable(error.to_string()))),
    };
    let token = headers
        .get(CSRF_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if !visitor.session().allows(token) {
        return Err(answer(
            StatusCode::FORBIDDEN,
            json!({"error": "refused", "message": "This can only be done from the household page itself. Reload it and try again."}),
        ));
    }
    Ok(visitor)
}

fn signed_out() -> Response {
    answer(
        StatusCode::UNAUTHORIZED,
        json!({"error": "signed_out", "message": "Your session ended. Reload the page and sign in again."}),
    )
}
