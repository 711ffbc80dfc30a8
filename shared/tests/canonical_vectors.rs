//! The shared vectors pin Rust's canonical JSON and hashes to Python's, byte for byte, and the
//! Scholialang golden vectors pin `canonical_id` to the reference implementation.

use std::path::PathBuf;

use hearth_core::chain::{sha256_hex, to_canonical_string};
use hearth_core::scholia::canonical_id;
use serde_json::{Map, Value};

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors")
}

fn read(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("vector file is JSON")
}

#[test]
fn canonical_json_matches_python_byte_for_byte() {
    let doc = read(vectors_dir().join("canonical.json"));
    let vectors = doc["vectors"].as_array().expect("vectors");
    assert!(vectors.len() >= 15);
    for vector in vectors {
        let name = vector["name"].as_str().unwrap();
        let input: Value = serde_json::from_str(vector["json"].as_str().unwrap()).unwrap();
        let canonical = to_canonical_string(&input);
        assert_eq!(
            canonical,
            vector["canonical"].as_str().unwrap(),
            "vector {name:?}"
        );
        assert_eq!(
            sha256_hex(&canonical),
            vector["sha256"].as_str().unwrap(),
            "vector {name:?}"
        );
    }
}

#[test]
fn every_scholialang_golden_canonical_id_reproduces() {
    let doc = read(vectors_dir().join("scholialang/canonical_id_golden.json"));
    let vectors = doc["vectors"].as_array().expect("vectors");
    assert_eq!(vectors.len(), 9);
    for vector in vectors {
        let kind = vector["kind"].as_str().unwrap();
        let mut attrs: Map<String, Value> = vector["kwargs"].as_object().unwrap().clone();
        let content = attrs
            .remove("content")
            .and_then(|c| c.as_str().map(String::from))
            .unwrap_or_default();
        assert_eq!(
            canonical_id(kind, &content, &attrs),
            vector["expected_canonical_id"].as_str().unwrap(),
            "golden vector for {kind}"
        );
    }
}
