//! The OAuth function: `GET`/`POST /oauth/authorize` (account linking's consent page, with
//! `POST /oauth/authorize/passkey` and `GET /oauth/consent.js` for a guardian's passkey),
//! `POST /oauth/token`, `POST /oauth/revoke` (RFC 7009), `POST /oauth/register` (RFC 7591),
//! `POST /oauth/judge` (judge token exchange) and
//! `GET /.well-known/oauth-authorization-server`.
//!
//! Alexa+ authenticates in two tiers. Tier 1 is machine to machine: `MCP_CLIENT_ID` and
//! `MCP_CLIENT_SECRET` (HTTP Basic or `client_secret_post`), `grant_type=client_credentials`,
//! `resource` equal to `MCP_RESOURCE_URL`, an optional `scope`; the answer is a one-hour
//! HS256 access token. Tier 2 is account linking: the consent page turns a household's link
//! code into an authorization code, and the `authorization_code` and `refresh_token` grants
//! turn that into the household's own tokens (see `linking`). A person with a judge token (the
//! web demo) exchanges it at `/oauth/judge` for an access token whose subject is the judge
//! token's hash.

mod authorize;
pub(crate) mod consent_page;
mod error;
pub(crate) mod form;
pub mod metadata;
mod register;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::json;

pub use error::OAuthError;
pub use form::MAX_FORM_BYTES;
use form::{Form, basic_credentials};

use authorize::ConsentKey;
pub use authorize::{LINK_CODE_ATTEMPTS, LINK_CODE_WINDOW_MS, MAX_STATE_BYTES};
pub use register::{MAX_REGISTRATION_BYTES, REGISTRATION_WINDOW_MS, REGISTRATIONS_PER_WINDOW};

use crate::auth::{Authenticator, Credentials, JwtKeys, Scopes, Subject};
use crate::clients::{ClientError, Clients, KnownClient};
use crate::config::PublicUrls;
use crate::gate::{self, Gate};
use crate::linking::{Linking, LinkingError, Tokens};
use crate::media::{has_media_type, read_body};
use crate::passkeys::Passkeys;
use crate::ratelimit::AttemptLimiter;
use crate::telemetry::{RequestLog, request_id};

/// Everything the OAuth routes need, built once per process.
pub struct OAuthEndpoint {
    gate: Gate,
    /// The configured client and the stored ones.
    clients: Arc<Clients>,
    judges: Authenticator,
    jwt: Option<JwtKeys>,
    urls: Option<PublicUrls>,
    /// Account linking, when configured ([`OAuthEndpoint::with_linking`]).
    linking: Option<Linking>,
    link_code_attempts: Option<AttemptLimiter>,
    /// Counts registrations per address; `None` turns `POST /oauth/register` off.
    registrations: Option<AttemptLimiter>,
    /// Signs the consent form's CSRF tokens; derived from the token-signing key.
    consent_key: Option<ConsentKey>,
    /// Members' passkeys, when configured: a guardian's links a household without a code
    /// ([`OAuthEndpoint::with_passkeys`]).
    passkeys: Option<Arc<Passkeys>>,
    /// `HEARTH_SIGNUP`: with `open` (and passkeys) the consent page offers `Create a household`.
    signup: crate::config::SignupMode,
}

impl OAuthEndpoint {
    pub fn new(
        gate: Gate,
        credentials: &Credentials,
        clients: Arc<Clients>,
        jwt: Option<JwtKeys>,
        urls: Option<PublicUrls>,
    ) -> Self {
        Self {
            gate,
            clients,
            judges: Authenticator::new(credentials, None),
            jwt,
            urls,
            linking: None,
            link_code_attempts: None,
            registrations: None,
            consent_key: credentials
                .jwt_secret
                .as_ref()
                .map(|secret| ConsentKey::derive(secret.expose().as_bytes())),
            passkeys: None,
            signup: crate::config::SignupMode::Off,
        }
    }

    /// The same endpoint under `HEARTH_SIGNUP=mode`: with `open` (and passkeys), its consent
    /// page offers `Create a household` beside the two ways to link one.
    pub fn with_signup(mut self, mode: crate::config::SignupMode) -> Self {
        self.signup = mode;
        self
    }

    /// The same endpoint offering `Sign in with a passkey` on its consent page: a guardian's
    /// fresh assertion over a challenge bound to the request links the household at once.
    pub fn with_passkeys(mut self, passkeys: Option<Arc<Passkeys>>) -> Self {
        self.passkeys = passkeys;
        self
    }

    /// The same endpoint with account linking: authorization codes are sent only to a known
    /// client's redirect URIs, and link-code attempts are counted by `attempts`.
    pub fn with_linking(mut self, linking: Linking, attempts: AttemptLimiter) -> Self {
        self.linking = Some(linking);
        self.link_code_attempts = Some(attempts);
        self
    }

    /// What a person or client is told of a metadata document Hearth refused: why, on a
    /// server on loopback (a developer's own machine); anywhere else only that the app's
    /// registration could not be checked, since the reasons (a status, a size, a timeout)
    /// would let anyone probe public hosts from the server's address. The operator's log
    /// has the reason either way.
    fn document_refused(
        &self,
        refused: &crate::clients::metadata_document::DocumentError,
    ) -> String {
        tracing::warn!(reason = %refused, "a client metadata document was refused");
        // `HEARTH_CIMD=off` is the server's own choice, not a probe of someone else's host.
        if self.urls.as_ref().is_some_and(PublicUrls::is_loopback)
            || matches!(
                refused,
                crate::clients::metadata_document::DocumentError::Disabled
                    | crate::clients::metadata_document::DocumentError::Removed
            )
        {
            format!("The client's metadata document cannot be used: {refused}.")
        } else {
            "Linking stopped: this app's registration could not be checked. Try again in a few minutes; if it keeps failing, ask whoever runs Hearth to add the app.".to_owned()
        }
    }

    /// The same endpoint with Dynamic Client Registration, registrations counted by
    /// `attempts`. Only useful with linking: a registered client can do nothing else.
    pub fn with_registration(mut self, attempts: AttemptLimiter) -> Self {
        self.registrations = Some(attempts);
        self
    }
}

/// The OAuth function's routes.
/// `path_inserted`: also answer RFC 8414's path-inserted name of an issuer with a path (the
/// local server; see `app::Route::lambda`).
pub fn router(endpoint: Arc<OAuthEndpoint>, path_inserted: bool) -> Router {
    // What a browser-based host fetches (the MCP Inspector, for one) answers CORS for the
    // allowed origins; the consent page is navigated to, never fetched.
    // The gate runs inside CORS, so that a browser host can read a refusal's status.
    let mut fetched = Router::new()
        .route("/oauth/revoke", any(revoke))
        .route("/oauth/register", any(registration))
        .route("/.well-known/oauth-authorization-server", any(discovery));
    if path_inserted {
        fetched = fetched.route(
            "/.well-known/oauth-authorization-server/{*path}",
            any(discovery_inserted),
        );
    }
    // The token endpoint passes the gate itself (`token_grant`), reading a refresh token's
    // family beside its admission.
    let fetched = gate::browser_access(
        gate::limit(fetched, &endpoint.gate, refused_in_json).route("/oauth/token", any(token)),
        &endpoint.gate,
    );
    let judge = gate::limit(
        Router::new().route("/oauth/judge", any(judge)),
        &endpoint.gate,
        refused_in_json,
    );
    let consent = gate::limit(
        Router::new().route("/oauth/authorize", any(authorize_route)),
        &endpoint.gate,
        consent_page::refused,
    );
    // The consent page's passkey steps: its script, and a challenge for one request.
    let passkey = gate::limit(
        Router::new()
            .route(
                "/oauth/consent.js",
                get(|| async { consent_page::script() }),
            )
            .route("/oauth/authorize/passkey", post(passkey_options)),
        &endpoint.gate,
        refused_in_json,
    );
    consent
        .merge(passkey)
        .merge(judge)
        .merge(fetched)
        .with_state(endpoint)
}

/// The gate's refusal in RFC 6749's error shape.
fn refused_in_json(refusal: gate::Refusal, _request: &Request) -> Response {
    OAuthError::refused(refusal).into_response()
}

async fn passkey_options(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    let response = authorize::passkey_options(&endpoint, request, &mut log).await;
    log.finish(response.status(), started.elapsed());
    response
}

async fn authorize_route(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    let response = authorize::authorize(&endpoint, request, &mut log).await;
    log.finish(response.status(), started.elapsed());
    response
}

async fn token(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    token_route(&endpoint, request, TokenRoute::Token).await
}

async fn revoke(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    token_route(&endpoint, request, TokenRoute::Revoke).await
}

async fn registration(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    token_route(&endpoint, request, TokenRoute::Register).await
}

async fn judge(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    token_route(&endpoint, request, TokenRoute::JudgeToken).await
}

/// The routes a client posts to.
#[derive(Clone, Copy)]
enum TokenRoute {
    Token,
    Revoke,
    Register,
    JudgeToken,
}

/// Serves one form route and writes the request's log line.
async fn token_route(endpoint: &OAuthEndpoint, request: Request, route: TokenRoute) -> Response {
    // The token endpoint passes its gate itself, and answers other methods after it.
    if !matches!(route, TokenRoute::Token) && request.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    let outcome = match route {
        TokenRoute::Token => {
            log.method(Some("oauth/token"));
            token_grant(endpoint, request, &mut log).await
        }
        TokenRoute::Revoke => {
            log.method(Some("oauth/revoke"));
            revocation(endpoint, request, &mut log).await
        }
        TokenRoute::Register => {
            log.method(Some("oauth/register"));
            register::register(endpoint, request).await
        }
        TokenRoute::JudgeToken => {
            log.method(Some("oauth/judge"));
            judge_token_exchange(endpoint, request, &mut log).await
        }
    };
    let response = outcome.unwrap_or_else(IntoResponse::into_response);
    log.finish(response.status(), started.elapsed());
    response
}

async fn discovery(State(endpoint): State<Arc<OAuthEndpoint>>, request: Request) -> Response {
    if request.method() != Method::GET {
        return method_not_allowed("GET");
    }
    match &endpoint.urls {
        Some(urls) => axum::Json(metadata::authorization_server(
            urls,
            endpoint.clients.accepts_documents(),
        ))
        .into_response(),
        None => {
            OAuthError::unavailable("the authorization server is not configured").into_response()
        }
    }
}

/// The authorization-server metadata at its RFC 8414 §3.1 name for an issuer with a path:
/// served only at the issuer's own path.
async fn discovery_inserted(
    State(endpoint): State<Arc<OAuthEndpoint>>,
    axum::extract::Path(path): axum::extract::Path<String>,
    request: Request,
) -> Response {
    let ours = endpoint.urls.as_ref().is_some_and(|urls| {
        !urls.issuer_path().is_empty() && urls.issuer_path() == format!("/{path}")
    });
    if !ours {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": "not_found"})),
        )
            .into_response();
    }
    discovery(State(endpoint), request).await
}

/// The checks every form route shares: media type and body size (the token endpoint's beside
/// its gate, the others' once the gate let them in).
async fn read_form(request: Request) -> Result<(http::request::Parts, Form), OAuthError> {
    let is_form = has_media_type(request.headers(), "application/x-www-form-urlencoded");
    if !is_form {
        return Err(OAuthError::invalid_request(
            "the body must be application/x-www-form-urlencoded",
        ));
    }
    let (parts, body) = request.into_parts();
    let too_large = || {
        OAuthError::with_status(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            format!("the body exceeds {MAX_FORM_BYTES} bytes"),
        )
    };
    let bytes = read_body(&parts.headers, body, MAX_FORM_BYTES)
        .await
        .ok_or_else(too_large)?;
    Ok((parts, Form::parse(&bytes)?))
}

/// `POST /oauth/token`: the gate (the address's counter), then every grant authenticates the
/// client first. A refresh token's family is read beside the counter (when the token's MAC
/// shows this server minted it), so that a refresh is three round trips, not four: that, the
/// account's read, and the rotation (see `Linking::refresh`).
async fn token_grant(
    endpoint: &OAuthEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Result<Response, OAuthError> {
    endpoint
        .gate
        .check_origin(request.headers())
        .map_err(OAuthError::refused)?;
    let ip = endpoint.gate.client_ip(&request);
    if request.method() != Method::POST {
        endpoint
            .gate
            .admit(ip, None)
            .await
            .map_err(OAuthError::refused)?;
        return Ok(method_not_allowed("POST"));
    }
    let admission = async {
        endpoint
            .gate
            .admit(ip, None)
            .await
            .map_err(OAuthError::refused)
    };
    let head = async {
        let (parts, form) = read_form(request).await?;
        let family = match (form.get("grant_type"), form.get("refresh_token")) {
            (Some("refresh_token"), Some(presented)) => match linking_parts(endpoint) {
                Ok((linking, jwt)) => linking.family_ahead(jwt, presented).await,
                Err(_) => None,
            },
            _ => None,
        };
        Ok::<_, OAuthError>((parts, form, family))
    };
    let ((), head) = gate::admission_first(admission, head).await?;
    let (parts, form, family) = head?;
    let client = authenticate_client(endpoint, &parts.headers, &form).await?;
    let client_id = client.client_id.clone();
    let subject = Subject::of_client(&client_id);
    log.subject(&subject.caller());
    let urls = endpoint
        .urls
        .as_ref()
        .ok_or_else(|| OAuthError::unavailable("the token endpoint is not configured"))?;
    let grant_type = form
        .get("grant_type")
        .ok_or_else(|| OAuthError::invalid_request("grant_type is required"))?;
    let response = match grant_type {
        "client_credentials" => {
            // Tier 1 reaches ask_aion, which spends the operator's key: only clients an
            // operator vouches for may have it.
            if !client.may_use_client_credentials() {
                return Err(OAuthError::unauthorized_client(
                    "this client may not use client_credentials; link a household instead",
                ));
            }
            if !form
                .get("resource")
                .is_some_and(|resource| urls.names_this_resource(resource))
            {
                return Err(OAuthError::invalid_target(
                    "resource is required and must be this server's MCP URL",
                ));
            }
            let scopes = requested_scopes(&form)?;
            issue(endpoint, &subject, scopes)
        }
        "authorization_code" => {
            let (linking, jwt) = linking_parts(endpoint)?;
            let code = form
                .get("code")
                .ok_or_else(|| OAuthError::invalid_request("code is required"))?;
            let tokens = linking
                .exchange_code(
                    jwt,
                    &client_id,
                    code,
                    form.get("redirect_uri"),
                    form.get("code_verifier"),
                    form.get("resource"),
                )
                .await
                .map_err(linking_error)?;
            Ok(token_response(&tokens))
        }
        "refresh_token" => {
            let (linking, jwt) = linking_parts(endpoint)?;
            let presented = form
                .get("refresh_token")
                .ok_or_else(|| OAuthError::invalid_request("refresh_token is required"))?;
            if form
                .get("resource")
                .is_some_and(|resource| !urls.names_this_resource(resource))
            {
                return Err(OAuthError::invalid_target(
                    "resource, when given, must be this server's MCP URL",
                ));
            }
            let requested = named_scopes(&form)?;
            let tokens = linking
                .refresh(jwt, &client_id, presented, requested, family)
                .await
                .map_err(linking_error)?;
            Ok(token_response(&tokens))
        }
        _ => Err(OAuthError::unsupported_grant_type(
            "grant_type must be client_credentials, authorization_code or refresh_token",
        )),
    }?;
    // A registration that obtained a token is kept; every client's last use is noted.
    if let Err(error) = endpoint.clients.note_used(&client).await {
        tracing::warn!(%error, "a client's use could not be noted");
    }
    Ok(response)
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether or not the token was known.
async fn revocation(
    endpoint: &OAuthEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Result<Response, OAuthError> {
    let (parts, form) = read_form(request).await?;
    let client_id = authenticate_client(endpoint, &parts.headers, &form)
        .await?
        .client_id;
    log.subject(&Subject::of_client(&client_id).caller());
    let presented = form
        .get("token")
        .ok_or_else(|| OAuthError::invalid_request("token is required"))?;
    let linking = endpoint
        .linking
        .as_ref()
        .ok_or_else(|| OAuthError::unavailable("account linking is not configured"))?;
    linking
        .revoke(endpoint.jwt.as_ref(), &client_id, presented)
        .await
        .map_err(linking_error)?;
    let mut response = StatusCode::OK.into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

fn linking_parts(endpoint: &OAuthEndpoint) -> Result<(&Linking, &JwtKeys), OAuthError> {
    match (&endpoint.linking, &endpoint.jwt) {
        (Some(linking), Some(jwt)) => Ok((linking, jwt)),
        _ => Err(OAuthError::unavailable("account linking is not configured")),
    }
}

fn linking_error(error: LinkingError) -> OAuthError {
    match error {
        LinkingError::InvalidRequest(text) => OAuthError::invalid_request(text),
        LinkingError::InvalidGrant(text) => OAuthError::invalid_grant(text),
        LinkingError::InvalidTarget(text) => OAuthError::invalid_target(text),
        LinkingError::InvalidScope(text) => OAuthError::invalid_scope(text),
        LinkingError::Unavailable(cause) => {
            tracing::warn!(%cause, "account linking could not reach its store");
            OAuthError::unavailable("storage unavailable; try again")
        }
    }
}

fn token_response(tokens: &Tokens) -> Response {
    no_store(json!({
        "access_token": tokens.access_token,
        "token_type": "Bearer",
        "expires_in": tokens.expires_in,
        "refresh_token": tokens.refresh_token,
        "scope": tokens.scope.to_string(),
    }))
}

async fn judge_token_exchange(
    endpoint: &OAuthEndpoint,
    request: Request,
    log: &mut RequestLog,
) -> Result<Response, OAuthError> {
    let (_parts, form) = read_form(request).await?;
    let presented = form
        .get("judge_token")
        .ok_or_else(|| OAuthError::invalid_request("judge_token is required"))?;
    let subject = endpoint
        .judges
        .judge_token(presented)
        .ok_or_else(|| OAuthError::invalid_grant("the judge token is not valid"))?;
    log.subject(&subject.caller());
    let scopes = requested_scopes(&form)?;
    issue(endpoint, &subject, scopes)
}

/// Checks the client's credentials, from HTTP Basic (`client_secret_basic`) or the form
/// (`client_secret_post`) but never both, in constant time; a public client names itself with
/// `client_id` alone (`none`: PKCE is its proof). Returns the client.
async fn authenticate_client(
    endpoint: &OAuthEndpoint,
    headers: &http::HeaderMap,
    form: &Form,
) -> Result<KnownClient, OAuthError> {
    let secret_in_body = form.get("client_secret").is_some();
    let has_header = headers.contains_key(header::AUTHORIZATION);
    let asserted =
        form.get("client_assertion_type").is_some() || form.get("client_assertion").is_some();
    if [secret_in_body, has_header, asserted]
        .iter()
        .filter(|used| **used)
        .count()
        > 1
    {
        return Err(OAuthError::invalid_request(
            "use exactly one client authentication method",
        ));
    }
    if asserted {
        return authenticate_by_assertion(endpoint, form).await;
    }
    let (id, secret) = if has_header {
        let (id, secret) = basic_credentials(headers)?;
        // A client_id beside Basic credentials must name the same client (RFC 6749 §3.2.1).
        if form.get("client_id").is_some_and(|body_id| body_id != id) {
            return Err(OAuthError::invalid_request(
                "client_id in the body names another client than the Authorization header",
            ));
        }
        (id, Some(secret))
    } else if secret_in_body {
        let id = form.get("client_id").ok_or_else(|| {
            OAuthError::invalid_client("client_secret_post needs client_id beside client_secret")
        })?;
        (
            id.to_owned(),
            Some(form.get("client_secret").unwrap_or_default().to_owned()),
        )
    } else if let Some(id) = form.get("client_id") {
        (id.to_owned(), None)
    } else {
        return Err(OAuthError::invalid_client(
            "client authentication is required: HTTP Basic, client_id and client_secret in the body, or client_id alone for a public client",
        ));
    };
    client_or_refusal(
        endpoint,
        endpoint.clients.authenticate(&id, secret.as_deref()).await,
    )
}

/// `private_key_jwt` (RFC 7523 §2.2): `client_assertion_type` is the JWT bearer type and
/// `client_assertion` a JWT signed with one of the metadata client's keys, for this token
/// endpoint or this issuer.
async fn authenticate_by_assertion(
    endpoint: &OAuthEndpoint,
    form: &Form,
) -> Result<KnownClient, OAuthError> {
    if form.get("client_assertion_type") != Some(crate::clients::assertion::ASSERTION_TYPE) {
        return Err(OAuthError::invalid_client(format!(
            "client_assertion_type must be {}",
            crate::clients::assertion::ASSERTION_TYPE
        )));
    }
    let assertion = form
        .get("client_assertion")
        .ok_or_else(|| OAuthError::invalid_client("client_assertion is required"))?;
    let urls = endpoint
        .urls
        .as_ref()
        .ok_or_else(|| OAuthError::unavailable("the token endpoint is not configured"))?;
    let audiences = [urls.token_endpoint(), urls.issuer().to_owned()];
    let audiences: Vec<&str> = audiences.iter().map(String::as_str).collect();
    let found = endpoint
        .clients
        .authenticate_assertion(form.get("client_id"), assertion, &audiences)
        .await;
    client_or_refusal(endpoint, found)
}

/// A client lookup's answer at the token endpoint: the client, or `invalid_client` saying why
/// as far as that is safe, or 503 when the store is out of reach.
fn client_or_refusal(
    endpoint: &OAuthEndpoint,
    found: Result<Option<KnownClient>, ClientError>,
) -> Result<KnownClient, OAuthError> {
    match found {
        Ok(Some(client)) => Ok(client),
        Ok(None) => Err(OAuthError::invalid_client("client authentication failed")),
        Err(ClientError::Document(refused)) => Err(OAuthError::invalid_client(
            endpoint.document_refused(&refused),
        )),
        Err(refused @ (ClientError::Assertion(_) | ClientError::AssertionRequired)) => {
            Err(OAuthError::invalid_client(refused.to_string()))
        }
        Err(error) => {
            tracing::warn!(%error, "clients unavailable");
            Err(OAuthError::unavailable("storage unavailable; try again"))
        }
    }
}

/// The scopes a token request names, if it names any.
fn named_scopes(form: &Form) -> Result<Option<Scopes>, OAuthError> {
    form.get("scope")
        .map(|list| {
            Scopes::parse(list)
                .map_err(|_| OAuthError::invalid_scope(crate::auth::scope::SCOPES_ACCEPTED))
        })
        .transpose()
}

/// The scopes of a grant that issues no refresh token (client credentials, a judge token):
/// what the request names, else the default, and never `offline_access`.
fn requested_scopes(form: &Form) -> Result<Scopes, OAuthError> {
    Ok(named_scopes(form)?
        .map_or(Scopes::DEFAULT, |named| named.or_default(Scopes::DEFAULT))
        .without(crate::auth::Scope::OfflineAccess))
}

fn issue(
    endpoint: &OAuthEndpoint,
    subject: &Subject,
    scopes: Scopes,
) -> Result<Response, OAuthError> {
    let jwt = endpoint
        .jwt
        .as_ref()
        .ok_or_else(|| OAuthError::unavailable("the token endpoint is not configured"))?;
    let issued = jwt.issue(subject.as_str(), scopes, crate::auth::jwt::now_secs());
    Ok(no_store(json!({
        "access_token": issued.access_token,
        "token_type": "Bearer",
        "expires_in": issued.expires_in,
        "scope": issued.scope.to_string(),
    })))
}

/// A token response: JSON that no cache may keep (RFC 6749 §5.1).
fn no_store(body: serde_json::Value) -> Response {
    let mut response = axum::Json(body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

fn method_not_allowed(allow: &'static str) -> Response {
    let mut response = OAuthError::with_status(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request",
        format!("use {allow}"),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}
