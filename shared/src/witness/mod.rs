//! `hearth witness`: a C2SP `tlog-witness` v1.0.0 witness, run by whoever a household trusts
//! (a home hub, a friend, another household), apart from the Hearth that writes the logs.
//!
//! It cosigns a log's checkpoint only after checking it against the last one it cosigned for
//! that log, and never cosigns two different trees of one log. Its state is a SQLite database
//! in its directory (`HEARTH_WITNESS_DIR`), changed in one immediate transaction per request
//! with a compare-and-swap on the log's row, so two racing checkpoints cannot both be cosigned,
//! by one process or several.
//!
//! Hearth's origins end in an epoch (`<host>/hearth/<log id>/<kind>/<epoch>`), and a log whose
//! origin is new starts from `old 0`. So that a new origin cannot escape the witness's memory,
//! state is kept per *log* (the origin without its epoch): an older epoch is never cosigned,
//! every new log and epoch under a trusted prefix is recorded as an event monitors can read,
//! and a prefix holds at most its `max_logs` logs. What this cannot prevent: a log id never
//! seen before, under the cap, starts fresh; only a device that pinned its household's origin
//! notices that one.

pub mod http;
pub mod key;
pub mod state;

use std::collections::HashSet;

use crate::tlog::checkpoint::Checkpoint;
use crate::tlog::cosignature::Cosigner;
use crate::tlog::note::{self, NoteVerifier};
use crate::tlog::tree::{empty_root, verify_consistency};
use crate::tlog::witness_request::{AddCheckpoint, SIZE_CONTENT_TYPE};

pub use state::{Event, LogState, Trust, WitnessState};

/// How many logs one trusted prefix may hold unless `trust --max-logs` says otherwise.
pub const DEFAULT_MAX_LOGS: u32 = 4096;

/// The largest `add-checkpoint` body the witness reads.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// How many pieces of evidence the witness keeps per log; later ones are counted, not kept.
pub const MAX_EVIDENCE_PER_LOG: u32 = 100;

/// An answer to `add-checkpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }

    fn conflict(size: u64) -> Self {
        Self {
            status: 409,
            content_type: SIZE_CONTENT_TYPE,
            body: format!("{size}\n"),
        }
    }
}

/// A log's identity for the witness, and its epoch: Hearth's origins end in `/<epoch>`; any
/// other origin is its own log, in epoch 0.
pub fn log_of(origin: &str) -> (&str, u64) {
    if let Some((log, epoch)) = origin.rsplit_once('/')
        && !log.is_empty()
        && !epoch.is_empty()
        && epoch.len() <= 19
        && (epoch == "0" || !epoch.starts_with('0'))
        && epoch.bytes().all(|byte| byte.is_ascii_digit())
        && let Ok(epoch) = epoch.parse()
    {
        return (log, epoch);
    }
    (origin, 0)
}

/// The witness: its key and its state.
pub struct Witness {
    cosigner: Cosigner,
    state: WitnessState,
}

impl Witness {
    pub fn new(cosigner: Cosigner, state: WitnessState) -> Self {
        Self { cosigner, state }
    }

    pub fn cosigner(&self) -> &Cosigner {
        &self.cosigner
    }

    pub fn state(&self) -> &WitnessState {
        &self.state
    }

    /// `POST <prefix>/add-checkpoint`, checked in the order tlog-witness gives: 400 for a
    /// malformed body, 404 for an origin under no trusted prefix, 403 without a trusted
    /// signature, 400 for an old size past the checkpoint's, 409 for an old size that is not
    /// the last one cosigned, 422 for a tree that does not extend it; else 200 and the
    /// cosignature. A refusal of a validly signed checkpoint is kept as evidence.
    pub fn add_checkpoint(&self, body: &str, now_seconds: u64) -> Reply {
        let Ok(request) = AddCheckpoint::parse(body) else {
            return Reply::text(400, "malformed add-checkpoint body\n");
        };
        let Some((text, _)) = split_signed(request.checkpoint) else {
            return Reply::text(400, "malformed checkpoint note\n");
        };
        let Ok(checkpoint) = Checkpoint::parse_with_extensions(text) else {
            return Reply::text(400, "malformed checkpoint\n");
        };
        let trusted = match self.state.trusted_for(&checkpoint.origin) {
            Ok(trusted) => trusted,
            Err(error) => return Reply::text(500, format!("{error}\n")),
        };
        if trusted.is_empty() {
            return Reply::text(404, "unknown log origin\n");
        }
        let verifiers: Vec<NoteVerifier> = trusted
            .iter()
            .filter_map(|trust| NoteVerifier::parse(&trust.vkey).ok())
            .collect();
        let Ok((_, log_lines)) = note::verify_lines(request.checkpoint, &verifiers) else {
            return Reply::text(403, "no valid signature by a key trusted for this origin\n");
        };
        if request.old > checkpoint.size {
            return Reply::text(400, "the old size is larger than the checkpoint's\n");
        }
        // The trust that admits it: the longest prefix whose key signed.
        let signed_names: HashSet<&str> = log_lines
            .iter()
            .filter_map(|line| line.strip_prefix("\u{2014} ")?.split(' ').next())
            .collect();
        let Some(trust) = trusted
            .iter()
            .filter(|trust| {
                NoteVerifier::parse(&trust.vkey)
                    .is_ok_and(|verifier| signed_names.contains(verifier.name()))
            })
            .max_by_key(|trust| trust.origin_prefix.len())
        else {
            return Reply::text(403, "no valid signature by a key trusted for this origin\n");
        };
        let (log, epoch) = log_of(&checkpoint.origin);
        let mut kept_note = format!("{text}\n");
        for line in &log_lines {
            kept_note.push_str(line);
            kept_note.push('\n');
        }
        let submission = Submission {
            log,
            epoch,
            checkpoint: &checkpoint,
            old: request.old,
            proof: &request.proof,
            trust,
        };
        let cosignature = self.cosigner.cosign(text, now_seconds);
        match self
            .state
            .advance(&submission, &kept_note, &cosignature, now_seconds)
        {
            Ok(Advance::Cosigned) => Reply {
                status: 200,
                content_type: "text/plain; charset=utf-8",
                body: cosignature,
            },
            Ok(Advance::Refused(refusal)) => {
                if let Some(reason) = refusal.evidence() {
                    // Evidence is best effort: the refusal stands either way.
                    let _ = self.state.keep_evidence(log, reason, body, now_seconds);
                }
                refusal.reply()
            }
            Err(error) => Reply::text(500, format!("{error}\n")),
        }
    }
}

/// A validly signed checkpoint on its way into the state.
pub struct Submission<'a> {
    pub log: &'a str,
    pub epoch: u64,
    pub checkpoint: &'a Checkpoint,
    pub old: u64,
    pub proof: &'a [[u8; 32]],
    pub trust: &'a Trust,
}

/// What the state did with a submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advance {
    Cosigned,
    Refused(Refusal),
}

/// Why a validly signed checkpoint was not cosigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `old` is not the size last cosigned for this origin (409 with that size); `fork` when
    /// the checkpoint has that very size and another root.
    Stale { size: u64, fork: bool },
    /// Not consistent with what was cosigned (422).
    Inconsistent(&'static str),
    /// An epoch older than the one last cosigned (422).
    OlderEpoch { latest: u64 },
    /// The trusted prefix holds as many logs as it may (403).
    PrefixFull { max_logs: u32 },
}

impl Refusal {
    fn reply(&self) -> Reply {
        match self {
            Refusal::Stale { size, .. } => Reply::conflict(*size),
            Refusal::Inconsistent(reason) => Reply::text(422, format!("{reason}\n")),
            Refusal::OlderEpoch { latest } => Reply::text(
                422,
                format!("this log is at epoch {latest}; an older epoch is never cosigned\n"),
            ),
            Refusal::PrefixFull { max_logs } => Reply::text(
                403,
                format!(
                    "this origin prefix already holds {max_logs} logs, the most this witness keeps for it\n"
                ),
            ),
        }
    }

    /// What the witness keeps the request as, if it is evidence of misbehaviour.
    fn evidence(&self) -> Option<&'static str> {
        match self {
            Refusal::Stale { fork: true, .. } => Some("fork"),
            Refusal::Stale { fork: false, .. } | Refusal::PrefixFull { .. } => None,
            Refusal::Inconsistent(_) => Some("inconsistent"),
            Refusal::OlderEpoch { .. } => Some("older_epoch"),
        }
    }
}

/// Decides a submission against the log's state as read (`None`: never seen).
pub fn decide(current: Option<&LogState>, submission: &Submission<'_>) -> Result<(), Refusal> {
    let checkpoint = submission.checkpoint;
    let (latest_size, latest_root) = match current {
        Some(state) if state.epoch > submission.epoch => {
            return Err(Refusal::OlderEpoch {
                latest: state.epoch,
            });
        }
        Some(state) if state.epoch == submission.epoch => (state.size, state.root),
        // A new log, or a new epoch of a known one: nothing cosigned for this origin yet.
        _ => (0, empty_root()),
    };
    if submission.old != latest_size {
        return Err(Refusal::Stale {
            size: latest_size,
            fork: checkpoint.size == latest_size && checkpoint.root != latest_root,
        });
    }
    if checkpoint.size == 0 && checkpoint.root != empty_root() {
        return Err(Refusal::Inconsistent(
            "a checkpoint of size 0 has the empty tree's root",
        ));
    }
    if submission.old == 0 && !submission.proof.is_empty() {
        return Err(Refusal::Inconsistent(
            "a proof from size 0 is empty: the empty tree is a prefix of every tree",
        ));
    }
    if submission.old == checkpoint.size && checkpoint.root != latest_root {
        return Err(Refusal::Inconsistent(
            "the same size as last cosigned with another root: a fork",
        ));
    }
    if submission.old > 0
        && !verify_consistency(
            submission.old,
            &latest_root,
            checkpoint.size,
            &checkpoint.root,
            submission.proof,
        )
    {
        return Err(Refusal::Inconsistent(
            "the consistency proof does not verify from the last cosigned tree",
        ));
    }
    Ok(())
}

/// The note's text and signature block, split where signed-note splits it.
fn split_signed(note: &str) -> Option<(&str, &str)> {
    let split = note.rfind("\n\n")?;
    Some((&note[..split + 1], &note[split + 2..]))
}
