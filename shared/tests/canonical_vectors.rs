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

/// The same vectors written as Scholia notation: wire attribute names (`for`, not `for_ref`),
/// every value a string, as a parser sees them. The parser path must type them as the
/// reference implementation's atom classes do and reach the same content address.
#[test]
fn every_golden_canonical_id_reproduces_from_notation() {
    use hearth_core::scholia::catalog;
    use hearth_core::scholia::parser::parse;
    use hearth_core::scholia::validator::canonical_id_of;

    let doc = read(vectors_dir().join("scholialang/canonical_id_golden.json"));
    for vector in doc["vectors"].as_array().unwrap() {
        let kind = vector["kind"].as_str().unwrap();
        let spec = catalog::atom(kind).expect("a known kind");
        let mut attributes = String::new();
        let mut content = String::new();
        for (field, value) in vector["kwargs"].as_object().unwrap() {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Array(items) => items
                    .iter()
                    .map(|item| item.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            if field == "content" {
                content = text;
                continue;
            }
            let wire = spec
                .attributes
                .iter()
                .find(|attr| attr.field == field)
                .map_or(field.as_str(), |attr| attr.name);
            attributes.push_str(&format!(" {wire}=\"{text}\""));
        }
        let snippet = format!("<{kind}{attributes}>{content}</{kind}>");
        let node = &parse(&snippet).unwrap()[0];
        assert_eq!(
            canonical_id_of(node),
            vector["expected_canonical_id"].as_str().unwrap(),
            "{snippet}"
        );
    }
}
