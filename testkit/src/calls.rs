//! Counting and recording the DynamoDB calls a client makes: how many, in how many round trips,
//! and what each sent and was answered (for the request units; see [`crate::capacity`]).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextRef,
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use serde_json::Value;

/// Counts SDK operations (not retry attempts) made through the client it is attached to:
/// one count per call, which is one round trip when nothing is retried. It also counts the
/// rounds those calls took, the round trips on the critical path: a call's round is one more
/// than the latest round among the calls answered before it was sent (whatever it depends on
/// was answered by then), so calls sent together share a round, and a call sent after an
/// answer is a round later. And it keeps each call as sent and answered ([`Call`]), for
/// [`CallCounter::take_calls`].
#[derive(Debug, Clone, Default)]
pub struct CallCounter(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    /// The latest round among the calls answered since the last take.
    answered: AtomicUsize,
    recorded: Mutex<Vec<Call>>,
    /// How many takes there have been: a call that straddles one is not recorded over
    /// another that took its place.
    takes: AtomicUsize,
}

/// One SDK call as it went over the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The operation, as DynamoDB names it (`Query`, `TransactWriteItems`, ...).
    pub operation: String,
    /// The round it went out in, counted from 1 since the last take: calls in flight together
    /// share one.
    pub round: usize,
    /// The request's JSON body.
    pub request: Value,
    /// The answer's JSON body (an error's too), when one came.
    pub answer: Option<Value>,
    /// Whether the answer was a success (HTTP 200).
    pub succeeded: bool,
}

/// Which of [`Counts::recorded`] the call under way is, since which take: kept in the call's
/// own config bag, as calls made at the same time share the interceptor.
#[derive(Debug, Clone, Copy)]
struct Slot {
    take: usize,
    index: usize,
}

impl Storable for Slot {
    type Storer = StoreReplace<Self>;
}

impl CallCounter {
    /// The calls made since the last `take`, resetting the count (and the rounds').
    pub fn take(&self) -> usize {
        self.take_with_rounds().0
    }

    /// The calls and the rounds they took since the last `take`, resetting both.
    pub fn take_with_rounds(&self) -> (usize, usize) {
        let calls = self.take_calls();
        let rounds = calls.iter().map(|call| call.round).max().unwrap_or(0);
        (calls.len(), rounds)
    }

    /// Every call made since the last take, in the order they were sent, resetting the count.
    /// Waits for none: take once the calls of interest are answered.
    pub fn take_calls(&self) -> Vec<Call> {
        let mut recorded = self.0.recorded.lock().unwrap();
        self.0.answered.store(0, Ordering::SeqCst);
        self.0.takes.fetch_add(1, Ordering::SeqCst);
        std::mem::take(&mut *recorded)
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mut recorded = self.0.recorded.lock().unwrap();
        let round = self.0.answered.load(Ordering::SeqCst) + 1;
        cfg.interceptor_state().store_put(Slot {
            take: self.0.takes.load(Ordering::SeqCst),
            index: recorded.len(),
        });
        recorded.push(Call {
            operation: String::new(),
            round,
            request: Value::Null,
            answer: None,
            succeeded: false,
        });
        Ok(())
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        // `X-Amz-Target: DynamoDB_20120810.Query`
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|target| target.split_once('.'))
            .map(|(_, operation)| operation.to_owned())
            .unwrap_or_default();
        let body = request
            .body()
            .bytes()
            .and_then(|bytes| serde_json::from_slice(bytes).ok())
            .unwrap_or(Value::Null);
        self.update(cfg, |call| {
            call.operation = operation;
            call.request = body;
        });
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let response = context.response();
        let answer = response
            .body()
            .bytes()
            .and_then(|bytes| serde_json::from_slice(bytes).ok());
        let succeeded = response.status().as_u16() == 200;
        self.update(cfg, |call| {
            call.answer = answer;
            call.succeeded = succeeded;
        });
        Ok(())
    }

    /// Runs once a call is over, answered or failed (not for a call whose future was dropped:
    /// it was never answered, and nothing waited on it).
    fn read_after_execution(
        &self,
        _context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // Under the record's lock, and only for a call of this take: a take resets the rounds.
        self.update(cfg, |call| {
            self.0.answered.fetch_max(call.round, Ordering::SeqCst);
        });
        Ok(())
    }
}

impl CallCounter {
    /// Changes the record of the call whose config bag this is, unless a take has cleared it.
    fn update(&self, cfg: &ConfigBag, change: impl FnOnce(&mut Call)) {
        let Some(slot) = cfg.load::<Slot>().copied() else {
            return;
        };
        let mut recorded = self.0.recorded.lock().unwrap();
        if slot.take == self.0.takes.load(Ordering::SeqCst)
            && let Some(call) = recorded.get_mut(slot.index)
        {
            change(call);
        }
    }
}
