//! Clients named by a metadata document's URL, as hosts really behave:
//!
//! - **Kept copies.** The last copy of a document that passed every check is kept in the store,
//!   whatever its `Cache-Control` says: `no-cache`, `no-store` and `max-age=0` only mean it is
//!   fetched again whenever it is needed. When a fetch fails, the kept copy stands in for up to
//!   [`KEPT_COPY_MS`] after it was fetched, with a warning in the log, so that a host whose site
//!   refuses Hearth for a while keeps its links.
//! - **Failures are remembered** for [`FAILURE_KEPT_MS`], so that one bad URL is not fetched
//!   again on every request.
//! - **Pinned copies** of the documents claude.ai and Claude Code publish stand in when a
//!   fetch fails and nothing is kept ([`super::pinned`]).
//! - **Imported documents** (`hearth admin client import`) are the operator's: never fetched,
//!   never expiring, shown as the host's named client.
//! - **Removal** (`hearth admin client delete`) keeps a refusal for the URL until
//!   `hearth admin client allow`, so no later fetch brings the client back.
//! - **Signed assertions** (`private_key_jwt`): the keys are read from the document's
//!   `jwks_uri` and kept; an unknown key id fetches them again at most once per
//!   [`KEY_REFETCH_MS`] per client, and every assertion's `jti` is used once.

use jsonwebtoken::jwk::JwkSet;

use super::assertion::{self, AssertionError};
use super::metadata_document::{Document, DocumentAuth, DocumentError, parse_document};
use super::{ClientError, Clients, KnownClient, checked_name, known, metadata_document};
use crate::chain::sha256_hex;
use crate::store::{
    AssertionKeys, ClientItem, ClientOrigin, GrantItem, GrantKind, KeptDocument, StoreError,
};

/// How long a kept copy stands in for a document whose fetch fails.
pub const KEPT_COPY_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// How long a failed fetch is remembered.
pub const FAILURE_KEPT_MS: i64 = 60_000;
/// The least time between two fetches of one client's keys for an unknown key id.
pub const KEY_REFETCH_MS: i64 = 60_000;
/// A kept copy fetched again unchanged is written back (its seven days restarted) at most
/// this often, so a document served with `no-cache` costs no write on every request.
const KEPT_COPY_RENEWED_EVERY_MS: i64 = 60_000;

impl Clients {
    /// The client a metadata document's URL names: the kept copy while it is fresh, else the
    /// document fetched now, else (the fetch failing) the kept copy or a pinned one.
    pub(super) async fn document_client(
        &self,
        url: &str,
    ) -> Result<Option<KnownClient>, ClientError> {
        Ok(self.document_item(url).await?.map(|item| known(&item)))
    }

    pub(super) async fn document_item(&self, url: &str) -> Result<Option<ClientItem>, ClientError> {
        let Some(fetcher) = &self.documents else {
            return Err(DocumentError::Disabled.into());
        };
        let now_ms = self.now_ms();
        let kept = self.store.client(url, now_ms).await?;
        if let Some(item) = &kept {
            match item.origin {
                ClientOrigin::Refused => return Err(DocumentError::Removed.into()),
                ClientOrigin::Metadata => {
                    let fresh = item.document.as_ref().is_none_or(|document| {
                        document.imported || now_ms < document.refetch_after_ms
                    });
                    if fresh {
                        return Ok(kept);
                    }
                }
                // A stored client's id is never a URL; nothing else is kept under one.
                _ => return Ok(None),
            }
        }
        if let Some(failed) = self.recent_failure(url, now_ms).await? {
            return self.stand_in(url, kept, failed);
        }
        match fetcher.fetch(url).await {
            Ok(document) => Ok(Some(self.keep(url, document, kept, now_ms).await?)),
            Err(failed) => {
                self.remember_failure(url, &failed, now_ms).await;
                self.stand_in(url, kept, failed)
            }
        }
    }

    /// What stands in for a document whose fetch `failed`: the kept copy (alive only within
    /// its seven days), else a pinned one, else the failure.
    fn stand_in(
        &self,
        url: &str,
        kept: Option<ClientItem>,
        failed: DocumentError,
    ) -> Result<Option<ClientItem>, ClientError> {
        if let Some(item) = kept {
            tracing::warn!(reason = %failed, "a client metadata document could not be fetched; its kept copy stands in");
            return Ok(Some(item));
        }
        if let Some(text) = super::pinned::pinned(url)
            && let Ok(document) = parse_document(url, text.as_bytes(), false)
        {
            tracing::warn!(reason = %failed, "a client metadata document could not be fetched; Hearth's pinned copy stands in");
            return Ok(Some(self.document_as_item(
                url,
                document,
                None,
                self.now_ms(),
            )));
        }
        Err(failed.into())
    }

    /// Keeps a fetched document (replacing the kept copy, if any) and answers it.
    async fn keep(
        &self,
        url: &str,
        document: Document,
        kept: Option<ClientItem>,
        now_ms: i64,
    ) -> Result<ClientItem, ClientError> {
        let mut item = self.document_as_item(url, document, kept.as_ref(), now_ms);
        let unchanged_lately = kept.as_ref().is_some_and(|kept| {
            same_client(kept, &item)
                && kept.document.as_ref().is_some_and(|document| {
                    now_ms - document.fetched_at_ms < KEPT_COPY_RENEWED_EVERY_MS
                })
        });
        if unchanged_lately {
            return Ok(item);
        }
        if let Some(kept) = &kept {
            item.revision = kept.revision + 1;
            item.created_at_ms = kept.created_at_ms;
        }
        match self
            .store
            .put_client(&item, kept.as_ref().map(|kept| kept.revision), now_ms)
            .await
        {
            // Another request kept a copy first: this one is as good.
            Ok(()) | Err(StoreError::Conflict) => Ok(item),
            Err(error) => Err(error.into()),
        }
    }

    /// A checked document as the client item it is kept as. The keys already fetched for the
    /// same `jwks_uri` are kept with it.
    fn document_as_item(
        &self,
        url: &str,
        document: Document,
        kept: Option<&ClientItem>,
        now_ms: i64,
    ) -> ClientItem {
        // A document naming itself as the configured client is shown by its host instead.
        let name = checked_name(&document.client_name, self.configured_name())
            .unwrap_or_else(|_| metadata_document::host_of(url));
        let assertion_keys = match document.auth {
            DocumentAuth::None => None,
            DocumentAuth::PrivateKeyJwt {
                jwks_uri,
                jwks,
                algorithm,
            } => {
                let known_keys = kept
                    .and_then(|kept| kept.assertion_keys.as_ref())
                    .filter(|keys| jwks_uri.is_some() && keys.jwks_uri == jwks_uri);
                Some(AssertionKeys {
                    jwks: jwks.or_else(|| known_keys.and_then(|keys| keys.jwks.clone())),
                    fetched_at_ms: known_keys.and_then(|keys| keys.fetched_at_ms),
                    jwks_uri,
                    algorithm,
                })
            }
        };
        ClientItem {
            client_id: url.to_owned(),
            name,
            redirect_uris: document.redirect_uris,
            secret_hash: None,
            origin: ClientOrigin::Metadata,
            created_at_ms: now_ms,
            last_used_at_ms: None,
            // Live through the last millisecond of its seventh day.
            expires_at_ms: Some(now_ms + KEPT_COPY_MS + 1),
            revision: 1,
            document: Some(KeptDocument {
                fetched_at_ms: now_ms,
                refetch_after_ms: now_ms + document.cache_for_ms.unwrap_or(0),
                imported: false,
            }),
            assertion_keys,
        }
    }

    async fn recent_failure(
        &self,
        url: &str,
        now_ms: i64,
    ) -> Result<Option<DocumentError>, ClientError> {
        let Some(grants) = &self.grants else {
            return Ok(None);
        };
        Ok(grants
            .grant(GrantKind::DocumentFailure, &sha256_hex(url), now_ms)
            .await?
            .map(|failure| DocumentError::FailedLately(failure.body)))
    }

    /// Remembers a failed fetch for a minute; a store that cannot keep it is no reason to
    /// refuse anything more.
    async fn remember_failure(&self, url: &str, failed: &DocumentError, now_ms: i64) {
        let Some(grants) = &self.grants else {
            return;
        };
        let record = GrantItem {
            kind: GrantKind::DocumentFailure,
            key: sha256_hex(url),
            body: failed.to_string(),
            expires_at_ms: now_ms + FAILURE_KEPT_MS,
            revision: 1,
        };
        if let Err(error) = grants.put_grant(&record, None, now_ms).await
            && !matches!(error, StoreError::Conflict)
        {
            tracing::warn!(%error, "a failed metadata document fetch could not be remembered");
        }
    }

    /// `hearth admin client import URL --document FILE`: a host's document stored by hand,
    /// for a host whose site refuses Hearth's fetch. Checked by the same rules as a fetched
    /// one; never fetched, never expiring, shown as the host's named client until deleted.
    pub async fn import(&self, url: &str, document: &str) -> Result<KnownClient, ClientError> {
        let allow_loopback = self
            .documents
            .as_ref()
            .is_some_and(metadata_document::MetadataFetcher::allows_loopback);
        metadata_document::check_url(url, allow_loopback)?;
        let checked = parse_document(url, document.as_bytes(), allow_loopback)?;
        let now_ms = self.now_ms();
        let kept = self.store.client(url, now_ms).await?;
        let mut item = self.document_as_item(url, checked, kept.as_ref(), now_ms);
        item.expires_at_ms = None;
        if let Some(kept_document) = &mut item.document {
            kept_document.imported = true;
        }
        if let Some(kept) = &kept {
            item.revision = kept.revision + 1;
        }
        self.store
            .put_client(&item, kept.as_ref().map(|kept| kept.revision), now_ms)
            .await?;
        Ok(known(&item))
    }

    /// `hearth admin client delete` of a URL: whatever was kept goes, and a refusal stays in
    /// its place until [`Clients::allow`], so no fetch brings the client back. Its refresh
    /// families stop with it, since every token request names the client.
    pub(super) async fn refuse_document(&self, url: &str) -> Result<(), ClientError> {
        let now_ms = self.now_ms();
        let kept = self.store.client(url, now_ms).await?;
        let item = ClientItem {
            client_id: url.to_owned(),
            name: metadata_document::host_of(url),
            redirect_uris: Vec::new(),
            secret_hash: None,
            origin: ClientOrigin::Refused,
            created_at_ms: now_ms,
            last_used_at_ms: None,
            expires_at_ms: None,
            revision: kept.as_ref().map_or(1, |kept| kept.revision + 1),
            document: None,
            assertion_keys: None,
        };
        self.store
            .put_client(&item, kept.as_ref().map(|kept| kept.revision), now_ms)
            .await?;
        Ok(())
    }

    /// `hearth admin client allow URL`: lifts a removal; the next use fetches the document.
    pub async fn allow(&self, url: &str) -> Result<(), ClientError> {
        let refused = self
            .store
            .client(url, self.now_ms())
            .await?
            .is_some_and(|item| item.origin == ClientOrigin::Refused);
        if refused && self.store.delete_client(url).await? {
            Ok(())
        } else {
            Err(ClientError::NotFound(format!("{url} (no removal to lift)")))
        }
    }

    /// A client assertion (RFC 7523 §2.2) at the token endpoint: the metadata client it names
    /// (`client_id`, or else its own `iss`), verified with that client's keys for one of
    /// `audiences`, its `jti` used once. `None` when nothing authenticates.
    pub async fn authenticate_assertion(
        &self,
        client_id: Option<&str>,
        assertion: &str,
        audiences: &[&str],
    ) -> Result<Option<KnownClient>, ClientError> {
        let Some(client_id) = client_id
            .map(str::to_owned)
            .or_else(|| assertion::claimed_client(assertion))
        else {
            return Err(ClientError::Assertion(AssertionError::Malformed));
        };
        if !metadata_document::names_a_document(&client_id) {
            return Ok(None);
        }
        let Some(mut item) = self.document_item(&client_id).await? else {
            return Ok(None);
        };
        let Some(keys) = item.assertion_keys.clone() else {
            return Err(ClientError::Assertion(AssertionError::BadKey(
                "the client's document declares no keys (private_key_jwt)",
            )));
        };
        let now_ms = self.now_ms();
        let now_secs = now_ms.div_euclid(1000);
        let mut fetched = false;
        let jwks = match keys.jwks.clone() {
            Some(jwks) => jwks,
            None => {
                fetched = true;
                self.refetch_keys(&mut item, now_ms).await?
            }
        };
        let declared = keys.algorithm.clone();
        let verify = |jwks: &str| -> Result<assertion::Verified, AssertionError> {
            let set: JwkSet = serde_json::from_str(jwks)
                .map_err(|_| AssertionError::BadKey("the kept key set is unreadable"))?;
            assertion::verify(
                assertion,
                &client_id,
                &set,
                declared.as_deref(),
                audiences,
                now_secs,
            )
        };
        let verified = match verify(&jwks) {
            Err(AssertionError::UnknownKey) if !fetched && self.may_refetch_keys(&item, now_ms) => {
                let jwks = self.refetch_keys(&mut item, now_ms).await?;
                verify(&jwks)
            }
            other => other,
        }
        .map_err(ClientError::Assertion)?;
        self.use_once(&client_id, &verified, now_ms).await?;
        Ok(Some(known(&item)))
    }

    fn may_refetch_keys(&self, item: &ClientItem, now_ms: i64) -> bool {
        item.assertion_keys.as_ref().is_some_and(|keys| {
            keys.jwks_uri.is_some()
                && keys
                    .fetched_at_ms
                    .is_none_or(|fetched| now_ms - fetched >= KEY_REFETCH_MS)
        })
    }

    /// Fetches a client's keys from its `jwks_uri` and keeps them with the client.
    async fn refetch_keys(
        &self,
        item: &mut ClientItem,
        now_ms: i64,
    ) -> Result<String, ClientError> {
        let (Some(fetcher), Some(jwks_uri)) = (
            &self.documents,
            item.assertion_keys
                .as_ref()
                .and_then(|keys| keys.jwks_uri.clone()),
        ) else {
            return Err(ClientError::Assertion(AssertionError::UnknownKey));
        };
        let jwks = fetcher.fetch_keys(&jwks_uri).await?;
        if let Some(keys) = &mut item.assertion_keys {
            keys.jwks = Some(jwks.clone());
            keys.fetched_at_ms = Some(now_ms);
        }
        // A pinned or imported copy is kept too: only the keys changed.
        let expected = item.revision;
        item.revision += 1;
        match self.store.put_client(item, Some(expected), now_ms).await {
            Ok(()) | Err(StoreError::Conflict) => {}
            Err(StoreError::Unavailable(cause)) => {
                tracing::warn!(%cause, "a client's keys could not be kept");
            }
            Err(error) => return Err(error.into()),
        }
        Ok(jwks)
    }

    /// Claims an assertion's `jti` for this client until the assertion expires.
    async fn use_once(
        &self,
        client_id: &str,
        verified: &assertion::Verified,
        now_ms: i64,
    ) -> Result<(), ClientError> {
        let Some(grants) = &self.grants else {
            return Err(ClientError::Unavailable(
                "no store to keep used assertions in".into(),
            ));
        };
        let record = GrantItem {
            kind: GrantKind::AssertionId,
            key: sha256_hex(format!("{client_id}\n{}", verified.jti)),
            body: String::new(),
            expires_at_ms: verified.forget_after_secs.saturating_mul(1000),
            revision: 1,
        };
        match grants.put_grant(&record, None, now_ms).await {
            Ok(()) => Ok(()),
            Err(StoreError::Conflict) => Err(ClientError::Assertion(AssertionError::Claims(
                "jti was used before",
            ))),
            Err(error) => Err(error.into()),
        }
    }
}

/// Whether two kept copies say the same about their client.
fn same_client(kept: &ClientItem, fetched: &ClientItem) -> bool {
    kept.name == fetched.name
        && kept.redirect_uris == fetched.redirect_uris
        && kept.assertion_keys == fetched.assertion_keys
        && kept
            .document
            .as_ref()
            .map(|document| document.refetch_after_ms - document.fetched_at_ms)
            == fetched
                .document
                .as_ref()
                .map(|document| document.refetch_after_ms - document.fetched_at_ms)
}
