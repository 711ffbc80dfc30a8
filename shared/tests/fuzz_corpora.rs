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
    // A world of their own: http_request_corpus, running beside this test, replays the same
    // seeds into the shared world, and a proposal it makes first would spend seed 6's turn.
    let seeds = inputs("corpus", "http_request");
    let [initialize, proposal, client_credentials] = [0, 6, 12].map(|index| &seeds[index].1[..]);
    let mut answers = fuzzing::fresh_http_answers(&[initialize, proposal, client_credentials])
        .into_iter()
        .map(|answer| answer.expect("a request"));
    let (status, body) = answers.next().unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("protocolVersion"), "initialize: {body}");
    let (_, body) = answers.next().unwrap();
    assert!(
        body.contains(r#""outcome":"placed""#),
        "a signed proposal: {body}"
    );
    let (status, body) = answers.next().unwrap();
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

#[test]
fn tlog_corpus() {
    replay("tlog", fuzzing::tlog);
}

#[test]
fn witness_corpus() {
    replay("witness", fuzzing::witness);
}

/// The witness seeds were signed in Python (fuzz/make_seeds.py): the first is cosigned, so the
/// fuzzer starts past the signature check.
#[test]
fn the_witness_seeds_reach_a_cosignature() {
    let seeds = inputs("corpus", "witness");
    let (_, first) = &seeds[0];
    let text = std::str::from_utf8(&first[1..]).unwrap();
    let witness = hearth_core::witness::Witness::new(
        hearth_core::tlog::cosignature::Cosigner::from_seed("w", &[5; 32]).unwrap(),
        hearth_core::witness::WitnessState::open(Path::new(":memory:")).unwrap(),
    );
    witness
        .state()
        .trust(&hearth_core::witness::Trust {
            vkey: hearth_core::tlog::note::NoteSigner::from_seed(
                "fuzz.example/hearth-log/v1",
                &fuzzing::LOG_SEED,
            )
            .unwrap()
            .vkey(),
            origin_prefix: "fuzz.example/".into(),
            max_logs: 4,
        })
        .unwrap();
    assert_eq!(witness.add_checkpoint(text, 1_800_000_000).status, 200);
}

/// The tlog seeds were signed in Python (`cryptography`, fuzz/make_seeds.py); the Rust side
/// must verify them, or the fuzzer never reaches the verified branch. A second Ed25519
/// implementation agreeing with ed25519-dalek on the same seed, too.
#[test]
fn the_tlog_seeds_hold_a_proof_the_fuzz_log_key_signed() {
    use hearth_core::tlog::checkpoint::{Checkpoint, parse_proof};
    use hearth_core::tlog::note;
    use hearth_core::tlog::tree::{leaf_hash, root_from_inclusion};
    use hearth_core::transparency::LogKeys;

    let keys = LogKeys::new(fuzzing::LOG_HOST, &[(1, fuzzing::LOG_SEED)]).unwrap();
    let seeds = inputs("corpus", "tlog");
    let proof = seeds
        .iter()
        .find_map(|(_, bytes)| {
            let text = std::str::from_utf8(bytes).ok()?;
            text.starts_with("c2sp.org/tlog-proof@v1\nindex 0\n")
                .then(|| text.to_owned())
        })
        .expect("a proof seed");
    let file = parse_proof(&proof).unwrap();
    let signed = note::verify(file.checkpoint, keys.verifiers()).expect("signed by the fuzz key");
    let checkpoint = Checkpoint::parse(signed).unwrap();
    assert_eq!(
        root_from_inclusion(0, checkpoint.size, &leaf_hash(&[0; 32]), &file.path),
        Some(checkpoint.root)
    );
}
