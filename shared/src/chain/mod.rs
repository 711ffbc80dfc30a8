//! Hash chains shared by every toolset.
//!
//! A record is sealed by hashing the canonical JSON of the record *without* its own hash field
//! (SHA-256, lowercase hex). Every record carries `seq` (its 1-based position in the chain's
//! whole history) and `prev` (the previous record's hash, or the chain's anchor for the first
//! retained record). A trimmed chain keeps the hash of the last evicted record as its `anchor`;
//! an untrimmed chain's anchor is `null`.
//!
//! Verification recomputes every hash and link. It detects edits, deletions, reordering and
//! relinking by anyone who cannot also recompute every later hash; it is not a signature.

pub mod canonical;

pub use canonical::to_canonical_string;

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(bytes.as_ref()))
}

/// 128 bits of SHA-256 as hex: enough to keep stored keys apart, and no raw identity (an
/// address, a member) in storage.
pub fn short_hash(value: impl AsRef<[u8]>) -> String {
    let mut hex = sha256_hex(value);
    hex.truncate(32);
    hex
}

/// A record as the store keeps it: the canonical body (without the hash field) and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub seq: u64,
    pub hash: String,
    pub body: String,
}

impl Sealed {
    /// Seals `record`, which must be a JSON object without its hash field.
    pub fn new(seq: u64, record: &Value) -> Self {
        let body = to_canonical_string(record);
        Self {
            seq,
            hash: sha256_hex(&body),
            body,
        }
    }

    /// The record as JSON with its hash inserted under `hash_field`.
    pub fn to_json(&self, hash_field: &str) -> Result<Value, serde_json::Error> {
        let mut value: Value = serde_json::from_str(&self.body)?;
        if let Value::Object(map) = &mut value {
            map.insert(hash_field.to_owned(), Value::String(self.hash.clone()));
        }
        Ok(value)
    }
}

/// What went wrong with a record, reported with its 1-based position in the retained chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("integrity check failed at record {position} of the retained chain: {problem}")]
pub struct IntegrityError {
    pub position: usize,
    pub problem: Problem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("its content does not match its hash")]
    HashMismatch,
    #[error("it does not link to the record before it")]
    BrokenLink,
    #[error("its sequence number is out of order")]
    SequenceGap,
    #[error("it is not valid record JSON")]
    Unreadable,
    #[error("the newest record is missing")]
    MissingNewest,
    /// A running total a record carries does not follow from the records before it.
    #[error("its running total does not add up")]
    WrongTotal,
}

/// What verification needs from a parsed record: its position and its link. Toolsets parse
/// records into their own view types that implement this, so each body is parsed once.
pub trait Linked {
    fn seq(&self) -> u64;
    fn prev(&self) -> Option<&str>;
}

/// The two fields every chain record carries for linking; the rest is the toolset's business.
#[derive(Debug, Deserialize)]
struct Link<'a> {
    seq: u64,
    #[serde(borrow)]
    prev: Option<Cow<'a, str>>,
}

impl<View: Linked> Linked for Arc<View> {
    fn seq(&self) -> u64 {
        self.as_ref().seq()
    }
    fn prev(&self) -> Option<&str> {
        self.as_ref().prev()
    }
}

impl Linked for Link<'_> {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn prev(&self) -> Option<&str> {
        self.prev.as_deref()
    }
}

/// Verifies a retained chain: every body hashes to its stored hash, the first record links to
/// `anchor`, each later record links to its predecessor with the next `seq`, and the newest
/// record is the one the chain head names (`head_hash`), which catches a deleted newest record.
pub fn verify(
    records: &[Sealed],
    anchor: Option<&str>,
    head_hash: &str,
) -> Result<(), IntegrityError> {
    verify_parsed::<Link<'_>>(records, anchor, head_hash).map(drop)
}

/// [`verify`], returning every record parsed as `View` (a body that does not parse as `View`
/// is [`Problem::Unreadable`]).
pub fn verify_parsed<'a, View>(
    records: &'a [Sealed],
    anchor: Option<&str>,
    head_hash: &str,
) -> Result<Vec<View>, IntegrityError>
where
    View: Deserialize<'a> + Linked,
{
    verify_checking(records, anchor, head_hash, |_, record| {
        parse_checked(record)
    })
}

/// A record's body checked against its hash, then parsed as `View`.
fn parse_checked<'a, View: Deserialize<'a>>(record: &'a Sealed) -> Result<View, Problem> {
    if !hash_matches(&record.body, &record.hash) {
        return Err(Problem::HashMismatch);
    }
    serde_json::from_str(&record.body).map_err(|_| Problem::Unreadable)
}

/// [`verify_parsed`], each record parsed once per process: a body that `memo` has already
/// seen match its hash is checked by comparing bytes instead of hashing it again (equal bytes
/// hash equally, so this is the same check), and its view is the one parsed then (equal bytes
/// parse equally). Every other check runs as always; the bodies that newly matched are
/// remembered with their views.
pub fn verify_parsed_remembering<View>(
    records: &[Sealed],
    anchor: Option<&str>,
    head_hash: &str,
    memo: &VerifiedBodies<View>,
) -> Result<Vec<Arc<View>>, IntegrityError>
where
    View: serde::de::DeserializeOwned + Linked,
{
    let known = memo.known(records);
    let mut parsed = Vec::new();
    let views = verify_checking(records, anchor, head_hash, |index, record| {
        if let Some(view) = &known[index] {
            return Ok(view.clone());
        }
        let view = Arc::new(parse_checked::<View>(record)?);
        parsed.push((index, view.clone()));
        Ok(view)
    })?;
    memo.remember(records, parsed);
    Ok(views)
}

/// Record bodies already hashed and found to match their hashes, each with its parsed view: a
/// window read again is then checked with a byte comparison per record rather than a SHA-256,
/// and not parsed again (hashing and parsing were the costliest parts of every
/// `explain_why`; see the manual's Measurements). Holds at most `capacity` bodies; when full
/// it starts afresh, so memory stays bounded (about 2 KB a record with its view).
pub struct VerifiedBodies<View> {
    capacity: usize,
    seen: std::sync::RwLock<std::collections::HashMap<String, (String, Arc<View>)>>,
}

impl<View> VerifiedBodies<View> {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            seen: std::sync::RwLock::default(),
        }
    }

    /// For each record, its view if its exact body was seen to match its exact hash.
    fn known(&self, records: &[Sealed]) -> Vec<Option<Arc<View>>> {
        let Ok(seen) = self.seen.read() else {
            return records.iter().map(|_| None).collect();
        };
        records
            .iter()
            .map(|record| match seen.get(&record.hash) {
                Some((body, view)) if *body == record.body => Some(view.clone()),
                _ => None,
            })
            .collect()
    }

    /// Remembers the records at the `parsed` indexes, which have just matched, with their
    /// views.
    fn remember(&self, records: &[Sealed], parsed: Vec<(usize, Arc<View>)>) {
        if parsed.is_empty() {
            return;
        }
        let Ok(mut seen) = self.seen.write() else {
            return;
        };
        for (index, view) in parsed {
            if seen.len() >= self.capacity {
                seen.clear();
            }
            let record = &records[index];
            seen.insert(record.hash.clone(), (record.body.clone(), view));
        }
    }

    pub fn len(&self) -> usize {
        self.seen.read().map_or(0, |seen| seen.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The chain checks, with `view_of(index, record)` checking a record's body against its hash
/// and giving its view (or the problem with it).
fn verify_checking<'a, View>(
    records: &'a [Sealed],
    anchor: Option<&str>,
    head_hash: &str,
    mut view_of: impl FnMut(usize, &'a Sealed) -> Result<View, Problem>,
) -> Result<Vec<View>, IntegrityError>
where
    View: Linked,
{
    let fail = |index: usize, problem| IntegrityError {
        position: index + 1,
        problem,
    };
    let mut views = Vec::with_capacity(records.len());
    let mut expected_prev = anchor;
    let mut expected_seq: Option<u64> = None;
    for (index, record) in records.iter().enumerate() {
        let view = view_of(index, record).map_err(|problem| fail(index, problem))?;
        if view.seq() != record.seq || expected_seq.is_some_and(|seq| seq != view.seq()) {
            return Err(fail(index, Problem::SequenceGap));
        }
        if view.prev() != expected_prev {
            return Err(fail(index, Problem::BrokenLink));
        }
        expected_prev = Some(&record.hash);
        expected_seq = Some(view.seq() + 1);
        views.push(view);
    }
    match records.last() {
        Some(newest) if newest.hash == head_hash => Ok(views),
        _ => Err(fail(records.len(), Problem::MissingNewest)),
    }
}

/// Whether `body` hashes to the lowercase hex `hash`, without allocating.
fn hash_matches(body: &str, hash: &str) -> bool {
    let mut hex = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(body.as_bytes()), &mut hex).is_ok()
        && hex == hash.as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chain(length: u64) -> Vec<Sealed> {
        let mut prev: Option<String> = None;
        (1..=length)
            .map(|seq| {
                let sealed = Sealed::new(seq, &json!({"seq": seq, "prev": prev, "n": seq * 10}));
                prev = Some(sealed.hash.clone());
                sealed
            })
            .collect()
    }

    #[test]
    fn an_intact_chain_verifies() {
        let records = chain(5);
        assert_eq!(verify(&records, None, &records[4].hash), Ok(()));
    }

    #[test]
    fn an_edited_body_is_named_by_position() {
        let mut records = chain(5);
        records[2].body = records[2].body.replace("30", "31");
        let error = verify(&records, None, &records[4].hash.clone()).unwrap_err();
        assert_eq!((error.position, error.problem), (3, Problem::HashMismatch));
    }

    /// A record's link, owned, as a memo keeps views.
    #[derive(Debug, Deserialize)]
    struct OwnedLink {
        seq: u64,
        prev: Option<String>,
    }

    impl Linked for OwnedLink {
        fn seq(&self) -> u64 {
            self.seq
        }
        fn prev(&self) -> Option<&str> {
            self.prev.as_deref()
        }
    }

    #[test]
    fn remembered_bodies_are_checked_by_their_bytes_and_an_edit_is_still_caught() {
        let memo = VerifiedBodies::<OwnedLink>::new(100);
        let records = chain(5);
        let head = records[4].hash.clone();
        let first = verify_parsed_remembering(&records, None, &head, &memo).unwrap();
        assert_eq!((first.len(), memo.len()), (5, 5));
        let again = verify_parsed_remembering(&records, None, &head, &memo).unwrap();
        assert_eq!(again.len(), 5);
        assert!(
            first.iter().zip(&again).all(|(a, b)| Arc::ptr_eq(a, b)),
            "a remembered body is not parsed again"
        );
        // The stored body changes under a remembered hash: the bytes differ, so it is hashed
        // again and named.
        let mut edited = records.clone();
        edited[2].body = edited[2].body.replace("30", "31");
        let error = verify_parsed_remembering(&edited, None, &head, &memo).unwrap_err();
        assert_eq!((error.position, error.problem), (3, Problem::HashMismatch));
        // Links and the head are checked as always, remembered or not.
        let error = verify_parsed_remembering(&records[..4], None, &head, &memo).unwrap_err();
        assert_eq!(error.problem, Problem::MissingNewest);
        let mut swapped = records.clone();
        swapped.swap(1, 2);
        assert!(verify_parsed_remembering(&swapped, None, &head, &memo).is_err());
    }

    #[test]
    fn the_memo_holds_at_most_its_capacity() {
        let memo = VerifiedBodies::<OwnedLink>::new(3);
        let records = chain(5);
        verify_parsed_remembering(&records, None, &records[4].hash, &memo).unwrap();
        assert!(memo.len() <= 3, "{}", memo.len());
        assert!(!memo.is_empty());
    }

    #[test]
    fn a_deleted_middle_record_breaks_the_next_link() {
        let mut records = chain(5);
        records.remove(2);
        let head = records[3].hash.clone();
        let error = verify(&records, None, &head).unwrap_err();
        assert_eq!(error.position, 3);
    }

    #[test]
    fn a_deleted_newest_record_is_caught_by_the_head() {
        let records = chain(5);
        let head = records[4].hash.clone();
        let error = verify(&records[..4], None, &head).unwrap_err();
        assert_eq!((error.position, error.problem), (5, Problem::MissingNewest));
    }

    #[test]
    fn a_trimmed_chain_must_link_to_its_anchor() {
        let records = chain(5);
        let anchor = records[1].hash.clone();
        assert_eq!(
            verify(&records[2..], Some(&anchor), &records[4].hash),
            Ok(())
        );
        let error = verify(&records[2..], Some("0000"), &records[4].hash).unwrap_err();
        assert_eq!((error.position, error.problem), (1, Problem::BrokenLink));
    }
}
