//! The canonical JSON writer against Python's `json.dumps(sort_keys=True, separators=(",",
//! ":"), ensure_ascii=True, allow_nan=False)` over generated values: floats of every
//! magnitude, integers at both ends of 64 bits, strings of any Unicode scalar (astral
//! characters, DEL, controls, quotes, backslashes), keys in any order, and deep nesting. The
//! values come from proptest's deterministic runner and go to one Python process in a batch.

use std::io::Write;
use std::process::{Command, Stdio};

use hearth_core::chain::to_canonical_string;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Map, Number, Value};

const PYTHON_CANONICAL: &str = r#"
import json, sys
for line in sys.stdin:
    value = json.loads(line)
    print(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False))
"#;

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            any::<char>(),
            Just('\u{7f}'),
            Just('"'),
            Just('\\'),
            Just('\u{1F600}'),
            Just('\u{10FFFF}'),
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap()),
        ],
        0..10,
    )
    .prop_map(String::from_iter)
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()),
        Just(0.0),
        Just(-0.0),
        Just(1e16),
        Just(1e-5),
        Just(123456789012345680.0),
        Just(f64::MIN_POSITIVE),
        Just(f64::MAX),
        (-1e6..1e6f64),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<u64>().prop_map(|n| Value::Number(n.into())),
        Just(Value::Number(u64::MAX.into())),
        Just(Value::Number(i64::MIN.into())),
        float().prop_map(|f| Value::Number(Number::from_f64(f).unwrap())),
        text().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// `depth` levels of alternating arrays and objects around a string.
fn nested(depth: usize) -> Value {
    (0..depth).fold(Value::String("\u{7f}\u{1F600}".into()), |inner, level| {
        if level % 2 == 0 {
            Value::Array(vec![inner])
        } else {
            Value::Object(Map::from_iter([("k\u{e9}".to_owned(), inner)]))
        }
    })
}

fn python_canonical(values: &[Value]) -> Vec<String> {
    let mut child = Command::new("python3")
        .args(["-c", PYTHON_CANONICAL])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut input = String::new();
    for value in values {
        input.push_str(&serde_json::to_string(value).unwrap());
        input.push('\n');
    }
    // Written from a thread while the output is read, so neither side's pipe fills up.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_canonical_writer_prints_what_python_prints_for_generated_values() {
    let mut runner = TestRunner::deterministic();
    let strategy = value();
    let mut values: Vec<Value> = (0..2_000)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();
    values.extend([nested(1), nested(64), nested(200)]);
    let python = python_canonical(&values);
    assert_eq!(python.len(), values.len());
    for (value, expected) in values.iter().zip(&python) {
        assert_eq!(
            &to_canonical_string(value),
            expected,
            "for {}",
            serde_json::to_string(value).unwrap()
        );
    }
}
