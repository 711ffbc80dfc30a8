//! Household accounts as the store keeps them. The store holds each account whole, with a
//! revision for compare-and-swap writes, and knows nothing of what its policy says; `accounts`
//! owns the rules.

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StoreError;

/// The most links an account keeps: past it, the oldest is forgotten (its tokens still work
/// until they expire or are revoked; the page no longer lists it).
pub const MAX_LINKS_KEPT: usize = 20;

/// One refresh-token family started by account linking: which client, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkItem {
    pub family_id: String,
    pub client_id: String,
    pub linked_at_ms: i64,
}

/// One household account.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountItem {
    /// Server-generated and opaque; never chosen by a caller.
    pub household_id: String,
    /// The display name, shown to operators and read aloud.
    pub name: String,
    /// The Countersign policy (today's `household.json` shape), `None` until one is set.
    pub policy: Option<Value>,
    /// Raised by every unlink: access tokens issued under an older generation are refused.
    pub generation: u64,
    /// Access tokens issued since the last unlink.
    pub tokens_issued: u64,
    /// The keys the household's devices sign attestations with.
    pub device_keys: Vec<DeviceKeyItem>,
    /// Refresh-token families revoked while access tokens they issued may still be live: a
    /// token naming one of them is refused. Absent from accounts stored before linking.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoked_families: Vec<RevokedFamily>,
    /// The members' passkeys, revoked ones included (older approvals still check against
    /// them). Absent from accounts stored before passkeys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passkeys: Vec<PasskeyItem>,
    /// Enrolment invites not yet used, each until it expires.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passkey_invites: Vec<PasskeyInviteItem>,
    /// The approval pages of requests proposed without a device, while they may be decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approval_links: Vec<ApprovalLinkItem>,
    /// The refresh-token families account linking started under the current generation, the
    /// newest [`MAX_LINKS_KEPT`]: which assistants are linked, for the household's page.
    /// Absent from accounts stored before the household's page.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkItem>,
    /// Whether `links` names every family linking started under this generation: true from
    /// the account's creation or its last unlink, false once a link was forgotten past
    /// [`MAX_LINKS_KEPT`] (and on accounts stored before the list existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub links_complete: bool,
    /// A household made by sign-up and not yet linked: from this instant it reads as absent,
    /// and the store may delete it (DynamoDB's TTL; SQLite when another account is created).
    /// The first token issued to the household clears it. Absent from every other account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signup_expires_at_ms: Option<i64>,
    pub created_at_ms: i64,
    /// Raised by every write; a write names the revision it read.
    pub revision: u64,
}

impl AccountItem {
    /// The account from the JSON a store kept; unreadable JSON is a store failure.
    pub fn from_stored(body: &str) -> Result<Self, StoreError> {
        serde_json::from_str(body)
            .map_err(|_| StoreError::Unavailable("a stored household account is unreadable".into()))
    }

    /// Whether a token has been issued to this household since its last unlink.
    pub fn is_linked(&self) -> bool {
        self.tokens_issued > 0
    }

    pub fn summary(&self) -> AccountSummary {
        AccountSummary {
            household_id: self.household_id.clone(),
            name: self.name.clone(),
            linked: self.is_linked(),
            signup_expires_at_ms: self.signup_expires_at_ms,
        }
    }

    /// Whether the account still stands at `now_ms`: false for a sign-up past its expiry.
    pub fn is_live(&self, now_ms: i64) -> bool {
        self.signup_expires_at_ms
            .is_none_or(|expires_at_ms| now_ms < expires_at_ms)
    }
}

/// Device keys are secrets: the debug form shows the key ids only.
impl fmt::Debug for AccountItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountItem")
            .field("household_id", &self.household_id)
            .field("name", &self.name)
            .field("generation", &self.generation)
            .field("tokens_issued", &self.tokens_issued)
            .field("device_keys", &self.device_keys)
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

/// One device key: an HMAC-SHA256 key, as lowercase hex, and when it was added.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceKeyItem {
    pub key_id: String,
    pub key: String,
    pub created_at_ms: i64,
}

impl fmt::Debug for DeviceKeyItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceKeyItem")
            .field("key_id", &self.key_id)
            .field("created_at_ms", &self.created_at_ms)
            .finish_non_exhaustive()
    }
}

/// One member's passkey: a WebAuthn credential on a phone or security key. Nothing here is
/// secret (the private key never leaves the authenticator) except a pending enrolment's
/// approval token, which only opens a page: approving takes a guardian's passkey.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasskeyItem {
    /// base64url without padding.
    pub credential_id: String,
    pub member_id: String,
    /// `ES256` or `Ed25519`.
    pub algorithm: String,
    /// DER SubjectPublicKeyInfo, base64url without padding.
    pub public_key_spki: String,
    /// The authenticator's signature counter as last seen; 0 for one that keeps none.
    pub sign_count: u32,
    /// Whether the credential may be synced between devices (it may not change later).
    pub backup_eligible: bool,
    pub created_at_ms: i64,
    #[serde(default)]
    pub last_used_at_ms: Option<i64>,
    #[serde(default)]
    pub revoked_at_ms: Option<i64>,
    /// When its counter went backwards: it signs nothing more until re-enrolled.
    #[serde(default)]
    pub suspect_at_ms: Option<i64>,
    /// Present while the enrolment waits for a guardian's approval.
    #[serde(default)]
    pub pending: Option<PendingEnrolmentItem>,
    /// The phone's Web Push subscription, once it pressed `Notify this phone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushSubscriptionItem>,
    /// The short-lived grant the enrolment page subscribes with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_grant: Option<PushGrantItem>,
}

/// A browser's push subscription: its push service endpoint and the keys messages are
/// encrypted to (RFC 8291), base64url.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushSubscriptionItem {
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub created_at_ms: i64,
    /// Subscribed from the household's page (installed on the phone): what waits opens there,
    /// not on its own approval link.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opens_household: bool,
}

impl fmt::Debug for PushSubscriptionItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushSubscriptionItem")
            .field("created_at_ms", &self.created_at_ms)
            .finish_non_exhaustive()
    }
}

/// Lets the enrolment page subscribe its phone, once, for a short while.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushGrantItem {
    /// SHA-256 of the grant's token, lowercase hex.
    pub token_hash: String,
    pub expires_at_ms: i64,
}

impl fmt::Debug for PushGrantItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushGrantItem")
            .field("expires_at_ms", &self.expires_at_ms)
            .finish_non_exhaustive()
    }
}

/// The SHA-256 of a link's token (the whole `household.secret` of its URL), lowercase hex:
/// how every link token is kept. A copy of the store opens no page.
pub fn token_hash(token: &str) -> String {
    crate::chain::sha256_hex(token)
}

/// The most tokens one link keeps: the one it was made with, and the newest ones made for it
/// since (a guardian told of a child's approval, an operator's new copy).
pub const MAX_TOKENS_PER_LINK: usize = 4;

/// A later enrolment waiting for a guardian.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredPendingEnrolment")]
pub struct PendingEnrolmentItem {
    /// [`token_hash`]es of the tokens its approval page opens with, oldest first.
    pub approval_token_hashes: Vec<String>,
    /// The household's generation at enrolment: an unlink voids the approval page.
    #[serde(default)]
    pub generation: u64,
    /// The statement nonce a guardian's page was last given, until it is used.
    #[serde(default)]
    pub nonce: Option<NonceItem>,
    /// When the page's recent challenges were given (epoch ms), to bound them per window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub challenged_at_ms: Vec<i64>,
}

/// A pending enrolment as any release stored it: before tokens were kept hashed, its one
/// token in plain text (`approval_token`), which is read as its hash and never written again.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredPendingEnrolment {
    #[serde(default)]
    approval_token_hashes: Vec<String>,
    #[serde(default)]
    approval_token: Option<String>,
    #[serde(default)]
    generation: u64,
    #[serde(default)]
    nonce: Option<NonceItem>,
    #[serde(default)]
    challenged_at_ms: Vec<i64>,
}

impl From<StoredPendingEnrolment> for PendingEnrolmentItem {
    fn from(stored: StoredPendingEnrolment) -> Self {
        let mut approval_token_hashes = stored.approval_token_hashes;
        if let Some(plain) = stored.approval_token {
            approval_token_hashes.insert(0, token_hash(&plain));
        }
        Self {
            approval_token_hashes,
            generation: stored.generation,
            nonce: stored.nonce,
            challenged_at_ms: stored.challenged_at_ms,
        }
    }
}

impl fmt::Debug for PendingEnrolmentItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingEnrolmentItem")
            .finish_non_exhaustive()
    }
}

/// A single-use server nonce for a signed statement.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NonceItem {
    /// base64url.
    pub nonce: String,
    /// What the statement decides (`approve` or `decline`).
    pub decision: String,
    pub created_at_ms: i64,
}

impl fmt::Debug for NonceItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NonceItem")
            .field("decision", &self.decision)
            .field("created_at_ms", &self.created_at_ms)
            .finish_non_exhaustive()
    }
}

/// An enrolment invite: single use, for one member, valid until `expires_at_ms` and only
/// under the generation it was made in (an unlink voids it).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasskeyInviteItem {
    /// SHA-256 of the invite's token, lowercase hex: the token itself is never stored.
    pub invite_hash: String,
    pub member_id: String,
    pub generation: u64,
    pub expires_at_ms: i64,
    /// The registration challenge the page was given (base64url), and when.
    #[serde(default)]
    pub challenge: Option<String>,
    #[serde(default)]
    pub challenge_at_ms: Option<i64>,
    /// When the page's recent challenges were given (epoch ms), to bound them per window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub challenged_at_ms: Vec<i64>,
}

impl fmt::Debug for PasskeyInviteItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PasskeyInviteItem")
            .field("member_id", &self.member_id)
            .field("expires_at_ms", &self.expires_at_ms)
            .finish_non_exhaustive()
    }
}

/// The approval page of one request proposed without a device.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredApprovalLink")]
pub struct ApprovalLinkItem {
    /// [`token_hash`]es of the tokens the page opens with, oldest first: the one it was opened
    /// with, and those made when a child's approval passed it to a guardian.
    pub token_hashes: Vec<String>,
    pub request_id: String,
    /// Open until this time, inclusive.
    pub expires_at_ms: i64,
    /// The household's generation when it opened: an unlink closes it at once.
    pub generation: u64,
    /// The statement nonce the page was last given, until it is used.
    #[serde(default)]
    pub nonce: Option<NonceItem>,
    /// When the page's recent challenges were given (epoch ms), to bound them per window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub challenged_at_ms: Vec<i64>,
}

/// An approval link as any release stored it: before tokens were kept hashed, its token in
/// plain text (`token`), which is read as its hash and never written again.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredApprovalLink {
    #[serde(default)]
    token_hashes: Vec<String>,
    #[serde(default)]
    token: Option<String>,
    request_id: String,
    expires_at_ms: i64,
    generation: u64,
    #[serde(default)]
    nonce: Option<NonceItem>,
    #[serde(default)]
    challenged_at_ms: Vec<i64>,
}

impl From<StoredApprovalLink> for ApprovalLinkItem {
    fn from(stored: StoredApprovalLink) -> Self {
        let mut token_hashes = stored.token_hashes;
        if let Some(plain) = stored.token {
            token_hashes.insert(0, token_hash(&plain));
        }
        Self {
            token_hashes,
            request_id: stored.request_id,
            expires_at_ms: stored.expires_at_ms,
            generation: stored.generation,
            nonce: stored.nonce,
            challenged_at_ms: stored.challenged_at_ms,
        }
    }
}

impl fmt::Debug for ApprovalLinkItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalLinkItem")
            .field("request_id", &self.request_id)
            .field("expires_at_ms", &self.expires_at_ms)
            .finish_non_exhaustive()
    }
}

/// A revoked refresh-token family, remembered until the last access token it issued expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokedFamily {
    pub family_id: String,
    pub until_ms: i64,
}

/// What a listing of every household shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountSummary {
    pub household_id: String,
    pub name: String,
    pub linked: bool,
    /// When a household made by sign-up is deleted unless it is linked first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signup_expires_at_ms: Option<i64>,
}

#[async_trait]
pub trait AccountStore: Send + Sync + 'static {
    /// The account, read strongly consistently, or `None` if there is none.
    async fn account(&self, household_id: &str) -> Result<Option<AccountItem>, StoreError>;

    /// Every account, ordered by household id.
    async fn accounts(&self) -> Result<Vec<AccountSummary>, StoreError>;

    /// Stores `item` if the stored revision is `expected` (`None`: no such account may exist).
    /// Anything else is a [`StoreError::Conflict`] and changes nothing.
    async fn put_account(
        &self,
        item: &AccountItem,
        expected: Option<u64>,
    ) -> Result<(), StoreError>;

    /// Deletes the account if its stored revision is `expected`; `false` if there was none.
    /// A different revision is a [`StoreError::Conflict`].
    async fn delete_account(&self, household_id: &str, expected: u64) -> Result<bool, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str =
        "hh-0123456789abcdef0123456789abcdef.Ph6Jm1n4iHkG6A0oVq9v2k6dQy5f0pG1x8S3wzLbC7E";

    #[test]
    fn a_plain_token_stored_by_an_older_release_is_read_as_its_hash_and_never_written() {
        let link: ApprovalLinkItem = serde_json::from_value(serde_json::json!({
            "token": TOKEN, "request_id": "req-1", "expires_at_ms": 5, "generation": 2,
        }))
        .unwrap();
        assert_eq!(link.token_hashes, [token_hash(TOKEN)]);
        let written = serde_json::to_string(&link).unwrap();
        assert!(
            !written.contains(TOKEN.split('.').nth(1).unwrap()),
            "{written}"
        );
        assert_eq!(
            serde_json::from_str::<ApprovalLinkItem>(&written).unwrap(),
            link,
            "what is written reads back the same"
        );

        let pending: PendingEnrolmentItem =
            serde_json::from_value(serde_json::json!({"approval_token": TOKEN, "generation": 1}))
                .unwrap();
        assert_eq!(pending.approval_token_hashes, [token_hash(TOKEN)]);
        let written = serde_json::to_string(&pending).unwrap();
        assert!(
            !written.contains(TOKEN.split('.').nth(1).unwrap()),
            "{written}"
        );
    }

    #[test]
    fn an_unknown_field_is_still_refused() {
        let refused = serde_json::from_value::<ApprovalLinkItem>(serde_json::json!({
            "token_hashes": [], "request_id": "r", "expires_at_ms": 1, "generation": 0, "extra": 1,
        }));
        assert!(refused.is_err());
        let refused = serde_json::from_value::<PendingEnrolmentItem>(
            serde_json::json!({"approval_token_hashes": [], "surprise": true}),
        );
        assert!(refused.is_err());
    }
}
