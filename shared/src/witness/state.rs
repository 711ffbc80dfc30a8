//! The witness's state: a SQLite database in its directory. The keys it trusts (and for which
//! origin prefixes), the latest cosigned tree of each log, every new log and epoch as an
//! event, evidence of refused checkpoints, and the latest cosigned checkpoint of each origin
//! for monitors. Every request runs in one immediate transaction, and the log's row is
//! written on condition that it is still as read, so racing checkpoints of one log are
//! decided one after the other, even across processes sharing the directory.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use sha2::{Digest, Sha256};

use super::{Advance, MAX_EVIDENCE_PER_LOG, Submission, decide};
use crate::tlog::tree::Hash;

/// A key the witness trusts, for origins under a prefix.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Trust {
    pub vkey: String,
    pub origin_prefix: String,
    pub max_logs: u32,
}

/// The latest tree cosigned for one log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogState {
    pub epoch: u64,
    pub size: u64,
    pub root: Hash,
}

/// A new log or a new epoch of one, as monitors read them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Event {
    pub id: i64,
    /// Unix seconds.
    pub at: i64,
    pub origin_prefix: String,
    pub origin: String,
    /// `new_log` or `new_epoch`.
    pub kind: String,
}

/// One log as `hearth witness list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LogSummary {
    pub origin: String,
    pub origin_prefix: String,
    pub epoch: u64,
    pub size: u64,
    pub evidence: u32,
}

/// Why the state could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the witness state: {0}")]
pub struct StateError(String);

impl From<rusqlite::Error> for StateError {
    fn from(error: rusqlite::Error) -> Self {
        StateError(error.to_string())
    }
}

pub struct WitnessState {
    connection: Mutex<Connection>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS trusted (
    vkey TEXT NOT NULL,
    origin_prefix TEXT NOT NULL,
    max_logs INTEGER NOT NULL,
    PRIMARY KEY (vkey, origin_prefix)
);
CREATE TABLE IF NOT EXISTS logs (
    log TEXT PRIMARY KEY,
    origin_prefix TEXT NOT NULL,
    origin TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    size INTEGER NOT NULL,
    root BLOB NOT NULL,
    evidence INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS logs_by_prefix ON logs (origin_prefix);
CREATE TABLE IF NOT EXISTS checkpoints (
    origin_hash TEXT PRIMARY KEY,
    note TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    origin_prefix TEXT NOT NULL,
    origin TEXT NOT NULL,
    kind TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS evidence (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    log TEXT NOT NULL,
    reason TEXT NOT NULL,
    body TEXT NOT NULL
);
";

impl WitnessState {
    /// Opens (or creates) the state at `path`.
    pub fn open(path: &Path) -> Result<Self, StateError> {
        let connection = Connection::open(path)?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.execute_batch(SCHEMA)?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no half-written state: SQLite rolls the
        // transaction back. The connection itself is still sound.
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Trusts `vkey` for origins under `origin_prefix` (again: updates its cap).
    pub fn trust(&self, trust: &Trust) -> Result<(), StateError> {
        self.connection().execute(
            "INSERT INTO trusted (vkey, origin_prefix, max_logs) VALUES (?1, ?2, ?3)
             ON CONFLICT (vkey, origin_prefix) DO UPDATE SET max_logs = excluded.max_logs",
            params![trust.vkey, trust.origin_prefix, trust.max_logs],
        )?;
        Ok(())
    }

    /// Every trust, oldest first.
    pub fn trusted(&self) -> Result<Vec<Trust>, StateError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT vkey, origin_prefix, max_logs FROM trusted ORDER BY rowid")?;
        let rows = statement.query_map([], |row| {
            Ok(Trust {
                vkey: row.get(0)?,
                origin_prefix: row.get(1)?,
                max_logs: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The trusts whose prefix `origin` starts with. Read on every request, so `trust`
    /// applies to a running witness at once.
    pub fn trusted_for(&self, origin: &str) -> Result<Vec<Trust>, StateError> {
        Ok(self
            .trusted()?
            .into_iter()
            .filter(|trust| origin.starts_with(&trust.origin_prefix))
            .collect())
    }

    /// Decides `submission` and, when it is cosigned, records it: the log's new tree (on
    /// condition that its row is as read), the event of a new log or epoch, and the note
    /// monitors fetch (`kept_note` with `cosignature`).
    pub fn advance(
        &self,
        submission: &Submission<'_>,
        kept_note: &str,
        cosignature: &str,
        now_seconds: u64,
    ) -> Result<Advance, StateError> {
        let mut connection = self.connection();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current = transaction
            .query_row(
                "SELECT epoch, size, root FROM logs WHERE log = ?1",
                [submission.log],
                |row| {
                    let root: Vec<u8> = row.get(2)?;
                    Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, root))
                },
            )
            .optional()?
            .map(|(epoch, size, root)| LogState {
                epoch: epoch as u64,
                size: size as u64,
                root: root.try_into().unwrap_or([0; 32]),
            });
        if let Err(refusal) = decide(current.as_ref(), submission) {
            return Ok(Advance::Refused(refusal));
        }
        let checkpoint = submission.checkpoint;
        let new_kind = match &current {
            None => Some("new_log"),
            Some(state) if state.epoch < submission.epoch => Some("new_epoch"),
            Some(_) => None,
        };
        let at = now_seconds as i64;
        match &current {
            None => {
                let held: u32 = transaction.query_row(
                    "SELECT COUNT(*) FROM logs WHERE origin_prefix = ?1",
                    [&submission.trust.origin_prefix],
                    |row| row.get(0),
                )?;
                if held >= submission.trust.max_logs {
                    return Ok(Advance::Refused(super::Refusal::PrefixFull {
                        max_logs: submission.trust.max_logs,
                    }));
                }
                transaction.execute(
                    "INSERT INTO logs (log, origin_prefix, origin, epoch, size, root)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        submission.log,
                        submission.trust.origin_prefix,
                        checkpoint.origin,
                        submission.epoch as i64,
                        checkpoint.size as i64,
                        checkpoint.root.to_vec()
                    ],
                )?;
            }
            Some(state) => {
                let changed = transaction.execute(
                    "UPDATE logs SET origin = ?2, epoch = ?3, size = ?4, root = ?5
                     WHERE log = ?1 AND epoch = ?6 AND size = ?7 AND root = ?8",
                    params![
                        submission.log,
                        checkpoint.origin,
                        submission.epoch as i64,
                        checkpoint.size as i64,
                        checkpoint.root.to_vec(),
                        state.epoch as i64,
                        state.size as i64,
                        state.root.to_vec()
                    ],
                )?;
                if changed != 1 {
                    // Unreachable inside the immediate transaction; refusing keeps the promise
                    // never to cosign a tree that was not checked against the stored one.
                    return Err(StateError("the log changed while it was checked".into()));
                }
            }
        }
        if let Some(kind) = new_kind {
            transaction.execute(
                "INSERT INTO events (at, origin_prefix, origin, kind) VALUES (?1, ?2, ?3, ?4)",
                params![at, submission.trust.origin_prefix, checkpoint.origin, kind],
            )?;
        }
        transaction.execute(
            "INSERT INTO checkpoints (origin_hash, note) VALUES (?1, ?2)
             ON CONFLICT (origin_hash) DO UPDATE SET note = excluded.note",
            params![
                origin_hash(&checkpoint.origin),
                format!("{kept_note}{cosignature}")
            ],
        )?;
        transaction.commit()?;
        Ok(Advance::Cosigned)
    }

    /// Keeps a refused request as evidence (at most [`MAX_EVIDENCE_PER_LOG`] per log; later
    /// ones are counted).
    pub fn keep_evidence(
        &self,
        log: &str,
        reason: &str,
        body: &str,
        now_seconds: u64,
    ) -> Result<(), StateError> {
        let mut connection = self.connection();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let kept: u32 = transaction.query_row(
            "SELECT COUNT(*) FROM evidence WHERE log = ?1",
            [log],
            |row| row.get(0),
        )?;
        if kept < MAX_EVIDENCE_PER_LOG {
            transaction.execute(
                "INSERT INTO evidence (at, log, reason, body) VALUES (?1, ?2, ?3, ?4)",
                params![now_seconds as i64, log, reason, body],
            )?;
        }
        transaction.execute(
            "UPDATE logs SET evidence = evidence + 1 WHERE log = ?1",
            [log],
        )?;
        transaction.commit()?;
        Ok(())
    }

    /// The evidence kept for `log`: (reason, request body), oldest first.
    pub fn evidence(&self, log: &str) -> Result<Vec<(String, String)>, StateError> {
        let connection = self.connection();
        let mut statement =
            connection.prepare("SELECT reason, body FROM evidence WHERE log = ?1 ORDER BY id")?;
        let rows = statement.query_map([log], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The latest cosigned checkpoint of the origin whose SHA-256 is `hash` (lowercase hex).
    pub fn checkpoint(&self, hash: &str) -> Result<Option<String>, StateError> {
        Ok(self
            .connection()
            .query_row(
                "SELECT note FROM checkpoints WHERE origin_hash = ?1",
                [hash],
                |row| row.get(0),
            )
            .optional()?)
    }

    /// Events after `after` (an event id), oldest first, at most `limit`.
    pub fn events(&self, after: i64, limit: u32) -> Result<Vec<Event>, StateError> {
        let connection = self.connection();
        let mut statement = connection.prepare(
            "SELECT id, at, origin_prefix, origin, kind FROM events WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let rows = statement.query_map(params![after, limit], |row| {
            Ok(Event {
                id: row.get(0)?,
                at: row.get(1)?,
                origin_prefix: row.get(2)?,
                origin: row.get(3)?,
                kind: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every log, by origin.
    pub fn logs(&self) -> Result<Vec<LogSummary>, StateError> {
        let connection = self.connection();
        let mut statement = connection.prepare(
            "SELECT origin, origin_prefix, epoch, size, evidence FROM logs ORDER BY origin",
        )?;
        let rows = statement.query_map([], |row| {
            Ok(LogSummary {
                origin: row.get(0)?,
                origin_prefix: row.get(1)?,
                epoch: row.get::<_, i64>(2)? as u64,
                size: row.get::<_, i64>(3)? as u64,
                evidence: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// The lowercase hex SHA-256 of an origin: how monitors name it.
pub fn origin_hash(origin: &str) -> String {
    hex::encode(Sha256::digest(origin.as_bytes()))
}
