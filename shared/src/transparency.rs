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
use crate::store::{
    Append, ChainKey, ChainStore, LOG_RETIREMENT_MS, LeafHashes, LogAppend, LogBase, LogHead,
    LogRead, StoreError,
};
use crate::tlog::checkpoint::{Checkpoint, parse_proof, proof_text};
use crate::tlog::note::{self, NoteSigner, NoteVerifier};
use crate::tlog::tree::{
    Frontier, Hash, Plan, consistency_candidates, leaf_hash, leaf_storing, root_from_inclusion,
    stored_hash_index, verify_consistency,
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
    /// `true` for an earlier key or host that no longer signs: checkpoints it signed still
    /// verify, and the next append re-signs their log with the current key.
    pub verify_only: bool,
}

/// The deployment's log keys: the first signing key is current, any others are older ones
/// still signing during a rotation's overlap. Their names are deployment-wide
/// (`<host>/hearth-log/v<version>`), unlike the origins, which name each household's log.
///
/// Earlier identities verify without signing (`HEARTH_LOG_KEY_NAMES_PREVIOUS`): a key that
/// was dropped after a rotation, or this deployment's keys under the name of a host it was
/// once served from. A checkpoint signed by any of them verifies, an origin under any of
/// their hosts names the same log, and a head they signed is re-signed with the current key
/// on its log's next append (or by `hearth admin log-key re-sign`).
pub struct LogKeys {
    host: String,
    /// Hosts of earlier identities: their origins name this deployment's logs too.
    earlier_hosts: Vec<String>,
    signers: Vec<NoteSigner>,
    /// The signers' verifiers, then the verify-only ones.
    verifiers: Vec<NoteVerifier>,
    signing: usize,
    /// The most entries one log may hold ([`MAX_LOG_SIZE`]).
    max_size: u64,
}

/// The most entries one log may hold: about 32 years of a decision a minute. A log at the
/// limit refuses appends, naming the limit; an operator's `log reset` starts a new one. No
/// entry of a household's history is ever evicted to make room.
pub const MAX_LOG_SIZE: u64 = 1 << 24;

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
            earlier_hosts: Vec::new(),
            signing: verifiers.len(),
            signers,
            verifiers,
            max_size: MAX_LOG_SIZE,
        })
    }

    /// The same keys with logs limited to `max_size` entries (tests show the limit with a
    /// small one).
    pub fn with_max_size(mut self, max_size: u64) -> Self {
        self.max_size = max_size;
        self
    }

    /// The same keys also verifying `previous` identities, each either a whole verifier key
    /// (`name+id+key`: a key no longer held) or a key name alone (`<host>/hearth-log/v<N>`:
    /// this deployment's signing keys under an earlier name, after the host changed).
    pub fn with_previous(mut self, previous: &[String]) -> Result<Self, String> {
        for identity in previous {
            let verifiers = if identity.contains('+') {
                vec![NoteVerifier::parse(identity).map_err(|error| {
                    format!("HEARTH_LOG_KEY_NAMES_PREVIOUS: {identity:?}: {error}")
                })?]
            } else {
                self.signers
                    .iter()
                    .map(|signer| NoteVerifier::new(identity, &signer.public_key()))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|error| format!("HEARTH_LOG_KEY_NAMES_PREVIOUS: {error}"))?
            };
            for verifier in verifiers {
                if let Some(host) = host_of(verifier.name())
                    && host != self.host
                    && !self.earlier_hosts.iter().any(|known| known == host)
                {
                    self.earlier_hosts.push(host.to_owned());
                }
                if !self.verifiers.contains(&verifier) {
                    self.verifiers.push(verifier);
                }
            }
        }
        Ok(self)
    }

    /// Every key a verifier should know: the signing keys, current first, then the
    /// verify-only ones.
    pub fn published(&self) -> Vec<PublishedKey> {
        self.verifiers
            .iter()
            .enumerate()
            .map(|(index, verifier)| PublishedKey {
                vkey: verifier.vkey(),
                name: verifier.name().to_owned(),
                public_key: STANDARD.encode(verifier.public_key()),
                verify_only: index >= self.signing,
            })
            .collect()
    }

    pub fn verifiers(&self) -> &[NoteVerifier] {
        &self.verifiers
    }

    /// The origin line of a log: `<host>/hearth/<log id>/<kind>/<epoch>`.
    pub fn origin(&self, log_id: &str, kind: LogKind, epoch: u64) -> String {
        origin_under(&self.host, log_id, kind, epoch)
    }

    /// Whether `origin` names this log under the current host or an earlier one.
    pub fn names(&self, origin: &str, log_id: &str, kind: LogKind, epoch: u64) -> bool {
        std::iter::once(&self.host)
            .chain(&self.earlier_hosts)
            .any(|host| origin == origin_under(host, log_id, kind, epoch))
    }

    /// What `origin` names, if it is an origin of one of this deployment's logs (under the
    /// current host or an earlier one).
    pub fn parse_origin(&self, origin: &str) -> Option<Origin> {
        let mut parts = origin.rsplitn(5, '/');
        let epoch = parts.next()?.parse().ok()?;
        let kind = LogKind::parse(parts.next()?)?;
        let log_id = parts.next()?.to_owned();
        if parts.next()? != "hearth" {
            return None;
        }
        let host = parts.next()?;
        (host == self.host || self.earlier_hosts.iter().any(|known| known == host)).then_some(
            Origin {
                log_id,
                kind,
                epoch,
            },
        )
    }

    /// Whether `checkpoint` (a signed note) is signed by the current key under the current
    /// host, so that re-signing it would change nothing.
    fn signed_by_current(&self, checkpoint: &str) -> bool {
        note::verify(checkpoint, &self.verifiers[..1]).is_ok()
    }

    fn sign(&self, checkpoint: &Checkpoint) -> String {
        let signers: Vec<&NoteSigner> = self.signers.iter().collect();
        note::sign(&checkpoint.text(), &signers)
    }
}

/// What an origin names: a log of one household and kind, in one epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub log_id: String,
    pub kind: LogKind,
    pub epoch: u64,
}

fn origin_under(host: &str, log_id: &str, kind: LogKind, epoch: u64) -> String {
    format!("{host}/hearth/{log_id}/{}/{epoch}", kind.as_str())
}

/// The host in a key name `<host>/hearth-log/v<N>`.
fn host_of(key_name: &str) -> Option<&str> {
    let (host, version) = key_name.rsplit_once("/hearth-log/v")?;
    version.parse::<u32>().ok().map(|_| host)
}

/// The first characters of a log id, enough to tell two apart in a message.
fn short(log_id: &str) -> &str {
    &log_id[..log_id.len().min(8)]
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
    /// The chain's window names a log, and the log's head is gone or its signature blanked.
    #[error("the log head was removed")]
    Removed,
    /// The chain's window names one log, and the head stored is another's.
    #[error("the log was replaced")]
    Replaced,
    /// The log holds as many entries as a log may; an operator starts a new one.
    #[error(
        "the log is full: it holds {0} entries, the most one log may; an operator starts a new one with hearth admin log reset"
    )]
    Full(u64),
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
/// hash is `record_hash` (hex). `named` is the log the chain's window head names
/// ([`crate::store::Head::log_id`]).
pub fn grow(
    keys: Option<&LogKeys>,
    kind: LogKind,
    named: Option<&str>,
    log: Option<&LogHead>,
    record_hash: &str,
    lifetime: Lifetime,
) -> Result<Growth, LogError> {
    LogGrowth::grow(keys, kind, named, log, lifetime)?.single(record_hash)
}

/// How long a log is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// A household account's: for good.
    Kept,
    /// A credential's (a judge token's or a client's household label): with its window,
    /// which ends at `window_ends_ms`, and [`LOG_RETIREMENT_MS`] more.
    Window { window_ends_ms: i64 },
}

impl Lifetime {
    /// When a log of this lifetime retires, if it does.
    fn retires(self) -> Option<i64> {
        match self {
            Lifetime::Kept => None,
            Lifetime::Window { window_ends_ms } => {
                Some(window_ends_ms.saturating_add(LOG_RETIREMENT_MS))
            }
        }
    }
}

/// What a reset replaces: the log the chain named, and what its head still says of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Replaced {
    /// The log id, from the head, or from the chain's window when the head is gone.
    pub log_id: Option<String>,
    /// Its origin line and size, when its head was still there.
    pub origin: Option<String>,
    pub size: Option<u64>,
}

/// What starting `log` over replaces (`named` is the log the chain's window names).
pub fn replaced(
    keys: &LogKeys,
    kind: LogKind,
    named: Option<&str>,
    log: Option<&LogHead>,
) -> Replaced {
    match log {
        Some(log) => Replaced {
            log_id: Some(log.log_id.clone()),
            origin: Some(keys.origin(&log.log_id, kind, log.epoch)),
            size: Some(log.size),
        },
        None => Replaced {
            log_id: named.map(str::to_owned),
            ..Replaced::default()
        },
    }
}

/// Starts the chain's log anew at the record whose hash is `record_hash`: an operator's
/// `log reset`, the only way a chain that has a log gets another. The new log has a new id;
/// `log` is the head as read (missing, blanked or another log's: whatever needed the reset),
/// so the write is still conditional on it. The record itself states what it replaces.
pub fn start_over(
    keys: &LogKeys,
    kind: LogKind,
    log: Option<&LogHead>,
    record_hash: &str,
    lifetime: Lifetime,
) -> Result<Growth, LogError> {
    LogGrowth::start_over(keys, kind, log, lifetime)?.single(record_hash)
}

fn fresh_log_id() -> Result<String, LogError> {
    Ok(hex::encode(os_bytes::<16>().map_err(|_| LogError::Random)?))
}

/// A log grown by one or more records that land in one step (appends queued together, see
/// `why::queue`), signed once at the end: every record's receipt proves it in that one
/// checkpoint, so the witnesses are asked once for the lot. Each record's [`LogAppend`] expects
/// the head the one before it left, as sequential appends would; only the last carries the
/// signed checkpoint (the store keeps the last head alone).
pub struct LogGrowth<'k> {
    keys: Option<&'k LogKeys>,
    kind: LogKind,
    log_id: String,
    epoch: u64,
    retires: Option<i64>,
    frontier: Frontier,
    /// The head the next record's append expects.
    expected: Option<LogHead>,
    /// The first new record's 0-based position in the log.
    first: u64,
    /// Every stored hash the new records' inclusion proofs can need: the frontier they grew
    /// from and every hash their appends store.
    stored: HashMap<u64, Hash>,
}

impl<'k> LogGrowth<'k> {
    /// The growth of `log` (see [`grow`]).
    pub fn grow(
        keys: Option<&'k LogKeys>,
        kind: LogKind,
        named: Option<&str>,
        log: Option<&LogHead>,
        lifetime: Lifetime,
    ) -> Result<Self, LogError> {
        if let Some(keys) = keys {
            head_as_named(named, log)?;
            if let Some(log) = log
                && log.size >= keys.max_size
            {
                return Err(LogError::Full(keys.max_size));
            }
        }
        let retires = lifetime.retires();
        // A credential's log lives with one window: the first append of a new window starts
        // the log's next epoch, which retires with that window.
        let earlier_window =
            retires.is_some() && log.is_some_and(|log| log.expires_at_ms != retires);
        // A log that holds entries but no signature (it grew while no key was configured, or
        // its checkpoint was blanked in the database) is never signed over: with a key, the
        // chain starts a new log under a new id instead, so no signed origin can fork.
        let unsigned =
            keys.is_some() && log.is_some_and(|log| log.size > 0 && log.checkpoint.is_empty());
        let (log_id, epoch, frontier) = match log {
            Some(log) if earlier_window => (log.log_id.clone(), log.epoch + 1, Frontier::new()),
            Some(log) if !unsigned => (
                log.log_id.clone(),
                log.epoch,
                checked_frontier(keys, kind, log)?,
            ),
            _ => (fresh_log_id()?, 1, Frontier::new()),
        };
        Ok(Self::from(
            keys,
            kind,
            log,
            (log_id, epoch, retires),
            frontier,
        ))
    }

    /// A new log in place of `log` (see [`start_over`]).
    pub fn start_over(
        keys: &'k LogKeys,
        kind: LogKind,
        log: Option<&LogHead>,
        lifetime: Lifetime,
    ) -> Result<Self, LogError> {
        Ok(Self::from(
            Some(keys),
            kind,
            log,
            (fresh_log_id()?, 1, lifetime.retires()),
            Frontier::new(),
        ))
    }

    /// The log `log_id` in `epoch` (retiring at `retires`), to grow from `frontier`.
    fn from(
        keys: Option<&'k LogKeys>,
        kind: LogKind,
        expected: Option<&LogHead>,
        (log_id, epoch, retires): (String, u64, Option<i64>),
        frontier: Frontier,
    ) -> Self {
        Self {
            keys,
            kind,
            log_id,
            epoch,
            retires,
            first: frontier.size(),
            stored: frontier.stored().into_iter().collect(),
            frontier,
            expected: expected.cloned(),
        }
    }

    /// Adds the record whose hash is `record_hash` (hex): its part of the append, with no
    /// checkpoint yet. [`LogError::Full`] when the log holds as many entries as it may.
    pub fn add(&mut self, record_hash: &str) -> Result<LogAppend, LogError> {
        if let Some(keys) = self.keys
            && self.frontier.size() >= keys.max_size
        {
            return Err(LogError::Full(keys.max_size));
        }
        let stored = self.frontier.append(leaf_hash(&record_leaf(record_hash)));
        let hashes = stored.iter().map(|(_, hash)| *hash).collect();
        self.stored.extend(stored);
        let head = LogHead {
            log_id: self.log_id.clone(),
            epoch: self.epoch,
            size: self.frontier.size(),
            frontier: self.frontier.hashes().to_vec(),
            checkpoint: String::new(),
            expires_at_ms: self.retires,
        };
        let expected = self.expected.replace(head.clone());
        Ok(LogAppend {
            expected,
            head,
            hashes,
        })
    }

    /// Signs the tree the records made (without a key, signs nothing) into `last`, the last
    /// record's part, and returns each record's receipt (`c2sp.org/tlog-proof@v1`) against that
    /// checkpoint, in the order they were added: to hand out once the append is stored.
    pub fn sign(self, last: &mut LogAppend) -> Vec<Option<String>> {
        let added = self.frontier.size() - self.first;
        let Some(keys) = self.keys else {
            return vec![None; added as usize];
        };
        let size = self.frontier.size();
        let signed = keys.sign(&Checkpoint {
            origin: keys.origin(&self.log_id, self.kind, self.epoch),
            size,
            root: self.frontier.root(),
        });
        let receipts = (self.first..size)
            .map(|index| {
                let path = Plan::inclusion(index, size).build(&self.stored).expect(
                    "a new leaf's audit path lies in the frontier it grew from and its own hashes",
                );
                Some(proof_text(index, &path, &signed))
            })
            .collect();
        last.head.checkpoint = signed;
        receipts
    }

    /// Grows the log by one record and signs it.
    fn single(mut self, record_hash: &str) -> Result<Growth, LogError> {
        let index = self.frontier.size();
        let mut append = self.add(record_hash)?;
        let receipt = self.sign(&mut append).pop().flatten();
        Ok(Growth {
            append,
            receipt,
            index,
        })
    }
}

/// Whether the log head read is the one the chain's window names: a window that names a log
/// whose head is gone or blanked is tampering ("the log head was removed"), and one whose head
/// is another log's is too ("the log was replaced"). A window that names none was written
/// before logs existed, or opens a new one.
fn head_as_named(named: Option<&str>, log: Option<&LogHead>) -> Result<(), LogError> {
    let Some(named) = named else {
        return Ok(());
    };
    match log {
        None => Err(LogError::Removed),
        Some(log) if log.size > 0 && log.checkpoint.is_empty() => Err(LogError::Removed),
        Some(log) if log.log_id != named => Err(LogError::Replaced),
        Some(_) => Ok(()),
    }
}

/// `append` growing its chain's log by `log`, with the window's log base carried on (see
/// [`window_base`]).
pub fn logged(append: Append, log: LogAppend) -> Append {
    let mut append = append.with_log(log);
    append.head.log_base = window_base(&append);
    append
}

/// The log's frontier just before the oldest record the window keeps after `append`: a new
/// window's is the log's frontier before this record; a window that goes on moves its base
/// past the records this append evicts that are in the log. `None` when that cannot be known
/// (a window begun before bases were kept, a log read under another id or epoch), and proofs
/// then read the stored hashes.
pub fn window_base(append: &Append) -> Option<LogBase> {
    let log = append.log.as_ref()?;
    let leaf = log.head.size.checked_sub(1)?;
    // The window's records after this append, and how many of them (the newest) the log holds.
    let records = append.head.last_seq + 1 - append.evict_below_seq.min(append.head.last_seq);
    let first = log.head.size - records.min(log.head.size);
    let Some(expected) = &append.expected else {
        let before = match &log.expected {
            _ if leaf == 0 => Vec::new(),
            Some(read)
                if read.size == leaf
                    && read.log_id == log.head.log_id
                    && read.epoch == log.head.epoch =>
            {
                read.frontier.clone()
            }
            _ => return None,
        };
        return Some(LogBase {
            size: leaf,
            frontier: before,
        });
    };
    let base = expected.log_base.as_ref()?;
    let moved = usize::try_from(first.checked_sub(base.size)?).ok()?;
    // The log holds the newest of the evicted records, when it holds any.
    let in_log = append.evicted.len().checked_sub(moved)?;
    let mut frontier = Frontier::from_parts(base.size, base.frontier.clone()).ok()?;
    for hash in &append.evicted[in_log..] {
        frontier.append(leaf_hash(&record_leaf(hash)));
    }
    Some(LogBase {
        size: frontier.size(),
        frontier: frontier.hashes().to_vec(),
    })
}

/// Every stored hash the inclusion proofs of the retained entries can need, from the window's
/// log base and the entries themselves, with no read: `None` when the base is not the frontier
/// just before the first entry the log holds.
fn window_hashes(
    base: Option<&LogBase>,
    first: u64,
    entries: &[&str],
) -> Option<HashMap<u64, Hash>> {
    let base = base.filter(|base| base.size == first)?;
    let mut frontier = Frontier::from_parts(base.size, base.frontier.clone()).ok()?;
    let mut hashes: HashMap<u64, Hash> = frontier.stored().into_iter().collect();
    for entry in entries {
        hashes.extend(frontier.append(leaf_hash(&record_leaf(entry))));
    }
    Some(hashes)
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
    if !keys.names(&checkpoint.origin, &log.log_id, kind, log.epoch) {
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
    #[error("the log head was removed")]
    Removed,
    #[error("the log was replaced")]
    Replaced,
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
    let items = store.log_hashes(key, &leaves_holding(indexes)).await?;
    Ok(hashes_at(indexes, &items))
}

/// The leaves whose stored hash items hold the hashes at `indexes`, each once, in order.
fn leaves_holding(indexes: &[u64]) -> Vec<u64> {
    let mut leaves: Vec<u64> = indexes.iter().map(|index| leaf_storing(*index).0).collect();
    leaves.sort_unstable();
    leaves.dedup();
    leaves
}

/// The hashes at `indexes` found among the hash items read; one not read is absent.
fn hashes_at(indexes: &[u64], items: &LeafHashes) -> HashMap<u64, Hash> {
    let mut hashes = HashMap::with_capacity(indexes.len());
    for index in indexes {
        let (leaf, offset) = leaf_storing(*index);
        if let Some(hash) = items.get(&leaf).and_then(|stored| stored.get(offset)) {
            hashes.insert(*index, *hash);
        }
    }
    hashes
}

/// The log head with its checkpoint verified against the keys, the head itself, and the tree
/// it signs. `named` is the log the chain's window head names.
fn signed_head(
    keys: &LogKeys,
    kind: LogKind,
    named: Option<&str>,
    log: Option<LogHead>,
) -> Result<(LogHead, Checkpoint), ProofError> {
    head_as_named(named, log.as_ref()).map_err(|error| match error {
        LogError::Replaced => ProofError::Replaced,
        _ => ProofError::Removed,
    })?;
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
/// `read` is the chain's log head as read with the window (`ChainStore::load_for_append`) and
/// `base` the window's log base ([`crate::store::Head::log_base`]): with it, the proofs are
/// computed from the entries alone, with no read. Without one, or if proofs computed from it
/// do not lead to the signed root (a base kept wrong is not taken for tampering), the proofs
/// read the log's stored hashes in one batch and are checked again.
pub async fn window_proofs(
    store: &dyn ChainStore,
    keys: &LogKeys,
    kind: LogKind,
    key: &ChainKey,
    read: LogRead,
    base: Option<&LogBase>,
    record_hashes: &[&str],
) -> Result<WindowProofs, ProofError> {
    let (log, checkpoint) = signed_head(keys, kind, read.named.as_deref(), read.log)?;
    let (first, entries) = in_log(&log, record_hashes);
    let plans: Vec<Plan> = (first..log.size)
        .map(|index| Plan::inclusion(index, log.size))
        .collect();
    if let Some(hashes) = window_hashes(base, first, entries)
        && let Ok(proofs) = prove_entries(&plans, (first, log.size), entries, &hashes, &checkpoint)
    {
        return Ok(WindowProofs {
            checkpoint: log.checkpoint,
            proofs,
        });
    }
    let mut needed: Vec<u64> = plans
        .iter()
        .flat_map(|plan| plan.needed().to_vec())
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let hashes = stored_hashes(store, key, &needed).await?;
    Ok(WindowProofs {
        checkpoint: log.checkpoint,
        proofs: prove_entries(&plans, (first, log.size), entries, &hashes, &checkpoint)?,
    })
}

/// A chain's retained window as a reader checks it on its own: every record with its hash
/// field, the anchor before the first, and each record's inclusion proof against the chain's
/// signed checkpoint (`None` without a log key, or while the chain has no signed log).
#[derive(Debug, Clone)]
pub struct ProvenWindow {
    pub anchor: Option<String>,
    pub records: Vec<serde_json::Value>,
    pub log: Option<WindowProofs>,
}

/// The inclusion proofs of `snapshot`'s records in `key`'s log (`log` as read with the
/// window), or `None` where there is nothing to prove them against: no key, or no signed log.
pub async fn prove_window(
    store: &dyn ChainStore,
    keys: Option<&LogKeys>,
    kind: LogKind,
    key: &ChainKey,
    snapshot: &crate::store::Snapshot,
    log: Option<LogHead>,
) -> Result<Option<WindowProofs>, ProofError> {
    let Some(keys) = keys else {
        return Ok(None);
    };
    let hashes: Vec<&str> = snapshot.records.iter().map(|r| r.hash.as_str()).collect();
    let read = LogRead {
        log,
        named: snapshot.head.log_id.clone(),
    };
    let base = snapshot.head.log_base.as_ref();
    match window_proofs(store, keys, kind, key, read, base, &hashes).await {
        Ok(proofs) => Ok(Some(proofs)),
        Err(ProofError::NoLog) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Each entry's inclusion proof by its plan, from `hashes`, checked against the signed root
/// of the tree of `size` (entries from leaf `first` on).
fn prove_entries(
    plans: &[Plan],
    (first, size): (u64, u64),
    entries: &[&str],
    hashes: &HashMap<u64, Hash>,
    checkpoint: &Checkpoint,
) -> Result<Vec<InclusionProof>, ProofError> {
    let mut proofs = Vec::with_capacity(entries.len());
    for ((plan, index), entry) in plans.iter().zip(first..).zip(entries) {
        let path = plan
            .build(hashes)
            .map_err(|missing| ProofError::Tampered(missing.to_string()))?;
        let leaf = leaf_hash(&record_leaf(entry));
        if root_from_inclusion(index, size, &leaf, &path) != Some(checkpoint.root) {
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
    Ok(proofs)
}

/// Checks that the retained entries (`record_hashes`, oldest first) are exactly the log's last
/// leaves under its signed checkpoint: the frontier of the tree before the window (the
/// window's log base `base`, or else one batch read whatever the window's length), the
/// window's leaves appended to it in memory, and the root must be the signed one.
pub async fn check_window(
    store: &dyn ChainStore,
    keys: &LogKeys,
    kind: LogKind,
    key: &ChainKey,
    read: LogRead,
    base: Option<&LogBase>,
    record_hashes: &[&str],
) -> Result<(), ProofError> {
    let (log, checkpoint) = signed_head(keys, kind, read.named.as_deref(), read.log)?;
    let (first, entries) = in_log(&log, record_hashes);
    let leaves_onto = |mut frontier: Frontier| {
        for entry in entries {
            frontier.append(leaf_hash(&record_leaf(entry)));
        }
        frontier.root()
    };
    // The window's log base is the frontier this reads; one that does not lead to the signed
    // root is read again rather than taken for tampering.
    if let Some(base) = base.filter(|base| base.size == first)
        && let Ok(frontier) = Frontier::from_parts(base.size, base.frontier.clone())
        && leaves_onto(frontier) == checkpoint.root
    {
        return Ok(());
    }
    let plan = Plan::frontier(first);
    let hashes = stored_hashes(store, key, plan.needed()).await?;
    let before = plan
        .build(&hashes)
        .map_err(|missing| ProofError::Tampered(missing.to_string()))?;
    let frontier = Frontier::from_parts(first, before)
        .map_err(|error| ProofError::Tampered(error.to_string()))?;
    if leaves_onto(frontier) != checkpoint.root {
        let held = entries.len();
        return Err(ProofError::Tampered(format!(
            "the retained {held} entries are not the signed log's last {held} leaves"
        )));
    }
    Ok(())
}

/// The current signed checkpoint and the RFC 6962 consistency proof from the tree of
/// `from_size` (which the caller kept) to it.
///
/// `ahead` is the log head and the stored hashes read beside the request's admission (the
/// hashes at `tlog::tree::consistency_candidates` of `from_size`): when they hold the proof,
/// and it leads to the signed root, no other read is made. Otherwise, or without them, the
/// head and then exactly the hashes the proof needs are read.
pub async fn history(
    store: &dyn ChainStore,
    keys: &LogKeys,
    kind: LogKind,
    key: &ChainKey,
    from_size: u64,
    now_ms: i64,
    ahead: Option<(LogRead, LeafHashes)>,
) -> Result<(String, Vec<String>), ProofError> {
    if let Some((read, hashes)) = ahead {
        let (log, checkpoint) = signed_head(keys, kind, read.named.as_deref(), read.log)?;
        let plan = Plan::consistency(from_size, within(&log, from_size)?);
        if let Some(proof) = proof_read_ahead(&plan, &log, &checkpoint, &hashes) {
            return Ok(answer(log, &proof));
        }
        // What was read ahead holds too little, or raced a change of the log: read the head
        // again, and then exactly what the proof needs, as without it.
    }
    let read = store.log_head(key, now_ms).await?;
    let (log, _) = signed_head(keys, kind, read.named.as_deref(), read.log)?;
    let plan = Plan::consistency(from_size, within(&log, from_size)?);
    let hashes = stored_hashes(store, key, plan.needed()).await?;
    let proof = plan
        .build(&hashes)
        .map_err(|missing| ProofError::Tampered(missing.to_string()))?;
    Ok(answer(log, &proof))
}

/// The log's size, when a proof can run to it from `from_size`.
fn within(log: &LogHead, from_size: u64) -> Result<u64, ProofError> {
    if from_size > log.size {
        return Err(ProofError::Invalid(format!(
            "`from_size` is {from_size}, but the log holds {} entries: a kept checkpoint larger than the log means the log was truncated or forked.",
            log.size
        )));
    }
    Ok(log.size)
}

/// The signed checkpoint and the proof, as `prove_history` hands them out.
fn answer(log: LogHead, proof: &[Hash]) -> (String, Vec<String>) {
    (
        log.checkpoint,
        proof.iter().map(|hash| STANDARD.encode(hash)).collect(),
    )
}

/// The leaves whose stored hashes a history proof from `from_size` may need, whatever the
/// log's size (`tlog::tree::consistency_candidates`): what to read beside the log head, for
/// [`history`]'s `ahead`. At most 48.
pub fn history_leaves(from_size: u64) -> Vec<u64> {
    leaves_holding(&consistency_candidates(from_size))
}

/// The consistency proof `plan` asks for, from hashes read before the log's size was known
/// and the log's own frontier, if they hold it and it shows the tree they give for the
/// proof's old size to be a prefix of the signed one: a read that raced a log reset, or one
/// short of a hash, answers `None` and the proof is read exactly.
fn proof_read_ahead(
    plan: &Plan,
    log: &LogHead,
    checkpoint: &Checkpoint,
    leaves: &LeafHashes,
) -> Option<Vec<Hash>> {
    let (old, new) = plan.consistency_sizes()?;
    let frontier = Frontier::from_parts(log.size, log.frontier.clone()).ok()?;
    let mut hashes = hashes_at(&consistency_candidates(old), leaves);
    // The log head's own frontier is what its checkpoint was checked against.
    hashes.extend(frontier.stored());
    let proof = plan.build(&hashes).ok()?;
    let old_root = Plan::root(old).build(&hashes).ok()?.first().copied()?;
    verify_consistency(old, &old_root, new, &checkpoint.root, &proof).then_some(proof)
}

/// The RFC 6962 consistency proof from the tree of `old` entries of `key`'s log to its tree of
/// `new` (both at most the log's size), built from the stored hashes in one batch read: what a
/// witness is sent with a new checkpoint. Empty when `old` is 0 or `new`.
pub async fn consistency_proof(
    store: &dyn ChainStore,
    key: &ChainKey,
    old: u64,
    new: u64,
) -> Result<Vec<Hash>, ProofError> {
    if old == 0 || old == new {
        return Ok(Vec::new());
    }
    if old > new {
        return Err(ProofError::Invalid(format!(
            "a consistency proof runs from a smaller tree, not from {old} to {new}"
        )));
    }
    let plan = Plan::consistency(old, new);
    let hashes = stored_hashes(store, key, plan.needed()).await?;
    plan.build(&hashes)
        .map_err(|missing| ProofError::Tampered(missing.to_string()))
}

/// What re-signing a log's head did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resigned {
    /// The head was signed by an earlier key or under an earlier host, and now by the current
    /// key under the current host: the same tree.
    Resigned,
    /// Already signed by the current key under the current host.
    Current,
    /// The chain has no signed log.
    NoLog,
}

/// Signs `key`'s log head again with the current key under the current host, when an earlier
/// key or host signed it: what an append does, for a log nobody is appending to. The head is
/// verified first (any known key), and written on condition that it is still as read.
pub async fn resign(
    store: &dyn ChainStore,
    keys: &LogKeys,
    kind: LogKind,
    key: &ChainKey,
    now_ms: i64,
) -> Result<Resigned, ProofError> {
    let read = store.log_head(key, now_ms).await?;
    let (log, checkpoint) = match signed_head(keys, kind, read.named.as_deref(), read.log) {
        Ok(signed) => signed,
        Err(ProofError::NoLog) => return Ok(Resigned::NoLog),
        Err(error) => return Err(error),
    };
    let origin = keys.origin(&log.log_id, kind, log.epoch);
    if checkpoint.origin == origin && keys.signed_by_current(&log.checkpoint) {
        return Ok(Resigned::Current);
    }
    let signed = keys.sign(&Checkpoint {
        origin,
        size: checkpoint.size,
        root: checkpoint.root,
    });
    store.resign_log(key, &log, &signed).await?;
    Ok(Resigned::Resigned)
}

/// What checking a kept tlog-proof against the current log found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProofCheck {
    /// The proof's checkpoint is signed, the entry is in it, and today's tree still holds
    /// that tree unchanged.
    Holds { index: u64, size: u64 },
    /// It is not a proof this server signed (malformed, or another key's).
    NotOurs(String),
    /// It is a proof of another kind of log (a decision log's, given for the ledger).
    OtherLog,
    /// It is a proof of another log of the same kind: the log was replaced (an operator's
    /// `log reset`, or tampering), or the proof is another household's.
    Replaced(String),
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
    now_ms: i64,
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
    let read = store.log_head(key, now_ms).await?;
    let (log, _) = signed_head(keys, kind, read.named.as_deref(), read.log)?;
    match keys.parse_origin(&kept.origin) {
        None => {
            return Ok(ProofCheck::NotOurs(
                "its origin names no log of this server".into(),
            ));
        }
        Some(origin) if origin.kind != kind => return Ok(ProofCheck::OtherLog),
        Some(origin) if origin.log_id != log.log_id || origin.epoch != log.epoch => {
            // Same deployment, same kind of log, another log id or epoch: this household's
            // log was replaced (or the proof is another household's, which cannot be told
            // apart here; either way it does not prove this log).
            return Ok(ProofCheck::Replaced(format!(
                "the proof is from log {}/{}, and the household's log is now {}/{}",
                short(&origin.log_id),
                origin.epoch,
                short(&log.log_id),
                log.epoch
            )));
        }
        Some(_) => {}
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

    /// A history proof built from the hashes read before the log's size was known is the
    /// exact proof, for every kept size of every log up to 70 leaves; a read short of a hash,
    /// or one holding a wrong hash, builds none (the proof is then read exactly).
    #[test]
    fn a_history_proof_from_the_hashes_read_ahead_is_the_exact_one_or_none() {
        // A log head of the tree `frontier` ends, and its checkpoint (unsigned: not read).
        let signed = |frontier: &Frontier| {
            let log = LogHead {
                log_id: "l".into(),
                epoch: 1,
                size: frontier.size(),
                frontier: frontier.hashes().to_vec(),
                checkpoint: String::new(),
                expires_at_ms: None,
            };
            let checkpoint = Checkpoint {
                origin: "o".into(),
                size: frontier.size(),
                root: frontier.root(),
            };
            (log, checkpoint)
        };
        let mut frontier = Frontier::new();
        let mut leaves = LeafHashes::new();
        let mut exact = HashMap::new();
        for n in 1..=70u64 {
            let stored = frontier.append(leaf_hash(&n.to_le_bytes()));
            leaves.insert(n - 1, stored.iter().map(|(_, hash)| *hash).collect());
            exact.extend(stored);
            let (log, checkpoint) = signed(&frontier);
            for old in 0..=n {
                let plan = Plan::consistency(old, n);
                let ahead: LeafHashes = history_leaves(old)
                    .into_iter()
                    .filter_map(|leaf| Some((leaf, leaves.get(&leaf)?.clone())))
                    .collect();
                assert_eq!(
                    proof_read_ahead(&plan, &log, &checkpoint, &ahead),
                    Some(plan.build(&exact).unwrap()),
                    "{old} -> {n}"
                );
            }
        }
        let (old, new) = (37, 70);
        let plan = Plan::consistency(old, new);
        let (log, checkpoint) = signed(&frontier);
        let read: LeafHashes = history_leaves(old)
            .into_iter()
            .filter_map(|leaf| Some((leaf, leaves.get(&leaf)?.clone())))
            .collect();
        assert!(proof_read_ahead(&plan, &log, &checkpoint, &read).is_some());
        let needed_leaf = leaf_storing(plan.needed()[0]).0;
        let mut short = read.clone();
        if short.remove(&needed_leaf).is_some() {
            assert_eq!(proof_read_ahead(&plan, &log, &checkpoint, &short), None);
        }
        for leaf in history_leaves(old) {
            let mut wrong = read.clone();
            let Some(hashes) = wrong.get_mut(&leaf) else {
                continue;
            };
            hashes[0][0] ^= 1;
            let built = proof_read_ahead(&plan, &log, &checkpoint, &wrong);
            assert!(
                built.is_none() || built == Some(plan.build(&exact).unwrap()),
                "a wrong hash at leaf {leaf} built a wrong proof"
            );
        }
    }

    /// Through windows filling and evicting, every append's log base is the log's frontier
    /// just before the oldest record the window keeps, as a tree grown separately says; a log
    /// started over in the middle of a window, which holds none of its older records, leaves
    /// the window with no base rather than a wrong one.
    #[test]
    fn each_windows_log_base_is_the_frontier_before_its_oldest_record() {
        use crate::store::Retention;
        let retention = Retention {
            window_ms: 1_000_000,
            capacity: 5,
            max_live_chains: 8,
            max_logs: 8,
        };
        let seal = |seq: u64, prev: Option<&str>| {
            crate::chain::Sealed::new(seq, &serde_json::json!({"seq": seq, "prev": prev}))
        };
        let (mut head, mut retained, mut log) = (None::<crate::store::Head>, Vec::new(), None);
        let mut frontiers = vec![Frontier::new()];
        for n in 0..17u64 {
            let append = Append::next(head.as_ref(), &retained, retention, 10, seal);
            let growth = grow(
                None,
                LogKind::Decisions,
                head.as_ref().and_then(|head| head.log_id.as_deref()),
                log.as_ref(),
                &append.record.hash,
                Lifetime::Kept,
            )
            .unwrap();
            let append = logged(append, growth.append);
            let mut grown = frontiers.last().unwrap().clone();
            grown.append(leaf_hash(&record_leaf(&append.record.hash)));
            frontiers.push(grown);
            let oldest = append.evict_below_seq.min(append.head.last_seq);
            let first = n + 1 - (append.head.last_seq + 1 - oldest);
            let expected = &frontiers[first as usize];
            assert_eq!(
                append.head.log_base,
                Some(LogBase {
                    size: expected.size(),
                    frontier: expected.hashes().to_vec(),
                }),
                "append {n}"
            );
            retained.push(append.record.clone());
            retained.retain(|record| record.seq >= append.evict_below_seq);
            log = append.log.clone().map(|log| log.head);
            head = Some(append.head);
        }
        // The log starts over (a new id): the window's older records are in no log now.
        let append = Append::next(head.as_ref(), &retained, retention, 10, seal);
        let restarted = grow(
            None,
            LogKind::Decisions,
            None,
            None,
            &append.record.hash,
            Lifetime::Kept,
        )
        .unwrap();
        let mut append = logged(append, restarted.append);
        assert_eq!(append.head.log_base, None);
        // And a window whose base was never kept keeps none.
        append.head.log_base = None;
        let next = Append::next(Some(&append.head), &retained, retention, 10, seal);
        let growth = grow(
            None,
            LogKind::Decisions,
            append.head.log_id.as_deref(),
            append.log.as_ref().map(|log| &log.head),
            &next.record.hash,
            Lifetime::Kept,
        )
        .unwrap();
        assert_eq!(logged(next, growth.append).head.log_base, None);
    }

    fn record_hash(n: u8) -> String {
        hex::encode([n; 32])
    }

    /// Records landed together grow the log exactly as one at a time would (the same heads
    /// and stored hashes), and each receipt proves its entry in the one checkpoint signed for
    /// them all, from any size the log had before.
    #[test]
    fn records_grown_together_store_what_one_at_a_time_would_and_share_one_checkpoint() {
        let keys = keys();
        let mut one_at_a_time: Option<LogHead> = None;
        let mut sequential = Vec::new();
        for n in 0..19 + 9 {
            let growth = grow(
                Some(&keys),
                LogKind::Decisions,
                None,
                one_at_a_time.as_ref(),
                &record_hash(n),
                Lifetime::Kept,
            )
            .unwrap();
            sequential.push(growth.append.clone());
            one_at_a_time = Some(growth.append.head);
        }
        for before in 0..19u8 {
            for together in 1..=9u8 {
                let start = before
                    .checked_sub(1)
                    .map(|last| &sequential[last as usize].head);
                let mut growth =
                    LogGrowth::grow(Some(&keys), LogKind::Decisions, None, start, Lifetime::Kept)
                        .unwrap();
                let mut appends: Vec<LogAppend> = (before..before + together)
                    .map(|n| growth.add(&record_hash(n)).unwrap())
                    .collect();
                let receipts = growth.sign(appends.last_mut().unwrap());
                for (append, alone) in appends.iter().zip(&sequential[before as usize..]) {
                    assert_eq!(append.hashes, alone.hashes, "{before}+{together}");
                    assert_eq!(append.head.size, alone.head.size);
                    assert_eq!(append.head.frontier, alone.head.frontier);
                    if before > 0 {
                        assert_eq!(append.head.log_id, alone.head.log_id);
                    }
                }
                for pair in appends.windows(2) {
                    assert_eq!(pair[1].expected.as_ref(), Some(&pair[0].head));
                    assert!(
                        pair[0].head.checkpoint.is_empty(),
                        "only the last is signed"
                    );
                }
                let last = appends.last().unwrap();
                assert_eq!(appends[0].expected.as_ref(), start);
                let text = note::verify(&last.head.checkpoint, keys.verifiers()).unwrap();
                let signed = Checkpoint::parse(text).unwrap();
                assert_eq!(signed.size, u64::from(before + together));
                assert_eq!(receipts.len(), usize::from(together));
                for (offset, receipt) in receipts.iter().enumerate() {
                    let proof = parse_proof(receipt.as_deref().unwrap()).unwrap();
                    assert_eq!(proof.checkpoint, last.head.checkpoint);
                    let n = before + offset as u8;
                    assert_eq!(proof.index, u64::from(n));
                    assert_eq!(
                        root_from_inclusion(
                            proof.index,
                            signed.size,
                            &leaf_hash(&[n; 32]),
                            &proof.path
                        ),
                        Some(signed.root),
                        "{before}+{together}: entry {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn records_grown_together_stop_at_a_full_log() {
        let keys = keys().with_max_size(3);
        let mut growth =
            LogGrowth::grow(Some(&keys), LogKind::Decisions, None, None, Lifetime::Kept).unwrap();
        for n in 0..3 {
            growth.add(&record_hash(n)).unwrap();
        }
        assert_eq!(growth.add(&record_hash(3)), Err(LogError::Full(3)));
    }

    #[test]
    fn each_receipt_proves_its_entry_in_the_signed_tree() {
        let keys = keys();
        let mut log: Option<LogHead> = None;
        for n in 0..9u8 {
            let growth = grow(
                Some(&keys),
                LogKind::Decisions,
                None,
                log.as_ref(),
                &record_hash(n),
                Lifetime::Kept,
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
    fn a_log_takes_its_most_entries_and_refuses_one_more() {
        let keys = keys().with_max_size(3);
        let mut log: Option<LogHead> = None;
        for n in 0..3u8 {
            let growth = grow(
                Some(&keys),
                LogKind::Decisions,
                log.as_ref().map(|log| log.log_id.as_str()),
                log.as_ref(),
                &record_hash(n),
                Lifetime::Kept,
            )
            .unwrap();
            log = Some(growth.append.head);
        }
        assert_eq!(log.as_ref().unwrap().size, 3);
        let full = grow(
            Some(&keys),
            LogKind::Decisions,
            log.as_ref().map(|log| log.log_id.as_str()),
            log.as_ref(),
            &record_hash(3),
            Lifetime::Kept,
        );
        assert!(matches!(full, Err(LogError::Full(3))), "{full:?}");
        assert!(
            full.unwrap_err()
                .to_string()
                .contains("hearth admin log reset")
        );
    }

    #[test]
    fn a_credentials_log_starts_its_next_epoch_with_each_window() {
        let keys = keys();
        let window = |ends| Lifetime::Window {
            window_ends_ms: ends,
        };
        let first = grow(
            Some(&keys),
            LogKind::Decisions,
            None,
            None,
            &record_hash(1),
            window(100),
        )
        .unwrap();
        assert_eq!(
            first.append.head.expires_at_ms,
            Some(100 + LOG_RETIREMENT_MS)
        );
        let same = grow(
            Some(&keys),
            LogKind::Decisions,
            Some(&first.append.head.log_id),
            Some(&first.append.head),
            &record_hash(2),
            window(100),
        )
        .unwrap();
        assert_eq!((same.append.head.epoch, same.index), (1, 1));
        // The next window: the same log id, the next epoch, from the first leaf.
        let next = grow(
            Some(&keys),
            LogKind::Decisions,
            None,
            Some(&same.append.head),
            &record_hash(3),
            window(500),
        )
        .unwrap();
        assert_eq!(next.append.head.log_id, first.append.head.log_id);
        assert_eq!((next.append.head.epoch, next.index), (2, 0));
        assert_eq!(next.append.expected.as_ref(), Some(&same.append.head));
    }

    #[test]
    fn a_head_edited_in_the_store_is_refused_not_signed_over() {
        let keys = keys();
        let first = grow(
            Some(&keys),
            LogKind::Ledger,
            None,
            None,
            &record_hash(1),
            Lifetime::Kept,
        )
        .unwrap();
        let second = grow(
            Some(&keys),
            LogKind::Ledger,
            None,
            Some(&first.append.head),
            &record_hash(2),
            Lifetime::Kept,
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
                    grow(
                        Some(&keys),
                        LogKind::Ledger,
                        None,
                        Some(&bad),
                        &record_hash(3),
                        Lifetime::Kept
                    ),
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
                    None,
                    Some(&head),
                    &record_hash(3),
                    Lifetime::Kept
                ),
                Err(LogError::Tampered(_))
            ),
            "a ledger's head is not a decision log's"
        );
        assert!(
            grow(
                Some(&keys),
                LogKind::Ledger,
                None,
                Some(&head),
                &record_hash(3),
                Lifetime::Kept
            )
            .is_ok()
        );
        // A blanked checkpoint is not signed over: the entry starts a new log.
        let mut blanked = head.clone();
        blanked.checkpoint.clear();
        let fresh = grow(
            Some(&keys),
            LogKind::Ledger,
            None,
            Some(&blanked),
            &record_hash(3),
            Lifetime::Kept,
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
