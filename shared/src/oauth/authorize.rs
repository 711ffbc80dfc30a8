//! `GET` and `POST /oauth/authorize`: the authorization endpoint of account linking.
//!
//! `GET` checks the request and shows the consent page. `POST` is that page's form: it checks
//! the same request again, then its CSRF token, then the person's decision and link code.
//!
//! The checks run in RFC 6749 §4.1.2.1's order. While the client or the redirect URI is
//! unknown, the answer is an error page and never a redirect. After that, every problem is a
//! redirect to the client with `error`, `state` and `iss` (RFC 9207).
//!
//! The CSRF token is bound to the request's parameters and to a nonce in a `SameSite=Strict`
//! cookie, and it expires. So a form whose parameters were changed is refused, and so is a
//! form posted from another site or replayed after a quarter hour. Attempts at a link code
//! are limited per client address ([`LINK_CODE_ATTEMPTS`] per [`LINK_CODE_WINDOW_MS`]).
//! Codes, tokens and `state` are never logged.

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::OAuthEndpoint;
use super::consent_page::{self, ConsentFields};
use super::form::{Form, MAX_FORM_BYTES};
use crate::auth::Scopes;
use crate::clients::ClientError;
use crate::linking::pkce::check_challenge;
use crate::linking::{CodeBinding, LinkedHousehold};
use crate::media::{has_media_type, read_body};
use crate::passkeys::PasskeyError;
use crate::passkeys::sign_in::{Purpose, SignInRefusal};
use crate::random::os_bytes;
use crate::ratelimit::Admission;
use crate::telemetry::RequestLog;

/// Link-code attempts one client address may make per window.
pub const LINK_CODE_ATTEMPTS: u32 = 10;
/// The window those attempts are counted in.
pub const LINK_CODE_WINDOW_MS: i64 = 15 * 60_000;
/// How long a consent page's form can be submitted.
pub const CONSENT_LIFETIME_SECS: u64 = 15 * 60;
/// The longest `state` echoed back, in bytes.
pub const MAX_STATE_BYTES: usize = 1024;
/// The consent cookie.
const COOKIE: &str = "hearth_consent";
/// What a passkey's answer or request is told where members' passkeys are not set up.
const NO_PASSKEYS: &str = "Linking with a passkey is not set up on this Hearth. Use a link code.";

/// The key CSRF tokens are signed with, derived from the token-signing key (so it needs no
/// secret of its own and rotates with it).
pub struct ConsentKey(Hmac<Sha256>);

impl ConsentKey {
    pub fn derive(signing_secret: &[u8]) -> Self {
        let mut derive =
            Hmac::<Sha256>::new_from_slice(signing_secret).expect("HMAC takes any key length");
        derive.update(b"hearth consent csrf v1");
        let key = derive.finalize().into_bytes();
        Self(Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length"))
    }

    fn mac(&self, nonce: &str, expires_at: u64, request: &AuthorizeRequest) -> [u8; 32] {
        let mut mac = self.0.clone();
        // Length-prefixed, so no two different requests can produce the same input.
        for field in [
            nonce,
            &expires_at.to_string(),
            &request.client_id,
            &request.redirect_uri,
            &request.scope.to_string(),
            request.state.as_deref().unwrap_or(""),
            &request.code_challenge,
            &request.resource,
        ] {
            mac.update(&(field.len() as u32).to_be_bytes());
            mac.update(field.as_bytes());
        }
        mac.finalize().into_bytes().into()
    }

    fn token(&self, nonce: &str, now_secs: u64, request: &AuthorizeRequest) -> String {
        let expires_at = now_secs + CONSENT_LIFETIME_SECS;
        let mut token = expires_at.to_be_bytes().to_vec();
        token.extend_from_slice(&self.mac(nonce, expires_at, request));
        URL_SAFE_NO_PAD.encode(token)
    }

    fn verify(&self, token: &str, nonce: &str, now_secs: u64, request: &AuthorizeRequest) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(token) else {
            return false;
        };
        let Some((expiry, tag)) = bytes.split_first_chunk::<8>() else {
            return false;
        };
        let expires_at = u64::from_be_bytes(*expiry);
        if now_secs >= expires_at {
            return false;
        }
        let expected = self.mac(nonce, expires_at, request);
        tag.len() == expected.len() && bool::from(expected.as_slice().ct_eq(tag))
    }
}

/// An authorization request that passed every check.
#[derive(Debug, Clone)]
pub struct AuthorizeRequest {
    pub client_id: String,
    /// What the consent page calls the client.
    pub client_name: String,
    /// The client named itself (it registered, or published its metadata): the page says so.
    pub client_unverified: bool,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub scope: Scopes,
    pub code_challenge: String,
    pub resource: String,
}

impl AuthorizeRequest {
    /// What a guardian's passkey signs to link for this request: its client, redirect URI
    /// and PKCE challenge.
    fn link_purpose(&self) -> Purpose<'_> {
        Purpose::Link {
            client_id: &self.client_id,
            redirect_uri: &self.redirect_uri,
            code_challenge: &self.code_challenge,
        }
    }

    pub fn binding(&self) -> CodeBinding {
        CodeBinding {
            client_id: self.client_id.clone(),
            redirect_uri: self.redirect_uri.clone(),
            code_challenge: self.code_challenge.clone(),
            scope: self.scope.to_string(),
            resource: self.resource.clone(),
        }
    }
}

/// Why a request was refused: with a page (client or redirect not to be trusted), or with a
/// redirect to the client.
enum Refusal {
    Page(StatusCode, &'static str, String),
    Redirect {
        redirect_uri: String,
        state: Option<String>,
        error: &'static str,
        description: &'static str,
    },
}

impl OAuthEndpoint {
    /// Checks an authorization request's parameters.
    async fn authorize_request(&self, form: &Form) -> Result<AuthorizeRequest, Refusal> {
        let page = |detail: &str| {
            Refusal::Page(
                StatusCode::BAD_REQUEST,
                "This link request cannot be used",
                detail.to_owned(),
            )
        };
        let Some(urls) = &self.urls else {
            return Err(Refusal::Page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Linking is not available",
                "This Hearth server has no public URL configured (MCP_RESOURCE_URL).".into(),
            ));
        };
        if self.linking.is_none() || self.jwt.is_none() {
            return Err(Refusal::Page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Linking is not available",
                "Account linking is not configured on this Hearth server (MCP_JWT_SECRET).".into(),
            ));
        }
        let client_id = form
            .get("client_id")
            .ok_or_else(|| page("The request names no client (client_id)."))?;
        let client = match self.clients.find(client_id).await {
            Ok(Some(client)) => client,
            Ok(None) => {
                return Err(page(
                    "The request names a client this server does not know.",
                ));
            }
            // Nothing redirects: a client whose document cannot be read has no trusted
            // redirect URI.
            Err(ClientError::Document(refused)) => {
                return Err(page(&self.document_refused(&refused)));
            }
            Err(error) => {
                tracing::warn!(%error, "clients unavailable");
                return Err(Refusal::Page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Linking is not available right now",
                    "The server could not look the client up; try again.".into(),
                ));
            }
        };
        let redirect_uri = form
            .get("redirect_uri")
            .ok_or_else(|| page("The request names no redirect_uri."))?;
        if !client.allows_redirect(redirect_uri) {
            return Err(page(
                "The request's redirect_uri is not one of the client's.",
            ));
        }
        let state = form
            .get("state")
            .filter(|state| state.len() <= MAX_STATE_BYTES)
            .map(str::to_owned);
        let redirect = |error: &'static str, description: &'static str| Refusal::Redirect {
            redirect_uri: redirect_uri.to_owned(),
            state: state.clone(),
            error,
            description,
        };
        if form
            .get("state")
            .is_some_and(|state| state.len() > MAX_STATE_BYTES)
        {
            return Err(redirect(
                "invalid_request",
                "state is longer than 1024 bytes",
            ));
        }
        match form.get("response_type") {
            Some("code") => {}
            None => return Err(redirect("invalid_request", "response_type is required")),
            Some(_) => {
                return Err(redirect(
                    "unsupported_response_type",
                    "only response_type=code is supported",
                ));
            }
        }
        let challenge = form.get("code_challenge");
        if let Err(refusal) = check_challenge(challenge, form.get("code_challenge_method")) {
            return Err(redirect("invalid_request", refusal.description()));
        }
        if !form
            .get("resource")
            .is_some_and(|resource| urls.names_this_resource(resource))
        {
            return Err(redirect(
                "invalid_target",
                "resource is required and must be this server's MCP URL",
            ));
        }
        let scope = match form.get("scope") {
            None => Scopes::HOUSEHOLD_DEFAULT,
            Some(list) => Scopes::parse(list)
                .map_err(|_| redirect("invalid_scope", crate::auth::scope::SCOPES_ACCEPTED))?
                .or_default(Scopes::HOUSEHOLD_DEFAULT),
        };
        Ok(AuthorizeRequest {
            client_id: client_id.to_owned(),
            client_name: client.name.clone(),
            client_unverified: client.is_unverified(),
            redirect_uri: redirect_uri.to_owned(),
            state,
            scope,
            code_challenge: challenge.unwrap_or_default().to_owned(),
            resource: urls.resource().to_owned(),
        })
    }

    /// Redirects to the client with `parameters`, plus `state` and `iss`.
    fn redirect_to_client(
        &self,
        redirect_uri: &str,
        state: Option<&str>,
        parameters: &[(&str, &str)],
    ) -> Response {
        let Ok(mut target) = url::Url::parse(redirect_uri) else {
            return consent_page::problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                "This link request cannot be used",
                "The configured redirect URI is not a URL.",
            );
        };
        {
            let mut query = target.query_pairs_mut();
            for (name, value) in parameters {
                query.append_pair(name, value);
            }
            if let Some(state) = state {
                query.append_pair("state", state);
            }
            if let Some(urls) = &self.urls {
                query.append_pair("iss", urls.issuer());
            }
        }
        let mut response = StatusCode::SEE_OTHER.into_response();
        let headers = response.headers_mut();
        if let Ok(location) = HeaderValue::from_str(target.as_str()) {
            headers.insert(header::LOCATION, location);
        }
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        response
    }

    fn refuse(&self, refusal: Refusal) -> Response {
        match refusal {
            Refusal::Page(status, title, detail) => consent_page::problem(status, title, &detail),
            Refusal::Redirect {
                redirect_uri,
                state,
                error,
                description,
            } => self.redirect_to_client(
                &redirect_uri,
                state.as_deref(),
                &[("error", error), ("error_description", description)],
            ),
        }
    }

    /// The household whose guardian answered this request's passkey challenge (`answer`, the
    /// assertion as JSON), or the status and words for the consent page. The challenge binds
    /// the request's client, redirect URI and PKCE challenge, and is used once; a member who
    /// is not a guardian links nothing.
    async fn household_of_guardian(
        &self,
        request: &AuthorizeRequest,
        answer: &str,
    ) -> Result<LinkedHousehold, (StatusCode, String)> {
        let passkeys = self
            .passkeys
            .as_ref()
            .ok_or_else(|| (StatusCode::NOT_FOUND, NO_PASSKEYS.to_owned()))?;
        let credential: serde_json::Value = serde_json::from_str(answer).map_err(|_| {
            (
                StatusCode::BAD_REQUEST,
                "The passkey's answer could not be read. Press Sign in with a passkey again."
                    .to_owned(),
            )
        })?;
        let signed_in = passkeys
            .sign_in(&credential, request.link_purpose())
            .await
            .map_err(|refusal| {
                let status = match &refusal {
                    SignInRefusal::Unknown
                    | SignInRefusal::Revoked
                    | SignInRefusal::Pending
                    | SignInRefusal::Suspect => StatusCode::FORBIDDEN,
                    SignInRefusal::Failed(PasskeyError::Unavailable(_)) => {
                        StatusCode::SERVICE_UNAVAILABLE
                    }
                    SignInRefusal::Stale
                    | SignInRefusal::OtherRequest
                    | SignInRefusal::Failed(_) => StatusCode::BAD_REQUEST,
                };
                (status, refusal.to_string())
            })?;
        if !signed_in.guardian {
            return Err((
                StatusCode::FORBIDDEN,
                "Only a guardian of the household can link an assistant. Ask a guardian to press Sign in with a passkey here, or use a link code.".to_owned(),
            ));
        }
        tracing::info!(target: "hearth::linking", "a guardian linked their household with a passkey");
        Ok(LinkedHousehold {
            household_id: signed_in.household_id,
            generation: signed_in.generation,
        })
    }

    fn consent_page(
        &self,
        request: &AuthorizeRequest,
        nonce: &str,
        problem: Option<&str>,
        status: StatusCode,
    ) -> Response {
        let now_secs = self.consent_now_secs();
        let csrf = match &self.consent_key {
            Some(key) => key.token(nonce, now_secs, request),
            None => String::new(),
        };
        let fields = ConsentFields {
            client_id: &request.client_id,
            client_name: &request.client_name,
            client_unverified: request.client_unverified,
            redirect_uri: &request.redirect_uri,
            scope: request.scope,
            state: request.state.as_deref(),
            code_challenge: &request.code_challenge,
            resource: &request.resource,
            csrf: &csrf,
            passkeys: self.passkeys.is_some() && self.linking.is_some(),
            signup: self.signup == crate::config::SignupMode::Open,
        };
        consent_page::consent(&fields, problem, status)
    }

    /// The consent form's clock: linking's, so tests can move it.
    fn consent_now_secs(&self) -> u64 {
        match &self.linking {
            Some(linking) => linking.now_secs(),
            None => crate::auth::jwt::now_secs(),
        }
    }

    fn consent_cookie(&self, nonce: &str) -> Option<HeaderValue> {
        let urls = self.urls.as_ref()?;
        let secure = if urls.is_https() { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{COOKIE}={nonce}; Path={}; Max-Age={CONSENT_LIFETIME_SECS}; HttpOnly; SameSite=Strict{secure}",
            urls.authorization_path()
        ))
        .ok()
    }
}

/// `POST /oauth/authorize/passkey`: request options for a guardian's passkey, over a
/// challenge bound to the authorization request the body repeats (the consent form's fields,
/// form-encoded), asked from the page's own origin. The challenge grants nothing by itself:
/// its answer goes back with the consent form, CSRF token and all.
pub async fn passkey_options(
    endpoint: &OAuthEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Response {
    use crate::passkeys::http::{answer, failure, page_post_body};
    log.method(Some("oauth/authorize/passkey"));
    let refused = |status: StatusCode, code: &str, message: &str| {
        answer(
            status,
            serde_json::json!({"error": code, "message": message}),
        )
    };
    let Some(passkeys) = &endpoint.passkeys else {
        return refused(StatusCode::NOT_FOUND, "not_found", NO_PASSKEYS);
    };
    let bytes = match page_post_body(
        passkeys,
        request,
        "application/x-www-form-urlencoded",
        MAX_FORM_BYTES,
        ("invalid_request", "the consent form's fields"),
    )
    .await
    {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let authorize_request = match Form::parse(&bytes) {
        Ok(form) => endpoint.authorize_request(&form).await.ok(),
        Err(_) => None,
    };
    let Some(authorize_request) = authorize_request else {
        return refused(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "This link request cannot be used. Start linking again from the app that sent you here.",
        );
    };
    match passkeys
        .sign_in_options(authorize_request.link_purpose())
        .await
    {
        Ok(options) => answer(StatusCode::OK, options),
        Err(error) => failure(&error),
    }
}

/// Serves both methods of `/oauth/authorize`.
pub async fn authorize(
    endpoint: &OAuthEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Response {
    log.method(Some("oauth/authorize"));
    match *request.method() {
        Method::GET => show(endpoint, request).await,
        Method::POST => submit(endpoint, request).await,
        _ => {
            let mut response = consent_page::problem(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method not allowed",
                "Use GET or POST.",
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST"));
            response
        }
    }
}

async fn show(endpoint: &OAuthEndpoint, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default();
    if query.len() > MAX_FORM_BYTES {
        return consent_page::problem(
            StatusCode::URI_TOO_LONG,
            "This link request cannot be used",
            &format!("The request is longer than {MAX_FORM_BYTES} bytes."),
        );
    }
    let form = match Form::parse(query.as_bytes()) {
        Ok(form) => form,
        Err(error) => {
            return consent_page::problem(
                StatusCode::BAD_REQUEST,
                "This link request cannot be used",
                error.description(),
            );
        }
    };
    let authorize_request = match endpoint.authorize_request(&form).await {
        Ok(authorize_request) => authorize_request,
        Err(refusal) => return endpoint.refuse(refusal),
    };
    let Ok(nonce) = os_bytes::<16>() else {
        return consent_page::problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "Linking is not available",
            "The server could not make a secure form; try again.",
        );
    };
    let nonce = URL_SAFE_NO_PAD.encode(nonce);
    let mut response = endpoint.consent_page(&authorize_request, &nonce, None, StatusCode::OK);
    if let Some(cookie) = endpoint.consent_cookie(&nonce) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

async fn submit(endpoint: &OAuthEndpoint, request: Request) -> Response {
    if !has_media_type(request.headers(), "application/x-www-form-urlencoded") {
        return consent_page::problem(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "This form cannot be used",
            "The form must be sent as application/x-www-form-urlencoded.",
        );
    }
    let ip = endpoint.gate.client_ip(&request);
    let (parts, body) = request.into_parts();
    let Some(bytes) = read_body(&parts.headers, body, MAX_FORM_BYTES).await else {
        return consent_page::problem(
            StatusCode::PAYLOAD_TOO_LARGE,
            "This form cannot be used",
            &format!("The form is longer than {MAX_FORM_BYTES} bytes."),
        );
    };
    let form = match Form::parse(&bytes) {
        Ok(form) => form,
        Err(error) => {
            return consent_page::problem(
                StatusCode::BAD_REQUEST,
                "This form cannot be used",
                error.description(),
            );
        }
    };
    let authorize_request = match endpoint.authorize_request(&form).await {
        Ok(authorize_request) => authorize_request,
        Err(refusal) => return endpoint.refuse(refusal),
    };
    let now_secs = endpoint.consent_now_secs();
    let nonce = cookie(&parts.headers, COOKIE);
    let csrf_holds = match (&endpoint.consent_key, nonce, form.get("csrf")) {
        (Some(key), Some(nonce), Some(token)) => {
            key.verify(token, nonce, now_secs, &authorize_request)
        }
        _ => false,
    };
    let Some(nonce) = nonce.filter(|_| csrf_holds) else {
        return consent_page::problem(
            StatusCode::FORBIDDEN,
            "This form has expired",
            "The form was not sent by this page, or it is older than 15 minutes.",
        );
    };
    let decision = form.get("decision");
    if decision == Some("deny") {
        return endpoint.redirect_to_client(
            &authorize_request.redirect_uri,
            authorize_request.state.as_deref(),
            &[
                ("error", "access_denied"),
                ("error_description", "the household did not allow linking"),
            ],
        );
    }
    if decision != Some("allow") {
        return endpoint.consent_page(
            &authorize_request,
            nonce,
            Some("Choose Link household or Deny."),
            StatusCode::BAD_REQUEST,
        );
    }
    // A guardian's passkey answer (the page's second form), else the link code.
    let proof = match (
        form.get("passkey").filter(|answer| !answer.is_empty()),
        form.get("link_code"),
    ) {
        (Some(answer), _) => Proof::Passkey(answer),
        (None, Some(entered)) => Proof::LinkCode(entered),
        (None, None) => {
            return endpoint.consent_page(
                &authorize_request,
                nonce,
                Some("Enter the link code to link your household."),
                StatusCode::BAD_REQUEST,
            );
        }
    };
    let (Some(linking), Some(attempts)) = (&endpoint.linking, &endpoint.link_code_attempts) else {
        return endpoint.refuse(Refusal::Page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Linking is not available",
            "Account linking is not configured on this Hearth server.".into(),
        ));
    };
    match attempts.attempt(ip).await {
        Admission::Admitted => {}
        Admission::Limited { retry_after_secs } => {
            let mut response = endpoint.consent_page(
                &authorize_request,
                nonce,
                Some(
                    "Too many link codes were tried from here. Wait a few minutes, then try again.",
                ),
                StatusCode::TOO_MANY_REQUESTS,
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            return response;
        }
        Admission::Unavailable => {
            return endpoint.consent_page(
                &authorize_request,
                nonce,
                Some("The server cannot check link codes right now. Try again in a minute."),
                StatusCode::SERVICE_UNAVAILABLE,
            );
        }
    }
    let household = match proof {
        Proof::Passkey(answer) => {
            match endpoint
                .household_of_guardian(&authorize_request, answer)
                .await
            {
                Ok(household) => household,
                Err((status, problem)) => {
                    return endpoint.consent_page(
                        &authorize_request,
                        nonce,
                        Some(&problem),
                        status,
                    );
                }
            }
        }
        Proof::LinkCode(entered) => {
            match redeem(endpoint, linking, &authorize_request, nonce, entered).await {
                Ok(household) => household,
                Err(page) => return *page,
            }
        }
    };
    match linking
        .issue_code(authorize_request.binding(), &household)
        .await
    {
        Ok(code) => endpoint.redirect_to_client(
            &authorize_request.redirect_uri,
            authorize_request.state.as_deref(),
            &[("code", &code)],
        ),
        Err(error) => {
            tracing::warn!(%error, "an authorization code could not be stored");
            endpoint.redirect_to_client(
                &authorize_request.redirect_uri,
                authorize_request.state.as_deref(),
                &[
                    ("error", "temporarily_unavailable"),
                    (
                        "error_description",
                        "the server could not finish linking; try again",
                    ),
                ],
            )
        }
    }
}

/// What a consent form offers for the household it links.
enum Proof<'a> {
    /// A guardian's passkey assertion (JSON) over this request's `hearth-link/v1` challenge.
    Passkey(&'a str),
    LinkCode(&'a str),
}

/// The household a link code names, or the consent page saying why not.
async fn redeem(
    endpoint: &OAuthEndpoint,
    linking: &crate::linking::Linking,
    authorize_request: &AuthorizeRequest,
    nonce: &str,
    entered: &str,
) -> Result<LinkedHousehold, Box<Response>> {
    match linking.redeem_link_code(entered).await {
        Ok(Some(household)) => Ok(household),
        Ok(None) => Err(Box::new(endpoint.consent_page(
            authorize_request,
            nonce,
            Some("That link code is not valid. It may be mistyped, used already, or older than 15 minutes."),
            StatusCode::BAD_REQUEST,
        ))),
        Err(error) => {
            tracing::warn!(%error, "a link code could not be checked");
            Err(Box::new(endpoint.consent_page(
                authorize_request,
                nonce,
                Some("The server cannot check link codes right now. Try again in a minute."),
                StatusCode::SERVICE_UNAVAILABLE,
            )))
        }
    }
}

/// The value of cookie `name`, if the request carries it exactly once.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut found = None;
    for value in headers.get_all(header::COOKIE) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for pair in value.split(';') {
            if let Some((key, value)) = pair.trim().split_once('=')
                && key == name
            {
                if found.is_some() {
                    return None;
                }
                found = Some(value);
            }
        }
    }
    found
}
