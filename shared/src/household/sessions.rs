//! The household page's sessions. A sign-in makes a new random id, handed to the browser as a
//! cookie and kept in the store only as its SHA-256, with the member, the passkey, the role and
//! the account generation it was made under, and a random CSRF token the page sends back with
//! every change.
//!
//! A session ends at the earliest of: [`SESSION_MAX_MS`] after the sign-in,
//! [`SESSION_IDLE_MS`] after the last request, `Sign out`, or any change to what it was made
//! under: the passkey revoked, suspect or gone, the household unlinked (its generation
//! raised), or the member's role changed. The first two are the record's expiry (DynamoDB's
//! TTL or the SQLite sweep removes it later, and no read returns it once passed); the rest are
//! checked against the account on every request ([`super::HouseholdPage::visitor`]).

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::clock::{Clock, unix_ms};
use crate::passkeys::sign_in::SignedIn;
use crate::random::os_bytes;
use crate::store::{GrantItem, GrantKind, GrantStore, StoreError, token_hash};

/// The longest a session lives, however busy.
pub const SESSION_MAX_MS: i64 = 12 * 60 * 60 * 1000;
/// How long a session lives after its last request.
pub const SESSION_IDLE_MS: i64 = 30 * 60 * 1000;
/// A request writes the session's new idle deadline only when the last write is older than
/// this: a page opening several views in a minute costs one write, and a session may end up
/// to a minute before 30 idle minutes have passed (never after).
pub const REFRESH_AFTER_MS: i64 = 60 * 1000;

/// One session as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub household_id: String,
    pub member_id: String,
    pub credential_id: String,
    pub role: String,
    pub generation: u64,
    pub created_at_ms: i64,
    pub seen_at_ms: i64,
    /// Sent back by the page with every change; compared in constant time.
    pub csrf: String,
    /// The guardian's action the page asked to sign last, until it is signed or replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<Asked>,
}

/// A household action the page was given to sign: its statement, kept with the session so
/// that one signature carries it out once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    pub action: String,
    pub target: String,
    pub statement: String,
    pub asked_at_ms: i64,
}

impl Session {
    /// When the session ends if nothing else ends it first.
    pub fn expires_at_ms(&self) -> i64 {
        (self.created_at_ms + SESSION_MAX_MS).min(self.seen_at_ms + SESSION_IDLE_MS)
    }

    /// Whether `token` is this session's CSRF token.
    pub fn allows(&self, token: &str) -> bool {
        crate::passkeys::same_hash(&self.csrf, token)
    }
}

/// A session found by its cookie, with the revision its next write names.
#[derive(Debug, Clone)]
pub struct Found {
    pub session: Session,
    revision: u64,
    key: String,
}

#[derive(Clone)]
pub struct Sessions {
    grants: Arc<dyn GrantStore>,
    clock: Arc<dyn Clock>,
}

impl Sessions {
    pub fn new(grants: Arc<dyn GrantStore>, clock: Arc<dyn Clock>) -> Self {
        Self { grants, clock }
    }

    fn now_ms(&self) -> i64 {
        unix_ms(self.clock.now())
    }

    /// Starts a session for who signed in: answers the cookie's value (the session id), which
    /// is shown to nobody else and kept only as its hash.
    pub async fn start(&self, signed_in: &SignedIn) -> Result<(String, Session), StoreError> {
        let id = random()?;
        let now = self.now_ms();
        let session = Session {
            household_id: signed_in.household_id.clone(),
            member_id: signed_in.member_id.clone(),
            credential_id: signed_in.credential_id.clone(),
            role: signed_in.role.clone(),
            generation: signed_in.generation,
            created_at_ms: now,
            seen_at_ms: now,
            csrf: random()?,
            asked: None,
        };
        self.grants
            .put_grant(&record(&token_hash(&id), &session, 1), None, now)
            .await?;
        Ok((id, session))
    }

    /// The live session whose cookie is `id`.
    pub async fn find(&self, id: &str) -> Result<Option<Found>, StoreError> {
        if !well_formed(id) {
            return Ok(None);
        }
        let key = token_hash(id);
        let now = self.now_ms();
        let Some(item) = self
            .grants
            .grant(GrantKind::HouseholdSession, &key, now)
            .await?
        else {
            return Ok(None);
        };
        let Ok(session) = serde_json::from_str::<Session>(&item.body) else {
            return Ok(None);
        };
        if session.expires_at_ms() <= now {
            return Ok(None);
        }
        Ok(Some(Found {
            session,
            revision: item.revision,
            key,
        }))
    }

    /// Moves the idle deadline on, at most once every [`REFRESH_AFTER_MS`]. A write raced by
    /// another request of the same session is left to that one. Answers the session as it
    /// now stands.
    pub async fn touch(&self, found: Found) -> Result<Found, StoreError> {
        let now = self.now_ms();
        if now - found.session.seen_at_ms < REFRESH_AFTER_MS {
            return Ok(found);
        }
        let mut session = found.session.clone();
        session.seen_at_ms = now;
        match self.rewrite(&found, session).await {
            Ok(written) => Ok(written),
            Err(StoreError::Conflict) => Ok(found),
            Err(error) => Err(error),
        }
    }

    /// Keeps `asked` as the action the page waits to have signed, in place of any other.
    pub async fn ask(&self, found: &Found, asked: Asked) -> Result<Found, StoreError> {
        let mut session = found.session.clone();
        session.asked = Some(asked);
        self.rewrite(found, session).await
    }

    /// Takes the asked action out of the session, once: of two requests with the same
    /// signature, one finds it and the other [`StoreError::Conflict`].
    pub async fn take_asked(&self, found: &Found) -> Result<Option<Asked>, StoreError> {
        let mut session = found.session.clone();
        let asked = session.asked.take();
        if asked.is_some() {
            self.rewrite(found, session).await?;
        }
        Ok(asked)
    }

    /// Writes `session` over the revision `found` read.
    async fn rewrite(&self, found: &Found, session: Session) -> Result<Found, StoreError> {
        let now = self.now_ms();
        let revision = found.revision + 1;
        self.grants
            .put_grant(
                &record(&found.key, &session, revision),
                Some(found.revision),
                now,
            )
            .await?;
        Ok(Found {
            session,
            revision,
            key: found.key.clone(),
        })
    }

    /// Ends the session: no later request finds it.
    pub async fn end(&self, found: &Found) -> Result<(), StoreError> {
        let now = self.now_ms();
        // A delete raced by a refresh finds a new revision: read it again and delete that.
        let mut revision = found.revision;
        for _ in 0..3 {
            if self
                .grants
                .delete_grant(GrantKind::HouseholdSession, &found.key, revision, now)
                .await?
            {
                return Ok(());
            }
            match self
                .grants
                .grant(GrantKind::HouseholdSession, &found.key, now)
                .await?
            {
                Some(item) => revision = item.revision,
                None => return Ok(()),
            }
        }
        Err(StoreError::Conflict)
    }
}

fn record(key: &str, session: &Session, revision: u64) -> GrantItem {
    GrantItem {
        kind: GrantKind::HouseholdSession,
        key: key.to_owned(),
        body: serde_json::to_string(session).expect("a session serializes"),
        expires_at_ms: session.expires_at_ms(),
        revision,
    }
}

/// 32 random bytes, base64url: a session id or a CSRF token.
fn random() -> Result<String, StoreError> {
    os_bytes::<32>()
        .map(|bytes| URL_SAFE_NO_PAD.encode(bytes))
        .map_err(|_| StoreError::Unavailable("the system's random source failed".into()))
}

/// Whether `id` could be a session id at all (43 base64url characters): anything else is not
/// looked up.
fn well_formed(id: &str) -> bool {
    id.len() == 43
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(created: i64, seen: i64) -> Session {
        Session {
            household_id: "hh".into(),
            member_id: "dana".into(),
            credential_id: "c".into(),
            role: "parent".into(),
            generation: 0,
            created_at_ms: created,
            seen_at_ms: seen,
            csrf: "x".repeat(43),
            asked: None,
        }
    }

    #[test]
    fn a_session_ends_thirty_idle_minutes_after_its_last_request() {
        assert_eq!(session(0, 1_000).expires_at_ms(), 1_000 + SESSION_IDLE_MS);
    }

    #[test]
    fn a_session_ends_twelve_hours_after_sign_in_however_busy() {
        let busy = session(0, SESSION_MAX_MS - 1);
        assert_eq!(busy.expires_at_ms(), SESSION_MAX_MS);
    }

    #[test]
    fn only_its_own_csrf_token_is_allowed() {
        let kept = session(0, 0);
        assert!(kept.allows(&"x".repeat(43)));
        assert!(!kept.allows(&"y".repeat(43)));
        assert!(!kept.allows(""));
    }
}
