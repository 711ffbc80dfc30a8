//! Test support shared by Hearth's test suites (never a dependency of shipped code).

pub mod converse;
pub mod moto;
pub mod passkey;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept};
use aws_sdk_dynamodb::error::BoxError;

/// Counts SDK operations (not retry attempts) made through the client it is attached to:
/// one count per call, which is one round trip when nothing is retried.
#[derive(Debug, Clone, Default)]
pub struct CallCounter(Arc<AtomicUsize>);

impl CallCounter {
    /// The calls made since the last `take`, resetting the count.
    pub fn take(&self) -> usize {
        self.0.swap(0, Ordering::SeqCst)
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
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
