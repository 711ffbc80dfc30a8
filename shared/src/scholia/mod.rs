//! Scholialang v0.6 atoms as Hearth stores them, and their content address (`canonical_id`).
//!
//! `canonical_id` is defined in §10.1 of the Scholialang v0.6 specification (CC-BY-4.0, Doug
//! Fir Labs): `"sha256:"` plus the first 12 hex characters of SHA-256 over the canonical JSON of
//! `{kind, content.strip(), attrs}`, where `attrs` drops provenance (`timestamp`, `wall_clock`,
//! `run_id`, `sequence`, `instance`), base bookkeeping, and empty or null values.

pub mod catalog;
pub mod parser;
pub mod render;
pub mod validator;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::chain::{sha256_hex, to_canonical_string};

/// Attributes never folded into a `canonical_id`.
const EXCLUDED_ATTRS: &[&str] = &[
    "timestamp",
    "wall_clock",
    "run_id",
    "sequence",
    "instance",
    "id",
    "canonical_id",
    "content",
    "children",
    "operators",
    "kind",
];

/// One Scholia atom: its kind (`Action`, `Finding`, …), trace-local id, text content,
/// kind-specific attributes and the content address stamped from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Atom {
    pub kind: String,
    pub id: String,
    pub content: String,
    pub attrs: Map<String, Value>,
    pub canonical_id: String,
}

impl Atom {
    /// Builds an atom and stamps its `canonical_id`.
    pub fn new(kind: &str, id: String, content: String, attrs: Map<String, Value>) -> Self {
        let canonical_id = canonical_id(kind, &content, &attrs);
        Self {
            kind: kind.to_owned(),
            id,
            content,
            attrs,
            canonical_id,
        }
    }
}

/// Computes the §10.1 content address of an atom.
pub fn canonical_id(kind: &str, content: &str, attrs: &Map<String, Value>) -> String {
    let hashed_attrs: Map<String, Value> = attrs
        .iter()
        .filter(|(name, value)| !EXCLUDED_ATTRS.contains(&name.as_str()) && !is_empty(value))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let payload = json!({
        "kind": kind,
        "content": python_strip(content),
        "attrs": hashed_attrs,
    });
    let digest = sha256_hex(to_canonical_string(&payload));
    format!("sha256:{}", &digest[..12])
}

/// Free text made safe to embed in atom content: a space goes between any upper-case word and
/// a `:` or `(` right after it, so that nothing a person wrote ("NOTE: …", "REFER:X") reads as
/// an operator or a reference. Text without such a token is returned unchanged.
pub fn inert(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut cuts = Vec::new();
    let mut start = None;
    for (index, byte) in bytes.iter().enumerate() {
        match (
            byte.is_ascii_uppercase() || byte.is_ascii_digit() || *byte == b'_',
            start,
        ) {
            (true, None) if byte.is_ascii_uppercase() => {
                let boundary = index == 0
                    || !(bytes[index - 1].is_ascii_alphanumeric() || bytes[index - 1] == b'_');
                start = boundary.then_some(index);
            }
            (true, _) => {}
            (false, Some(word_start)) => {
                if index - word_start >= 2 && matches!(byte, b':' | b'(') {
                    cuts.push(index);
                }
                start = None;
            }
            (false, None) => {}
        }
    }
    if cuts.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + cuts.len());
    let mut last = 0;
    for cut in cuts {
        out.push_str(&text[last..cut]);
        out.push(' ');
        last = cut;
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

/// Python's `str.strip()`: Rust's `trim` plus the four ASCII information separators
/// (U+001C..U+001F) that Python also counts as whitespace.
pub fn python_strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_text_has_no_operator_tokens() {
        assert_eq!(inert("Movie time requested"), "Movie time requested");
        assert_eq!(
            inert("NOTE: see REFER:F_9 and FORALL(x)"),
            "NOTE : see REFER :F_9 and FORALL (x)"
        );
        assert_eq!(
            inert("ratio 3:4, A: b, xREFER:y"),
            "ratio 3:4, A: b, xREFER:y"
        );
    }

    #[test]
    fn strip_matches_python() {
        assert_eq!(python_strip("\u{1c}\t x y \u{a0}\u{2028}"), "x y");
    }

    #[test]
    fn provenance_and_empty_attrs_do_not_change_the_id() {
        let bare = canonical_id("Action", "dim lights", &Map::new());
        let mut attrs = Map::new();
        attrs.insert("timestamp".into(), json!("2026-01-01T00:00:00Z"));
        attrs.insert("scope".into(), Value::Null);
        attrs.insert("note".into(), json!(""));
        assert_eq!(canonical_id("Action", "  dim lights\n", &attrs), bare);
    }
}
