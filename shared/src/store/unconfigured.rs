//! The store used when none is configured (under Lambda before a table is set): every call
//! reports storage unavailable, so decision tools say so and the rate limiter fails closed.
//! It never keeps anything, in memory or elsewhere.

use async_trait::async_trait;

use super::{
    AccountItem, AccountStore, AccountSummary, Append, ChainKey, ChainStore, ClientItem,
    ClientStore, Cosigned, CosignedStore, Counter, CounterStore, GrantItem, GrantKind, GrantStore,
    LogHead, Snapshot, StoreError, Taken,
};

pub struct Unconfigured;

const REASON: &str = "no store is configured";

#[async_trait]
impl ChainStore for Unconfigured {
    async fn load(&self, _key: &ChainKey, _now_ms: i64) -> Result<Option<Snapshot>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn load_for_append(
        &self,
        _key: &ChainKey,
        _now_ms: i64,
    ) -> Result<(Option<Snapshot>, Option<LogHead>), StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn log_head(&self, _key: &ChainKey, _now_ms: i64) -> Result<super::LogRead, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn signed_log_heads(&self, _now_ms: i64) -> Result<Vec<(ChainKey, LogHead)>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn resign_log(
        &self,
        _key: &ChainKey,
        _expected: &LogHead,
        _checkpoint: &str,
    ) -> Result<(), StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn log_hashes(
        &self,
        _key: &ChainKey,
        _leaves: &[u64],
    ) -> Result<std::collections::HashMap<u64, Vec<[u8; 32]>>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn append_together(
        &self,
        _key: &ChainKey,
        _appends: Vec<Append>,
        _now_ms: i64,
    ) -> Result<(), (StoreError, Option<super::Winner>)> {
        Err((StoreError::Unavailable(REASON.into()), None))
    }

    async fn remove(&self, _key: &ChainKey) -> Result<usize, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn relocate(
        &self,
        _from: &ChainKey,
        _to: &ChainKey,
        _now_ms: i64,
    ) -> Result<usize, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }
}

#[async_trait]
impl AccountStore for Unconfigured {
    async fn account(&self, _household_id: &str) -> Result<Option<AccountItem>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn accounts(&self) -> Result<Vec<AccountSummary>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn put_account(
        &self,
        _item: &AccountItem,
        _expected: Option<u64>,
    ) -> Result<(), StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn delete_account(
        &self,
        _household_id: &str,
        _expected: u64,
    ) -> Result<bool, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }
}

#[async_trait]
impl CounterStore for Unconfigured {
    async fn take(
        &self,
        _counters: &[Counter],
        _expires_at_ms: i64,
        _now_ms: i64,
    ) -> Result<Taken, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }
}

#[async_trait]
impl ClientStore for Unconfigured {
    async fn client(
        &self,
        _client_id: &str,
        _now_ms: i64,
    ) -> Result<Option<ClientItem>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn clients(&self, _now_ms: i64) -> Result<Vec<ClientItem>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn put_client(
        &self,
        _item: &ClientItem,
        _expected: Option<u64>,
        _now_ms: i64,
    ) -> Result<(), StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn delete_client(&self, _client_id: &str) -> Result<bool, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }
}

#[async_trait]
impl GrantStore for Unconfigured {
    async fn grant(
        &self,
        _kind: GrantKind,
        _key: &str,
        _now_ms: i64,
    ) -> Result<Option<GrantItem>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn put_grant(
        &self,
        _item: &GrantItem,
        _expected: Option<u64>,
        _now_ms: i64,
    ) -> Result<(), StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn claim_grant(&self, _item: &GrantItem, _now_ms: i64) -> Result<bool, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn delete_grant(
        &self,
        _kind: GrantKind,
        _key: &str,
        _expected: u64,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }
}

#[async_trait]
impl CosignedStore for Unconfigured {
    async fn cosigned(&self, _key: &ChainKey, _now_ms: i64) -> Result<Vec<Cosigned>, StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }

    async fn keep_cosigned(&self, _key: &ChainKey, _cosigned: &Cosigned) -> Result<(), StoreError> {
        Err(StoreError::Unavailable(REASON.into()))
    }
}
