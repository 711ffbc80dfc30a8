//! Criterion benches for the chain engine: sealing one decision record (canonical JSON and
//! SHA-256) and verifying a full 25-record retained chain, as every read tool does.
//! Run with `cargo bench -p hearth-core --bench chain`.

use criterion::{Criterion, criterion_group, criterion_main};
use hearth_core::chain::{Sealed, to_canonical_string, verify};
use hearth_core::why::record::{NewDecision, build};
use serde_json::{Map, json};
use std::hint::black_box;

fn chain_of(length: u64) -> Vec<Sealed> {
    let mut inputs = Map::new();
    inputs.insert("brightness".into(), json!(20));
    inputs.insert("room".into(), json!("living room"));
    inputs.insert("ratio".into(), json!(0.25));
    let mut records: Vec<Sealed> = Vec::new();
    for seq in 1..=length {
        let decision = NewDecision {
            household_id: "bench-household",
            action: "dim lights",
            reason: "Movie time requested by the user — a typical one-sentence reason.",
            inputs: &inputs,
            approver: "Demo parent",
        };
        let prev = records.last().map(|r| r.hash.as_str());
        let value = build(&decision, seq, "2026-11-30T03:37:33.123Z", prev);
        records.push(Sealed::new(seq, &value));
    }
    records
}

fn benches(c: &mut Criterion) {
    let records = chain_of(25);
    let one: serde_json::Value = serde_json::from_str(&records[0].body).unwrap();
    c.bench_function("canonical_json_one_record", |b| {
        b.iter(|| to_canonical_string(black_box(&one)))
    });
    c.bench_function("seal_one_record", |b| {
        b.iter(|| Sealed::new(1, black_box(&one)))
    });
    let head = records.last().unwrap().hash.clone();
    c.bench_function("verify_25_record_chain", |b| {
        b.iter(|| verify(black_box(&records), None, black_box(&head)).unwrap())
    });
}

criterion_group!(chain_benches, benches);
criterion_main!(chain_benches);
