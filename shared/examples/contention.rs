//! Contention on one household: W concurrent writers each record N decisions through the
//! decision memory (the product's own append path, with its retry budget), on SQLite or on
//! DynamoDB (moto on loopback, one request at a time). Prints, for each W, how many appends
//! were accepted, the p50/p99 latency of an append as its caller sees it (retries included),
//! the reads and conditional writes made per append asked for (a lost race costs a write, and
//! a read unless the store named the winner), and checks that nothing acknowledged was lost or duplicated: the acknowledged sequence
//! numbers are exactly 1..=accepted, and the retained chain verifies.
//!
//!   cargo run --release -p hearth-core --example contention -- [sqlite|dynamodb] [N] [W...] [--instances]
//!
//! By default the writers share one service, as concurrent requests to one server process do;
//! with `--instances` each has its own, as separate Lambda instances would.
//!
//! `scripts/contention` runs it on both stores. Timings are this machine's; moto is far
//! slower than DynamoDB, so its acceptance rate is a floor, not a forecast.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hearth_core::auth::Caller;
use hearth_core::chain;
use hearth_core::clock::SystemClock;
use hearth_core::store::dynamodb::DynamoStore;
use hearth_core::store::sqlite::SqliteStore;
use hearth_core::store::{
    Append, ChainKey, ChainStore, LogHead, LogRead, Snapshot, StoreError, Winner,
};
use hearth_core::transparency::LogKeys;
use hearth_core::why::record::NewDecision;
use hearth_core::why::{WhyError, WhyService};
use hearth_testkit::moto::{Moto, unique_name};
use serde_json::Map;

/// The store as the writers see it, counting the round trips their appends make: the reads an
/// append starts from and the conditional writes, won or lost.
struct Counted {
    inner: Arc<dyn ChainStore>,
    reads: AtomicUsize,
    writes: AtomicUsize,
}

#[async_trait::async_trait]
impl ChainStore for Counted {
    async fn load(&self, key: &ChainKey, now_ms: i64) -> Result<Option<Snapshot>, StoreError> {
        self.inner.load(key, now_ms).await
    }

    async fn load_for_append(
        &self,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<(Option<Snapshot>, Option<LogHead>), StoreError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.load_for_append(key, now_ms).await
    }

    async fn log_head(&self, key: &ChainKey, now_ms: i64) -> Result<LogRead, StoreError> {
        self.inner.log_head(key, now_ms).await
    }

    async fn signed_log_heads(&self, now_ms: i64) -> Result<Vec<(ChainKey, LogHead)>, StoreError> {
        self.inner.signed_log_heads(now_ms).await
    }

    async fn resign_log(
        &self,
        key: &ChainKey,
        expected: &LogHead,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        self.inner.resign_log(key, expected, checkpoint).await
    }

    async fn log_hashes(
        &self,
        key: &ChainKey,
        leaves: &[u64],
    ) -> Result<std::collections::HashMap<u64, Vec<[u8; 32]>>, StoreError> {
        self.inner.log_hashes(key, leaves).await
    }

    async fn append_together(
        &self,
        key: &ChainKey,
        appends: Vec<Append>,
        now_ms: i64,
    ) -> Result<(), (StoreError, Option<Winner>)> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.inner.append_together(key, appends, now_ms).await
    }

    async fn remove(&self, key: &ChainKey) -> Result<usize, StoreError> {
        self.inner.remove(key).await
    }

    async fn relocate(
        &self,
        from: &ChainKey,
        to: &ChainKey,
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        self.inner.relocate(from, to, now_ms).await
    }
}

struct Outcome {
    accepted: Vec<(u64, Duration)>,
    refused: Vec<Duration>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `--instances`: each writer has a service of its own, as separate Lambda instances
    // would, sharing nothing but the store; by default they share one, as the requests to one
    // local server do.
    let separate = args.iter().any(|arg| arg == "--instances");
    args.retain(|arg| arg != "--instances");
    let backend = args.first().map_or("sqlite", String::as_str).to_owned();
    let per_writer: usize = args.get(1).map_or(Ok(25), |n| n.parse())?;
    let writer_counts: Vec<usize> = match args.get(2..) {
        Some(rest) if !rest.is_empty() => {
            rest.iter().map(|n| n.parse()).collect::<Result<_, _>>()?
        }
        _ => vec![1, 2, 4, 8],
    };
    let _moto = (backend == "dynamodb").then(Moto::start_own);
    let dir = tempfile::tempdir()?;
    println!(
        "{}",
        if separate {
            "writers as separate instances"
        } else {
            "writers in one process"
        }
    );
    println!(
        "store     writers  appends  accepted  rate      p50 ms  p99 ms  reads  writes  lost  duplicated  chain"
    );
    for writers in writer_counts {
        let inner: Arc<dyn ChainStore> = match (&backend[..], &_moto) {
            ("dynamodb", Some(moto)) => {
                let store = DynamoStore::new(moto.dynamodb_client(), unique_name("contention"));
                store.ensure_table().await?;
                Arc::new(store)
            }
            ("sqlite", _) => Arc::new(SqliteStore::open(
                &dir.path().join(format!("w{writers}.db")),
            )?),
            (other, _) => return Err(format!("unknown store {other:?}; sqlite or dynamodb").into()),
        };
        let counted = Arc::new(Counted {
            inner,
            reads: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
        });
        let store: Arc<dyn ChainStore> = counted.clone();
        let caller = Caller::unattested("c".repeat(64));
        // Signed logs, as every deployment has: each append also verifies the log head's
        // checkpoint, signs the next, and writes two more items in its transaction.
        let keys = Arc::new(LogKeys::new("contention.example", &[(1, [1; 32])])?);
        let service = || {
            Arc::new(
                WhyService::new(store.clone(), Arc::new(SystemClock))
                    .with_log_keys(Some(keys.clone())),
            )
        };
        let shared = service();
        let mut tasks = Vec::new();
        for writer in 0..writers {
            let service = if separate { service() } else { shared.clone() };
            let caller = caller.clone();
            tasks.push(tokio::spawn(async move {
                let inputs = Map::new();
                let mut outcome = Outcome {
                    accepted: Vec::new(),
                    refused: Vec::new(),
                };
                for n in 0..per_writer {
                    let action = format!("writer {writer} decision {n}");
                    let started = Instant::now();
                    let result = service
                        .record(
                            &caller,
                            NewDecision {
                                household_id: "contended",
                                action: &action,
                                reason: "contention",
                                inputs: &inputs,
                                approver: "script",
                            },
                        )
                        .await;
                    let took = started.elapsed();
                    match result {
                        Ok(record) => outcome
                            .accepted
                            .push((record["seq"].as_u64().unwrap_or(0), took)),
                        Err(WhyError::Busy) => outcome.refused.push(took),
                        Err(error) => panic!("writer {writer}: {error}"),
                    }
                }
                outcome
            }));
        }
        let mut seqs = Vec::new();
        let mut latencies = Vec::new();
        let mut refused = 0;
        for task in tasks {
            let outcome = task.await?;
            refused += outcome.refused.len();
            latencies.extend(outcome.refused);
            for (seq, took) in outcome.accepted {
                seqs.push(seq);
                latencies.push(took);
            }
        }
        seqs.sort_unstable();
        let accepted = seqs.len();
        let mut unique = seqs.clone();
        unique.dedup();
        let duplicated = accepted - unique.len();
        let lost = (1..=accepted as u64)
            .filter(|seq| unique.binary_search(seq).is_err())
            .count();
        let key = hearth_core::why::service::chain_key_in(&caller.scope, "contended");
        let now_ms = hearth_core::clock::unix_ms(time::OffsetDateTime::now_utc());
        let snapshot = store.load(&key, now_ms).await?.ok_or("no chain")?;
        let verifies = chain::verify(
            &snapshot.records,
            snapshot.head.anchor.as_deref(),
            &snapshot.head.last_hash,
        )
        .is_ok()
            && snapshot.head.last_seq == accepted as u64;
        latencies.sort_unstable();
        let percentile = |p: f64| {
            let index =
                ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
            latencies[index].as_secs_f64() * 1000.0
        };
        let total = accepted + refused;
        println!(
            "{backend:<9} {writers:>7}  {total:>7}  {accepted:>8}  {:>6.1}%  {:>6.1}  {:>6.1}  {:>5.2}  {:>6.2}  {lost:>4}  {duplicated:>10}  {}",
            100.0 * accepted as f64 / total as f64,
            percentile(0.50),
            percentile(0.99),
            counted.reads.load(Ordering::Relaxed) as f64 / total as f64,
            counted.writes.load(Ordering::Relaxed) as f64 / total as f64,
            if verifies { "verifies" } else { "BROKEN" }
        );
        if lost > 0 || duplicated > 0 || !verifies {
            return Err("an acknowledged append was lost or duplicated, or the chain broke".into());
        }
    }
    Ok(())
}
