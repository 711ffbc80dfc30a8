//! Test support shared by Hearth's test suites (never a dependency of shipped code).

pub mod chat_completions;
pub mod converse;
pub mod moto;
pub mod passkey;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

/// Counts SDK operations (not retry attempts) made through the client it is attached to:
/// one count per call, which is one round trip when nothing is retried. It also counts the
/// rounds those calls took: calls sent while another is still in flight share its round, so
/// the rounds are the round trips on the critical path.
#[derive(Debug, Clone, Default)]
pub struct CallCounter(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    calls: AtomicUsize,
    rounds: AtomicUsize,
    in_flight: AtomicUsize,
}

impl CallCounter {
    /// The calls made since the last `take`, resetting the count (and the rounds').
    pub fn take(&self) -> usize {
        self.0.rounds.store(0, Ordering::SeqCst);
        self.0.calls.swap(0, Ordering::SeqCst)
    }

    /// The calls and the rounds they took since the last `take`, resetting both.
    pub fn take_with_rounds(&self) -> (usize, usize) {
        let rounds = self.0.rounds.swap(0, Ordering::SeqCst);
        (self.0.calls.swap(0, Ordering::SeqCst), rounds)
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        if self.0.in_flight.fetch_add(1, Ordering::SeqCst) == 0 {
            self.0.rounds.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Runs once a call is over, answered or failed.
    fn read_after_execution(
        &self,
        _context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}
