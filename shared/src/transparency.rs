//! Each chain's transparency log, from the toolsets' side: the deployment's log keys, the
//! origin that names a log in its checkpoints, and what an append adds to its chain's log
//! (the stored hashes, the newly signed checkpoint, and the receipt handed out).
//!
//! An append reads the log head with its window, grows the frontier by the new record's hash
//! in memory, signs the new checkpoint and writes it all in the append's one conditional
//! step: no extra read or write. The checkpoint is signed before the write, but it is handed
//! out only once the write has succeeded, so a signature whose write lost a race is never
//! released. Before signing, the head as read is checked against its own signed checkpoint:
//! a head edited in the database is refused, never extended and signed over.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::random::os_bytes;
use crate::store::{LogAppend, LogHead};
use crate::tlog::checkpoint::{Checkpoint, proof_text};
use crate::tlog::note::{self, NoteSigner, NoteVerifier};
use crate::tlog::tree::{Frontier, Hash, leaf_hash};

/// A household's two logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    Decisions,
    Ledger,
}

impl LogKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LogKind::Decisions => "decisions",
            LogKind::Ledger => "ledger",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "decisions" => Some(LogKind::Decisions),
            "ledger" => Some(LogKind::Ledger),
            _ => None,
        }
    }
}

/// One published verifier key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PublishedKey {
    /// The signed-note verifier key, `<name>+<hex key id>+<base64(0x01 || public key)>`.
    pub vkey: String,
    pub name: String,
    /// The Ed25519 public key, base64.
    pub public_key: String,
}

/// The deployment's log signing keys: the first is current, any others are older ones still
/// signing during a rotation's overlap. Their names are deployment-wide
/// (`<host>/hearth-log/v<version>`), unlike the origins, which name each household's log.
pub struct LogKeys {
    host: String,
    signers: Vec<NoteSigner>,
    verifiers: Vec<NoteVerifier>,
}

impl LogKeys {
    /// Keys for `host` (the host of `MCP_RESOURCE_URL`) from `(version, seed)` pairs, current
    /// first.
    pub fn new(host: &str, keys: &[(u32, [u8; 32])]) -> Result<Self, String> {
        if keys.is_empty() {
            return Err("no log signing key".into());
        }
        let signers = keys
            .iter()
            .map(|(version, seed)| NoteSigner::from_seed(&key_name(host, *version), seed))
            .collect::<Result<Vec<_>, _>>()?;
        let verifiers = signers
            .iter()
            .map(|signer| NoteVerifier::parse(&signer.vkey()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            host: host.to_owned(),
            signers,
            verifiers,
        })
    }

    /// Every key a verifier should know, current first.
    pub fn published(&self) -> Vec<PublishedKey> {
        self.signers
            .iter()
            .map(|signer| PublishedKey {
                vkey: signer.vkey(),
                name: signer.name().to_owned(),
                public_key: STANDARD.encode(signer.public_key()),
            })
            .collect()
    }

    pub fn verifiers(&self) -> &[NoteVerifier] {
        &self.verifiers
    }

    /// The origin line of a log: `<host>/hearth/<log id>/<kind>/<epoch>`.
    pub fn origin(&self, log_id: &str, kind: LogKind, epoch: u64) -> String {
        format!("{}/hearth/{log_id}/{}/{epoch}", self.host, kind.as_str())
    }

    fn sign(&self, checkpoint: &Checkpoint) -> String {
        let signers: Vec<&NoteSigner> = self.signers.iter().collect();
        note::sign(&checkpoint.text(), &signers)
    }
}

/// The name of log key `version` of `host`.
pub fn key_name(host: &str, version: u32) -> String {
    format!("{host}/hearth-log/v{version}")
}

/// Why a log could not be grown. The text is safe to return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    #[error("the stored log does not match its signed checkpoint: {0}")]
    Tampered(&'static str),
    #[error("the OS random source failed")]
    Random,
}

/// What one append adds to its chain's log.
#[derive(Debug, Clone)]
pub struct Growth {
    /// For the store, in the append's conditional step.
    pub append: LogAppend,
    /// The new entry's `c2sp.org/tlog-proof@v1` text, to hand out once the append is stored;
    /// `None` without a signing key.
    pub receipt: Option<String>,
    /// The new entry's 0-based position in the log.
    pub index: u64,
}

/// Grows `log` (as read with the window; `None` for a chain without one) by the record whose
/// hash is `record_hash` (hex).
pub fn grow(
    keys: Option<&LogKeys>,
    kind: LogKind,
    log: Option<&LogHead>,
    record_hash: &str,
) -> Result<Growth, LogError> {
    let (log_id, epoch, frontier) = match log {
        Some(log) => (
            log.log_id.clone(),
            log.epoch,
            checked_frontier(keys, kind, log)?,
        ),
        None => (
            hex::encode(os_bytes::<16>().map_err(|_| LogError::Random)?),
            1,
            Frontier::new(),
        ),
    };
    let mut frontier = frontier;
    let path = frontier.next_inclusion_proof();
    let index = frontier.size();
    let stored = frontier.append(leaf_hash(&record_leaf(record_hash)));
    let (checkpoint, receipt) = match keys {
        Some(keys) => {
            let signed = keys.sign(&Checkpoint {
                origin: keys.origin(&log_id, kind, epoch),
                size: frontier.size(),
                root: frontier.root(),
            });
            let receipt = proof_text(index, &path, &signed);
            (signed, Some(receipt))
        }
        None => (String::new(), None),
    };
    Ok(Growth {
        append: LogAppend {
            expected: log.cloned(),
            head: LogHead {
                log_id,
                epoch,
                size: frontier.size(),
                frontier: frontier.hashes().to_vec(),
                checkpoint,
            },
            hashes: stored.into_iter().map(|(_, hash)| hash).collect(),
        },
        receipt,
        index,
    })
}

/// A log's leaf data: the 32 raw bytes of the entry's record hash. A record hash that is not
/// 64 hex digits (no record of Hearth's) is hashed as its text instead, still one leaf.
pub fn record_leaf(record_hash: &str) -> Vec<u8> {
    let mut bytes = [0u8; 32];
    match hex::decode_to_slice(record_hash, &mut bytes) {
        Ok(()) => bytes.to_vec(),
        Err(_) => record_hash.as_bytes().to_vec(),
    }
}

/// The frontier of `log`, checked against the log's own signed checkpoint.
fn checked_frontier(
    keys: Option<&LogKeys>,
    kind: LogKind,
    log: &LogHead,
) -> Result<Frontier, LogError> {
    let frontier = Frontier::from_parts(log.size, log.frontier.clone())
        .map_err(|_| LogError::Tampered("its frontier does not fit its size"))?;
    let Some(keys) = keys else {
        return Ok(frontier);
    };
    if log.checkpoint.is_empty() {
        // A log grown while no key was configured, or a removed log's placeholder.
        return Ok(frontier);
    }
    let text = note::verify(&log.checkpoint, keys.verifiers())
        .map_err(|_| LogError::Tampered("its checkpoint's signature does not verify"))?;
    let checkpoint =
        Checkpoint::parse(text).map_err(|_| LogError::Tampered("its checkpoint is malformed"))?;
    if checkpoint.origin != keys.origin(&log.log_id, kind, log.epoch) {
        return Err(LogError::Tampered("its checkpoint names another log"));
    }
    if checkpoint.size != log.size || checkpoint.root != frontier.root() {
        return Err(LogError::Tampered(
            "its size or frontier differ from the signed tree",
        ));
    }
    Ok(frontier)
}

/// The root the log head's frontier commits to.
pub fn root_of(log: &LogHead) -> Option<Hash> {
    Frontier::from_parts(log.size, log.frontier.clone())
        .ok()
        .map(|frontier| frontier.root())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::checkpoint::parse_proof;
    use crate::tlog::tree::root_from_inclusion;

    fn keys() -> LogKeys {
        LogKeys::new("hearth.example", &[(1, [3; 32])]).unwrap()
    }

    fn record_hash(n: u8) -> String {
        hex::encode([n; 32])
    }

    #[test]
    fn each_receipt_proves_its_entry_in_the_signed_tree() {
        let keys = keys();
        let mut log: Option<LogHead> = None;
        for n in 0..9u8 {
            let growth = grow(
                Some(&keys),
                LogKind::Decisions,
                log.as_ref(),
                &record_hash(n),
            )
            .unwrap();
            assert_eq!(growth.index, u64::from(n));
            let receipt = growth.receipt.unwrap();
            let proof = parse_proof(&receipt).unwrap();
            let text = note::verify(proof.checkpoint, keys.verifiers()).unwrap();
            let checkpoint = Checkpoint::parse(text).unwrap();
            assert!(checkpoint.origin.starts_with("hearth.example/hearth/"));
            assert!(checkpoint.origin.ends_with("/decisions/1"));
            let leaf = leaf_hash(&[n; 32]);
            assert_eq!(
                root_from_inclusion(proof.index, checkpoint.size, &leaf, &proof.path),
                Some(checkpoint.root)
            );
            log = Some(growth.append.head);
        }
    }

    #[test]
    fn a_head_edited_in_the_store_is_refused_not_signed_over() {
        let keys = keys();
        let first = grow(Some(&keys), LogKind::Ledger, None, &record_hash(1)).unwrap();
        let second = grow(
            Some(&keys),
            LogKind::Ledger,
            Some(&first.append.head),
            &record_hash(2),
        )
        .unwrap();
        let head = second.append.head;
        let mut edited = head.clone();
        edited.frontier[0][0] ^= 1;
        let mut truncated = head.clone();
        truncated.size = 1;
        truncated.frontier = first.append.head.frontier.clone();
        let mut moved = head.clone();
        moved.log_id = "another".into();
        for (case, bad) in [("frontier", edited), ("size", truncated), ("log id", moved)] {
            assert!(
                matches!(
                    grow(Some(&keys), LogKind::Ledger, Some(&bad), &record_hash(3)),
                    Err(LogError::Tampered(_))
                ),
                "{case}"
            );
        }
        assert!(
            matches!(
                grow(
                    Some(&keys),
                    LogKind::Decisions,
                    Some(&head),
                    &record_hash(3)
                ),
                Err(LogError::Tampered(_))
            ),
            "a ledger's head is not a decision log's"
        );
        assert!(grow(Some(&keys), LogKind::Ledger, Some(&head), &record_hash(3)).is_ok());
    }
}
