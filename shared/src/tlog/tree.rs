//! RFC 6962 Merkle trees as a transparency log keeps them: the frontier (compact range) that
//! an append needs, the hashes each append stores, and proofs built from stored hashes in a
//! bounded number of reads.
//!
//! Storage follows Go's `golang.org/x/mod/sumdb/tlog`: every complete subtree's hash is stored
//! once, numbered by [`stored_hash_index`] in the order appends complete them. Appending leaf
//! `n` stores its leaf hash and the interior hashes it completes, all computed from the
//! frontier, with no read. A proof names the complete subtrees it needs ([`Plan`]), reads those
//! hashes in one batch, and combines them. Verification follows RFC 9162 §2.1.3.2 and
//! §2.1.4.2.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// `SHA-256(0x00 || data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0u8]);
    hasher.update(data);
    hasher.finalize().into()
}

/// `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([1u8]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// Where the hash of the complete subtree `index` at `level` (leaves `index << level` up to
/// `(index + 1) << level`) is stored: Go's `tlog.StoredHashIndex`.
pub fn stored_hash_index(level: u32, index: u64) -> u64 {
    let mut n = index;
    for _ in 0..level {
        n = 2 * n + 1;
    }
    let mut stored = 0;
    while n > 0 {
        stored += n;
        n >>= 1;
    }
    stored + u64::from(level)
}

/// How many hashes a tree of `size` leaves has stored: Go's `tlog.StoredHashCount`.
pub fn stored_hash_count(size: u64) -> u64 {
    if size == 0 {
        return 0;
    }
    let mut count = stored_hash_index(0, size - 1) + 1;
    let mut n = size - 1;
    while n & 1 == 1 {
        count += 1;
        n >>= 1;
    }
    count
}

/// The leaf whose append stored hash `stored` (each append stores its leaf hash first, then the
/// interior hashes it completes), and the hash's position among that append's hashes.
pub fn leaf_storing(stored: u64) -> (u64, usize) {
    // stored_hash_count is increasing; find the last leaf whose first stored index is at or
    // before `stored`.
    let (mut low, mut high) = (0u64, stored + 1);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if stored_hash_count(middle) <= stored {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low, (stored - stored_hash_count(low)) as usize)
}

/// A tree's frontier: the roots of its maximal complete subtrees, largest (leftmost) first,
/// one per set bit of its size. It is all an append needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frontier {
    size: u64,
    hashes: Vec<Hash>,
}

/// A stored frontier whose hash count does not match its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a frontier of {size} leaves holds one hash per set bit of its size, not {hashes}")]
pub struct MalformedFrontier {
    pub size: u64,
    pub hashes: usize,
}

impl Frontier {
    /// The frontier of the empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// A frontier as stored, checked for shape.
    pub fn from_parts(size: u64, hashes: Vec<Hash>) -> Result<Self, MalformedFrontier> {
        if hashes.len() != size.count_ones() as usize {
            return Err(MalformedFrontier {
                size,
                hashes: hashes.len(),
            });
        }
        Ok(Self { size, hashes })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn hashes(&self) -> &[Hash] {
        &self.hashes
    }

    /// The tree's root: the frontier folded from the right.
    pub fn root(&self) -> Hash {
        let mut hashes = self.hashes.iter().rev();
        let Some(last) = hashes.next() else {
            return empty_root();
        };
        hashes.fold(*last, |right, left| node_hash(left, &right))
    }

    /// The stored hashes the frontier holds, by stored index: the roots of its maximal
    /// complete subtrees.
    pub fn stored(&self) -> Vec<(u64, Hash)> {
        let mut recorder = Recorder(Vec::new());
        subtrees(0, self.size, &mut recorder);
        recorder
            .0
            .into_iter()
            .zip(self.hashes.iter().copied())
            .collect()
    }

    /// The inclusion proof of the leaf the next append adds, in the tree that append makes:
    /// the frontier itself, smallest subtree first. No read is needed.
    pub fn next_inclusion_proof(&self) -> Vec<Hash> {
        self.hashes.iter().rev().copied().collect()
    }

    /// Appends a leaf hash and returns what to store: `(stored index, hash)` for the leaf and
    /// for every interior node it completes, in index order.
    pub fn append(&mut self, leaf: Hash) -> Vec<(u64, Hash)> {
        let n = self.size;
        let mut stored = vec![(stored_hash_index(0, n), leaf)];
        let mut hash = leaf;
        for level in 1..=(n + 1).trailing_zeros() {
            let left = self
                .hashes
                .pop()
                .expect("a completed subtree has a left sibling on the frontier");
            hash = node_hash(&left, &hash);
            stored.push((stored_hash_index(level, n >> level), hash));
        }
        self.hashes.push(hash);
        self.size += 1;
        stored
    }
}

/// Where a proof's hashes come from: the complete subtree `index` at `level`.
trait Subtrees {
    fn subtree(&mut self, level: u32, index: u64) -> Hash;
}

/// Records which stored hashes a proof reads, answering zeros: the shape of a proof depends on
/// the sizes alone, never on the hashes.
struct Recorder(Vec<u64>);

impl Subtrees for Recorder {
    fn subtree(&mut self, level: u32, index: u64) -> Hash {
        self.0.push(stored_hash_index(level, index));
        [0; 32]
    }
}

struct Lookup<'a> {
    hashes: &'a HashMap<u64, Hash>,
    missing: Option<u64>,
}

impl Subtrees for Lookup<'_> {
    fn subtree(&mut self, level: u32, index: u64) -> Hash {
        let stored = stored_hash_index(level, index);
        match self.hashes.get(&stored) {
            Some(hash) => *hash,
            None => {
                self.missing.get_or_insert(stored);
                [0; 32]
            }
        }
    }
}

/// A proof's read was short: the stored hash at this index was not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the stored hash {0} is missing")]
pub struct MissingHash(pub u64);

/// A proof to build: which stored hashes it needs, read them, then [`Plan::build`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    kind: ProofKind,
    needed: Vec<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProofKind {
    /// The audit path of leaf `index` in the tree of `size`.
    Inclusion { index: u64, size: u64 },
    /// The consistency proof from the tree of `old` to the tree of `new`.
    Consistency { old: u64, new: u64 },
    /// The root of the tree of `size`.
    Root { size: u64 },
    /// The frontier of the tree of `size`: its maximal complete subtrees, largest first.
    Frontier { size: u64 },
}

impl Plan {
    /// The audit path of leaf `index` in the tree of `size` (`index < size`).
    pub fn inclusion(index: u64, size: u64) -> Self {
        Self::planned(ProofKind::Inclusion { index, size })
    }

    /// The consistency proof from the tree of `old` to the tree of `new` (`old <= new`).
    pub fn consistency(old: u64, new: u64) -> Self {
        Self::planned(ProofKind::Consistency { old, new })
    }

    /// The root of the earlier tree of `size`.
    pub fn root(size: u64) -> Self {
        Self::planned(ProofKind::Root { size })
    }

    /// The frontier of the earlier tree of `size`: with it, the leaves after `size` can be
    /// appended again in memory and the root compared, checking a whole retained window in one
    /// read.
    pub fn frontier(size: u64) -> Self {
        Self::planned(ProofKind::Frontier { size })
    }

    fn planned(kind: ProofKind) -> Self {
        let mut recorder = Recorder(Vec::new());
        run(kind, &mut recorder);
        let mut needed = recorder.0;
        needed.sort_unstable();
        needed.dedup();
        Self { kind, needed }
    }

    /// The old and new sizes of a consistency proof's plan; `None` for another proof.
    pub fn consistency_sizes(&self) -> Option<(u64, u64)> {
        match self.kind {
            ProofKind::Consistency { old, new } => Some((old, new)),
            _ => None,
        }
    }

    /// The stored hashes to read, by index, each once.
    pub fn needed(&self) -> &[u64] {
        &self.needed
    }

    /// The proof (for [`Plan::root`], the one-hash root) from the hashes read.
    pub fn build(&self, hashes: &HashMap<u64, Hash>) -> Result<Vec<Hash>, MissingHash> {
        let mut lookup = Lookup {
            hashes,
            missing: None,
        };
        let proof = run(self.kind, &mut lookup);
        match lookup.missing {
            Some(index) => Err(MissingHash(index)),
            None => Ok(proof),
        }
    }
}

fn run(kind: ProofKind, source: &mut impl Subtrees) -> Vec<Hash> {
    match kind {
        ProofKind::Inclusion { index, size } if index < size => path(index, 0, size, source),
        ProofKind::Inclusion { .. } => Vec::new(),
        ProofKind::Consistency { old, new } if 0 < old && old < new => {
            subproof(old, 0, new, true, source)
        }
        ProofKind::Consistency { .. } => Vec::new(),
        ProofKind::Root { size: 0 } => vec![empty_root()],
        ProofKind::Root { size } => vec![range_hash(0, size, source)],
        ProofKind::Frontier { size } => subtrees(0, size, source),
    }
}

/// The levels [`consistency_candidates`] covers: proofs to trees of up to 2^24 leaves (16.7
/// million: a household recording 20 decisions a day takes 2,300 years to fill it). Each
/// level costs two reads, found or not; a larger log's proofs are read exactly.
pub const CANDIDATE_LEVELS: u32 = 24;

/// The stored hashes a consistency proof from the tree of `old` leaves may need, whatever the
/// larger tree it runs to (of at most 2^[`CANDIDATE_LEVELS`] leaves), besides that tree's own
/// frontier: `old`'s frontier and, at every level, the complete subtree holding leaf `old - 1`
/// and the first one starting at or after leaf `old`. Every other hash of such a proof is a
/// root of the larger tree's frontier, which its log head holds. So they can be read before
/// the larger tree's size is known, beside its head, and the proof built with no second read.
/// They lie in at most 48 leaves' stored hashes (one batch read), by index, each once.
pub fn consistency_candidates(old: u64) -> Vec<u64> {
    // Past the levels covered no proof could be built from them: the caller reads exactly.
    if old == 0 || old >= 1 << CANDIDATE_LEVELS {
        return Vec::new();
    }
    let mut recorder = Recorder(Vec::new());
    subtrees(0, old, &mut recorder);
    let mut candidates = recorder.0;
    for level in 0..CANDIDATE_LEVELS {
        candidates.push(stored_hash_index(level, (old - 1) >> level));
        candidates.push(stored_hash_index(level, old.div_ceil(1 << level)));
    }
    candidates.sort_unstable();
    candidates.dedup();
    candidates
}

/// The hashes of the maximal complete subtrees of leaves `lo..hi`, left to right.
fn subtrees(lo: u64, hi: u64, source: &mut impl Subtrees) -> Vec<Hash> {
    let mut hashes = Vec::new();
    let mut start = lo;
    while start < hi {
        let aligned = if start == 0 {
            63
        } else {
            start.trailing_zeros()
        };
        let fits = 63 - (hi - start).leading_zeros();
        let level = aligned.min(fits);
        hashes.push(source.subtree(level, start >> level));
        start += 1 << level;
    }
    hashes
}

/// The largest power of two below `n` (`n > 1`).
fn split_point(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// The hash of leaves `lo..hi`: its maximal complete subtrees, left to right, folded from the
/// right. Only `hi` may be unaligned, as in every range the proofs ask for.
fn range_hash(lo: u64, hi: u64, source: &mut impl Subtrees) -> Hash {
    let mut hashes = subtrees(lo, hi, source).into_iter().rev();
    let last = hashes.next().unwrap_or_else(empty_root);
    hashes.fold(last, |right, left| node_hash(&left, &right))
}

/// RFC 9162 §2.1.3.1 `PATH(m, D[lo:hi])`.
fn path(m: u64, lo: u64, hi: u64, source: &mut impl Subtrees) -> Vec<Hash> {
    let n = hi - lo;
    if n <= 1 {
        return Vec::new();
    }
    let k = split_point(n);
    if m < lo + k {
        let mut proof = path(m, lo, lo + k, source);
        proof.push(range_hash(lo + k, hi, source));
        proof
    } else {
        let mut proof = path(m, lo + k, hi, source);
        proof.push(range_hash(lo, lo + k, source));
        proof
    }
}

/// RFC 9162 §2.1.4.1 `SUBPROOF(m, D[lo:hi], b)`, with `m` counted from `lo`'s tree start.
fn subproof(m: u64, lo: u64, hi: u64, complete: bool, source: &mut impl Subtrees) -> Vec<Hash> {
    let n = hi - lo;
    if m == n {
        return if complete {
            Vec::new()
        } else {
            vec![range_hash(lo, hi, source)]
        };
    }
    let k = split_point(n);
    if m <= k {
        let mut proof = subproof(m, lo, lo + k, complete, source);
        proof.push(range_hash(lo + k, hi, source));
        proof
    } else {
        let mut proof = subproof(m - k, lo + k, hi, false, source);
        proof.push(range_hash(lo, lo + k, source));
        proof
    }
}

/// The root that `proof` leads to from `leaf` at `index` in a tree of `size` (RFC 9162
/// §2.1.3.2), or `None` when the proof cannot be one for that position.
pub fn root_from_inclusion(index: u64, size: u64, leaf: &Hash, proof: &[Hash]) -> Option<Hash> {
    if index >= size {
        return None;
    }
    let (mut fn_, mut sn, mut r) = (index, size - 1, *leaf);
    for p in proof {
        if sn == 0 {
            return None;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    (sn == 0).then_some(r)
}

/// Whether `proof` shows the tree `(old, old_root)` to be a prefix of `(new, new_root)`
/// (RFC 9162 §2.1.4.2).
pub fn verify_consistency(
    old: u64,
    old_root: &Hash,
    new: u64,
    new_root: &Hash,
    proof: &[Hash],
) -> bool {
    if new < old {
        return false;
    }
    if old == new {
        return proof.is_empty() && old_root == new_root;
    }
    if old == 0 {
        return proof.is_empty();
    }
    if proof.is_empty() {
        return false;
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if old.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let (mut fn_, mut sn) = (old - 1, new - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (path[0], path[0]);
    for c in &path[1..] {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    sn == 0 && fr == *old_root && sr == *new_root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_hash_indexes_are_gos() {
        // sumdb/tlog numbers: leaf 0 → 0, leaf 1 → 1, node (1,0) → 2, leaf 2 → 3, leaf 3 → 4,
        // node (1,1) → 5, node (2,0) → 6, leaf 4 → 7.
        let expected = [
            (0, 0, 0),
            (0, 1, 1),
            (1, 0, 2),
            (0, 2, 3),
            (0, 3, 4),
            (1, 1, 5),
            (2, 0, 6),
            (0, 4, 7),
        ];
        for (level, index, stored) in expected {
            assert_eq!(
                stored_hash_index(level, index),
                stored,
                "({level}, {index})"
            );
        }
        assert_eq!(
            (0..=8).map(stored_hash_count).collect::<Vec<_>>(),
            vec![0, 1, 3, 4, 7, 8, 10, 11, 15]
        );
    }

    #[test]
    fn a_consistency_proof_needs_only_the_old_trees_candidates_and_the_new_trees_frontier() {
        for old in 1..160u64 {
            let candidates = consistency_candidates(old);
            for new in old..600 {
                let frontier = Plan::frontier(new);
                for needed in Plan::consistency(old, new).needed() {
                    assert!(
                        candidates.binary_search(needed).is_ok()
                            || frontier.needed().contains(needed),
                        "{old} -> {new}: stored hash {needed}"
                    );
                }
            }
        }
        // A large tree, near the levels covered.
        let old = (1 << CANDIDATE_LEVELS) - 12_345;
        let candidates = consistency_candidates(old);
        for new in [
            old + 1,
            old + 7,
            (1 << CANDIDATE_LEVELS) - 1,
            1 << CANDIDATE_LEVELS,
        ] {
            let frontier = Plan::frontier(new);
            for needed in Plan::consistency(old, new).needed() {
                assert!(
                    candidates.binary_search(needed).is_ok() || frontier.needed().contains(needed)
                );
            }
        }
    }

    #[test]
    fn the_candidates_fit_one_batch_read_and_none_are_named_past_the_levels_covered() {
        for old in [1, 2, 3, 1000, (1 << 23) + 1, (1 << CANDIDATE_LEVELS) - 1] {
            let mut leaves: Vec<u64> = consistency_candidates(old)
                .into_iter()
                .map(|stored| leaf_storing(stored).0)
                .collect();
            leaves.dedup();
            assert!(
                !leaves.is_empty() && leaves.len() <= 48,
                "{old}: {} leaves",
                leaves.len()
            );
        }
        assert!(consistency_candidates(0).is_empty());
        assert!(consistency_candidates(1 << CANDIDATE_LEVELS).is_empty());
        assert!(consistency_candidates(u64::MAX).is_empty());
    }

    #[test]
    fn an_append_stores_its_leaf_and_the_nodes_it_completes_at_consecutive_indexes() {
        let mut frontier = Frontier::new();
        for n in 0..64u64 {
            let stored = frontier.append(leaf_hash(&n.to_le_bytes()));
            assert_eq!(stored[0].0, stored_hash_count(n), "leaf {n}");
            for pair in stored.windows(2) {
                assert_eq!(pair[1].0, pair[0].0 + 1);
            }
            assert_eq!(
                stored.last().unwrap().0 + 1,
                stored_hash_count(n + 1),
                "after leaf {n}"
            );
        }
        for stored in 0..stored_hash_count(64) {
            let (leaf, offset) = leaf_storing(stored);
            assert_eq!(stored_hash_count(leaf) + offset as u64, stored);
            assert!(
                stored < stored_hash_count(leaf + 1),
                "{stored} belongs to leaf {leaf}"
            );
        }
        assert!(Frontier::from_parts(5, vec![[0; 32]]).is_err());
        assert!(Frontier::from_parts(5, vec![[0; 32]; 2]).is_ok());
    }

    /// The frontier before leaf `start` and the leaves from `start` on hold every stored hash
    /// an inclusion proof of those leaves needs: the proofs built from them are the proofs
    /// built from all the log's stored hashes.
    #[test]
    fn a_frontier_and_the_leaves_after_it_prove_those_leaves() {
        for size in 1..40u64 {
            let mut all = HashMap::new();
            let mut frontier = Frontier::new();
            let mut frontiers = vec![frontier.clone()];
            for n in 0..size {
                all.extend(frontier.append(leaf_hash(&n.to_le_bytes())));
                frontiers.push(frontier.clone());
            }
            for start in 0..size {
                let mut window = frontiers[start as usize].clone();
                let mut known: HashMap<u64, Hash> = window.stored().into_iter().collect();
                for n in start..size {
                    known.extend(window.append(leaf_hash(&n.to_le_bytes())));
                }
                assert_eq!(window.root(), frontier.root());
                for index in start..size {
                    let plan = Plan::inclusion(index, size);
                    assert_eq!(
                        plan.build(&known),
                        plan.build(&all),
                        "leaf {index} of {size}, window from {start}"
                    );
                }
            }
        }
    }
}
