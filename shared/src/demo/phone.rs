//! The demo's phone beside the speaker: what a household does when its host signs nothing.
//!
//! Alexa+, Claude and ChatGPT send no device signature, so Hearth takes their orders from a
//! household token and waits for a member's passkey on a phone. The page plays both parts:
//!
//! - `POST /demo/host` answers `{"access_token", "expires_in"}`, a household token (the
//!   scopes `hearth admin token` grants) for the page's "host that signs nothing";
//! - `POST /demo/phone` with `{"member_id"}` answers `{"url", "expires_at"}`, a passkey invite
//!   for that member, as `hearth admin passkey invite` prints it.
//!
//! Both act on the demo's host household: an account with the configured household's rules,
//! named after it with [`HOST_HOUSEHOLD_SUFFIX`], created on first use and found again by
//! that name after a restart. It is not the configured household the speaker's signed turns
//! act on (a credential's data lives under its own scope), so its ledger is its own.
//!
//! Like `POST /demo/device`, these exist only with `HEARTH_DEMO_DEVICE=1`, which configuration
//! refuses under Lambda, and need a valid bearer token that names no household (the page's
//! session): anyone holding one can mint a household token and enrol a passkey for any member
//! of the demo household. The name is the only mark of the host household, so an account an
//! operator names the same way is taken for it.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};

use crate::accounts::{AccountError, Accounts, new_household_id};
use crate::auth::Authenticator;
use crate::auth::jwt::{JwtKeys, TOKEN_LIFETIME_SECS};
use crate::auth::scope::Scopes;
use crate::clock::Clock;
use crate::countersign::household::HouseholdData;
use crate::gate::Gate;
use crate::json_endpoint::{admit, error};
use crate::passkeys::{PasskeyError, Passkeys};
use crate::telemetry::{RequestLog, request_id};

/// What the host household's name adds to the configured household's.
pub const HOST_HOUSEHOLD_SUFFIX: &str = " (demo)";

/// The largest body either route reads.
const MAX_BODY_BYTES: usize = 1024;

pub struct PhoneEndpoint {
    auth: Authenticator,
    gate: Gate,
    accounts: Arc<Accounts>,
    passkeys: Passkeys,
    jwt: Option<JwtKeys>,
    household: Arc<HouseholdData>,
    clock: Arc<dyn Clock>,
    /// The host household's id once found or created; the lock makes two first calls create
    /// one household, not two.
    host_household: tokio::sync::Mutex<Option<String>>,
}

/// Why a demo phone request failed: the status and a sentence for the page.
type Failure = (StatusCode, String);

impl PhoneEndpoint {
    pub fn new(
        auth: Authenticator,
        gate: Gate,
        accounts: Arc<Accounts>,
        passkeys: Passkeys,
        jwt: Option<JwtKeys>,
        household: Arc<HouseholdData>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            auth,
            gate,
            accounts,
            passkeys,
            jwt,
            household,
            clock,
            host_household: tokio::sync::Mutex::new(None),
        }
    }

    fn host_name(&self) -> String {
        format!("{}{HOST_HOUSEHOLD_SUFFIX}", self.household.household.name)
    }

    /// The host household's id: remembered (while it still exists: an operator may delete
    /// it), found by its name, or created with the configured household's rules.
    async fn host_household(&self) -> Result<String, Failure> {
        let mut known = self.host_household.lock().await;
        if let Some(id) = known.clone() {
            match self.accounts.get(&id).await {
                Ok(_) => return Ok(id),
                Err(AccountError::NotFound(_)) => *known = None,
                Err(error) => return Err(account_failure(error)),
            }
        }
        let name = self.host_name();
        let existing = self
            .accounts
            .list()
            .await
            .map_err(account_failure)?
            .into_iter()
            .find(|account| account.name == name);
        let id = match existing {
            Some(account) => account.household_id,
            None => {
                let id = new_household_id();
                let policy = self.household.policy_for(&id, &name).map_err(|_| {
                    (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the configured household's rules could not be copied".to_owned(),
                    )
                })?;
                self.accounts
                    .create(&id, &name, Some(policy))
                    .await
                    .map_err(account_failure)?;
                id
            }
        };
        *known = Some(id.clone());
        Ok(id)
    }

    async fn host_token(&self) -> Result<HostToken, Failure> {
        let jwt = self.jwt.as_ref().ok_or_else(|| {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "a household token needs MCP_JWT_SECRET".to_owned(),
            )
        })?;
        let household_id = self.host_household().await?;
        let generation = self
            .accounts
            .note_token_issued(&household_id)
            .await
            .map_err(account_failure)?;
        let issued = jwt.issue_household(
            &household_id,
            generation,
            Scopes::HOUSEHOLD_DEFAULT,
            TOKEN_LIFETIME_SECS,
            self.clock.now().unix_timestamp().max(0) as u64,
        );
        Ok(HostToken {
            access_token: issued.access_token,
            expires_in: issued.expires_in,
        })
    }

    async fn invite(&self, member_id: &str) -> Result<crate::passkeys::Invite, Failure> {
        let household_id = self.host_household().await?;
        self.passkeys
            .invite(&household_id, member_id)
            .await
            .map_err(|error| {
                // A JSON API, not a link's page: a member or household not found is the
                // request's fault (400), not a link that stopped working (410).
                let status = match &error {
                    PasskeyError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                    PasskeyError::Full(_) => StatusCode::CONFLICT,
                    PasskeyError::TooMany(..) => StatusCode::TOO_MANY_REQUESTS,
                    PasskeyError::Refused(_) => StatusCode::FORBIDDEN,
                    PasskeyError::NotFound(_)
                    | PasskeyError::Gone(_)
                    | PasskeyError::Invalid(_) => StatusCode::BAD_REQUEST,
                };
                (status, error.to_string())
            })
    }
}

fn account_failure(error: AccountError) -> Failure {
    match error {
        AccountError::Invalid(why) => (StatusCode::BAD_REQUEST, why),
        AccountError::NotFound(_) => (
            StatusCode::CONFLICT,
            "the demo's host household went away meanwhile; try again".to_owned(),
        ),
        AccountError::Busy => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()),
        AccountError::Unavailable(_) => {
            tracing::warn!(target: "hearth::demo", %error, "the demo's host household is unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the store is unavailable; try again".to_owned(),
            )
        }
    }
}

#[derive(Serialize)]
struct HostToken {
    access_token: String,
    expires_in: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PhoneOwner {
    member_id: String,
}

pub fn router(endpoint: Arc<PhoneEndpoint>) -> Router {
    Router::new()
        .route("/demo/host", any(host))
        .route("/demo/phone", any(phone))
        .with_state(endpoint)
}

/// `POST /demo/host`: a household token for the page's host that signs nothing.
async fn host(State(endpoint): State<Arc<PhoneEndpoint>>, request: Request) -> Response {
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    log.method(Some("demo_host"));
    let response = match admitted(&endpoint, request, &mut log).await {
        Ok(_) => answered(endpoint.host_token().await),
        Err(refusal) => refusal,
    };
    log.finish(response.status(), started.elapsed());
    response
}

/// `POST /demo/phone`: a passkey invite for one member of the host household.
async fn phone(State(endpoint): State<Arc<PhoneEndpoint>>, request: Request) -> Response {
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    log.method(Some("demo_phone"));
    let response = match admitted(&endpoint, request, &mut log).await {
        Ok(body) => match serde_json::from_slice::<PhoneOwner>(&body) {
            Ok(owner) => answered(endpoint.invite(&owner.member_id).await),
            Err(_) => error(StatusCode::BAD_REQUEST, "the body must be {\"member_id\"}"),
        },
        Err(refusal) => refusal,
    };
    log.finish(response.status(), started.elapsed());
    response
}

/// The body of a request that passed every check (POST, origin, bearer token, rate limits,
/// body size), or the answer refusing it.
async fn admitted(
    endpoint: &PhoneEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Result<axum::body::Bytes, Response> {
    let (caller, body) =
        admit(&endpoint.auth, &endpoint.gate, request, MAX_BODY_BYTES, log).await?;
    // A household token (the host's own among them) names one household and may not mint
    // more tokens or invites: only the page's session, a credential's token, may.
    if caller.household.is_some() {
        return Err(error(
            StatusCode::FORBIDDEN,
            "a household token cannot ask for this; connect with the judge token",
        ));
    }
    Ok(body)
}

fn answered(result: Result<impl Serialize, Failure>) -> Response {
    match result {
        Ok(body) => json(&body),
        Err((status, message)) => error(status, &message),
    }
}

fn json(body: &impl Serialize) -> Response {
    let mut response = axum::Json(body).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
