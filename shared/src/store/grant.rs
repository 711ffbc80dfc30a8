//! Single-purpose records as the store keeps them, most of them short-lived: account linking's
//! link codes, authorization codes and refresh-token families, Countersign's turn bindings,
//! the household page's sign-in challenges and sessions, and the index from a passkey's
//! credential id to its household. Each is
//! one small record with a revision for compare-and-swap, an
//! expiry after which no read returns it (DynamoDB's TTL, or a sweep locally, removes it
//! later), and a body its owner writes. The store never sees a code or a token, only
//! the key its owner derives from it (a SHA-256, or a family id).

use async_trait::async_trait;

use super::StoreError;

/// What a record is. Each kind has its own key space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrantKind {
    /// A one-time code an operator hands a household, entered on the consent page.
    LinkCode,
    /// An OAuth authorization code, issued by the consent page and exchanged once.
    AuthorizationCode,
    /// One refresh-token family: the chain of refresh tokens one code exchange started.
    RefreshFamily,
    /// The ledger a host-key attestation's (member, turn) first acted for; it acts for no
    /// other while the attestation can be accepted.
    TurnBinding,
    /// A client assertion's `jti` (RFC 7523), kept until the assertion expires so that it is
    /// used once.
    AssertionId,
    /// Why a client metadata document's fetch failed, kept a minute so that one bad URL is not
    /// fetched again on every request.
    DocumentFailure,
    /// Which household and member a passkey's credential id belongs to, so that a passkey
    /// can sign in without a name typed (the WebAuthn user handle is a hash). Kept until
    /// removed: its expiry is [`KEPT_UNTIL_REMOVED_MS`].
    PasskeyOwner,
    /// A household page's sign-in challenge, deleted by the sign-in that answers it.
    SignInChallenge,
    /// A household page's session, keyed by the hash of its cookie.
    HouseholdSession,
    /// An operator's sign-up link (`hearth admin signup-link`), keyed by the hash of its
    /// token; once used it names the household it made, until it expires.
    SignupLink,
}

/// The expiry of a record that is kept until it is removed: the last millisecond of the
/// year 9999, far past any clock this runs under, and a TTL DynamoDB never reaches.
pub const KEPT_UNTIL_REMOVED_MS: i64 = 253_402_300_799_999;

impl GrantKind {
    /// The kind's name in stored keys.
    pub fn as_str(self) -> &'static str {
        match self {
            GrantKind::LinkCode => "link",
            GrantKind::AuthorizationCode => "code",
            GrantKind::RefreshFamily => "family",
            GrantKind::TurnBinding => "turn",
            GrantKind::AssertionId => "jti",
            GrantKind::DocumentFailure => "docfail",
            GrantKind::PasskeyOwner => "passkey",
            GrantKind::SignInChallenge => "signin",
            GrantKind::HouseholdSession => "session",
            GrantKind::SignupLink => "signup",
        }
    }
}

/// One record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantItem {
    pub kind: GrantKind,
    /// Derived from the secret (its SHA-256 as hex) or opaque (a family id); never a secret.
    pub key: String,
    /// Owned by whoever writes the kind (JSON for `linking`).
    pub body: String,
    /// Unix milliseconds; from this instant on the record reads as absent.
    pub expires_at_ms: i64,
    /// Raised by every write; a write names the revision it read.
    pub revision: u64,
}

#[async_trait]
pub trait GrantStore: Send + Sync + 'static {
    /// The record, read strongly consistently, or `None` if there is none live at `now_ms`.
    async fn grant(
        &self,
        kind: GrantKind,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<GrantItem>, StoreError>;

    /// Stores `item` if the live stored revision is `expected` (`None`: no live record may
    /// exist; an expired one is replaced). Anything else is a [`StoreError::Conflict`] and
    /// changes nothing.
    async fn put_grant(
        &self,
        item: &GrantItem,
        expected: Option<u64>,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Claims `item.key` for `item.body`: stores `item` unless a live record under the key
    /// holds another body. `true` when the key now holds `item.body` (a repeat of the same
    /// claim is written again, with the new expiry), `false` when a live record holds another
    /// body (nothing changes). One conditional write: whichever claim lands first wins, and
    /// racing claims of two bodies cannot both see `true`.
    async fn claim_grant(&self, item: &GrantItem, now_ms: i64) -> Result<bool, StoreError>;

    /// Deletes the record if it is live at `now_ms` with revision `expected`; `false` if it is
    /// not (absent, expired, or rewritten since it was read). Exactly one of two concurrent
    /// deletes of the same revision returns `true`, which makes a delete a single-use claim.
    async fn delete_grant(
        &self,
        kind: GrantKind,
        key: &str,
        expected: u64,
        now_ms: i64,
    ) -> Result<bool, StoreError>;
}
