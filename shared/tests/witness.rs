//! `hearth witness` as C2SP tlog-witness v1.0.0 says a witness answers `add-checkpoint`:
//! each status at its edge, through the HTTP router, over a real SQLite state.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hearth_core::tlog::checkpoint::Checkpoint;
use hearth_core::tlog::cosignature::{CosignatureVerifier, Cosigner};
use hearth_core::tlog::note::{NoteSigner, sign};
use hearth_core::tlog::tree::{Frontier, Hash, Plan, empty_root, leaf_hash};
use hearth_core::tlog::witness_request::AddCheckpoint;
use hearth_core::witness::state::origin_hash;
use hearth_core::witness::{MAX_BODY_BYTES, Trust, Witness, WitnessState, http};
use http_body_util::BodyExt;
use tower::ServiceExt;

const PREFIX: &str = "hearth.example/hearth/";

fn log_key() -> NoteSigner {
    NoteSigner::from_seed("hearth.example/hearth-log/v1", &[1; 32]).unwrap()
}

/// A log's trees: every size's root and the stored hashes proofs are built from.
struct Log {
    origin: String,
    roots: Vec<Hash>,
    stored: HashMap<u64, Hash>,
}

impl Log {
    fn new(origin: &str, leaves: usize, salt: u8) -> Self {
        let mut frontier = Frontier::new();
        let mut roots = vec![empty_root()];
        let mut stored = HashMap::new();
        for leaf in 0..leaves {
            for (index, hash) in frontier.append(leaf_hash(&[salt, leaf as u8])) {
                stored.insert(index, hash);
            }
            roots.push(frontier.root());
        }
        Self {
            origin: origin.into(),
            roots,
            stored,
        }
    }

    fn checkpoint(&self, size: u64, signer: &NoteSigner) -> String {
        let text = Checkpoint {
            origin: self.origin.clone(),
            size,
            root: self.roots[size as usize],
        }
        .text();
        sign(&text, &[signer])
    }

    fn body(&self, old: u64, size: u64) -> String {
        let proof = if old == 0 || old == size {
            Vec::new()
        } else {
            Plan::consistency(old, size).build(&self.stored).unwrap()
        };
        AddCheckpoint {
            old,
            proof,
            checkpoint: &self.checkpoint(size, &log_key()),
        }
        .text()
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    witness: Arc<Witness>,
}

fn cosigner() -> Cosigner {
    Cosigner::from_seed("witness.example/w1", &[7; 32]).unwrap()
}

fn fixture(max_logs: u32) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("witness.db");
    let state = WitnessState::open(&path).unwrap();
    state
        .trust(&Trust {
            vkey: log_key().vkey(),
            origin_prefix: PREFIX.into(),
            max_logs,
        })
        .unwrap();
    Fixture {
        _dir: dir,
        path,
        witness: Arc::new(Witness::new(cosigner(), state)),
    }
}

async fn post(witness: &Arc<Witness>, body: impl Into<Body>) -> (StatusCode, String, String) {
    let response = http::router(witness.clone())
        .oneshot(Request::post("/add-checkpoint").body(body.into()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        content_type,
        String::from_utf8(bytes.to_vec()).unwrap(),
    )
}

async fn get(witness: &Arc<Witness>, uri: &str) -> (StatusCode, String) {
    let response = http::router(witness.clone())
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

fn origin(log: &str, epoch: u64) -> String {
    format!("{PREFIX}{log}/decisions/{epoch}")
}

#[tokio::test]
async fn a_trusted_log_is_cosigned_from_zero_then_only_from_what_was_cosigned() {
    let fixture = fixture(16);
    let log = Log::new(&origin("aa", 1), 8, 0);
    let (status, content_type, body) = post(&fixture.witness, log.body(0, 3)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(content_type.starts_with("text/plain"));
    // The answer is one cosignature line over the checkpoint's text.
    let text = Checkpoint {
        origin: log.origin.clone(),
        size: 3,
        root: log.roots[3],
    }
    .text();
    let verifier = CosignatureVerifier::parse(&cosigner().vkey()).unwrap();
    assert!(body.ends_with('\n') && body.lines().count() == 1);
    assert!(verifier.verify_line(&body, &text).unwrap() > 1_700_000_000);

    // Extending it needs a proof from 3.
    let (status, _, body) = post(&fixture.witness, log.body(3, 7)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A stale old size is a 409 naming the size last cosigned, as text/x.tlog.size.
    let (status, content_type, body) = post(&fixture.witness, log.body(3, 8)).await;
    assert_eq!(
        (status, content_type.as_str(), body.as_str()),
        (StatusCode::CONFLICT, "text/x.tlog.size", "7\n")
    );
    // The same tree again is cosigned again.
    let (status, _, _) = post(&fixture.witness, log.body(7, 7)).await;
    assert_eq!(status, StatusCode::OK);

    // Monitors fetch the latest cosigned checkpoint by the origin's hash: the log's signature
    // and the witness's cosignature.
    let (status, note) = get(
        &fixture.witness,
        &format!("/{}/checkpoint", origin_hash(&log.origin)),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(note.starts_with(&format!("{}\n7\n", log.origin)));
    assert!(note.contains("\u{2014} hearth.example/hearth-log/v1 "));
    assert!(note.contains("\u{2014} witness.example/w1 "));
    let (status, _) = get(&fixture.witness, &format!("/{}/checkpoint", "0".repeat(64))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = get(&fixture.witness, "/not-a-hash/checkpoint").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn unknown_origins_are_404_and_untrusted_signatures_403() {
    let fixture = fixture(16);
    let elsewhere = Log::new("other.example/log", 2, 0);
    assert_eq!(
        post(&fixture.witness, elsewhere.body(0, 1)).await.0,
        StatusCode::NOT_FOUND
    );

    let log = Log::new(&origin("aa", 1), 2, 0);
    let stranger = NoteSigner::from_seed("hearth.example/hearth-log/v1", &[2; 32]).unwrap();
    let by_stranger = AddCheckpoint {
        old: 0,
        proof: vec![],
        checkpoint: &log.checkpoint(1, &stranger),
    }
    .text();
    assert_eq!(
        post(&fixture.witness, by_stranger).await.0,
        StatusCode::FORBIDDEN
    );
    // The trusted key's name and id with a broken signature: malformed, 403.
    let genuine = log.body(0, 1);
    let line = genuine.lines().last().unwrap();
    let encoded = line.rsplit(' ').next().unwrap();
    let mut blob = STANDARD.decode(encoded).unwrap();
    blob[10] ^= 1;
    let broken = genuine.replace(encoded, &STANDARD.encode(blob));
    assert_eq!(
        post(&fixture.witness, broken).await.0,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn bad_requests_are_400_at_their_edges() {
    let fixture = fixture(16);
    let log = Log::new(&origin("aa", 1), 8, 0);
    assert_eq!(
        post(&fixture.witness, "old 0\n").await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        post(&fixture.witness, vec![0xff, 0xfe]).await.0,
        StatusCode::BAD_REQUEST
    );
    // An old size past the checkpoint's.
    let past = log.body(0, 2).replacen("old 0", "old 3", 1);
    assert_eq!(
        post(&fixture.witness, past).await.0,
        StatusCode::BAD_REQUEST
    );
    // 63 proof lines are read (the old size is then stale: 409); 64 are refused.
    let line = format!("{}\n", STANDARD.encode([5u8; 32]));
    let checkpoint = log.checkpoint(2, &log_key());
    let lines = |count: usize| format!("old 1\n{}\n{checkpoint}", line.repeat(count));
    assert_eq!(
        post(&fixture.witness, lines(63)).await.0,
        StatusCode::CONFLICT
    );
    assert_eq!(
        post(&fixture.witness, lines(64)).await.0,
        StatusCode::BAD_REQUEST
    );
    // A body at the size limit is read; one byte more is refused unread.
    let at_limit = format!("old 0\n\n{}", "x".repeat(MAX_BODY_BYTES - 7));
    assert_eq!(at_limit.len(), MAX_BODY_BYTES);
    assert_eq!(
        post(&fixture.witness, at_limit.clone()).await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        post(&fixture.witness, format!("{at_limit}x")).await.0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
}

#[tokio::test]
async fn trees_that_do_not_extend_are_422_and_kept_as_evidence() {
    let fixture = fixture(16);
    let log = Log::new(&origin("aa", 1), 8, 0);
    let fork = Log::new(&origin("aa", 1), 8, 1);
    // A size-0 checkpoint must have the empty root.
    let empty_with_root = AddCheckpoint {
        old: 0,
        proof: vec![],
        checkpoint: &sign(
            &Checkpoint {
                origin: log.origin.clone(),
                size: 0,
                root: [9; 32],
            }
            .text(),
            &[&log_key()],
        ),
    }
    .text();
    assert_eq!(
        post(&fixture.witness, empty_with_root).await.0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    // From 0, a proof must be empty.
    let with_proof = AddCheckpoint {
        old: 0,
        proof: vec![[1; 32]],
        checkpoint: &log.checkpoint(2, &log_key()),
    }
    .text();
    assert_eq!(
        post(&fixture.witness, with_proof).await.0,
        StatusCode::UNPROCESSABLE_ENTITY
    );

    assert_eq!(
        post(&fixture.witness, log.body(0, 4)).await.0,
        StatusCode::OK
    );
    // A forked history: the same size, another root, claimed from the size cosigned.
    assert_eq!(
        post(&fixture.witness, fork.body(4, 4)).await.0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    // ... or from an older size: 409 with the size, and kept as a fork all the same.
    let (status, _, body) = post(&fixture.witness, fork.body(0, 4)).await;
    assert_eq!((status, body.as_str()), (StatusCode::CONFLICT, "4\n"));
    // A larger forked tree whose proof cannot start from the cosigned root.
    assert_eq!(
        post(&fixture.witness, fork.body(4, 6)).await.0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let evidence = fixture
        .witness
        .state()
        .evidence(&format!("{PREFIX}aa/decisions"))
        .unwrap();
    let reasons: Vec<&str> = evidence.iter().map(|(reason, _)| reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "inconsistent",
            "inconsistent",
            "inconsistent",
            "fork",
            "inconsistent"
        ]
    );
    // The honest log goes on.
    assert_eq!(
        post(&fixture.witness, log.body(4, 6)).await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_new_epoch_starts_from_zero_and_an_older_one_is_never_cosigned() {
    let fixture = fixture(16);
    let first = Log::new(&origin("aa", 1), 4, 0);
    let second = Log::new(&origin("aa", 2), 4, 2);
    assert_eq!(
        post(&fixture.witness, first.body(0, 3)).await.0,
        StatusCode::OK
    );
    assert_eq!(
        post(&fixture.witness, second.body(0, 1)).await.0,
        StatusCode::OK
    );
    let (status, _, body) = post(&fixture.witness, first.body(3, 4)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.contains("epoch 2"));
    // Monitors read every new log and epoch.
    let (status, events) = get(&fixture.witness, "/events").await;
    assert_eq!(status, StatusCode::OK);
    let events: serde_json::Value = serde_json::from_str(&events).unwrap();
    let kinds: Vec<(&str, &str)> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| {
            (
                event["kind"].as_str().unwrap(),
                event["origin"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("new_log", first.origin.as_str()),
            ("new_epoch", second.origin.as_str())
        ]
    );
    let (_, later) = get(&fixture.witness, "/events?after=1").await;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&later).unwrap()["events"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_prefix_holds_at_most_its_logs() {
    let fixture = fixture(2);
    for (index, id) in ["aa", "bb"].iter().enumerate() {
        let log = Log::new(&origin(id, 1), 2, index as u8);
        assert_eq!(
            post(&fixture.witness, log.body(0, 1)).await.0,
            StatusCode::OK
        );
    }
    let third = Log::new(&origin("cc", 1), 2, 3);
    let (status, _, body) = post(&fixture.witness, third.body(0, 1)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.contains("2 logs"), "{body}");
    // A new epoch of a log already held is not a new log.
    let next = Log::new(&origin("aa", 2), 2, 4);
    assert_eq!(
        post(&fixture.witness, next.body(0, 1)).await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn trust_applies_without_a_restart_and_a_restart_keeps_the_state() {
    let fixture = fixture(16);
    let other_prefix = Log::new("family.example/hearth/aa/ledger/1", 4, 0);
    assert_eq!(
        post(&fixture.witness, other_prefix.body(0, 2)).await.0,
        StatusCode::NOT_FOUND
    );
    // Another process (the `trust` command) writes to the same state.
    WitnessState::open(&fixture.path)
        .unwrap()
        .trust(&Trust {
            vkey: log_key().vkey(),
            origin_prefix: "family.example/hearth/".into(),
            max_logs: 16,
        })
        .unwrap();
    assert_eq!(
        post(&fixture.witness, other_prefix.body(0, 2)).await.0,
        StatusCode::OK
    );
    // A restarted witness knows the size it cosigned.
    let restarted = Arc::new(Witness::new(
        cosigner(),
        WitnessState::open(&fixture.path).unwrap(),
    ));
    let (status, _, body) = post(&restarted, other_prefix.body(0, 3)).await;
    assert_eq!((status, body.as_str()), (StatusCode::CONFLICT, "2\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_checkpoints_from_one_size_are_cosigned_once() {
    let fixture = fixture(16);
    let log = Log::new(&origin("aa", 1), 12, 0);
    assert_eq!(
        post(&fixture.witness, log.body(0, 2)).await.0,
        StatusCode::OK
    );
    // Two processes' worth of racers: each its own connection to the same database.
    let second = Arc::new(Witness::new(
        cosigner(),
        WitnessState::open(&fixture.path).unwrap(),
    ));
    let mut racers = Vec::new();
    for size in 3..=12u64 {
        let witness = if size % 2 == 0 {
            fixture.witness.clone()
        } else {
            second.clone()
        };
        let body = log.body(2, size);
        racers.push(tokio::spawn(async move { post(&witness, body).await.0 }));
    }
    let mut statuses = Vec::new();
    for racer in racers {
        statuses.push(racer.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::OK).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::OK || *s == StatusCode::CONFLICT)
    );
}

#[tokio::test]
async fn evidence_is_kept_up_to_its_limit_and_counted_past_it() {
    use hearth_core::witness::MAX_EVIDENCE_PER_LOG;
    let fixture = fixture(16);
    let log = Log::new(&origin("aa", 1), 2, 0);
    assert_eq!(
        post(&fixture.witness, log.body(0, 1)).await.0,
        StatusCode::OK
    );
    let state = fixture.witness.state();
    let key = format!("{PREFIX}aa/decisions");
    for _ in 0..MAX_EVIDENCE_PER_LOG {
        state.keep_evidence(&key, "fork", "body", 1).unwrap();
    }
    assert_eq!(
        state.evidence(&key).unwrap().len(),
        MAX_EVIDENCE_PER_LOG as usize
    );
    state.keep_evidence(&key, "fork", "body", 1).unwrap();
    assert_eq!(
        state.evidence(&key).unwrap().len(),
        MAX_EVIDENCE_PER_LOG as usize
    );
    assert_eq!(state.logs().unwrap()[0].evidence, MAX_EVIDENCE_PER_LOG + 1);
}
