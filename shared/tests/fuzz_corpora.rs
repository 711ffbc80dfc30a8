//! Every committed fuzz input, replayed through the same target functions the fuzzers run
//! (`hearth_core::fuzzing`): the seed corpora in `fuzz/corpus/<target>/` and every input that
//! once crashed a target, kept in `fuzz/regressions/<target>/`. Each must run without a panic.

use std::path::{Path, PathBuf};

use hearth_core::fuzzing;

fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut inputs: Vec<(PathBuf, Vec<u8>)> = entries
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    inputs.sort();
    inputs
}

fn replay(target: &str, run: fn(&[u8])) {
    let corpus = inputs("corpus", target);
    assert!(
        corpus.len() >= 5,
        "{target} has {} seeds; fuzz/make_seeds.py writes them",
        corpus.len()
    );
    for (path, bytes) in corpus.iter().chain(&inputs("regressions", target)) {
        let outcome = std::panic::catch_unwind(|| run(bytes));
        assert!(outcome.is_ok(), "{} panicked", path.display());
    }
}

#[test]
fn http_request_corpus() {
    replay("http_request", fuzzing::http_request);
}

#[test]
fn the_request_seeds_reach_past_authentication_and_signatures() {
    let seeds = inputs("corpus", "http_request");
    let answer = |index: usize| fuzzing::http_answer(&seeds[index].1).expect("a request");
    let (status, body) = answer(0);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("protocolVersion"), "initialize: {body}");
    let (_, body) = answer(6);
    assert!(
        body.contains(r#""outcome":"placed""#),
        "a signed proposal: {body}"
    );
    let (status, body) = answer(12);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("access_token"), "client credentials: {body}");
}

#[test]
fn tool_call_corpus() {
    replay("tool_call", fuzzing::tool_call);
}

#[test]
fn scholia_corpus() {
    replay("scholia", fuzzing::scholia);
}

#[test]
fn attestation_corpus() {
    replay("attestation", fuzzing::attestation);
}

#[test]
fn oauth_corpus() {
    replay("oauth", fuzzing::oauth);
}
