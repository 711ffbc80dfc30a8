//! The transparency log's building blocks against published vectors and a naive model:
//! RFC 6962 roots and proofs from transparency-dev/merkle (up to 8 leaves), signed notes from
//! C2SP and Go's sumdb/note, and every tree size up to 300 against a recursive tree written
//! straight from RFC 9162's definitions. See `tests/vectors/tlog/NOTICE.md` for the sources.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hearth_core::tlog::checkpoint::{Checkpoint, parse_proof, proof_text};
use hearth_core::tlog::note::{self, NoteError, NoteSigner, NoteVerifier};
use hearth_core::tlog::tree::{
    Frontier, Hash, Plan, empty_root, leaf_hash, node_hash, root_from_inclusion, verify_consistency,
};
use serde_json::Value;

fn vectors(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/vectors/tlog")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn hash(hex_text: &Value) -> Hash {
    let mut hash = [0; 32];
    hex::decode_to_slice(hex_text.as_str().unwrap(), &mut hash).unwrap();
    hash
}

/// A tree kept the way the log keeps it: a frontier, and every stored hash by index.
struct Stored {
    frontier: Frontier,
    hashes: HashMap<u64, Hash>,
    roots: Vec<Hash>,
}

impl Stored {
    fn of(leaves: &[Vec<u8>]) -> Self {
        let mut frontier = Frontier::new();
        let mut hashes = HashMap::new();
        let mut roots = vec![frontier.root()];
        for leaf in leaves {
            hashes.extend(frontier.append(leaf_hash(leaf)));
            roots.push(frontier.root());
        }
        Self {
            frontier,
            hashes,
            roots,
        }
    }

    fn prove(&self, plan: &Plan) -> Vec<Hash> {
        for index in plan.needed() {
            assert!(
                self.hashes.contains_key(index),
                "stored hash {index} exists"
            );
        }
        plan.build(&self.hashes).unwrap()
    }
}

#[test]
fn roots_and_proofs_match_the_transparency_dev_vectors() {
    let vectors = vectors("merkle.json");
    let leaves: Vec<Vec<u8>> = vectors["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|leaf| hex::decode(leaf.as_str().unwrap()).unwrap())
        .collect();
    let stored = Stored::of(&leaves);
    for (size, root) in vectors["roots"].as_object().unwrap() {
        let size: usize = size.parse().unwrap();
        assert_eq!(stored.roots[size], hash(root), "root of {size}");
        assert_eq!(
            stored.prove(&Plan::root(size as u64)),
            vec![hash(root)],
            "an earlier root from stored hashes"
        );
    }
    for case in vectors["inclusion"].as_array().unwrap() {
        let (index, size) = (
            case["leaf_index"].as_u64().unwrap(),
            case["tree_size"].as_u64().unwrap(),
        );
        let expected: Vec<Hash> = case["path"].as_array().unwrap().iter().map(hash).collect();
        assert_eq!(
            stored.prove(&Plan::inclusion(index, size)),
            expected,
            "PATH({index}, {size})"
        );
        let leaf = leaf_hash(&leaves[index as usize]);
        assert_eq!(
            root_from_inclusion(index, size, &leaf, &expected),
            Some(stored.roots[size as usize])
        );
    }
    for case in vectors["consistency"].as_array().unwrap() {
        let (old, new) = (
            case["size1"].as_u64().unwrap(),
            case["size2"].as_u64().unwrap(),
        );
        let expected: Vec<Hash> = case["proof"].as_array().unwrap().iter().map(hash).collect();
        assert_eq!(
            stored.prove(&Plan::consistency(old, new)),
            expected,
            "PROOF({old}, {new})"
        );
        assert!(verify_consistency(
            old,
            &stored.roots[old as usize],
            new,
            &stored.roots[new as usize],
            &expected
        ));
    }
}

// ---- The naive model: RFC 9162 §2.1.1, §2.1.3.1 and §2.1.4.1, recursively over leaf data ----

fn mth(leaves: &[Vec<u8>]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaf_hash(&leaves[0]),
        n => {
            let k = largest_power_of_two_below(n);
            node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
        }
    }
}

fn largest_power_of_two_below(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

fn naive_path(m: usize, leaves: &[Vec<u8>]) -> Vec<Hash> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = largest_power_of_two_below(n);
    if m < k {
        let mut path = naive_path(m, &leaves[..k]);
        path.push(mth(&leaves[k..]));
        path
    } else {
        let mut path = naive_path(m - k, &leaves[k..]);
        path.push(mth(&leaves[..k]));
        path
    }
}

fn naive_subproof(m: usize, leaves: &[Vec<u8>], complete: bool) -> Vec<Hash> {
    let n = leaves.len();
    if m == n {
        return if complete {
            Vec::new()
        } else {
            vec![mth(leaves)]
        };
    }
    let k = largest_power_of_two_below(n);
    if m <= k {
        let mut proof = naive_subproof(m, &leaves[..k], complete);
        proof.push(mth(&leaves[k..]));
        proof
    } else {
        let mut proof = naive_subproof(m - k, &leaves[k..], false);
        proof.push(mth(&leaves[..k]));
        proof
    }
}

#[test]
fn every_tree_up_to_300_leaves_agrees_with_the_recursive_definitions() {
    let leaves: Vec<Vec<u8>> = (0..300u32)
        .map(|i| format!("leaf {i}").into_bytes())
        .collect();
    let stored = Stored::of(&leaves);
    assert_eq!(stored.roots[0], empty_root(), "size 0: the hash of nothing");
    assert_eq!(
        stored.prove(&Plan::consistency(0, 5)),
        Vec::<Hash>::new(),
        "from the empty tree there is nothing to prove"
    );
    for size in 1..=300usize {
        let prefix = &leaves[..size];
        let root = mth(prefix);
        assert_eq!(stored.roots[size], root, "root of {size}");
        // Every leaf's path in some sizes, and the newest leaf's in every size (the path an
        // append hands out, which is the frontier before it).
        let indexes: Vec<usize> = if size % 37 == 0 || size < 20 {
            (0..size).collect()
        } else {
            vec![0, size / 2, size - 1]
        };
        for index in indexes {
            let path = stored.prove(&Plan::inclusion(index as u64, size as u64));
            assert_eq!(path, naive_path(index, prefix), "PATH({index}, {size})");
            let leaf = leaf_hash(&leaves[index]);
            assert_eq!(
                root_from_inclusion(index as u64, size as u64, &leaf, &path),
                Some(root)
            );
        }
        let before = Stored::of(&leaves[..size - 1]);
        assert_eq!(
            stored.prove(&Plan::frontier(size as u64 - 1)),
            before.frontier.hashes(),
            "an earlier tree's frontier from stored hashes ({})",
            size - 1
        );
        assert_eq!(
            before.frontier.next_inclusion_proof(),
            naive_path(size - 1, prefix),
            "an append's path is the frontier before it ({size})"
        );
        for old in [1, size / 3, size / 2, size - 1, size] {
            if old == 0 {
                continue;
            }
            let proof = stored.prove(&Plan::consistency(old as u64, size as u64));
            let expected = if old == size {
                Vec::new()
            } else {
                naive_subproof(old, prefix, true)
            };
            assert_eq!(proof, expected, "PROOF({old}, {size})");
            assert!(verify_consistency(
                old as u64,
                &stored.roots[old],
                size as u64,
                &root,
                &proof
            ));
        }
    }
}

#[test]
fn proofs_catch_every_tamper() {
    let leaves: Vec<Vec<u8>> = (0..13u32).map(|i| vec![i as u8; 3]).collect();
    let stored = Stored::of(&leaves);
    let root = stored.roots[13];
    let path = stored.prove(&Plan::inclusion(5, 13));
    let leaf = leaf_hash(&leaves[5]);
    // An edited leaf, an edited path, the wrong index, and a path for a smaller tree.
    assert_ne!(
        root_from_inclusion(5, 13, &leaf_hash(b"edited"), &path),
        Some(root)
    );
    let mut edited = path.clone();
    edited[1][0] ^= 1;
    assert_ne!(root_from_inclusion(5, 13, &leaf, &edited), Some(root));
    assert_ne!(root_from_inclusion(4, 13, &leaf, &path), Some(root));
    assert_eq!(root_from_inclusion(13, 13, &leaf, &path), None);
    assert_eq!(
        root_from_inclusion(5, 13, &leaf, &path[..path.len() - 1]),
        None
    );
    // A truncated tree (the newest entry deleted), a rewritten middle entry with every hash
    // recomputed, a fork of the same size, and a smaller size after a larger one.
    let old = 13;
    let truncated = Stored::of(&leaves[..12]);
    let proof = stored.prove(&Plan::consistency(old, 13));
    assert!(verify_consistency(old, &root, 13, &root, &proof));
    assert!(!verify_consistency(
        13,
        &root,
        12,
        &truncated.roots[12],
        &[]
    ));
    let mut rewritten_leaves = leaves.clone();
    rewritten_leaves[6] = b"rewritten".to_vec();
    rewritten_leaves.push(b"new".to_vec());
    let rewritten = Stored::of(&rewritten_leaves);
    let forged = rewritten.prove(&Plan::consistency(13, 14));
    assert!(!verify_consistency(
        13,
        &root,
        14,
        &rewritten.roots[14],
        &forged
    ));
    assert!(!verify_consistency(
        13,
        &root,
        13,
        &rewritten.roots[13],
        &[]
    ));
}

#[test]
fn signed_notes_from_c2sp_and_go_verify_and_go_s_key_signs_them_again() {
    let vectors = vectors("notes.json");
    for vector in vectors["vectors"].as_array().unwrap() {
        let verifier = NoteVerifier::parse(vector["vkey"].as_str().unwrap()).unwrap();
        let note = vector["note"].as_str().unwrap();
        let text = note::verify(note, std::slice::from_ref(&verifier))
            .unwrap_or_else(|e| panic!("{}: {e}", vector["name"]));
        assert!(note.starts_with(text));
        let mut tampered = note.replacen("you", "You", 1);
        if tampered == note {
            tampered = note.replacen("example", "Example", 1);
        }
        assert!(
            matches!(
                note::verify(&tampered, std::slice::from_ref(&verifier)),
                Err(NoteError::BadSignature(_))
            ),
            "{}",
            vector["name"]
        );
        if let Some(skey) = vector["skey"].as_str() {
            // PRIVATE+KEY+<name>+<id>+base64(0x01 || seed)
            let parts: Vec<&str> = skey.splitn(5, '+').collect();
            let seed = STANDARD.decode(parts[4]).unwrap();
            let signer = NoteSigner::from_seed(parts[2], seed[1..].try_into().unwrap()).unwrap();
            assert_eq!(signer.vkey(), vector["vkey"].as_str().unwrap());
            assert_eq!(
                note::sign(text, &[&signer]),
                note,
                "Ed25519 is deterministic"
            );
        }
    }
    let other = NoteVerifier::parse(
        "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
    )
    .unwrap();
    let go = vectors["vectors"][1]["note"].as_str().unwrap();
    assert_eq!(
        note::verify(go, &[other]),
        Err(NoteError::NoKnownSignature),
        "another key's note"
    );
    for bad in [
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+c74f20a3+AhpcFQcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+c74f20a3",
    ] {
        assert!(NoteVerifier::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_signed_checkpoint_and_its_proof_file_verify_together() {
    let leaves: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 32]).collect();
    let stored = Stored::of(&leaves);
    let signer = NoteSigner::from_seed("hearth.example/hearth-log-1", &[9; 32]).unwrap();
    let checkpoint = Checkpoint {
        origin: "hearth.example/hearth/abc/decisions/1".into(),
        size: 6,
        root: stored.roots[6],
    };
    let signed = note::sign(&checkpoint.text(), &[&signer]);
    let file = proof_text(5, &stored.prove(&Plan::inclusion(5, 6)), &signed);
    let parsed = parse_proof(&file).unwrap();
    let verifier = NoteVerifier::parse(&signer.vkey()).unwrap();
    let text = note::verify(parsed.checkpoint, &[verifier]).unwrap();
    let read = Checkpoint::parse(text).unwrap();
    assert_eq!(read, checkpoint);
    assert_eq!(
        root_from_inclusion(
            parsed.index,
            read.size,
            &leaf_hash(&leaves[5]),
            &parsed.path
        ),
        Some(read.root)
    );
    // Two signers during a rotation: either key verifies the note.
    let next = NoteSigner::from_seed("hearth.example/hearth-log-2", &[10; 32]).unwrap();
    let both = note::sign(&checkpoint.text(), &[&signer, &next]);
    for key in [&signer, &next] {
        let verifier = NoteVerifier::parse(&key.vkey()).unwrap();
        assert!(note::verify(&both, &[verifier]).is_ok());
    }
}
