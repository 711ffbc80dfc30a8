//! Account linking, without HTTP: how a household's link code becomes an authorization code,
//! the code a token set, and a refresh token the next one.
//!
//! - An operator makes a **link code** for a household (`hearth admin link-code`). It is
//!   single-use, lives [`LINK_CODE_LIFETIME_MS`], is stored as a hash, and is bound to the
//!   household's current generation, so an unlink voids it.
//! - The consent page redeems it and issues an **authorization code**, bound to the client,
//!   the redirect URI, the PKCE challenge, the scope, the resource and the household. A code
//!   is exchangeable for [`AUTHORIZATION_CODE_LIFETIME_MS`]; its record is kept for an access
//!   token's lifetime after that, so a replay is still recognised and revokes what the code
//!   issued (RFC 6749 §4.1.2).
//! - An exchange starts a **refresh-token family**. Every refresh rotates its token; presenting
//!   a token already rotated away revokes the whole family, access tokens included (they name
//!   their family, see `Accounts::revoke_family`). One exception: the token rotated away last
//!   may be presented again within [`REFRESH_GRACE_MS`], for a client whose response was lost;
//!   it then rotates again, and the token it lost stops working.
//! - An unlink raises the household's generation, which every link code, code and family
//!   carries: each of them stops working at once.
//!
//! The grant machinery is written here rather than taken from `oxide-auth` (0.6.1, with
//! `oxide-auth-axum` 0.6.0 for axum 0.8), which was evaluated for this issue. Its storage
//! traits return `()` errors, and an outage is not a refusal. It has no RFC 8707 resource
//! indicators: repeated parameters are dropped and there is no `invalid_target`. Refresh
//! tokens rotate, but there are no families, reuse detection or grace window. The refreshed
//! grant's lifetime is fixed at one hour in `code_grant/refresh.rs`, and `client_secret_post`
//! is not read on refresh. Its S256-only PKCE (`Pkce::required()`) is the part that fits, and
//! it is the smallest part ([`pkce`]).

pub mod pkce;
pub mod secrets;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::accounts::{AccountError, Accounts};
use crate::auth::jwt::{LEEWAY_SECS, TOKEN_LIFETIME_SECS};
use crate::auth::{JwtKeys, Scope, Scopes};
use crate::clock::{Clock, unix_ms};
use crate::random::RandomFailed;
use crate::store::{AccountItem, GrantItem, GrantKind, GrantStore, LinkItem, StoreError};
use secrets::{
    authorization_code_key, link_code_key, new_authorization_code, new_family_id, new_link_code,
    normalize_link_code, parse_minted_refresh_token, parse_refresh_token, refresh_token_v3,
};

/// How long a link code can be entered.
pub const LINK_CODE_LIFETIME_MS: i64 = 15 * 60_000;
/// How long an authorization code can be exchanged.
pub const AUTHORIZATION_CODE_LIFETIME_MS: i64 = 5 * 60_000;
/// How long the refresh token rotated away last may be presented again.
pub const REFRESH_GRACE_MS: i64 = 60_000;
/// A family unused this long expires.
pub const REFRESH_IDLE_MS: i64 = 90 * 86_400_000;
/// How long an access token may be accepted after it was issued, leeway included.
const ACCESS_TOKEN_LIFE_MS: i64 = ((TOKEN_LIFETIME_SECS + LEEWAY_SECS) * 1000) as i64;
/// Compare-and-swap attempts before a family write reports the store busy.
const WRITE_ATTEMPTS: usize = 3;

/// What an authorization code is bound to, as the authorization request gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeBinding {
    pub client_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    /// As [`Scopes`] displays it.
    pub scope: String,
    pub resource: String,
}

/// The household a redeemed link code names, at the generation it was made under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedHousehold {
    pub household_id: String,
    pub generation: u64,
}

/// A token response's contents.
#[derive(Debug, Clone)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: u64,
    pub scope: Scopes,
}

/// Why a grant was refused, in RFC 6749 §5.2 terms. The text is safe to return: it never
/// holds a code or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkingError {
    #[error("{0}")]
    InvalidRequest(&'static str),
    #[error("{0}")]
    InvalidGrant(&'static str),
    #[error("{0}")]
    InvalidTarget(&'static str),
    #[error("{0}")]
    InvalidScope(&'static str),
    #[error("storage unavailable: {0}")]
    Unavailable(String),
}

impl From<StoreError> for LinkingError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Conflict => LinkingError::Unavailable("the store is busy".into()),
            other => LinkingError::Unavailable(other.to_string()),
        }
    }
}

impl From<AccountError> for LinkingError {
    fn from(error: AccountError) -> Self {
        match error {
            AccountError::NotFound(_) => LinkingError::InvalidGrant(HOUSEHOLD_GONE),
            other => LinkingError::Unavailable(other.to_string()),
        }
    }
}

impl From<RandomFailed> for LinkingError {
    fn from(failed: RandomFailed) -> Self {
        LinkingError::Unavailable(failed.to_string())
    }
}

const CODE_NOT_VALID: &str = "the authorization code is not valid or has expired";
const CODE_REPLAYED: &str =
    "the authorization code was already used; the tokens it issued are revoked";
const REFRESH_NOT_VALID: &str = "the refresh token is not valid or has expired";
const REFRESH_REUSED: &str =
    "the refresh token was already used; every token of its family is revoked";
const REFRESH_REVOKED: &str = "the refresh token was revoked";
const OTHER_CLIENT: &str = "the grant was issued to another client";
const HOUSEHOLD_GONE: &str = "the household was unlinked or deleted; link it again";
const RESOURCE: &str = "resource is required and must be this server's MCP URL";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkCodeBody {
    household_id: String,
    generation: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeBody {
    binding: CodeBinding,
    household_id: String,
    generation: u64,
    usable_until_ms: i64,
    /// Set by the one exchange that succeeded: the family it started.
    issued_family: Option<String>,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FamilyBody {
    household_id: String,
    generation: u64,
    client_id: String,
    scope: String,
    /// The hash of the first-form (`hrt1`) refresh token that may be used now; empty once the
    /// family issues second-form tokens.
    current: String,
    /// The hash of the first-form token rotated away last.
    previous: Option<String>,
    /// When the token that may be retried ([`REFRESH_GRACE_MS`]) was rotated away.
    rotated_at_ms: i64,
    revoked: bool,
    /// The number of the minted (`hrt2` or `hrt3`) token that may be used now; 0 while the
    /// family still holds a first-form token.
    #[serde(default)]
    number: u64,
    /// The number of the minted token rotated away last, which may be retried; 0 for none.
    #[serde(default)]
    previous_number: u64,
}

/// What a presented refresh token is to its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// The token that may be used now.
    Current,
    /// The one rotated away last: a retry within the grace window, reuse after it.
    Previous,
    /// A token the family issued before that: reuse.
    Older,
    /// Not a token of this family: made up, or garbage. It revokes nothing.
    Unknown,
}

impl FamilyBody {
    /// What a first-form token (its secret's hash) is to this family. Only the current and
    /// the previous first-form token are stored, so nothing older can be recognised. The last
    /// first-form token stays stored after the family moves on to second-form ones; once a
    /// second-form token has been rotated away too, it is no longer the one rotated away
    /// last, and presenting it is reuse.
    fn holds(&self, presented: &str) -> Held {
        if !self.current.is_empty() && same_hash(presented, &self.current) {
            Held::Current
        } else if self
            .previous
            .as_deref()
            .is_some_and(|previous| same_hash(presented, previous))
        {
            if self.previous_number == 0 {
                Held::Previous
            } else {
                Held::Older
            }
        } else {
            Held::Unknown
        }
    }

    /// What genuine minted token `number` is to this family.
    fn holds_number(&self, number: u64) -> Held {
        match number {
            0 => Held::Unknown,
            n if n == self.number => Held::Current,
            n if n == self.previous_number => Held::Previous,
            n if n < self.number => Held::Older,
            _ => Held::Unknown,
        }
    }

    /// What `token` is to this family, in any form; the MAC of a minted token must be
    /// genuine, and a third-form token must name the family's household, or it is unknown.
    fn judge(&self, token: &str, jwt: &JwtKeys) -> Held {
        if let Some(minted) = parse_minted_refresh_token(token, |message| jwt.refresh_mac(message))
        {
            let household_ok = minted
                .household_id
                .is_none_or(|household_id| household_id == self.household_id);
            return if minted.genuine && household_ok {
                self.holds_number(minted.number)
            } else {
                Held::Unknown
            };
        }
        match parse_refresh_token(token) {
            Some((_, hash)) => self.holds(&hash),
            None => Held::Unknown,
        }
    }

    /// The next minted token (third form), rotating the current one away (`retry`: the one retried is
    /// kept as the previous, and the token whose answer was lost is dropped).
    fn rotate(&mut self, family_id: &str, jwt: &JwtKeys, retry: bool, now_ms: i64) -> String {
        if !retry {
            self.previous_number = self.number;
            if !self.current.is_empty() {
                self.previous = Some(std::mem::take(&mut self.current));
            }
            self.rotated_at_ms = now_ms;
        }
        self.current.clear();
        self.number += 1;
        refresh_token_v3(family_id, &self.household_id, self.number, |message| {
            jwt.refresh_mac(message)
        })
    }
}

/// A refresh family as read ahead of its grant (see [`Linking::family_ahead`]), and the
/// account of the household a third-form token names, read beside it.
pub struct FamilyRead {
    family_id: String,
    read: Result<Option<GrantItem>, StoreError>,
    account: Option<AccountRead>,
}

/// A client linked to a household, as the household's page lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    pub client_id: String,
    pub linked_at_ms: i64,
    /// When it last refreshed its tokens (or was linked, if it never has).
    pub last_used_at_ms: i64,
}

/// A household's account as read ahead of a refresh.
struct AccountRead {
    household_id: String,
    read: Result<Option<AccountItem>, StoreError>,
}

/// The family id a refresh token names, in any form, if it has the form of one.
fn family_of(token: &str) -> Option<&str> {
    parse_refresh_token(token)
        .map(|(family, _)| family)
        .or_else(|| {
            let rest = token
                .strip_prefix("hrt2.")
                .or_else(|| token.strip_prefix("hrt3."))?;
            let family = rest.split('.').next()?;
            (family.len() == 32 && family.bytes().all(|b| b.is_ascii_hexdigit())).then_some(family)
        })
}

pub struct Linking {
    grants: Arc<dyn GrantStore>,
    accounts: Arc<Accounts>,
    clock: Arc<dyn Clock>,
}

impl Linking {
    pub fn new(
        grants: Arc<dyn GrantStore>,
        accounts: Arc<Accounts>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            grants,
            accounts,
            clock,
        }
    }

    fn now_ms(&self) -> i64 {
        unix_ms(self.clock.now())
    }

    /// Seconds since the Unix epoch on the clock linking runs on (the consent form's CSRF
    /// tokens expire on it too).
    pub fn now_secs(&self) -> u64 {
        self.clock.now().unix_timestamp().max(0) as u64
    }

    /// A fresh link code for the household and when it expires (Unix ms). The code is shown
    /// this once; only its hash is stored.
    pub async fn new_link_code(&self, household_id: &str) -> Result<(String, i64), AccountError> {
        let account = self.accounts.get(household_id).await?;
        let code = new_link_code().map_err(|f| AccountError::Unavailable(f.to_string()))?;
        let normalized = normalize_link_code(&code).expect("a fresh code is well formed");
        let now_ms = self.now_ms();
        let expires_at_ms = now_ms + LINK_CODE_LIFETIME_MS;
        let body = LinkCodeBody {
            household_id: account.household_id,
            generation: account.generation,
        };
        let item = GrantItem {
            kind: GrantKind::LinkCode,
            key: link_code_key(&normalized),
            body: to_json(&body),
            expires_at_ms,
            revision: 1,
        };
        self.grants.put_grant(&item, None, now_ms).await?;
        Ok((code, expires_at_ms))
    }

    /// Redeems an entered link code: `Some` the first time a live code of a still-linked
    /// household is entered, `None` for anything else (malformed, unknown, expired, used, or
    /// made before an unlink). Redeeming consumes it.
    pub async fn redeem_link_code(
        &self,
        entered: &str,
    ) -> Result<Option<LinkedHousehold>, LinkingError> {
        let Some(normalized) = normalize_link_code(entered) else {
            return Ok(None);
        };
        let now_ms = self.now_ms();
        let key = link_code_key(&normalized);
        let Some(item) = self.grants.grant(GrantKind::LinkCode, &key, now_ms).await? else {
            return Ok(None);
        };
        let body: LinkCodeBody = from_json(&item.body)?;
        if !self
            .grants
            .delete_grant(GrantKind::LinkCode, &key, item.revision, now_ms)
            .await?
        {
            return Ok(None);
        }
        match self.accounts.fresh(&body.household_id).await? {
            Some(account) if account.generation == body.generation => Ok(Some(LinkedHousehold {
                household_id: body.household_id,
                generation: body.generation,
            })),
            _ => Ok(None),
        }
    }

    /// Issues an authorization code for `household`, bound to `binding`.
    pub async fn issue_code(
        &self,
        binding: CodeBinding,
        household: &LinkedHousehold,
    ) -> Result<String, LinkingError> {
        let code = new_authorization_code()?;
        let now_ms = self.now_ms();
        let usable_until_ms = now_ms + AUTHORIZATION_CODE_LIFETIME_MS;
        let body = CodeBody {
            binding,
            household_id: household.household_id.clone(),
            generation: household.generation,
            usable_until_ms,
            issued_family: None,
        };
        let item = GrantItem {
            kind: GrantKind::AuthorizationCode,
            key: authorization_code_key(&code),
            body: to_json(&body),
            expires_at_ms: usable_until_ms + ACCESS_TOKEN_LIFE_MS,
            revision: 1,
        };
        self.grants.put_grant(&item, None, now_ms).await?;
        Ok(code)
    }

    /// The `authorization_code` grant: checks the code against everything it is bound to,
    /// claims it, and starts a refresh-token family.
    pub async fn exchange_code(
        &self,
        jwt: &JwtKeys,
        client_id: &str,
        code: &str,
        redirect_uri: Option<&str>,
        code_verifier: Option<&str>,
        resource: Option<&str>,
    ) -> Result<Tokens, LinkingError> {
        let now_ms = self.now_ms();
        let key = authorization_code_key(code);
        let item = self
            .grants
            .grant(GrantKind::AuthorizationCode, &key, now_ms)
            .await?
            .ok_or(LinkingError::InvalidGrant(CODE_NOT_VALID))?;
        let mut body: CodeBody = from_json(&item.body)?;
        if let Some(family_id) = &body.issued_family {
            self.revoke_family(family_id, &body.household_id).await?;
            return Err(LinkingError::InvalidGrant(CODE_REPLAYED));
        }
        if now_ms >= body.usable_until_ms {
            return Err(LinkingError::InvalidGrant(CODE_NOT_VALID));
        }
        if body.binding.client_id != client_id {
            return Err(LinkingError::InvalidGrant(OTHER_CLIENT));
        }
        if redirect_uri != Some(body.binding.redirect_uri.as_str()) {
            return Err(LinkingError::InvalidGrant(
                "redirect_uri must be the one of the authorization request",
            ));
        }
        let named = resource.and_then(crate::config::canonical_resource);
        if named.as_deref() != Some(body.binding.resource.as_str()) {
            return Err(LinkingError::InvalidTarget(RESOURCE));
        }
        let verifier = code_verifier.ok_or(LinkingError::InvalidRequest(
            "code_verifier is required (PKCE)",
        ))?;
        if !pkce::verifier_matches(verifier, &body.binding.code_challenge) {
            return Err(LinkingError::InvalidGrant(
                "code_verifier does not match the code_challenge",
            ));
        }
        // Claim the code: of two concurrent exchanges exactly one writes over this revision.
        let family_id = new_family_id()?;
        body.issued_family = Some(family_id.clone());
        match self.rewrite(&item, to_json(&body), None, now_ms).await {
            Ok(()) => {}
            Err(StoreError::Conflict) => {
                // Someone else exchanged it in between: that is a replay too.
                if let Some(item) = self
                    .grants
                    .grant(GrantKind::AuthorizationCode, &key, now_ms)
                    .await?
                {
                    let other: CodeBody = from_json(&item.body)?;
                    if let Some(other_family) = &other.issued_family {
                        self.revoke_family(other_family, &other.household_id)
                            .await?;
                    }
                }
                return Err(LinkingError::InvalidGrant(CODE_REPLAYED));
            }
            Err(error) => return Err(error.into()),
        }
        let scope = Scopes::parse(&body.binding.scope)
            .map_err(|_| LinkingError::Unavailable("a stored code is unreadable".into()))?;
        let mut family = FamilyBody {
            household_id: body.household_id.clone(),
            generation: body.generation,
            client_id: client_id.to_owned(),
            scope: body.binding.scope.clone(),
            current: String::new(),
            previous: None,
            rotated_at_ms: now_ms,
            revoked: false,
            number: 0,
            previous_number: 0,
        };
        let refresh_token = family.rotate(&family_id, jwt, false, now_ms);
        let family_item = GrantItem {
            kind: GrantKind::RefreshFamily,
            key: family_id.clone(),
            body: to_json(&family),
            expires_at_ms: now_ms + REFRESH_IDLE_MS,
            revision: 1,
        };
        // The family first, then the account's note of it: a household page's Unlink that
        // reads the note always finds the family there to revoke.
        self.grants.put_grant(&family_item, None, now_ms).await?;
        // Still linked under the code's generation? Counted as a token issued if so; if not,
        // the family just written is removed (its tokens were never handed out).
        let noted = self
            .accounts
            .note_linked_token(
                &body.household_id,
                body.generation,
                LinkItem {
                    family_id: family_id.clone(),
                    client_id: client_id.to_owned(),
                    linked_at_ms: now_ms,
                },
            )
            .await;
        if let Err(error) = noted {
            let _ = self
                .grants
                .delete_grant(GrantKind::RefreshFamily, &family_id, 1, now_ms)
                .await;
            return Err(error.into());
        }
        Ok(self.tokens(jwt, &family, &family_id, refresh_token, scope))
    }

    /// The family a refresh token names, read ahead of the `refresh_token` grant (beside the
    /// request's admission; see `oauth`), when the token is one this server minted (its MAC,
    /// checked in memory): a made-up token reads nothing. A third-form token names its
    /// household too, whose account is read at the same time.
    pub async fn family_ahead(&self, jwt: &JwtKeys, refresh_token: &str) -> Option<FamilyRead> {
        let minted = parse_minted_refresh_token(refresh_token, |message| jwt.refresh_mac(message))?;
        if !minted.genuine {
            return None;
        }
        let family = self
            .grants
            .grant(GrantKind::RefreshFamily, minted.family_id, self.now_ms());
        let account = async {
            let household_id = minted.household_id?;
            Some(AccountRead {
                household_id: household_id.to_owned(),
                read: self.accounts.fresh(household_id).await,
            })
        };
        let (read, account) = futures_util::join!(family, account);
        Some(FamilyRead {
            family_id: minted.family_id.to_owned(),
            read,
            account,
        })
    }

    /// The `refresh_token` grant: rotates the family's token, or revokes the family when a
    /// token rotated away is presented again (outside the grace window). `ahead`: the family
    /// as [`Self::family_ahead`] read it, which the first attempt starts from.
    ///
    /// The account is read before the rotation is written, not beside it: were the account's
    /// read to fail after the rotation landed, the client would hold a token rotated away, and
    /// its retry after the grace window (`REFRESH_GRACE_MS`) would revoke the family as reuse
    /// and end the household's link. A third-form token's account was read ahead beside the
    /// family, so the refresh's first attempt makes two round trips; an earlier form's, three.
    pub async fn refresh(
        &self,
        jwt: &JwtKeys,
        client_id: &str,
        refresh_token: &str,
        requested: Option<Scopes>,
        mut ahead: Option<FamilyRead>,
    ) -> Result<Tokens, LinkingError> {
        let family_id =
            family_of(refresh_token).ok_or(LinkingError::InvalidGrant(REFRESH_NOT_VALID))?;
        for _ in 0..WRITE_ATTEMPTS {
            let now_ms = self.now_ms();
            let (read, account_ahead) =
                match ahead.take().filter(|ahead| ahead.family_id == family_id) {
                    Some(ahead) => (ahead.read, ahead.account),
                    None => (
                        self.grants
                            .grant(GrantKind::RefreshFamily, family_id, now_ms)
                            .await,
                        None,
                    ),
                };
            let item = read?.ok_or(LinkingError::InvalidGrant(REFRESH_NOT_VALID))?;
            let mut family: FamilyBody = from_json(&item.body)?;
            if family.revoked {
                return Err(LinkingError::InvalidGrant(REFRESH_REVOKED));
            }
            if family.client_id != client_id {
                return Err(LinkingError::InvalidGrant(OTHER_CLIENT));
            }
            let held = family.judge(refresh_token, jwt);
            let is_retry =
                held == Held::Previous && now_ms - family.rotated_at_ms <= REFRESH_GRACE_MS;
            match held {
                Held::Current => {}
                Held::Previous if is_retry => {}
                // A genuine token rotated away, presented again: the family is compromised.
                Held::Previous | Held::Older => {
                    self.revoke_family(family_id, &family.household_id).await?;
                    return Err(LinkingError::InvalidGrant(REFRESH_REUSED));
                }
                // Made up around the family's public id, or garbage: refused, nothing revoked.
                Held::Unknown => return Err(LinkingError::InvalidGrant(REFRESH_NOT_VALID)),
            }
            // The account read ahead serves only the household the family names; a failed read
            // ahead is read again.
            let account = match account_ahead {
                Some(ahead) if ahead.household_id == family.household_id && ahead.read.is_ok() => {
                    ahead.read?
                }
                _ => self.accounts.fresh(&family.household_id).await?,
            };
            match account {
                Some(account) if account.generation == family.generation => {
                    if account
                        .revoked_families
                        .iter()
                        .any(|revoked| revoked.family_id == family_id)
                    {
                        return Err(LinkingError::InvalidGrant(REFRESH_REVOKED));
                    }
                }
                _ => return Err(LinkingError::InvalidGrant(HOUSEHOLD_GONE)),
            }
            let granted = Scopes::parse(&family.scope)
                .map_err(|_| LinkingError::Unavailable("a stored family is unreadable".into()))?;
            let scope = match requested.map(|requested| requested.or_default(granted)) {
                None => granted,
                Some(requested) if within(requested, granted) => requested,
                Some(_) => {
                    return Err(LinkingError::InvalidScope(
                        "a refresh may only keep or narrow the scope that was granted",
                    ));
                }
            };
            // A retry drops the token whose answer was lost and keeps the window as it was.
            let next_token = family.rotate(family_id, jwt, is_retry, now_ms);
            let idle_until = Some(now_ms + REFRESH_IDLE_MS);
            match self
                .rewrite(&item, to_json(&family), idle_until, now_ms)
                .await
            {
                Ok(()) => return Ok(self.tokens(jwt, &family, family_id, next_token, scope)),
                // A concurrent refresh rotated first; read again and judge the token anew.
                Err(StoreError::Conflict) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(LinkingError::Unavailable(
            "the refresh token is busy with other refreshes; try again".into(),
        ))
    }

    /// RFC 7009 revocation by `client_id`: a refresh token (current or the one rotated away
    /// last) or a linked access token revokes its whole family. Anything else is ignored, as
    /// the RFC asks: the answer never tells whether a token was valid.
    pub async fn revoke(
        &self,
        jwt: Option<&JwtKeys>,
        client_id: &str,
        token: &str,
    ) -> Result<(), LinkingError> {
        if let Some(family_id) = family_of(token) {
            let now_ms = self.now_ms();
            let Some(item) = self
                .grants
                .grant(GrantKind::RefreshFamily, family_id, now_ms)
                .await?
            else {
                return Ok(());
            };
            let family: FamilyBody = from_json(&item.body)?;
            // A second-form token is judged only with the key that made it.
            let held = match jwt {
                Some(jwt) => family.judge(token, jwt),
                None => parse_refresh_token(token).map_or(Held::Unknown, |(_, h)| family.holds(&h)),
            };
            if matches!(held, Held::Current | Held::Previous) && family.client_id == client_id {
                self.revoke_family(family_id, &family.household_id).await?;
            }
            return Ok(());
        }
        // An access token names its family; the family says which client it was issued to,
        // and only that client may end it (RFC 7009 §2.1). Anyone else's request changes
        // nothing and is answered the same 200.
        let verified = jwt.and_then(|jwt| jwt.verify(token).ok());
        if let Some(verified) = verified
            && let Some(family_id) = verified.family
            && let Some(item) = self
                .grants
                .grant(GrantKind::RefreshFamily, &family_id, self.now_ms())
                .await?
            && from_json::<FamilyBody>(&item.body)?.client_id == client_id
        {
            self.revoke_family(&family_id, &verified.subject).await?;
        }
        Ok(())
    }

    /// The refresh-token families still live that linking started for `household_id`, newest
    /// first: which client, when it was linked, and when it last refreshed its tokens.
    pub async fn linked(&self, household_id: &str) -> Result<Vec<Linked>, LinkingError> {
        let account = self.accounts.get(household_id).await?;
        let now_ms = self.now_ms();
        let mut linked = Vec::new();
        for link in account.links.iter().rev() {
            let Some(item) = self
                .grants
                .grant(GrantKind::RefreshFamily, &link.family_id, now_ms)
                .await?
            else {
                continue;
            };
            let family: FamilyBody = from_json(&item.body)?;
            let revoked = account
                .revoked_families
                .iter()
                .any(|gone| gone.family_id == link.family_id);
            if family.revoked || revoked || family.generation != account.generation {
                continue;
            }
            linked.push(Linked {
                client_id: link.client_id.clone(),
                linked_at_ms: link.linked_at_ms,
                last_used_at_ms: family.rotated_at_ms,
            });
        }
        Ok(linked)
    }

    /// Ends every refresh-token family `client_id` holds for `household_id` (and the access
    /// tokens they issued), and forgets them: the client must link again. Answers how many.
    pub async fn end_client(
        &self,
        household_id: &str,
        client_id: &str,
    ) -> Result<usize, LinkingError> {
        let account = self.accounts.get(household_id).await?;
        let families: Vec<String> = account
            .links
            .iter()
            .filter(|link| link.client_id == client_id)
            .map(|link| link.family_id.clone())
            .collect();
        for family_id in &families {
            self.revoke_family(family_id, household_id).await?;
        }
        self.accounts
            .forget_links(household_id, |link| link.client_id == client_id)
            .await?;
        Ok(families.len())
    }

    /// Revokes a family: its access tokens through the account (first, so they stop even if
    /// the second write fails), then its refresh tokens.
    async fn revoke_family(&self, family_id: &str, household_id: &str) -> Result<(), LinkingError> {
        let now_ms = self.now_ms();
        match self
            .accounts
            .revoke_family(household_id, family_id, now_ms + ACCESS_TOKEN_LIFE_MS)
            .await
        {
            // A deleted household's tokens are refused already.
            Ok(()) | Err(AccountError::NotFound(_)) => {}
            Err(error) => return Err(error.into()),
        }
        for _ in 0..WRITE_ATTEMPTS {
            let Some(item) = self
                .grants
                .grant(GrantKind::RefreshFamily, family_id, now_ms)
                .await?
            else {
                return Ok(());
            };
            let mut family: FamilyBody = from_json(&item.body)?;
            if family.revoked {
                return Ok(());
            }
            family.revoked = true;
            match self.rewrite(&item, to_json(&family), None, now_ms).await {
                Ok(()) => return Ok(()),
                Err(StoreError::Conflict) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(LinkingError::Unavailable(
            "the refresh-token family could not be marked revoked; its access tokens are".into(),
        ))
    }

    /// Writes `item` again with `body` (and, if given, a new expiry) on condition that it is
    /// still the revision read: [`StoreError::Conflict`] when another writer came first.
    async fn rewrite(
        &self,
        item: &GrantItem,
        body: String,
        expires_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let rewritten = GrantItem {
            body,
            expires_at_ms: expires_at_ms.unwrap_or(item.expires_at_ms),
            revision: item.revision + 1,
            ..item.clone()
        };
        self.grants
            .put_grant(&rewritten, Some(item.revision), now_ms)
            .await
    }

    fn tokens(
        &self,
        jwt: &JwtKeys,
        family: &FamilyBody,
        family_id: &str,
        refresh_token: String,
        scope: Scopes,
    ) -> Tokens {
        let now_secs = self.now_secs();
        let issued = jwt.issue_linked(
            &family.household_id,
            family.generation,
            family_id,
            scope,
            now_secs,
        );
        Tokens {
            access_token: issued.access_token,
            refresh_token,
            expires_in: issued.expires_in,
            scope,
        }
    }
}

/// Whether every scope of `requested` is in `granted`; `offline_access` always is, since it
/// opens nothing (a family linked before it was known did not record it).
fn within(requested: Scopes, granted: Scopes) -> bool {
    Scope::ALL
        .iter()
        .filter(|scope| **scope != Scope::OfflineAccess)
        .all(|scope| !requested.contains(*scope) || granted.contains(*scope))
}

fn same_hash(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Plain structs of strings and numbers always serialise.
    serde_json::to_string(value).expect("linking records serialise")
}

fn from_json<'a, T: Deserialize<'a>>(body: &'a str) -> Result<T, LinkingError> {
    serde_json::from_str(body)
        .map_err(|_| LinkingError::Unavailable("a stored linking record is unreadable".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::secret::Secret;
    use crate::store::sqlite::SqliteStore;

    /// A linking over a fresh store, with a family as the earlier release stored it (no token
    /// numbers, one `hrt1` token); returns the linking, its clock, the keys, the family id and
    /// the `hrt1` token.
    async fn first_form_family() -> (
        Linking,
        Arc<ManualClock>,
        JwtKeys,
        String,
        String,
        tempfile::TempDir,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("hearth.db")).unwrap());
        let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
        let accounts = Arc::new(Accounts::new(store.clone(), clock.clone()));
        let household = accounts
            .create(&crate::accounts::new_household_id(), "Old", None)
            .await
            .unwrap();
        let linking = Linking::new(store.clone(), accounts, clock.clone());
        let jwt = JwtKeys::new(
            &Secret::new("a jwt secret of at least thirty-two bytes"),
            "http://127.0.0.1:8790",
            "http://127.0.0.1:8790/mcp",
        )
        .unwrap();
        let family_id = new_family_id().unwrap();
        let (old_token, old_hash) = secrets::new_refresh_token(&family_id).unwrap();
        // The family as the earlier release stored it: no token numbers.
        let body = serde_json::json!({
            "household_id": household.household_id, "generation": household.generation,
            "client_id": "client", "scope": "mcp:service", "current": old_hash,
            "previous": null, "rotated_at_ms": 0, "revoked": false,
        });
        let now_ms = unix_ms(clock.now());
        let item = GrantItem {
            kind: GrantKind::RefreshFamily,
            key: family_id.clone(),
            body: body.to_string(),
            expires_at_ms: now_ms + REFRESH_IDLE_MS,
            revision: 1,
        };
        store.put_grant(&item, None, now_ms).await.unwrap();
        (linking, clock, jwt, family_id, old_token, dir)
    }

    /// A family from before minted tokens: its `hrt1` token still refreshes, once, into an
    /// `hrt3` one; presented again after the grace window it is reuse and revokes the
    /// family; one made up around the family id revokes nothing.
    #[tokio::test]
    async fn a_first_form_token_keeps_working_until_it_rotates() {
        let (linking, clock, jwt, family_id, old_token, _dir) = first_form_family().await;
        let made_up = format!("hrt1.{family_id}.{}", "A".repeat(43));
        assert!(matches!(
            linking.refresh(&jwt, "client", &made_up, None, None).await,
            Err(LinkingError::InvalidGrant(REFRESH_NOT_VALID))
        ));
        let rotated = linking
            .refresh(&jwt, "client", &old_token, None, None)
            .await
            .unwrap();
        assert!(rotated.refresh_token.starts_with("hrt3."));
        clock.advance(time::Duration::milliseconds(REFRESH_GRACE_MS + 1));
        assert!(matches!(
            linking
                .refresh(&jwt, "client", &old_token, None, None)
                .await,
            Err(LinkingError::InvalidGrant(REFRESH_REUSED))
        ));
        assert!(matches!(
            linking
                .refresh(&jwt, "client", &rotated.refresh_token, None, None)
                .await,
            Err(LinkingError::InvalidGrant(REFRESH_REVOKED))
        ));
    }

    /// The `hrt1` token two rotations back is reuse, even within the grace window of the
    /// latest rotation: only the token rotated away last may be retried.
    #[tokio::test]
    async fn a_first_form_token_two_rotations_back_is_reuse_within_the_grace_window() {
        let (linking, _clock, jwt, _family_id, old_token, _dir) = first_form_family().await;
        let first = linking
            .refresh(&jwt, "client", &old_token, None, None)
            .await
            .unwrap();
        let second = linking
            .refresh(&jwt, "client", &first.refresh_token, None, None)
            .await
            .unwrap();
        assert!(matches!(
            linking
                .refresh(&jwt, "client", &old_token, None, None)
                .await,
            Err(LinkingError::InvalidGrant(REFRESH_REUSED))
        ));
        assert!(matches!(
            linking
                .refresh(&jwt, "client", &second.refresh_token, None, None)
                .await,
            Err(LinkingError::InvalidGrant(REFRESH_REVOKED))
        ));
    }

    /// A family that holds a second-form token (`hrt2`, no household id), as the release
    /// before the third form left it: the token refreshes once into an `hrt3` one, which
    /// refreshes in turn; the `hrt2` token presented again after the grace window is reuse.
    #[tokio::test]
    async fn a_second_form_token_keeps_working_until_it_rotates() {
        let (linking, clock, jwt, family_id, old_token, _dir) = first_form_family().await;
        // Rotate the first-form token away, then put the family back as the release before
        // the third form would have left it: holding second-form token 1.
        linking
            .refresh(&jwt, "client", &old_token, None, None)
            .await
            .unwrap();
        let message = format!("hearth refresh token\n{family_id}\n1");
        let second_form = format!(
            "hrt2.{family_id}.1.{}",
            base64::engine::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                jwt.refresh_mac(&message)
            )
        );
        clock.advance(time::Duration::milliseconds(REFRESH_GRACE_MS + 1));
        let rotated = linking
            .refresh(&jwt, "client", &second_form, None, None)
            .await
            .unwrap();
        assert!(
            rotated.refresh_token.starts_with("hrt3."),
            "{}",
            rotated.refresh_token
        );
        let again = linking
            .refresh(&jwt, "client", &rotated.refresh_token, None, None)
            .await
            .unwrap();
        assert!(again.refresh_token.starts_with("hrt3."));
        clock.advance(time::Duration::milliseconds(REFRESH_GRACE_MS + 1));
        assert!(matches!(
            linking
                .refresh(&jwt, "client", &second_form, None, None)
                .await,
            Err(LinkingError::InvalidGrant(REFRESH_REUSED))
        ));
    }

    /// A third-form token whose MAC is genuine but whose household is not its family's (only
    /// the MAC's key could make one) is refused as not valid, and revokes nothing.
    #[tokio::test]
    async fn a_third_form_token_naming_another_household_is_not_valid() {
        let (linking, _clock, jwt, family_id, old_token, _dir) = first_form_family().await;
        let current = linking
            .refresh(&jwt, "client", &old_token, None, None)
            .await
            .unwrap()
            .refresh_token;
        let number: u64 = current.rsplit('.').nth(1).unwrap().parse().unwrap();
        let other = crate::accounts::new_household_id();
        let elsewhere = refresh_token_v3(&family_id, &other, number, |message| {
            jwt.refresh_mac(message)
        });
        assert!(matches!(
            linking
                .refresh(&jwt, "client", &elsewhere, None, None)
                .await,
            Err(LinkingError::InvalidGrant(REFRESH_NOT_VALID))
        ));
        linking
            .refresh(&jwt, "client", &current, None, None)
            .await
            .expect("the family's own token still refreshes");
    }
}
