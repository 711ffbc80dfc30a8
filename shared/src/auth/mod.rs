//! Who may call Hearth, and with which scopes.
//!
//! A request carries `Authorization: Bearer <token>`, where the token is either an access
//! token issued by the OAuth function (an HS256 JWT, see [`jwt`]) or a static judge token
//! whose SHA-256 is listed in `MCP_JUDGE_TOKEN_HASHES`. An access token is accepted only while
//! its subject is still configured: the OAuth client id, or a listed judge-token hash. Removing
//! a hash therefore revokes the static token and every access token issued for it.
//!
//! A household token (an access token with a `gen` claim, minted by `hearth admin token`) names
//! a household account instead: it counts while its generation is the household's current one,
//! which [`Authenticator::confirm`] checks against the store (see `accounts` for the cache).
//!
//! Missing credentials deny (fail closed). The only opt-out is the explicit local-development
//! flag `MCP_ALLOW_NO_AUTH=true`, which configuration refuses under Lambda.

pub mod attestation;
mod caller;
pub mod credentials;
pub mod dev_credentials;
pub mod jwt;
pub mod scope;

use http::HeaderMap;
use http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub use caller::{Caller, HouseholdCaller, HouseholdRefusal, household_scope};
pub use credentials::Credentials;
pub use jwt::{JwtKeys, TokenRejection};
pub use scope::{Scope, Scopes};

use std::sync::Arc;

use crate::accounts::{Accounts, Standing, is_household_id};
use crate::chain::sha256_hex;
use crate::clock::Clock;
use crate::store::ClientStore;
use crate::store::client::STORED_CLIENT_PREFIX;

/// The verified identity behind a request: the OAuth client id, or the hex SHA-256 of a judge
/// token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject(String);

impl Subject {
    /// The subject of a judge token: the hex SHA-256 of the token.
    pub fn of_judge_token(token: &str) -> Self {
        Subject(sha256_hex(token))
    }

    pub fn of_client(client_id: &str) -> Self {
        Subject(client_id.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The data scope of this subject: SHA-256 of the subject, so stored keys never contain a
    /// credential or anything a credential can be derived from.
    pub fn caller(&self) -> Caller {
        Caller::unattested(sha256_hex(&self.0))
    }
}

/// An authenticated request: who, and what they may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub subject: Subject,
    pub scopes: Scopes,
    /// For a household token, the generation it was issued under; the subject is then the
    /// household id.
    pub household_generation: Option<u64>,
    /// For a household token issued through account linking: its refresh-token family.
    pub household_family: Option<String>,
    /// Whether this is the OAuth client's own client-credentials token. Where account linking
    /// is configured it reaches only what needs no household (Tier 1).
    pub is_service: bool,
    /// Whether this is the client-credentials token of a client an operator added (see
    /// `clients`): always Tier 1 only, and good only while the client exists.
    pub stored_client: bool,
}

impl Grant {
    /// The caller as far as the token alone tells, before [`Authenticator::confirm`] has
    /// checked a household's standing: enough to count rate limits against.
    pub fn provisional_caller(&self) -> Caller {
        match self.household_generation {
            Some(_) => Caller::of_household(self.subject.as_str(), Standing::Unknown),
            None => self.subject.caller(),
        }
    }
}

/// Why a request was not authenticated. The messages are safe to return to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    #[error("missing bearer token")]
    Missing,
    #[error("only bearer tokens are accepted")]
    WrongScheme,
    #[error("invalid token")]
    Invalid,
    #[error("token expired")]
    Expired,
}

/// Verifies bearer tokens against the configured credentials.
pub struct Authenticator {
    judge_token_hashes: Vec<[u8; 32]>,
    client_id: Option<String>,
    jwt: Option<JwtKeys>,
    allow_anonymous: bool,
    /// Where household tokens' generations are checked; without it their standing is unknown.
    accounts: Option<Arc<Accounts>>,
    /// Where stored clients' tokens are checked; without it they are refused.
    clients: Option<(Arc<dyn ClientStore>, Arc<dyn Clock>)>,
}

/// The subject every request gets when authentication is switched off for local development.
const ANONYMOUS: &str = "local-development-without-auth";

impl Authenticator {
    /// Accepts listed judge tokens, and access tokens signed by `jwt` for a configured subject.
    /// Without `jwt` no access token is accepted; without hashes no judge token is.
    pub fn new(credentials: &Credentials, jwt: Option<JwtKeys>) -> Self {
        Self {
            judge_token_hashes: credentials.judge_token_hashes.clone(),
            client_id: credentials.client_id.clone(),
            jwt,
            allow_anonymous: false,
            accounts: None,
            clients: None,
        }
    }

    /// The same authenticator checking household tokens against `accounts`.
    pub fn with_accounts(mut self, accounts: Arc<Accounts>) -> Self {
        self.accounts = Some(accounts);
        self
    }

    /// The same authenticator accepting the client-credentials tokens of clients an operator
    /// added, checked against `clients` on every request.
    pub fn with_clients(mut self, clients: Arc<dyn ClientStore>, clock: Arc<dyn Clock>) -> Self {
        self.clients = Some((clients, clock));
        self
    }

    /// The household accounts household tokens are checked against, if any.
    pub fn accounts(&self) -> Option<&Accounts> {
        self.accounts.as_deref()
    }

    /// Accepts every request as one fixed local subject with every scope. Only for
    /// `MCP_ALLOW_NO_AUTH=true` outside Lambda; configuration refuses it anywhere else.
    pub fn allow_anonymous() -> Self {
        Self {
            judge_token_hashes: Vec::new(),
            client_id: None,
            jwt: None,
            allow_anonymous: true,
            accounts: None,
            clients: None,
        }
    }

    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Grant, AuthFailure> {
        if self.allow_anonymous {
            return Ok(Grant {
                subject: Subject(ANONYMOUS.to_owned()),
                scopes: Scopes::DEFAULT,
                household_generation: None,
                household_family: None,
                is_service: false,
                stored_client: false,
            });
        }
        let token = bearer_token(headers)?;
        if let Some(subject) = self.judge_token(token) {
            return Ok(Grant {
                subject,
                scopes: Scopes::DEFAULT,
                household_generation: None,
                household_family: None,
                is_service: false,
                stored_client: false,
            });
        }
        let jwt = self.jwt.as_ref().ok_or(AuthFailure::Invalid)?;
        let verified = jwt.verify(token).map_err(|rejection| match rejection {
            TokenRejection::Expired => AuthFailure::Expired,
            TokenRejection::Invalid => AuthFailure::Invalid,
        })?;
        // A stored client's token is checked against the store by `confirm`.
        let stored_client = verified.generation.is_none()
            && self.clients.is_some()
            && verified.subject.starts_with(STORED_CLIENT_PREFIX);
        let current = match verified.generation {
            Some(_) => is_household_id(&verified.subject),
            None => stored_client || self.is_current_subject(&verified.subject),
        };
        if !current {
            return Err(AuthFailure::Invalid);
        }
        let is_service = stored_client
            || (verified.generation.is_none()
                && self.client_id.as_deref() == Some(&verified.subject));
        Ok(Grant {
            subject: Subject(verified.subject),
            scopes: verified.scopes,
            household_generation: verified.generation,
            household_family: verified.family,
            is_service,
            stored_client,
        })
    }

    /// The caller behind an authenticated grant. A household token is refused once its
    /// household was unlinked or deleted, or its refresh-token family revoked; while the store cannot tell, the caller is kept but
    /// its household data is out of reach (the token still opens `initialize`, `tools/list`
    /// and the tools that need no household).
    pub async fn confirm(&self, grant: &Grant) -> Result<Caller, AuthFailure> {
        if grant.stored_client {
            return self.confirm_stored_client(grant).await;
        }
        let Some(generation) = grant.household_generation else {
            return Ok(grant.subject.caller());
        };
        let household_id = grant.subject.as_str();
        let standing = match &self.accounts {
            Some(accounts) => {
                accounts
                    .standing(household_id, generation, grant.household_family.as_deref())
                    .await
            }
            None => Standing::Unknown,
        };
        match standing {
            Standing::Revoked => Err(AuthFailure::Invalid),
            standing => Ok(Caller::of_household(household_id, standing)
                .reading_without_device(grant.scopes.contains(Scope::CountersignRead))),
        }
    }

    /// A stored client's client-credentials token holds while the client exists and is one an
    /// operator added: deleting it ends its tokens at once. While the store cannot tell, the
    /// token is refused (fail closed): it would reach nothing but Tier 1 anyway.
    async fn confirm_stored_client(&self, grant: &Grant) -> Result<Caller, AuthFailure> {
        let Some((clients, clock)) = &self.clients else {
            return Err(AuthFailure::Invalid);
        };
        let now_ms = crate::clock::unix_ms(clock.now());
        match clients.client(grant.subject.as_str(), now_ms).await {
            Ok(Some(client))
                if client.origin == crate::store::ClientOrigin::Operator
                    && client.secret_hash.is_some() =>
            {
                Ok(grant.subject.caller())
            }
            Ok(_) => Err(AuthFailure::Invalid),
            Err(error) => {
                tracing::warn!(%error, "clients unavailable");
                Err(AuthFailure::Invalid)
            }
        }
    }

    /// The subject of `token` if it is a listed judge token. Every configured hash is compared
    /// without stopping early.
    pub fn judge_token(&self, token: &str) -> Option<Subject> {
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut matched = subtle::Choice::from(0);
        for hash in &self.judge_token_hashes {
            matched |= hash.ct_eq(&presented);
        }
        bool::from(matched).then(|| Subject(hex::encode(presented)))
    }

    /// Whether an access token's subject is still configured (see the module comment).
    fn is_current_subject(&self, subject: &str) -> bool {
        if self.client_id.as_deref() == Some(subject) {
            return true;
        }
        let mut hash = [0u8; 32];
        hex::decode_to_slice(subject, &mut hash).is_ok() && self.judge_token_hashes.contains(&hash)
    }
}

fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthFailure> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = values.next().ok_or(AuthFailure::Missing)?;
    if values.next().is_some() {
        return Err(AuthFailure::Invalid);
    }
    let value = value.to_str().map_err(|_| AuthFailure::Invalid)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthFailure::WrongScheme)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthFailure::WrongScheme);
    }
    let token = token.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(AuthFailure::Invalid);
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;
    use http::HeaderValue;

    const JWT_SECRET: &str = "an-hs256-key-of-at-least-32-bytes!!";

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    fn credentials(judge_tokens: &[&str]) -> Credentials {
        let hashes: Vec<String> = judge_tokens.iter().copied().map(sha256_hex).collect();
        let (credentials, problems) = Credentials::from_lookup(|name| match name {
            "MCP_CLIENT_ID" => Some("alexa".into()),
            "MCP_JUDGE_TOKEN_HASHES" => Some(hashes.join(",")),
            _ => None,
        });
        assert!(problems.is_empty());
        credentials
    }

    fn keys() -> JwtKeys {
        JwtKeys::new(
            &Secret::new(JWT_SECRET),
            "http://127.0.0.1",
            "http://127.0.0.1/mcp",
        )
        .unwrap()
    }

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    #[test]
    fn a_listed_judge_token_is_accepted_and_its_hash_is_the_subject() {
        let auth = Authenticator::new(&credentials(&["s3cret"]), None);
        let grant = auth.authenticate(&headers("Bearer s3cret")).unwrap();
        assert_eq!(grant.subject, Subject(sha256_hex("s3cret")));
        assert_eq!(grant.scopes, Scopes::DEFAULT);
        assert_eq!(
            grant.subject.caller().scope,
            sha256_hex(sha256_hex("s3cret"))
        );
    }

    #[test]
    fn malformed_authorization_is_refused() {
        let auth = Authenticator::new(&credentials(&["s3cret"]), Some(keys()));
        let cases = [
            ("Bearer wrong", AuthFailure::Invalid),
            ("Basic czNjcmV0Og==", AuthFailure::WrongScheme),
            ("s3cret", AuthFailure::WrongScheme),
            ("Bearer ", AuthFailure::Invalid),
            ("Bearer s3cret extra", AuthFailure::Invalid),
        ];
        for (value, expected) in cases {
            assert_eq!(auth.authenticate(&headers(value)), Err(expected), "{value}");
        }
        assert_eq!(
            auth.authenticate(&HeaderMap::new()),
            Err(AuthFailure::Missing)
        );
    }

    #[test]
    fn access_tokens_need_a_still_configured_subject() {
        let auth = Authenticator::new(&credentials(&["judge"]), Some(keys()));
        for subject in ["alexa".to_owned(), sha256_hex("judge")] {
            let token = keys().issue(&subject, Scopes::DEFAULT, now()).access_token;
            let grant = auth
                .authenticate(&headers(&format!("Bearer {token}")))
                .unwrap();
            assert_eq!(grant.subject.as_str(), subject);
        }
        // The judge hash is removed: its access tokens stop working with it.
        let revoked = Authenticator::new(&credentials(&[]), Some(keys()));
        let token = keys()
            .issue(&sha256_hex("judge"), Scopes::DEFAULT, now())
            .access_token;
        assert_eq!(
            revoked.authenticate(&headers(&format!("Bearer {token}"))),
            Err(AuthFailure::Invalid)
        );
        let stranger = keys()
            .issue("someone-else", Scopes::DEFAULT, now())
            .access_token;
        assert_eq!(
            auth.authenticate(&headers(&format!("Bearer {stranger}"))),
            Err(AuthFailure::Invalid)
        );
    }

    #[test]
    fn without_a_signing_key_no_access_token_is_accepted() {
        let auth = Authenticator::new(&credentials(&[]), None);
        let token = keys().issue("alexa", Scopes::DEFAULT, now()).access_token;
        assert_eq!(
            auth.authenticate(&headers(&format!("Bearer {token}"))),
            Err(AuthFailure::Invalid)
        );
    }
}
