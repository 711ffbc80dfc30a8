//! Hearth's side of witnessing: after each append commits (outside the chain's lock), the new
//! checkpoint goes to every witness of `HEARTH_WITNESS_POLICY` with a consistency proof from
//! the size that witness last cosigned of the log; the cosignatures that come back are kept
//! (see [`CosignedStore`]) and added to the checkpoint wherever it is handed out.
//!
//! Hearth waits at most `HEARTH_WITNESS_TIMEOUT_MS` (Alexa+ allows 500 ms for a whole call).
//! A witness that answers later is still heard: its cosignature is stored and attached to
//! later proofs of the same tree. A witness that refuses is an ERROR line on the
//! `hearth::witness` target, which the log formatter turns into the `WitnessRefusals` metric;
//! a witness that is slow or down is a warning.
//!
//! Middle layer: it reads the store and the log's hashes, and speaks HTTP to witnesses.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, unix_ms};
use crate::config::WitnessSubmission;
use crate::store::{ChainKey, ChainStore, Cosigned, CosignedStore, LogHead};
use crate::tlog::checkpoint::Checkpoint;
use crate::tlog::cosignature::split_note;
use crate::tlog::policy::{Policy, PolicyWitness};
use crate::tlog::witness_request::{AddCheckpoint, SIZE_CONTENT_TYPE, parse_size_body};
use crate::transparency::consistency_proof;

/// The log target of witness refusals and timeouts (`telemetry` counts the refusals).
pub const WITNESS_TARGET: &str = "hearth::witness";

/// How long one submission may take before Hearth stops listening for it: long after the
/// caller was answered, so a slow witness's cosignature is still kept.
pub const SUBMISSION_TIMEOUT: Duration = Duration::from_secs(10);

/// A checkpoint an append has just signed, to be witnessed once the chain's lock is released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub note: String,
    /// When the log retires (`None`: kept).
    pub expires_at_ms: Option<i64>,
}

impl Signed {
    /// The checkpoint `head` carries, if it is signed.
    pub fn of(head: &LogHead) -> Option<Self> {
        (!head.checkpoint.is_empty()).then(|| Self {
            note: head.checkpoint.clone(),
            expires_at_ms: head.expires_at_ms,
        })
    }
}

/// The witnesses Hearth submits to.
pub struct Witnesses {
    inner: Arc<Inner>,
}

struct Inner {
    text: String,
    policy: Policy,
    timeout: Duration,
    http: reqwest::Client,
    chains: Arc<dyn ChainStore>,
    cosigned: Arc<dyn CosignedStore>,
    clock: Arc<dyn Clock>,
}

impl Witnesses {
    pub fn new(
        submission: &WitnessSubmission,
        chains: Arc<dyn ChainStore>,
        cosigned: Arc<dyn CosignedStore>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(SUBMISSION_TIMEOUT)
            // A witness answers itself; a redirect is not an answer.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("the witness HTTP client: {error}"))?;
        Ok(Self {
            inner: Arc::new(Inner {
                text: submission.text.clone(),
                policy: submission.policy.clone(),
                timeout: submission.timeout,
                http,
                chains,
                cosigned,
                clock,
            }),
        })
    }

    /// The policy as configured, for `/.well-known/hearth/witness-policy`.
    pub fn policy_text(&self) -> &str {
        &self.inner.text
    }

    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// Submits `key`'s newly signed checkpoint (`note`, a signed note) to every witness, and
    /// returns the cosignature lines that came back within the timeout, in policy order. What
    /// comes later is kept for later proofs. `expires_at_ms` is the log's retirement.
    pub async fn witness(&self, key: &ChainKey, note: &str, expires_at_ms: Option<i64>) -> String {
        let Some(checkpoint) = checkpoint_of(note) else {
            return String::new();
        };
        let now_ms = unix_ms(self.inner.clock.now());
        // What each witness last cosigned of this log, read once for every witness; a store
        // that cannot answer leaves each to start from 0 and be told its size (409).
        let remembered: HashMap<String, Cosigned> = match self
            .inner
            .cosigned
            .cosigned(key, now_ms)
            .await
        {
            Ok(found) => found.into_iter().map(|c| (c.witness.clone(), c)).collect(),
            Err(error) => {
                tracing::warn!(target: WITNESS_TARGET, %error, "what witnesses cosigned could not be read");
                HashMap::new()
            }
        };
        let deadline = tokio::time::Instant::now() + self.inner.timeout;
        let mut submissions = Vec::new();
        for index in 0..self.inner.policy.witnesses.len() {
            let witness = &self.inner.policy.witnesses[index];
            let from = remembered
                .get(witness.verifier.name())
                .filter(|kept| kept.origin == checkpoint.origin && kept.size <= checkpoint.size)
                .map_or(0, |kept| kept.size);
            let inner = self.inner.clone();
            let key = key.clone();
            let note = note.to_owned();
            let checkpoint = checkpoint.clone();
            // Each submission runs on its own task, so one that outlives the wait still
            // stores what it gets.
            submissions.push(tokio::spawn(async move {
                inner
                    .submit(index, &key, &note, &checkpoint, from, expires_at_ms)
                    .await
            }));
        }
        let mut lines = String::new();
        for (index, submission) in submissions.into_iter().enumerate() {
            match tokio::time::timeout_at(deadline, submission).await {
                Ok(Ok(Some(line))) => lines.push_str(&line),
                Ok(_) => {}
                Err(_) => tracing::warn!(
                    target: WITNESS_TARGET,
                    witness = %self.inner.policy.witnesses[index].name,
                    "a witness did not answer within HEARTH_WITNESS_TIMEOUT_MS; its cosignature is kept if it comes"
                ),
            }
        }
        lines
    }

    /// `receipt` (a tlog-proof file, which ends in `signed`'s checkpoint) with the
    /// cosignatures the witnesses return within the timeout.
    pub async fn cosign_receipt(&self, key: &ChainKey, signed: &Signed, receipt: String) -> String {
        let lines = self.witness(key, &signed.note, signed.expires_at_ms).await;
        receipt + &lines
    }

    /// `note` (a signed checkpoint of `key`'s log) with every kept cosignature of exactly that
    /// tree added, each checked against its witness's key first.
    pub async fn attach(&self, key: &ChainKey, note: &str) -> String {
        let Some(checkpoint) = checkpoint_of(note) else {
            return note.to_owned();
        };
        let now_ms = unix_ms(self.inner.clock.now());
        let kept = match self.inner.cosigned.cosigned(key, now_ms).await {
            Ok(kept) => kept,
            Err(error) => {
                tracing::warn!(target: WITNESS_TARGET, %error, "what witnesses cosigned could not be read");
                return note.to_owned();
            }
        };
        let text = checkpoint.text();
        let mut attached = note.to_owned();
        for cosigned in kept
            .iter()
            .filter(|c| c.origin == checkpoint.origin && c.size == checkpoint.size)
        {
            let signs = self.inner.policy.witnesses.iter().any(|witness| {
                witness.verifier.name() == cosigned.witness
                    && witness.verifier.verify_line(&cosigned.line, &text).is_ok()
            });
            if signs && !note.contains(cosigned.line.trim_end()) {
                attached.push_str(&cosigned.line);
            }
        }
        attached
    }
}

impl Inner {
    /// One witness: submit, re-prove once from the size a 409 names, keep the cosignature.
    async fn submit(
        &self,
        index: usize,
        key: &ChainKey,
        note: &str,
        checkpoint: &Checkpoint,
        mut from: u64,
        expires_at_ms: Option<i64>,
    ) -> Option<String> {
        let witness = &self.policy.witnesses[index];
        let url = format!(
            "{}/add-checkpoint",
            witness
                .url
                .as_deref()
                .unwrap_or_default()
                .trim_end_matches('/')
        );
        for attempt in 0..2 {
            let proof = match consistency_proof(self.chains.as_ref(), key, from, checkpoint.size)
                .await
            {
                Ok(proof) => proof,
                Err(error) => {
                    tracing::warn!(target: WITNESS_TARGET, witness = %witness.name, %error, "no consistency proof for a witness");
                    return None;
                }
            };
            let body = AddCheckpoint {
                old: from,
                proof,
                checkpoint: note,
            }
            .text();
            let response = match self.http.post(&url).body(body).send().await {
                Ok(response) => response,
                Err(error) => {
                    let what = if error.is_timeout() {
                        "timed out"
                    } else {
                        "could not be reached"
                    };
                    tracing::warn!(target: WITNESS_TARGET, witness = %witness.name, "a witness {what}");
                    return None;
                }
            };
            let status = response.status().as_u16();
            let sized = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .is_some_and(|value| value.as_bytes().starts_with(SIZE_CONTENT_TYPE.as_bytes()));
            let answer = response.text().await.unwrap_or_default();
            match status {
                200 => {
                    return self
                        .keep(witness, key, checkpoint, &answer, expires_at_ms)
                        .await;
                }
                409 if sized && attempt == 0 => match parse_size_body(&answer) {
                    // The witness holds a tree this checkpoint extends: prove from there.
                    Some(size) if size <= checkpoint.size && size != from => from = size,
                    // A later checkpoint of this log reached the witness first (two appends
                    // submitted at once): nothing to refuse, that one carries its cosignature.
                    Some(size) if size > checkpoint.size && self.log_holds(key, size).await => {
                        tracing::warn!(
                            target: WITNESS_TARGET,
                            witness = %witness.name,
                            "a witness already holds a later checkpoint of this log"
                        );
                        return None;
                    }
                    Some(size) => {
                        refused(
                            witness,
                            status,
                            &format!(
                                "it has cosigned {size} entries of this log, which this checkpoint does not extend"
                            ),
                        );
                        return None;
                    }
                    None => {
                        refused(witness, status, "its 409 did not name a size");
                        return None;
                    }
                },
                _ => {
                    refused(witness, status, first_line(&answer));
                    return None;
                }
            }
        }
        refused(witness, 409, "it named another size again");
        None
    }

    /// Whether `key`'s log now holds at least `size` entries: a witness ahead of a checkpoint is
    /// then ahead by a later append, not by a history this log lost.
    async fn log_holds(&self, key: &ChainKey, size: u64) -> bool {
        let now_ms = unix_ms(self.clock.now());
        self.chains
            .log_head(key, now_ms)
            .await
            .ok()
            .and_then(|read| read.log)
            .is_some_and(|log| log.size >= size)
    }

    /// Checks a 200's signature lines for this witness's cosignature of `checkpoint`, keeps
    /// it, and returns it.
    async fn keep(
        &self,
        witness: &PolicyWitness,
        key: &ChainKey,
        checkpoint: &Checkpoint,
        answer: &str,
        expires_at_ms: Option<i64>,
    ) -> Option<String> {
        let text = checkpoint.text();
        let Some(line) = answer
            .lines()
            .find(|line| witness.verifier.verify_line(line, &text).is_ok())
        else {
            refused(
                witness,
                200,
                "its answer holds no valid cosignature by its key",
            );
            return None;
        };
        let line = format!("{line}\n");
        let cosigned = Cosigned {
            witness: witness.verifier.name().to_owned(),
            origin: checkpoint.origin.clone(),
            size: checkpoint.size,
            line: line.clone(),
            expires_at_ms,
        };
        if let Err(error) = self.cosigned.keep_cosigned(key, &cosigned).await {
            tracing::warn!(target: WITNESS_TARGET, witness = %witness.name, %error, "a cosignature could not be kept");
        }
        Some(line)
    }
}

/// A witness refused: an ERROR line the log formatter counts as `WitnessRefusals`.
fn refused(witness: &PolicyWitness, status: u16, reason: &str) {
    tracing::error!(
        target: WITNESS_TARGET,
        witness = %witness.name,
        status,
        reason = %reason,
        "a witness refused a checkpoint"
    );
}

/// A witness's error text, cut to one short line for the log.
fn first_line(answer: &str) -> &str {
    let line = answer.lines().next().unwrap_or_default();
    &line[..line.floor_char_boundary(200)]
}

/// The checkpoint a signed note carries.
fn checkpoint_of(note: &str) -> Option<Checkpoint> {
    let (text, _) = split_note(note)?;
    Checkpoint::parse(text).ok()
}
