//! Optimistic concurrency from the writer's side: a conflicting append is retried with
//! jittered backoff until the append budget is spent, then reported as busy, and a store
//! outage is "unavailable" at once; a writer that landed after losing makes way before its
//! next append. Time is tokio's paused clock, so the budget is virtual.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hearth_core::auth::Caller;
use hearth_core::clock::SystemClock;
use hearth_core::store::{
    APPEND_BUDGET, Append, ChainKey, ChainStore, LogHead, LogRead, MAKE_WAY, Snapshot, StoreError,
    Winner,
};
use hearth_core::why::record::NewDecision;
use hearth_core::why::{WhyError, WhyService};
use serde_json::Map;
use tokio::time::Instant;

/// A store whose chains always look empty, whose appends take `latency`, and whose first
/// `failing` appends lose the race (or fail) with `error`; it notes when each append was sent
/// and when it answered.
struct Contested {
    error: fn() -> StoreError,
    failing: usize,
    latency: std::time::Duration,
    appends: Mutex<Vec<(Instant, Instant)>>,
}

impl Contested {
    fn new(error: fn() -> StoreError, failing: usize, latency: std::time::Duration) -> Self {
        Self {
            error,
            failing,
            latency,
            appends: Mutex::default(),
        }
    }
}

#[async_trait]
impl ChainStore for Contested {
    async fn load(&self, _: &ChainKey, _: i64) -> Result<Option<Snapshot>, StoreError> {
        Ok(None)
    }

    async fn load_for_append(
        &self,
        _: &ChainKey,
        _: i64,
    ) -> Result<(Option<Snapshot>, Option<LogHead>), StoreError> {
        Ok((None, None))
    }

    async fn log_head(&self, _: &ChainKey, _: i64) -> Result<LogRead, StoreError> {
        Ok(LogRead::default())
    }

    async fn signed_log_heads(&self, _: i64) -> Result<Vec<(ChainKey, LogHead)>, StoreError> {
        Ok(Vec::new())
    }

    async fn resign_log(&self, _: &ChainKey, _: &LogHead, _: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn log_hashes(
        &self,
        _: &ChainKey,
        _: &[u64],
    ) -> Result<std::collections::HashMap<u64, Vec<[u8; 32]>>, StoreError> {
        Ok(Default::default())
    }

    async fn append_together(
        &self,
        _: &ChainKey,
        _: Vec<Append>,
        _: i64,
    ) -> Result<(), (StoreError, Option<Winner>)> {
        let sent = Instant::now();
        tokio::time::sleep(self.latency).await;
        let mut appends = self.appends.lock().unwrap();
        appends.push((sent, Instant::now()));
        if appends.len() <= self.failing {
            Err(((self.error)(), None))
        } else {
            Ok(())
        }
    }

    async fn remove(&self, _: &ChainKey) -> Result<usize, StoreError> {
        Err((self.error)())
    }

    async fn relocate(&self, _: &ChainKey, _: &ChainKey, _: i64) -> Result<usize, StoreError> {
        Err((self.error)())
    }
}

async fn record_against(error: fn() -> StoreError) -> (WhyError, usize) {
    let store = Arc::new(Contested::new(error, usize::MAX, Duration::ZERO));
    let service = WhyService::new(store.clone(), Arc::new(SystemClock));
    let inputs = Map::new();
    let decision = NewDecision {
        household_id: "home",
        action: "dim lights",
        reason: "Movie time",
        inputs: &inputs,
        approver: "Parent",
    };
    let error = service
        .record(&Caller::unattested("s"), decision)
        .await
        .unwrap_err();
    let attempts = store.appends.lock().unwrap().len();
    (error, attempts)
}

#[tokio::test(start_paused = true)]
async fn conflicts_are_retried_until_the_budget_is_spent_then_reported_busy() {
    let started = Instant::now();
    let (error, attempts) = record_against(|| StoreError::Conflict).await;
    let spent = started.elapsed();
    assert!(matches!(error, WhyError::Busy), "{error}");
    assert!(error.to_string().contains("try again"));
    // Pauses of at most 2, 4, 8, 16, 32 and then 40 ms: at least a dozen tries in 250 ms.
    assert!(attempts >= 12, "{attempts} attempts");
    assert!(spent >= APPEND_BUDGET, "gave up after {spent:?}");
    assert!(
        spent < APPEND_BUDGET + Duration::from_millis(1),
        "and not later: {spent:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unavailable_store_is_not_retried_and_says_so() {
    let (error, attempts) = record_against(|| StoreError::Unavailable("down".into())).await;
    assert!(matches!(error, WhyError::Unavailable));
    assert_eq!(attempts, 1);
    assert!(
        !error.to_string().contains("down"),
        "the cause stays in the log"
    );
}

#[tokio::test(start_paused = true)]
async fn after_landing_on_a_contested_chain_a_writer_makes_way_before_its_next_append() {
    let latency = Duration::from_millis(5);
    let store = Arc::new(Contested::new(|| StoreError::Conflict, 1, latency));
    let service = WhyService::new(store.clone(), Arc::new(SystemClock));
    let inputs = Map::new();
    let decision = |action| NewDecision {
        household_id: "home",
        action,
        reason: "Movie time",
        inputs: &inputs,
        approver: "Parent",
    };
    let me = Caller::unattested("s");
    service.record(&me, decision("dim lights")).await.unwrap();
    service.record(&me, decision("close blinds")).await.unwrap();
    let appends = store.appends.lock().unwrap().clone();
    assert_eq!(appends.len(), 3, "lost, landed, landed");
    let (_, landed) = appends[1];
    let (next_sent, _) = appends[2];
    assert_eq!(
        next_sent - landed,
        latency * MAKE_WAY,
        "the next append waits as many landing attempts' time as MAKE_WAY says"
    );
}
