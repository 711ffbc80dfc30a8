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

use std::collections::HashMap;

use crate::random::os_bytes;
use crate::store::{ChainKey, ChainStore, LogAppend, LogHead, StoreError};
use crate::tlog::checkpoint::{Checkpoint, parse_proof, proof_text};
use crate::tlog::note::{self, NoteSigner, NoteVerifier};
use crate::tlog::tree::{
    Frontier, Hash, Plan, leaf_hash, leaf_storing, root_from_inclusion, stored_hash_index,
};

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
    // A log that holds entries but no signature (it grew while no key was configured, or its
    // checkpoint was blanked in the database) is never signed over: with a key, the chain
    // starts a new log under a new id instead, so no signed origin can fork.
    let unsigned =
        keys.is_some() && log.is_some_and(|log| log.size > 0 && log.checkpoint.is_empty());
    let (log_id, epoch, frontier) = match log {
        Some(log) if !unsigned => (
            log.log_id.clone(),
            log.epoch,
            checked_frontier(keys, kind, log)?,
        ),
        _ => (
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
        // A removed log's placeholder (size 0); [`grow`] never gets here with entries.
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

/// The retained entries the log holds (`record_hashes` are oldest first, the newest being the
/// log's last leaf) and the index of the first: entries recorded before the chain had a log
/// (an older release) are left out.
fn in_log<'a, 'b>(log: &LogHead, record_hashes: &'a [&'b str]) -> (u64, &'a [&'b str]) {
    let held = record_hashes.len().min(log.size as usize);
    (
        log.size - held as u64,
        &record_hashes[record_hashes.len() - held..],
    )
}

/// One retained entry's inclusion proof, as `get_trace` hands it out and `verify_log.py window`
/// reads it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct InclusionProof {
    /// The entry's 0-based position in the log.
    pub index: u64,
    /// The entry's record hash (a decision's `trace_id`, a ledger entry's `entry_hash`).
    pub entry: String,
    /// The RFC 6962 audit path, the leaf's sibling first, base64.
    pub path: Vec<String>,
}

/// What a reader of a log gets: its signed checkpoint and the proofs asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowProofs {
    pub checkpoint: String,
    pub proofs: Vec<InclusionProof>,
}

/// Why a log could not be read or proved. The text is safe to return.
#[derive(Debug, thiserror::Error)]
pub enum ProofError {
    #[error("this household has no signed log yet")]
    NoLog,
    #[error("{0}")]
    Invalid(String),
    #[error("the log does not match its signed checkpoint: {0}")]
    Tampered(String),
    #[error("storage unavailable: {0}")]
    Store(#[from] StoreError),
}

/// Reads the stored hashes at `indexes` (each append's leaf hash and completed nodes) in one
/// batch.
async fn stored_hashes(
    store: &dyn ChainStore,
    key: &ChainKey,
    indexes: &[u64],
) -> Result<HashMap<u64, Hash>, StoreError> {
    let mut leaves: Vec<u64> = indexes.iter().map(|index| leaf_storing(*index).0).collect();
    leaves.sort_unstable();
    leaves.dedup();
    let items = store.log_hashes(key, &leaves).await?;
    let mut hashes = HashMap::with_capacity(indexes.len());
    for index in indexes {
        let (leaf, offset) = leaf_storing(*index);
        if let Some(hash) = items.get(&leaf).and_then(|stored| stored.get(offset)) {
            hashes.insert(*index, *hash);
        }
    }
    Ok(hashes)
}

/// The log head with its checkpoint verified against the keys, the head itself, and the tree
/// it signs.
fn signed_head(
    keys: &LogKeys,
    kind: LogKind,
    log: Option<LogHead>,
) -> Result<(LogHead, Checkpoint), ProofError> {
    let log = log
        .filter(|log| !log.checkpoint.is_empty())
        .ok_or(ProofError::NoLog)?;
    checked_frontier(Some(keys), kind, &log)
        .map_err(|error| ProofError::Tampered(error.to_string()))?;
    let text = note::verify(&log.checkpoint, keys.verifiers())
        .map_err(|error| ProofError::Tampered(error.to_string()))?;
    let checkpoint =
        Checkpoint::parse(text).map_err(|error| ProofError::Tampered(error.to_string()))?;
    Ok((log, checkpoint))
}

/// Inclusion proofs of the retained entries (`record_hashes`, oldest first, the newest being
/// the log's last leaf) against the log's signed checkpoint, each checked before it is handed
/// out: an entry that is not where the signed tree says is tampering, named. Entries recorded
/// before the chain had a log (an older release) have no proof and are left out.
///
/// `log` is the chain's log head as read with the window (`ChainStore::load_for_append`), so
/// the proofs cost one more read: the batch of stored hashes.
pub async fn window_proofs(
    store: &dyn ChainStore,
    keys: &LogKeys,
    kind: LogKind,
    key: &ChainKey,
    log: Option<LogHead>,
    record_hashes: &[&str],
) -> Result<WindowProofs, ProofError> {
    let (log, checkpoint) = signed_head(keys, kind, log)?;
    let (first, entries) = in_log(&log, record_hashes);
    let plans: Vec<Plan> = (first..log.size)
        .map(|index| Plan::inclusion(index, log.size))
        .collect();
    let mut needed: Vec<u64> = plans
        .iter()
        .flat_map(|plan| plan.needed().to_vec())
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let hashes = stored_hashes(store, key, &needed).await?;
    let mut proofs = Vec::with_capacity(entries.len());
    for ((plan, index), entry) in plans.iter().zip(first..).zip(entries) {
        let path = plan
            .build(&hashes)
            .map_err(|missing| ProofError::Tampered(missing.to_string()))?;
        let leaf = leaf_hash(&record_leaf(entry));
        if root_from_inclusion(index, log.size, &leaf, &path) != Some(checkpoint.root) {
            return Err(ProofError::Tampered(format!(
                "entry {} is not leaf {index} of the signed tree",
                &entry[..entry.len().min(16)]
            )));
        }
        proofs.push(InclusionProof {
            index,
            entry: (*entry).to_owned(),
            path: path.iter().map(|hash| STANDARD.encode(hash)).collect(),
        });
    }
    Ok(WindowProofs {
        checkpoint: log.checkpoint,
        proofs,
    })
}

/// Checks that the retained entries (`record_hashes`, oldest first) are exactly the log's last
/// leaves under its signed checkpoint, in one batch read whatever the window's length: the
/// frontier of the tree before the window is read, the window's leaves are appended to it in
/// memory, and the root must be the signed one.
pub async fn check_window(
    store: &dyn ChainStore,
    keys: &LogKeys,
    kind: LogKind,
    key: &ChainKey,
    log: Option<LogHead>,
    record_hashes: &[&str],
) -> Result<(), ProofError> {
    let (log, checkpoint) = signed_head(keys, kind, log)?;
    let (first, entries) = in_log(&log, record_hashes);
    let plan = Plan::frontier(first);
    let hashes = stored_hashes(store, key, plan.needed()).await?;
    let before = plan
        .build(&hashes)
        .map_err(|missing| ProofError::Tampered(missing.to_string()))?;
    let mut frontier = Frontier::from_parts(first, before)
        .map_err(|error| ProofError::Tampered(error.to_string()))?;
    for entry in entries {
        frontier.append(leaf_hash(&record_leaf(entry)));
    }
    if frontier.root() != checkpoint.root {
        let held = entries.len();
        return Err(ProofError::Tampered(format!(
            "the retained {held} entries are not the signed log's last {held} leaves"
        )));
    }
    Ok(())
}

/// The current signed checkpoint and the RFC 6962 consistency proof from the tree of
/// `from_size` (which the caller kept) to it.
pub async fn history(
    store: &dyn ChainStore,
    keys: &LogKeys,
    kind: LogKind,
    key: &ChainKey,
    from_size: u64,
) -> Result<(String, Vec<String>), ProofError> {
    let (log, _) = signed_head(keys, kind, store.log_head(key).await?)?;
    if from_size > log.size {
        return Err(ProofError::Invalid(format!(
            "`from_size` is {from_size}, but the log holds {} entries: a kept checkpoint larger than the log means the log was truncated or forked.",
            log.size
        )));
    }
    let plan = Plan::consistency(from_size, log.size);
    let hashes = stored_hashes(store, key, plan.needed()).await?;
    let proof = plan
        .build(&hashes)
        .map_err(|missing| ProofError::Tampered(missing.to_string()))?;
    Ok((
        log.checkpoint,
        proof.iter().map(|hash| STANDARD.encode(hash)).collect(),
    ))
}

/// What checking a kept tlog-proof against the current log found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProofCheck {
    /// The proof's checkpoint is signed, the entry is in it, and today's tree still holds
    /// that tree unchanged.
    Holds { index: u64, size: u64 },
    /// It is not a proof this server signed (malformed, or another key's).
    NotOurs(String),
    /// It is a proof of another log: another household's, or another epoch's.
    OtherLog,
    /// The log now holds fewer entries than the proof's tree: entries were removed.
    Truncated(String),
    /// The entry, or the history before the proof's tree, differs from what was signed.
    Rewritten(String),
}

/// Checks a tlog-proof file a device kept against this log: its signature, that it names this
/// log, that the leaf stored at its index leads to its root, and that the current tree still
/// contains that tree exactly.
pub async fn check_proof(
    store: &dyn ChainStore,
    keys: &LogKeys,
    kind: LogKind,
    key: &ChainKey,
    text: &str,
) -> Result<ProofCheck, ProofError> {
    let Ok(file) = parse_proof(text) else {
        return Ok(ProofCheck::NotOurs(
            "it is not a c2sp.org/tlog-proof@v1 file".into(),
        ));
    };
    let Ok(signed) = note::verify(file.checkpoint, keys.verifiers()) else {
        return Ok(ProofCheck::NotOurs(
            "its checkpoint is not signed by this server's log key".into(),
        ));
    };
    let Ok(kept) = Checkpoint::parse(signed) else {
        return Ok(ProofCheck::NotOurs("its checkpoint is malformed".into()));
    };
    let (log, _) = signed_head(keys, kind, store.log_head(key).await?)?;
    if kept.origin != keys.origin(&log.log_id, kind, log.epoch) {
        return Ok(ProofCheck::OtherLog);
    }
    if kept.size > log.size {
        return Ok(ProofCheck::Truncated(format!(
            "it names a tree of {} entries, but the log now holds {}: entries were removed",
            kept.size, log.size
        )));
    }
    if file.index >= kept.size {
        return Ok(ProofCheck::NotOurs("its index is outside its tree".into()));
    }
    let leaf_index = stored_hash_index(0, file.index);
    let then = Plan::root(kept.size);
    let mut needed = then.needed().to_vec();
    needed.push(leaf_index);
    let hashes = stored_hashes(store, key, &needed).await?;
    let Some(leaf) = hashes.get(&leaf_index) else {
        return Ok(ProofCheck::Truncated(format!(
            "the log holds no entry {}",
            file.index
        )));
    };
    if root_from_inclusion(file.index, kept.size, leaf, &file.path) != Some(kept.root) {
        return Ok(ProofCheck::Rewritten(format!(
            "entry {} as stored now is not the entry the receipt proved: it was changed",
            file.index
        )));
    }
    let root_now = then
        .build(&hashes)
        .map_err(|missing| ProofError::Tampered(missing.to_string()))?;
    if root_now.first() != Some(&kept.root) {
        return Ok(ProofCheck::Rewritten(format!(
            "the first {} entries of the log were rewritten since the receipt was signed",
            kept.size
        )));
    }
    Ok(ProofCheck::Holds {
        index: file.index,
        size: kept.size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // A blanked checkpoint is not signed over: the entry starts a new log.
        let mut blanked = head.clone();
        blanked.checkpoint.clear();
        let fresh = grow(
            Some(&keys),
            LogKind::Ledger,
            Some(&blanked),
            &record_hash(3),
        )
        .unwrap();
        assert_ne!(fresh.append.head.log_id, head.log_id);
        assert_eq!((fresh.index, fresh.append.head.size), (0, 1));
        assert_eq!(
            fresh.append.expected,
            Some(blanked),
            "still conditional on what was read"
        );
    }
}
