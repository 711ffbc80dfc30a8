//! Fixed-window rate limits: about 60 requests a minute per subject and 120 per client IP.
//!
//! The counters live in the store (`store::CounterStore`), so every function instance shares
//! them. Each window has its own counter key and expires with the window, which is a TTL item
//! in DynamoDB and a row with an expiry locally. Stored keys hold hashes, never an IP address or
//! a subject. If the counters cannot be reached the request is refused: the limiter fails
//! closed, never open.

use std::net::IpAddr;
use std::sync::Arc;

use crate::auth::Caller;
use crate::chain::short_hash;
use crate::clock::{Clock, unix_ms};
use crate::config::RateLimits;
use crate::store::{CounterStore, Taken, Window};

/// The length of one window.
pub const WINDOW_MS: i64 = 60_000;

/// The limiter's answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Over a limit; the window turns in `retry_after_secs` (at least 1).
    Limited {
        retry_after_secs: u64,
    },
    /// The counters could not be reached; refuse rather than serve unlimited.
    Unavailable,
}

pub struct RateLimiter {
    counters: Arc<dyn CounterStore>,
    clock: Arc<dyn Clock>,
    limits: RateLimits,
}

impl RateLimiter {
    pub fn new(counters: Arc<dyn CounterStore>, clock: Arc<dyn Clock>, limits: RateLimits) -> Self {
        Self {
            counters,
            clock,
            limits,
        }
    }

    /// Counts one request from `ip` (unknown addresses share one counter) and, once
    /// authenticated, from `caller`, in a single store call.
    pub async fn admit(&self, ip: Option<IpAddr>, caller: Option<&Caller>) -> Admission {
        let now_ms = unix_ms(self.clock.now());
        let window = Window::containing(now_ms, WINDOW_MS);
        let ip_key = match ip {
            Some(ip) => short_hash(ip.to_string()),
            None => "unknown".to_owned(),
        };
        let mut counters = vec![window.counter(&format!("rate/ip/{ip_key}"), self.limits.per_ip)];
        if let Some(caller) = caller {
            counters.push(window.counter(
                &format!("rate/subject/{}", &caller.scope[..32]),
                self.limits.per_subject,
            ));
        }
        match self.counters.take(&counters, window.end_ms, now_ms).await {
            Ok(Taken::Granted) => Admission::Admitted,
            Ok(Taken::Refused { .. }) => Admission::Limited {
                retry_after_secs: ((window.end_ms - now_ms) as u64).div_ceil(1000).max(1),
            },
            Err(error) => {
                tracing::warn!(%error, "rate limiter unavailable; refusing the request");
                Admission::Unavailable
            }
        }
    }
}
