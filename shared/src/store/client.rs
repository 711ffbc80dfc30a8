//! OAuth clients as the store keeps them: one record each, whole, with a revision for
//! compare-and-swap writes and, for a client that registered itself, an expiry. The store
//! never sees a client secret, only its hash; `clients` owns the rules.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StoreError;

/// Stored client ids start with this: an access token whose subject has it is a stored
/// client's, and is checked against the store.
pub const STORED_CLIENT_PREFIX: &str = "hc_";

/// How a client came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientOrigin {
    /// `hearth admin client add`.
    Operator,
    /// Dynamic Client Registration (RFC 7591), `POST /oauth/register`.
    Registration,
    /// A Client ID Metadata Document: the client id is the document's URL.
    Metadata,
    /// A metadata document's URL the operator deleted (`hearth admin client delete`): refused
    /// until `hearth admin client allow`, so that no fetch brings the client back.
    Refused,
}

/// One client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientItem {
    pub client_id: String,
    /// As the client or the operator named it; shown on the consent page, marked unverified
    /// unless an operator added it.
    pub name: String,
    /// Where authorization codes may be sent, compared exactly (a loopback one with any port).
    pub redirect_uris: Vec<String>,
    /// The hex SHA-256 of a confidential client's secret; `None` for a public client, whose
    /// only proof is PKCE.
    pub secret_hash: Option<String>,
    pub origin: ClientOrigin,
    pub created_at_ms: i64,
    /// When a token was last issued to it.
    pub last_used_at_ms: Option<i64>,
    /// From this instant on no read returns it (a registration never used, a kept metadata
    /// document); `None` for a client kept until deleted.
    pub expires_at_ms: Option<i64>,
    /// Raised by every write; a write names the revision it read.
    pub revision: u64,
    /// A metadata document: what was last fetched and checked, and when to fetch it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<KeptDocument>,
    /// How it proves itself at the token endpoint, when not by a secret or by nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion_keys: Option<AssertionKeys>,
}

/// A metadata document as kept: the last copy that passed every check, kept whatever its
/// `Cache-Control` said, so that a fetch that fails later can fall back on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeptDocument {
    /// When this copy was fetched (epoch ms); it stands in for a failed fetch for 7 days.
    pub fetched_at_ms: i64,
    /// When to fetch it again (its cache headers: `no-cache`, `no-store` or `max-age=0` mean
    /// at once).
    pub refetch_after_ms: i64,
    /// Stored by hand (`hearth admin client import`): never fetched, never expires.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub imported: bool,
}

/// A client that signs its token requests (RFC 7523 `private_key_jwt`): where its keys are,
/// the keys last read, and the algorithm it declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssertionKeys {
    /// `jwks_uri`, when its keys are fetched; `None` when the document carried them inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// The JWK set as JSON text, inline or as last fetched; `None` until first fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks: Option<String>,
    /// When `jwks` was last fetched (epoch ms); an unknown key id fetches again at most once a
    /// minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched_at_ms: Option<i64>,
    /// `token_endpoint_auth_signing_alg`, when the document named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
}

impl ClientItem {
    /// The client from the JSON a store kept; unreadable JSON is a store failure.
    pub fn from_stored(body: &str) -> Result<Self, StoreError> {
        serde_json::from_str(body)
            .map_err(|_| StoreError::Unavailable("a stored OAuth client is unreadable".into()))
    }

    pub fn is_live(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_none_or(|expires| now_ms < expires)
    }
}

#[async_trait]
pub trait ClientStore: Send + Sync + 'static {
    /// The client, read strongly consistently, if it exists and is live at `now_ms`.
    async fn client(&self, client_id: &str, now_ms: i64) -> Result<Option<ClientItem>, StoreError>;

    /// Every client live at `now_ms`, by client id.
    async fn clients(&self, now_ms: i64) -> Result<Vec<ClientItem>, StoreError>;

    /// Stores `item` if the live stored revision is `expected` (`None`: no live client may
    /// exist; an expired one is replaced). Anything else is a [`StoreError::Conflict`].
    async fn put_client(
        &self,
        item: &ClientItem,
        expected: Option<u64>,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Deletes the client; `false` if there was none.
    async fn delete_client(&self, client_id: &str) -> Result<bool, StoreError>;
}
