//! What witnesses cosigned of each chain's log: per chain and witness, the latest cosignature
//! Hearth received, and the origin and size it covers. It tells the next submission which size
//! to prove consistency from, and lets later reads attach the cosignature to the checkpoint
//! it signs.

use async_trait::async_trait;

use super::{ChainKey, StoreError};

/// One witness's latest cosignature of a chain's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosigned {
    /// The witness's key name (from its vkey): stable when the policy's names change.
    pub witness: String,
    /// The checkpoint's origin and size the cosignature covers.
    pub origin: String,
    pub size: u64,
    /// The cosignature line, with its newline.
    pub line: String,
    /// When it stops mattering: the log's own retirement (`None`: kept with the log).
    pub expires_at_ms: Option<i64>,
}

#[async_trait]
pub trait CosignedStore: Send + Sync + 'static {
    /// Every witness's latest cosignature of `key`'s log, still kept at `now_ms`, in one read.
    async fn cosigned(&self, key: &ChainKey, now_ms: i64) -> Result<Vec<Cosigned>, StoreError>;

    /// Keeps `cosigned` as its witness's latest, unless the store already holds a larger size
    /// of the same origin from that witness (answers can arrive out of order).
    async fn keep_cosigned(&self, key: &ChainKey, cosigned: &Cosigned) -> Result<(), StoreError>;
}
