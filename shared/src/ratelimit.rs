//! Fixed-window rate limits: about 60 requests a minute per subject and 120 per client IP.
//!
//! The counters live in the store (`store::CounterStore`), so every function instance shares
//! them. Each window has its own counter key and expires with the window, which is a TTL item
//! in DynamoDB and a row with an expiry locally. Stored keys hold hashes, never an IP address or
//! a subject.
//!
//! One write a request: a request without a valid token counts against its address; a
//! request whose token checks out counts against its subject alone, and only reads its
//! address's counter, refused if that address has spent its budget. So a host that serves
//! many households from a few addresses is limited per household, not per address, and an
//! address cut off by its failed attempts stays cut off whatever token it sends. Each limit
//! is one conditional counter in the shared store, exact across instances.
//!
//! Every per-address counter counts a client's network, not its address alone
//! ([`network_of`]): an IPv4 address, or an IPv6 address's /64. One subscriber or one cloud
//! machine commonly holds a whole IPv6 /64, so counting each of its addresses alone would hand
//! it 2^64 budgets.
//!
//! Two ways the counters can be out of reach are told apart:
//! - **no store configured** (a misconfiguration) fails closed: every request is refused;
//! - **a transient outage** of a configured store falls back to counting in this instance,
//!   with the same limits and keys ([`RateLimiter::with_local_fallback`]). Per instance means
//!   that N warm Lambda instances together allow up to N times the limit for as long as the
//!   outage lasts. The store is tried again every [`RETRY_STORE_MS`], so the shared counters
//!   take over again by themselves, and the outage is logged once a minute, not per request.
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use crate::auth::Caller;
use crate::chain::short_hash;
use crate::clock::{Clock, unix_ms};
use crate::config::RateLimits;
use crate::store::{Counter, CounterStore, Taken, Window};

/// The length of one window.
pub const WINDOW_MS: i64 = 60_000;
/// While the counter store is out of reach, how long requests count locally before the store
/// is tried again: an outage costs one failed store call per instance per interval, not one per
/// request (a DynamoDB call can take its whole 5-second timeout to fail).
pub const RETRY_STORE_MS: i64 = 5_000;
/// How often an outage is logged.
pub const OUTAGE_LOG_MS: i64 = 60_000;
/// The most counters one instance keeps locally in a window; past it a new client is refused,
/// so an outage cannot be turned into unbounded memory by spraying addresses.
pub const MAX_LOCAL_COUNTERS: usize = 100_000;

/// The limiter's answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Over a limit; the window turns in `retry_after_secs` (at least 1).
    Limited {
        retry_after_secs: u64,
    },
    /// The counters could not be reached and there is no fallback; refuse rather than serve
    /// unlimited.
    Unavailable,
}

pub struct RateLimiter {
    counters: Arc<dyn CounterStore>,
    clock: Arc<dyn Clock>,
    limits: RateLimits,
    /// `None`: no fallback, an unreachable store refuses every request.
    fallback: Option<Fallback>,
}

impl RateLimiter {
    /// A limiter over `counters` that fails closed when they cannot be reached.
    pub fn new(counters: Arc<dyn CounterStore>, clock: Arc<dyn Clock>, limits: RateLimits) -> Self {
        Self {
            counters,
            clock,
            limits,
            fallback: None,
        }
    }

    /// The same limiter counting in this instance while the store is out of reach (see the
    /// module comment). For a configured store only; without one, keep failing closed.
    pub fn with_local_fallback(mut self) -> Self {
        self.fallback = Some(Fallback::new(MAX_LOCAL_COUNTERS));
        self
    }

    /// Counts one request, in a single store call with one write: against `ip` (unknown
    /// addresses share one counter) when there is no `caller`; once a token names one, against
    /// `caller` alone, the address's counter only read, so that an address over its budget is
    /// refused whatever token it sends.
    pub async fn admit(&self, ip: Option<IpAddr>, caller: Option<&Caller>) -> Admission {
        let now_ms = unix_ms(self.clock.now());
        let window = Window::containing(now_ms, WINDOW_MS);
        let address = format!("rate/ip/{}", network_key(ip));
        let counters = match caller {
            None => vec![window.counter(&address, self.limits.per_ip)],
            Some(caller) => vec![
                window.watched(&address, self.limits.per_ip),
                window.counter(
                    &format!("rate/subject/{}", &caller.scope[..32]),
                    self.limits.per_subject,
                ),
            ],
        };
        let taken = match &self.fallback {
            Some(fallback) if fallback.store_is_resting(now_ms) => fallback.take(&counters, window),
            _ => match self.counters.take(&counters, window.end_ms, now_ms).await {
                Ok(taken) => {
                    if let Some(fallback) = &self.fallback {
                        fallback.store_answered();
                    }
                    taken
                }
                Err(error) => match &self.fallback {
                    Some(fallback) => {
                        fallback.store_failed(now_ms, &error);
                        fallback.take(&counters, window)
                    }
                    None => {
                        tracing::warn!(%error, "rate limiter unavailable; refusing the request");
                        return Admission::Unavailable;
                    }
                },
            },
        };
        match taken {
            Taken::Granted => Admission::Admitted,
            Taken::Refused { .. } => Admission::Limited {
                retry_after_secs: ((window.end_ms - now_ms) as u64).div_ceil(1000).max(1),
            },
        }
    }
}

/// Attempts at something guessable (a link code on the consent page), counted per client
/// address in the shared counters over windows of their own length. Unlike [`RateLimiter`]
/// it never falls back to counting locally: when the counters are out of reach it refuses,
/// because an outage must not widen a guessing budget.
pub struct AttemptLimiter {
    counters: Arc<dyn CounterStore>,
    clock: Arc<dyn Clock>,
    /// The counter's name, e.g. `link`; stored, so it must not be an identity.
    name: &'static str,
    limit: u32,
    window_ms: i64,
}

impl AttemptLimiter {
    pub fn new(
        counters: Arc<dyn CounterStore>,
        clock: Arc<dyn Clock>,
        name: &'static str,
        limit: u32,
        window_ms: i64,
    ) -> Self {
        Self {
            counters,
            clock,
            name,
            limit,
            window_ms,
        }
    }

    /// Counts one attempt from `ip` (unknown addresses share one counter).
    pub async fn attempt(&self, ip: Option<IpAddr>) -> Admission {
        let ip_key = network_key(ip);
        self.count(&format!("{}/ip/{ip_key}", self.name)).await
    }

    /// Counts one attempt against the one counter every address shares: a cap on the whole
    /// deployment (sign-ups a day).
    pub async fn attempt_by_anyone(&self) -> Admission {
        self.count(&format!("{}/all", self.name)).await
    }

    async fn count(&self, key: &str) -> Admission {
        let now_ms = unix_ms(self.clock.now());
        let window = Window::containing(now_ms, self.window_ms);
        let counter = window.counter(key, self.limit);
        match self.counters.take(&[counter], window.end_ms, now_ms).await {
            Ok(Taken::Granted) => Admission::Admitted,
            Ok(Taken::Refused { .. }) => Admission::Limited {
                retry_after_secs: ((window.end_ms - now_ms) as u64).div_ceil(1000).max(1),
            },
            Err(error) => {
                tracing::warn!(%error, counter = self.name, "attempt limiter unavailable; refusing");
                Admission::Unavailable
            }
        }
    }
}

/// The network a client address is counted by: an IPv4 address whole, an IPv6 address by its
/// /64 (written as `prefix::/64`), and an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a
/// dual-stack socket reports for an IPv4 peer) as the IPv4 address it carries.
pub fn network_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let network = u128::from(v6) & (u128::MAX << 64);
                format!("{}/64", std::net::Ipv6Addr::from(network))
            }
        },
    }
}

/// A counter key's address part: the hash of [`network_of`] (stored keys never hold an
/// address); unknown addresses share one counter.
fn network_key(ip: Option<IpAddr>) -> String {
    match ip {
        Some(ip) => short_hash(network_of(ip)),
        None => "unknown".to_owned(),
    }
}

/// Counting in this instance while the store is out of reach.
struct Fallback {
    counts: Mutex<LocalCounts>,
    /// Until when the store is not tried (Unix ms); 0 while it answers.
    resting_until_ms: AtomicI64,
    /// When the outage was last logged (Unix ms).
    logged_at_ms: AtomicI64,
    /// Whether the last store call failed, so its return is logged once.
    down: AtomicBool,
}

impl Fallback {
    fn new(max_counters: usize) -> Self {
        Self {
            counts: Mutex::new(LocalCounts::new(max_counters)),
            resting_until_ms: AtomicI64::new(0),
            logged_at_ms: AtomicI64::new(i64::MIN),
            down: AtomicBool::new(false),
        }
    }

    fn store_is_resting(&self, now_ms: i64) -> bool {
        now_ms < self.resting_until_ms.load(Ordering::Relaxed)
    }

    fn store_failed(&self, now_ms: i64, error: &crate::store::StoreError) {
        self.resting_until_ms
            .store(now_ms.saturating_add(RETRY_STORE_MS), Ordering::Relaxed);
        self.down.store(true, Ordering::Relaxed);
        let logged = self.logged_at_ms.load(Ordering::Relaxed);
        if once_a_minute(logged, now_ms)
            && self
                .logged_at_ms
                .compare_exchange(logged, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::error!(
                %error,
                "rate-limit counters unreachable; counting in this instance only until they return"
            );
        }
    }

    fn store_answered(&self) {
        if self.down.swap(false, Ordering::Relaxed) {
            tracing::info!("rate-limit counters reachable again");
        }
    }

    fn take(&self, counters: &[Counter], window: Window) -> Taken {
        match self.counts.lock() {
            Ok(mut counts) => counts.take(counters, window),
            // A panic while counting poisoned the lock; refusing is the safe answer.
            Err(_) => Taken::Refused { index: 0 },
        }
    }
}

/// Whether an outage last logged at `logged_at_ms` is due to be logged again at `now_ms`.
fn once_a_minute(logged_at_ms: i64, now_ms: i64) -> bool {
    i128::from(now_ms) - i128::from(logged_at_ms) >= i128::from(OUTAGE_LOG_MS)
}

/// One instance's counters for the current window: the same keys and limits as the store's.
struct LocalCounts {
    window_start_ms: i64,
    hits: HashMap<String, u32>,
    max_counters: usize,
}

impl LocalCounts {
    fn new(max_counters: usize) -> Self {
        Self {
            window_start_ms: i64::MIN,
            hits: HashMap::new(),
            max_counters,
        }
    }

    /// Counts one request against every counted counter, all or nothing; a watched one is
    /// only read.
    fn take(&mut self, counters: &[Counter], window: Window) -> Taken {
        if window.start_ms != self.window_start_ms {
            self.window_start_ms = window.start_ms;
            self.hits.clear();
        }
        for (index, counter) in counters.iter().enumerate() {
            match self.hits.get(&counter.key) {
                Some(hits) if *hits >= counter.limit => return Taken::Refused { index },
                None if counter.counted && self.hits.len() >= self.max_counters => {
                    return Taken::Refused { index };
                }
                _ => {}
            }
        }
        for counter in counters.iter().filter(|counter| counter.counted) {
            *self.hits.entry(counter.key.clone()).or_insert(0) += 1;
        }
        Taken::Granted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::store::StoreError;
    use std::sync::atomic::AtomicUsize;

    /// Counters that fail while `down` is set, counting every call.
    struct Flaky {
        down: AtomicBool,
        calls: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl CounterStore for Flaky {
        async fn take(&self, _: &[Counter], _: i64, _: i64) -> Result<Taken, StoreError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.down.load(Ordering::SeqCst) {
                Err(StoreError::Unavailable("connection refused".into()))
            } else {
                Ok(Taken::Granted)
            }
        }
    }

    fn limiter(down: bool) -> (RateLimiter, Arc<Flaky>, Arc<ManualClock>) {
        let store = Arc::new(Flaky {
            down: AtomicBool::new(down),
            calls: AtomicUsize::new(0),
        });
        let clock = Arc::new(ManualClock::new(
            time::OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap(),
        ));
        let limits = RateLimits {
            per_subject: 2,
            per_ip: 100,
        };
        let limiter = RateLimiter::new(store.clone(), clock.clone(), limits);
        (limiter, store, clock)
    }

    #[tokio::test]
    async fn without_a_fallback_an_unreachable_store_refuses() {
        let (limiter, _, _) = limiter(true);
        assert_eq!(limiter.admit(None, None).await, Admission::Unavailable);
    }

    #[tokio::test]
    async fn an_outage_counts_locally_with_the_same_limits_and_the_store_takes_over_again() {
        let (limiter, store, clock) = limiter(true);
        let limiter = limiter.with_local_fallback();
        let caller = Caller::unattested("s".repeat(64));
        assert_eq!(
            limiter.admit(None, Some(&caller)).await,
            Admission::Admitted
        );
        assert_eq!(
            limiter.admit(None, Some(&caller)).await,
            Admission::Admitted
        );
        assert!(matches!(
            limiter.admit(None, Some(&caller)).await,
            Admission::Limited { .. }
        ));
        assert_eq!(
            store.calls.load(Ordering::SeqCst),
            1,
            "the store rests after a failure"
        );
        clock.advance(time::Duration::milliseconds(RETRY_STORE_MS));
        store.down.store(false, Ordering::SeqCst);
        // The store answers again: its counters decide from now on.
        assert_eq!(
            limiter.admit(None, Some(&caller)).await,
            Admission::Admitted
        );
        assert_eq!(store.calls.load(Ordering::SeqCst), 2);
        assert_eq!(
            limiter.admit(None, Some(&caller)).await,
            Admission::Admitted
        );
        assert_eq!(store.calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn an_address_is_counted_by_its_network() {
        let network = |text: &str| network_of(text.parse().unwrap());
        assert_eq!(network("192.0.2.7"), "192.0.2.7");
        assert_eq!(network("::ffff:192.0.2.7"), "192.0.2.7", "IPv4-mapped");
        assert_eq!(network("2001:db8:1:2::1"), "2001:db8:1:2::/64");
        assert_eq!(
            network("2001:db8:1:2:ffff:ffff:ffff:ffff"),
            network("2001:db8:1:2::"),
            "the first and last address of a /64"
        );
        assert_ne!(network("2001:db8:1:3::"), network("2001:db8:1:2::"));
        assert_eq!(network("::1"), "::/64");
        assert_eq!(
            network_key(Some("192.0.2.7".parse().unwrap())),
            short_hash("192.0.2.7"),
            "IPv4 keeps the key it had, so live windows carry on"
        );
    }

    #[test]
    fn an_outage_is_logged_once_a_minute() {
        assert!(once_a_minute(i64::MIN, 0), "the first failure is logged");
        assert!(!once_a_minute(0, OUTAGE_LOG_MS - 1));
        assert!(once_a_minute(0, OUTAGE_LOG_MS));
    }

    #[test]
    fn local_counters_are_all_or_nothing_and_bounded() {
        let window = Window::containing(0, WINDOW_MS);
        let mut counts = LocalCounts::new(3);
        let a = window.counter("a", 1);
        let b = window.counter("b", 5);
        assert_eq!(counts.take(&[a.clone(), b.clone()], window), Taken::Granted);
        assert_eq!(
            counts.take(&[b.clone(), a.clone()], window),
            Taken::Refused { index: 1 }
        );
        assert_eq!(counts.hits[&b.key], 1, "a refused take counts nothing");
        let c = window.counter("c", 5);
        let d = window.counter("d", 5);
        assert_eq!(counts.take(&[c], window), Taken::Granted);
        assert_eq!(
            counts.take(std::slice::from_ref(&d), window),
            Taken::Refused { index: 0 },
            "three counters are the most; a fourth client is refused"
        );
        let next = Window::containing(WINDOW_MS, WINDOW_MS);
        assert_eq!(
            counts.take(&[next.counter("d", 5)], next),
            Taken::Granted,
            "a new window starts afresh"
        );
    }
}
