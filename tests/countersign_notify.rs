//! Guardians hear about waiting requests: a request that starts waiting for a guardian is
//! POSTed, HMAC-signed, to a loopback receiver, with the household, the request, the
//! requester's role, the catalogue title and the total, never the words; a receiver that fails
//! or is not there changes nothing about the answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use hearth_core::auth::Caller;
use hearth_core::auth::attestation::{Attestation, HostClaim};
use hearth_core::clock::SystemClock;
use hearth_core::countersign::CountersignService;
use hearth_core::countersign::household::HouseholdData;
use hearth_core::countersign::judge::rules::RulesJudge;
use hearth_core::countersign::ledger::{Ledger, Status};
use hearth_core::countersign::notify::{Notifier, SIGNATURE_HEADER, sign};
use hearth_core::secret::Secret;
use hearth_core::store::sqlite::SqliteStore;
use serde_json::Value;

const KEY: &str = "the household's notification key";

type Received = Arc<Mutex<Vec<(HeaderMap, Vec<u8>)>>>;

/// A receiver on loopback that answers `status` and keeps what it was sent.
async fn receiver(status: StatusCode) -> (String, Received) {
    let received: Received = Arc::default();
    let kept = received.clone();
    let app = Router::new().route(
        "/notify",
        post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push((headers, body.to_vec()));
                status
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/notify", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

fn service(url: &str, dir: &tempfile::TempDir) -> CountersignService {
    let store = Arc::new(SqliteStore::open(&dir.path().join("notify.db")).unwrap());
    CountersignService::new(
        Arc::new(HouseholdData::built_in().unwrap()),
        Ledger::new(store.clone(), Arc::new(SystemClock)),
        Arc::new(RulesJudge),
        store.clone(),
        store,
    )
    .with_notifier(Arc::new(Notifier::new(
        url.to_owned(),
        Secret::new(KEY),
        Duration::from_millis(500),
    )))
}

fn speaking(member: &str, turn: &str, words: &str) -> Caller {
    Caller {
        scope: "notified".into(),
        household: None,
        host: HostClaim::Verified(Attestation {
            member_id: member.into(),
            turn_id: turn.into(),
            utterances: vec![words.into()],
            issued_at: time::OffsetDateTime::now_utc().unix_timestamp(),
            answering: None,
        }),
        read_ahead: None,
    }
}

/// Waits (at most two seconds) until the receiver holds `count` notifications.
async fn until_received(received: &Received, count: usize) -> Vec<(HeaderMap, Vec<u8>)> {
    for _ in 0..200 {
        if received.lock().unwrap().len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    received.lock().unwrap().clone()
}

#[tokio::test]
async fn a_request_waiting_for_a_guardian_is_announced_signed_and_without_the_words() {
    let (url, received) = receiver(StatusCode::NO_CONTENT).await;
    let dir = tempfile::tempdir().unwrap();
    let service = service(&url, &dir);
    let asked = service
        .propose(
            &speaking("mia", "m-1", "I want the dino blocks, it's for school"),
            "dino-blocks",
            "standard",
            1,
        )
        .await
        .unwrap();
    assert_eq!(asked.status, Status::WaitingForGuardian);
    let got = until_received(&received, 1).await;
    assert_eq!(got.len(), 1, "one notification");
    let (headers, body) = &got[0];
    assert_eq!(headers[SIGNATURE_HEADER], sign(KEY, body).as_str());
    assert_eq!(headers["content-type"], "application/json");
    let notice: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(notice["household_id"], "maple-house");
    assert_eq!(notice["request_id"], asked.request_id.as_str());
    assert_eq!(notice["requester_role"], "child");
    assert_eq!(notice["title"], "Dino Building Blocks");
    assert_eq!(notice["total_cents"], 2499);
    assert!(notice["sent_at"].is_i64());
    assert_eq!(notice["kind"], "request");
    let fields: Vec<&String> = notice.as_object().unwrap().keys().collect();
    assert_eq!(fields.len(), 7, "{fields:?}");
    let text = String::from_utf8_lossy(body);
    assert!(!text.contains("school") && !text.contains("Mia"), "{text}");

    // An order that is placed, or waits only for its proposer, announces nothing: after both,
    // the next notice to arrive is the next guardian request's.
    let placed = service
        .propose(
            &speaking("dana", "d-1", "order two packs of double A batteries"),
            "aa-batteries",
            "12-pack",
            2,
        )
        .await
        .unwrap();
    assert_eq!(placed.status, Status::Placed);
    let held = service
        .propose(
            &speaking("dana", "d-2", "get the dino building blocks"),
            "dino-blocks",
            "standard",
            1,
        )
        .await
        .unwrap();
    assert_eq!(held.status, Status::WaitingForConfirmation);
    let next = service
        .propose(
            &speaking("leo", "l-1", "order a 4 pack of AA batteries"),
            "aa-batteries",
            "4-pack",
            1,
        )
        .await
        .unwrap();
    assert_eq!(next.status, Status::WaitingForGuardian);
    let got = until_received(&received, 2).await;
    let ids: Vec<Value> = got
        .iter()
        .map(|(_, body)| serde_json::from_slice::<Value>(body).unwrap()["request_id"].clone())
        .collect();
    assert_eq!(
        ids,
        [
            Value::from(asked.request_id.as_str()),
            Value::from(next.request_id.as_str())
        ]
    );
}

#[tokio::test]
async fn a_failing_or_absent_receiver_never_changes_the_answer() {
    let (failing, received) = receiver(StatusCode::INTERNAL_SERVER_ERROR).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let absent = format!("http://{}/notify", closed.local_addr().unwrap());
    drop(closed);
    for url in [failing, absent] {
        let dir = tempfile::tempdir().unwrap();
        let asked = service(&url, &dir)
            .propose(
                &speaking("leo", "l-1", "order a 4 pack of AA batteries"),
                "aa-batteries",
                "4-pack",
                1,
            )
            .await
            .unwrap();
        assert_eq!(asked.status, Status::WaitingForGuardian, "{url}");
    }
    assert_eq!(until_received(&received, 1).await.len(), 1);
}
