//! The `ChainStore`, `CounterStore`, `AccountStore`, `GrantStore`, `ClientStore` and
//! `CosignedStore` contract: behaviour every backend must show, written
//! once and run against each backend by `contract_tests!` (see `store_contract.rs`).

use std::collections::HashSet;
use std::sync::Arc;

use hearth_core::auth::Caller;
use hearth_core::chain::{self, Sealed};
use hearth_core::clock::ManualClock;
use hearth_core::store::{
    AccountItem, AccountStore, AccountSummary, Append, ApprovalLinkItem, ChainKey, ChainStore,
    ClientItem, ClientOrigin, ClientStore, Cosigned, CosignedStore, Counter, CounterStore,
    DeviceKeyItem, GrantItem, GrantKind, GrantStore, Head, KEPT_UNTIL_REMOVED_MS, KnownWindow,
    LOG_RETIREMENT_MS, Landed, LinkItem, LogAppend, LogBase, LogHead, MOST_APPENDS_TOGETHER,
    NonceItem, PasskeyInviteItem, PasskeyItem, PendingEnrolmentItem, RevokedFamily, StoreError,
    Taken, Winner,
};
use hearth_core::transparency::LogKeys;
use hearth_core::why::record::NewDecision;
use hearth_core::why::{WhyError, WhyService, limits};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

/// A store under test plus whatever keeps it alive (a temporary directory, an emulator table).
pub struct Backend {
    pub store: Arc<dyn ChainStore>,
    pub counters: Arc<dyn CounterStore>,
    pub accounts: Arc<dyn AccountStore>,
    pub grants: Arc<dyn GrantStore>,
    pub clients: Arc<dyn ClientStore>,
    pub cosigned: Arc<dyn CosignedStore>,
    /// Whether a lost append names what won (see `ChainStore::append_or_winner`).
    pub names_winners: bool,
    pub _guard: Box<dyn std::any::Any + Send>,
}

const NOW: i64 = 1_764_500_000_000;
const HOUR: i64 = 3_600_000;

fn key(name: &str) -> ChainKey {
    ChainKey {
        scope: "scope-a".into(),
        name: name.into(),
    }
}

fn sealed(seq: u64, prev: Option<&str>) -> Sealed {
    Sealed::new(
        seq,
        &json!({"seq": seq, "prev": prev, "note": format!("record {seq}")}),
    )
}

/// Appends records 1..=count to `key` as a correct writer would, keeping at most `keep`.
async fn fill(
    store: &dyn ChainStore,
    key: &ChainKey,
    count: u64,
    keep: usize,
    now: i64,
) -> Vec<Sealed> {
    let mut all: Vec<Sealed> = Vec::new();
    let mut head: Option<Head> = None;
    for seq in 1..=count {
        let record = sealed(seq, all.last().map(|r| r.hash.as_str()));
        // Once more than `keep` exist, the anchor is the newest evicted record.
        let evicted = (all.len() + 1).saturating_sub(keep);
        let anchor = evicted.checked_sub(1).map(|index| all[index].hash.clone());
        let new_head = Head {
            window_started_ms: now,
            expires_at_ms: now + 72 * HOUR,
            last_seq: seq,
            last_hash: record.hash.clone(),
            anchor,
            log_id: None,
            // Not a real frontier: what the store keeps, read back as written.
            log_base: Some(LogBase {
                size: seq - 1,
                frontier: vec![[seq as u8; 32]; (seq - 1).count_ones() as usize],
            }),
        };
        let evict_below_seq = (seq + 1).saturating_sub(keep as u64).max(1);
        store
            .append(
                key,
                Append {
                    expected: head.clone(),
                    head: new_head.clone(),
                    record: record.clone(),
                    evict_below_seq,
                    evicted: Vec::new(),
                    max_live_chains: 8,
                    max_logs: 8,
                    log: None,
                },
                now,
            )
            .await
            .expect("append");
        head = Some(new_head);
        all.push(record);
    }
    all
}

pub async fn an_unknown_chain_is_empty(backend: Backend) {
    assert!(
        backend
            .store
            .load(&key("none"), NOW)
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn appends_are_read_back_in_order(backend: Backend) {
    let store = backend.store.as_ref();
    let written = fill(store, &key("h"), 3, 25, NOW).await;
    let snapshot = store
        .load(&key("h"), NOW)
        .await
        .unwrap()
        .expect("live chain");
    assert_eq!(snapshot.records, written);
    assert_eq!(snapshot.head.last_seq, 3);
    assert_eq!(snapshot.head.last_hash, written[2].hash);
    assert_eq!(snapshot.head.anchor, None);
    chain::verify(&snapshot.records, None, &snapshot.head.last_hash).unwrap();
}

pub async fn a_stale_head_is_a_conflict_and_changes_nothing(backend: Backend) {
    let store = backend.store.as_ref();
    fill(store, &key("h"), 2, 25, NOW).await;
    let before = store.load(&key("h"), NOW).await.unwrap().unwrap();
    let mut stale = before.head.clone();
    stale.last_seq = 1;
    let record = sealed(3, Some(&before.head.last_hash));
    let attempt = Append {
        expected: Some(stale),
        head: Head {
            last_seq: 3,
            last_hash: record.hash.clone(),
            ..before.head.clone()
        },
        record: record.clone(),
        evict_below_seq: 1,
        evicted: Vec::new(),
        max_live_chains: 8,
        max_logs: 8,
        log: None,
    };
    assert!(matches!(
        store.append(&key("h"), attempt.clone(), NOW).await,
        Err(StoreError::Conflict)
    ));
    // Claiming the chain is empty while it is live is a conflict too.
    let claim_empty = Append {
        expected: None,
        ..attempt
    };
    assert!(matches!(
        store.append(&key("h"), claim_empty, NOW).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.load(&key("h"), NOW).await.unwrap().unwrap(), before);
}

pub async fn eviction_keeps_the_newest_and_the_anchor(backend: Backend) {
    let store = backend.store.as_ref();
    let written = fill(store, &key("h"), 30, 25, NOW).await;
    let snapshot = store.load(&key("h"), NOW).await.unwrap().unwrap();
    assert_eq!(snapshot.records, written[5..]);
    assert_eq!(
        snapshot.head.anchor.as_deref(),
        Some(written[4].hash.as_str())
    );
    chain::verify(
        &snapshot.records,
        snapshot.head.anchor.as_deref(),
        &snapshot.head.last_hash,
    )
    .unwrap();
}

pub async fn an_expired_window_is_hidden_then_replaced(backend: Backend) {
    let store = backend.store.as_ref();
    fill(store, &key("h"), 3, 25, NOW).await;
    let expiry = NOW + 72 * HOUR;
    assert!(store.load(&key("h"), expiry - 1).await.unwrap().is_some());
    assert!(
        store.load(&key("h"), expiry).await.unwrap().is_none(),
        "hidden at its expiry"
    );
    // Reading did not delete anything: the old window is still there just before expiry.
    assert!(store.load(&key("h"), expiry - 1).await.unwrap().is_some());
    let fresh = fill(store, &key("h"), 1, 25, expiry).await;
    let snapshot = store.load(&key("h"), expiry).await.unwrap().unwrap();
    assert_eq!(
        snapshot.records, fresh,
        "the new window holds only its own records"
    );
    assert_eq!(snapshot.head.window_started_ms, expiry);
}

pub async fn the_scope_cap_counts_live_chains_only(backend: Backend) {
    let store = backend.store.as_ref();
    for index in 0..8 {
        fill(store, &key(&format!("h{index}")), 1, 25, NOW).await;
    }
    let record = sealed(1, None);
    let ninth = |now: i64| Append {
        expected: None,
        head: Head {
            window_started_ms: now,
            expires_at_ms: now + 72 * HOUR,
            last_seq: 1,
            last_hash: record.hash.clone(),
            anchor: None,
            log_id: None,
            log_base: None,
        },
        record: record.clone(),
        evict_below_seq: 1,
        evicted: Vec::new(),
        max_live_chains: 8,
        max_logs: 8,
        log: None,
    };
    assert!(matches!(
        store.append(&key("h8"), ninth(NOW), NOW).await,
        Err(StoreError::ScopeFull { limit: 8 })
    ));
    assert!(store.load(&key("h8"), NOW).await.unwrap().is_none());
    // Another scope is unaffected.
    let other = ChainKey {
        scope: "scope-b".into(),
        name: "h8".into(),
    };
    store.append(&other, ninth(NOW), NOW).await.unwrap();
    // Once the first eight expire, a new chain can open.
    let later = NOW + 72 * HOUR;
    store.append(&key("h8"), ninth(later), later).await.unwrap();
}

fn service(backend: &Backend, clock: Arc<ManualClock>) -> WhyService {
    WhyService::new(backend.store.clone(), clock)
}

fn start() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(NOW / 1000).unwrap()
}

fn decision<'a>(
    household: &'a str,
    action: &'a str,
    inputs: &'a Map<String, Value>,
) -> NewDecision<'a> {
    NewDecision {
        household_id: household,
        action,
        reason: "because the test says so",
        inputs,
        approver: "Tester",
    }
}

/// 8 writers × 25 appends against one household: every append lands exactly once, in one
/// unbroken chain. A writer told the household is busy tries again, as a client would.
pub async fn concurrent_writers_lose_and_duplicate_nothing(backend: Backend) {
    let clock = Arc::new(ManualClock::new(start()));
    let service = Arc::new(service(&backend, clock));
    let caller = Caller::unattested("writers");
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let service = service.clone();
        let caller = caller.clone();
        tasks.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            let inputs = Map::new();
            for index in 0..25 {
                let action = format!("writer {writer} append {index}");
                loop {
                    match service
                        .record(&caller, decision("shared", &action, &inputs))
                        .await
                    {
                        Ok(record) => {
                            seqs.push((record["seq"].as_u64().unwrap(), action.clone()));
                            break;
                        }
                        Err(WhyError::Busy) => tokio::task::yield_now().await,
                        Err(other) => panic!("unexpected error: {other}"),
                    }
                }
            }
            seqs
        }));
    }
    let mut landed = Vec::new();
    for task in tasks {
        landed.extend(task.await.unwrap());
    }
    let seqs: HashSet<u64> = landed.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(landed.len(), 200);
    assert_eq!(
        seqs,
        (1..=200).collect(),
        "every append got its own position"
    );
    let key = ChainKey {
        scope: format!("{}/why", caller.scope),
        name: "shared".into(),
    };
    let snapshot = backend.store.load(&key, NOW).await.unwrap().unwrap();
    assert_eq!(snapshot.records.len(), limits::WINDOW_CAPACITY);
    assert_eq!(snapshot.records.first().unwrap().seq, 176);
    assert_eq!(snapshot.head.last_seq, 200);
    chain::verify(
        &snapshot.records,
        snapshot.head.anchor.as_deref(),
        &snapshot.head.last_hash,
    )
    .unwrap();
    for sealed in &snapshot.records {
        let body: Value = serde_json::from_str(&sealed.body).unwrap();
        let expected = landed.iter().find(|(seq, _)| *seq == sealed.seq).unwrap();
        assert_eq!(
            body["action"], expected.1,
            "record {} holds what its writer wrote",
            sealed.seq
        );
    }
}

/// The decision memory's window rules on top of the store: 72 hours from the first decision,
/// 25 retained with the anchor, 8 households per credential.
pub async fn decision_windows_follow_the_retention_rules(backend: Backend) {
    let clock = Arc::new(ManualClock::new(start()));
    let service = service(&backend, clock.clone());
    let caller = Caller::unattested("rules");
    let inputs = Map::new();
    let mut ids = Vec::new();
    for index in 0..26 {
        let action = format!("action {index}");
        let record = service
            .record(&caller, decision("home", &action, &inputs))
            .await
            .unwrap();
        ids.push(record["trace_id"].as_str().unwrap().to_owned());
        clock.advance(time::Duration::minutes(1));
    }
    let trace = service.trace(&caller, "home", &ids[25]).await.unwrap();
    assert_eq!(trace.records.len(), 25);
    assert_eq!(trace.anchor.as_deref(), Some(ids[0].as_str()));
    assert_eq!(trace.records[0]["prev"], json!(ids[0]));
    assert_eq!(trace.records[0]["seq"], json!(2));

    // Households 2..=8 fit; the 9th is refused; other credentials are unaffected.
    for index in 2..=8 {
        service
            .record(&caller, decision(&format!("home{index}"), "x", &inputs))
            .await
            .unwrap();
    }
    let refused = service
        .record(&caller, decision("home9", "x", &inputs))
        .await
        .unwrap_err();
    assert!(matches!(refused, WhyError::HouseholdLimit), "{refused}");
    let stranger = Caller::unattested("someone-else");
    assert!(matches!(
        service.trace(&stranger, "home", &ids[25]).await,
        Err(WhyError::NotFound(_))
    ));

    // The window is fixed at 72 hours from the first decision, whatever came later.
    clock.advance(
        time::Duration::hours(72) - time::Duration::minutes(26) - time::Duration::milliseconds(1),
    );
    assert!(service.trace(&caller, "home", &ids[25]).await.is_ok());
    clock.advance(time::Duration::milliseconds(1));
    assert!(matches!(
        service.trace(&caller, "home", &ids[25]).await,
        Err(WhyError::NotFound(_))
    ));
    let fresh = service
        .record(&caller, decision("home", "after expiry", &inputs))
        .await
        .unwrap();
    assert_eq!(fresh["seq"], json!(1));
    assert_eq!(fresh["prev"], Value::Null);
}

fn counter(key: &str, limit: u32) -> Counter {
    Counter {
        key: key.into(),
        limit,
        counted: true,
    }
}

/// [`counter`], only read.
fn watched(key: &str, limit: u32) -> Counter {
    Counter {
        counted: false,
        ..counter(key, limit)
    }
}

pub async fn counters_grant_up_to_their_limit_and_refuse_one_past(backend: Backend) {
    let counters = backend.counters.as_ref();
    let ends = NOW + 60_000;
    for _ in 0..3 {
        let taken = counters
            .take(&[counter("ip/a", 3)], ends, NOW)
            .await
            .unwrap();
        assert_eq!(taken, Taken::Granted);
    }
    let taken = counters
        .take(&[counter("ip/a", 3)], ends, NOW)
        .await
        .unwrap();
    assert_eq!(taken, Taken::Refused { index: 0 });
    let other = counters
        .take(&[counter("ip/b", 3)], ends, NOW)
        .await
        .unwrap();
    assert_eq!(other, Taken::Granted, "each key counts alone");
}

/// The counters are not all-or-nothing (see `CounterStore::take`): a take refused by one
/// counter is still counted by the counters with room, and the full counter stays at its
/// limit.
pub async fn a_refused_take_still_counts_where_there_is_room(backend: Backend) {
    let counters = backend.counters.as_ref();
    let ends = NOW + 60_000;
    let both = [counter("ip/a", 5), counter("subject/s", 1)];
    assert_eq!(
        counters.take(&both, ends, NOW).await.unwrap(),
        Taken::Granted
    );
    assert_eq!(
        counters.take(&both, ends, NOW).await.unwrap(),
        Taken::Refused { index: 1 }
    );
    // `ip/a` holds 2: the refused take counted there. With room for one more it grants once.
    let address = [counter("ip/a", 3)];
    assert_eq!(
        counters.take(&address, ends, NOW).await.unwrap(),
        Taken::Granted
    );
    assert_eq!(
        counters.take(&address, ends, NOW).await.unwrap(),
        Taken::Refused { index: 0 }
    );
    // `subject/s` still holds 1: a counter at its limit is never pushed past it.
    let subject = [counter("subject/s", 2)];
    assert_eq!(
        counters.take(&subject, ends, NOW).await.unwrap(),
        Taken::Granted
    );
    assert_eq!(
        counters.take(&subject, ends, NOW).await.unwrap(),
        Taken::Refused { index: 0 }
    );
    // The first full counter is named when several are.
    let both_full = [counter("ip/a", 3), counter("subject/s", 2)];
    assert_eq!(
        counters.take(&both_full, ends, NOW).await.unwrap(),
        Taken::Refused { index: 0 }
    );
}

/// A counter that is only watched refuses at its limit, as a counted one does, and counts
/// nothing: the rate limiter's address budget for a request whose token checks out.
pub async fn a_watched_counter_refuses_at_its_limit_and_counts_nothing(backend: Backend) {
    let counters = backend.counters.as_ref();
    let ends = NOW + 60_000;
    let by_token = [watched("ip/w", 2), counter("subject/w", 10)];
    for n in 1..=3 {
        assert_eq!(
            counters.take(&by_token, ends, NOW).await.unwrap(),
            Taken::Granted,
            "request {n}: the address is read, never counted"
        );
    }
    let without_token = [counter("ip/w", 2)];
    for _ in 0..2 {
        assert_eq!(
            counters.take(&without_token, ends, NOW).await.unwrap(),
            Taken::Granted
        );
    }
    assert_eq!(
        counters.take(&without_token, ends, NOW).await.unwrap(),
        Taken::Refused { index: 0 },
        "the two requests without a token filled the address's counter"
    );
    assert_eq!(
        counters.take(&by_token, ends, NOW).await.unwrap(),
        Taken::Refused { index: 0 },
        "a full address refuses what it only watches"
    );
    // The subject counted the three granted takes and the refused one (not all-or-nothing).
    let subject = [counter("subject/w", 4)];
    assert_eq!(
        counters.take(&subject, ends, NOW).await.unwrap(),
        Taken::Refused { index: 0 }
    );
    assert_eq!(
        counters
            .take(&[watched("ip/never", 1)], ends, NOW)
            .await
            .unwrap(),
        Taken::Granted,
        "a counter never written is below any limit"
    );
}

pub async fn each_window_counts_alone(backend: Backend) {
    let counters = backend.counters.as_ref();
    let first_ends = NOW + 60_000;
    let first = [counter("ip/a/0", 1)];
    assert_eq!(
        counters.take(&first, first_ends, NOW).await.unwrap(),
        Taken::Granted
    );
    assert_eq!(
        counters
            .take(&first, first_ends, NOW + 59_999)
            .await
            .unwrap(),
        Taken::Refused { index: 0 }
    );
    // The next window has its own key and starts from zero, whatever became of the old one.
    let next = [counter("ip/a/60000", 1)];
    let next_ends = first_ends + 60_000;
    assert_eq!(
        counters.take(&next, next_ends, first_ends).await.unwrap(),
        Taken::Granted
    );
}

pub async fn concurrent_takes_never_pass_the_limit(backend: Backend) {
    let ends = NOW + 60_000;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let counters = backend.counters.clone();
        tasks.push(tokio::spawn(async move {
            let mut granted = 0;
            for _ in 0..25 {
                let taken = counters
                    .take(&[counter("subject/busy", 50)], ends, NOW)
                    .await
                    .expect("take");
                granted += usize::from(taken == Taken::Granted);
            }
            granted
        }));
    }
    let mut granted = 0;
    for task in tasks {
        granted += task.await.unwrap();
    }
    assert_eq!(
        granted, 50,
        "exactly the limit, however the takes interleave"
    );
}

fn account(household_id: &str, name: &str, revision: u64) -> AccountItem {
    AccountItem {
        household_id: household_id.into(),
        name: name.into(),
        policy: Some(json!({"weekly_budget_cents": 5000})),
        generation: 0,
        tokens_issued: 0,
        device_keys: vec![DeviceKeyItem {
            key_id: "dk-1".into(),
            key: "00ff".into(),
            created_at_ms: NOW,
        }],
        revoked_families: vec![RevokedFamily {
            family_id: "fam-1".into(),
            until_ms: NOW + HOUR,
        }],
        passkeys: vec![PasskeyItem {
            credential_id: "Y3JlZA".into(),
            member_id: "dana".into(),
            algorithm: "ES256".into(),
            public_key_spki: "MFkw".into(),
            sign_count: 7,
            backup_eligible: true,
            created_at_ms: NOW,
            last_used_at_ms: Some(NOW + 1),
            revoked_at_ms: None,
            suspect_at_ms: None,
            pending: Some(PendingEnrolmentItem {
                approval_token_hashes: vec!["hash".into()],
                generation: 0,
                challenged_at_ms: vec![NOW - 1, NOW],
                nonce: Some(NonceItem {
                    nonce: "bm9uY2U".into(),
                    decision: "approve".into(),
                    created_at_ms: NOW,
                }),
            }),
            push: None,
            push_grant: None,
        }],
        passkey_invites: vec![PasskeyInviteItem {
            invite_hash: "ab".repeat(32),
            member_id: "mia".into(),
            generation: 0,
            expires_at_ms: NOW + HOUR,
            challenge: None,
            challenge_at_ms: None,
            challenged_at_ms: vec![NOW],
        }],
        approval_links: vec![ApprovalLinkItem {
            token_hashes: vec!["hash".into()],
            request_id: "REQ-0123456789".into(),
            expires_at_ms: NOW + HOUR,
            generation: 0,
            nonce: None,
            challenged_at_ms: vec![NOW],
        }],
        links: vec![LinkItem {
            family_id: "fam-2".into(),
            client_id: "https://assistant.example/client.json".into(),
            linked_at_ms: NOW,
        }],
        links_complete: false,
        signup_expires_at_ms: None,
        created_at_ms: NOW,
        revision,
    }
}

pub async fn accounts_are_created_once_read_back_and_listed(backend: Backend) {
    let accounts = backend.accounts.as_ref();
    assert_eq!(accounts.account("hh-b").await.unwrap(), None);
    assert_eq!(accounts.accounts().await.unwrap(), vec![]);
    let b = account("hh-b", "Bakers", 1);
    accounts.put_account(&b, None).await.unwrap();
    accounts
        .put_account(&account("hh-a", "Adams", 1), None)
        .await
        .unwrap();
    assert_eq!(accounts.account("hh-b").await.unwrap(), Some(b.clone()));
    // Creating it again is a conflict and changes nothing.
    let impostor = account("hh-b", "Impostors", 1);
    assert!(matches!(
        accounts.put_account(&impostor, None).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(accounts.account("hh-b").await.unwrap(), Some(b));
    assert_eq!(
        accounts.accounts().await.unwrap(),
        vec![
            AccountSummary {
                household_id: "hh-a".into(),
                name: "Adams".into(),
                linked: false,
                signup_expires_at_ms: None,
            },
            AccountSummary {
                household_id: "hh-b".into(),
                name: "Bakers".into(),
                linked: false,
                signup_expires_at_ms: None,
            },
        ],
        "ordered by household id"
    );
}

pub async fn a_sign_up_keeps_its_expiry_until_a_write_without_it(backend: Backend) {
    let accounts = backend.accounts.as_ref();
    let mut unlinked = account("hh-s", "Signed up", 1);
    unlinked.signup_expires_at_ms = Some(NOW + HOUR);
    accounts.put_account(&unlinked, None).await.unwrap();
    assert_eq!(
        accounts.account("hh-s").await.unwrap(),
        Some(unlinked.clone())
    );
    let listed = accounts.accounts().await.unwrap();
    assert_eq!(
        listed[0].signup_expires_at_ms,
        Some(NOW + HOUR),
        "{listed:?}"
    );
    // Another creation before the expiry leaves it be.
    accounts
        .put_account(&account("hh-t", "Operator's", 1), None)
        .await
        .unwrap();
    assert!(accounts.account("hh-s").await.unwrap().is_some());
    // Its first link writes it without the expiry: kept for good, and listed so.
    let mut linked = unlinked.clone();
    linked.signup_expires_at_ms = None;
    linked.tokens_issued = 1;
    linked.revision = 2;
    accounts.put_account(&linked, Some(1)).await.unwrap();
    assert_eq!(accounts.account("hh-s").await.unwrap(), Some(linked));
    let listed = accounts.accounts().await.unwrap();
    assert_eq!(listed[0].signup_expires_at_ms, None);
    assert!(listed[0].linked);
    // A creation after an unlinked sign-up's expiry may delete it (SQLite does so then;
    // DynamoDB's TTL does it on its own), and never touches anything else.
    let mut expired = account("hh-u", "Never linked", 1);
    expired.signup_expires_at_ms = Some(NOW + 10);
    accounts.put_account(&expired, None).await.unwrap();
    let mut later = account("hh-v", "Later", 1);
    later.created_at_ms = NOW + 10;
    accounts.put_account(&later, None).await.unwrap();
    for kept in ["hh-s", "hh-t", "hh-v"] {
        assert!(accounts.account(kept).await.unwrap().is_some(), "{kept}");
    }
}

pub async fn account_writes_and_deletes_compare_revisions(backend: Backend) {
    let accounts = backend.accounts.as_ref();
    accounts
        .put_account(&account("hh-c", "Carters", 1), None)
        .await
        .unwrap();
    let mut renamed = account("hh-c", "The Carters", 2);
    renamed.tokens_issued = 1;
    accounts.put_account(&renamed, Some(1)).await.unwrap();
    // A writer that read revision 1 lost the race: refused, nothing changes.
    let stale = account("hh-c", "Stale", 2);
    assert!(matches!(
        accounts.put_account(&stale, Some(1)).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(accounts.account("hh-c").await.unwrap(), Some(renamed));
    assert!(accounts.accounts().await.unwrap()[0].linked);
    assert!(matches!(
        accounts.delete_account("hh-c", 1).await,
        Err(StoreError::Conflict)
    ));
    assert!(accounts.account("hh-c").await.unwrap().is_some());
    assert!(accounts.delete_account("hh-c", 2).await.unwrap());
    assert!(!accounts.delete_account("hh-c", 2).await.unwrap());
    assert_eq!(accounts.account("hh-c").await.unwrap(), None);
    assert_eq!(accounts.accounts().await.unwrap(), vec![]);
}

pub async fn removing_a_chain_takes_every_record_and_frees_its_place(backend: Backend) {
    let store = backend.store.as_ref();
    for index in 0..8 {
        fill(store, &key(&format!("h{index}")), 3, 25, NOW).await;
    }
    assert_eq!(store.remove(&key("h0")).await.unwrap(), 3);
    assert!(store.load(&key("h0"), NOW).await.unwrap().is_none());
    assert_eq!(store.remove(&key("h0")).await.unwrap(), 0, "already gone");
    assert_eq!(store.remove(&key("never")).await.unwrap(), 0);
    // The removed chain no longer counts against the scope's cap of 8.
    fill(store, &key("h8"), 1, 25, NOW).await;
    assert_eq!(
        store
            .load(&key("h1"), NOW)
            .await
            .unwrap()
            .unwrap()
            .records
            .len(),
        3
    );
}

pub async fn relocating_moves_a_window_exactly_as_stored(backend: Backend) {
    let store = backend.store.as_ref();
    // 30 records keeping 25: the window has an anchor and starts at seq 6.
    fill(store, &key("old"), 30, 25, NOW).await;
    let before = store.load(&key("old"), NOW).await.unwrap().unwrap();
    let to = ChainKey {
        scope: "scope-new".into(),
        name: "new".into(),
    };
    let occupied = ChainKey {
        scope: "scope-new".into(),
        name: "occupied".into(),
    };
    fill(store, &occupied, 2, 25, NOW).await;
    assert!(matches!(
        store.relocate(&key("old"), &occupied, NOW).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store.load(&key("old"), NOW).await.unwrap().as_ref(),
        Some(&before),
        "a refused move moves nothing"
    );
    assert_eq!(
        store
            .load(&occupied, NOW)
            .await
            .unwrap()
            .unwrap()
            .records
            .len(),
        2
    );
    assert_eq!(store.relocate(&key("old"), &to, NOW).await.unwrap(), 25);
    let after = store.load(&to, NOW).await.unwrap().unwrap();
    assert_eq!(after, before, "head, anchor, records and hashes unchanged");
    chain::verify(
        &after.records,
        after.head.anchor.as_deref(),
        &after.head.last_hash,
    )
    .unwrap();
    assert!(store.load(&key("old"), NOW).await.unwrap().is_none());
    assert_eq!(
        store.relocate(&key("old"), &to, NOW).await.unwrap(),
        0,
        "nothing left to move"
    );
    // The moved chain goes on from where it was.
    let record = sealed(31, Some(&after.head.last_hash));
    let head = Head {
        last_seq: 31,
        last_hash: record.hash.clone(),
        anchor: Some(after.records[0].hash.clone()),
        log_id: None,
        ..after.head.clone()
    };
    store
        .append(
            &to,
            Append {
                expected: Some(after.head.clone()),
                head,
                record,
                evict_below_seq: 7,
                evicted: Vec::new(),
                max_live_chains: 8,
                max_logs: 8,
                log: None,
            },
            NOW,
        )
        .await
        .unwrap();
    assert_eq!(
        store.load(&to, NOW).await.unwrap().unwrap().records[0].seq,
        7
    );
}

fn grant(kind: GrantKind, key: &str, revision: u64, expires_at_ms: i64) -> GrantItem {
    GrantItem {
        kind,
        key: key.into(),
        body: format!("{{\"revision\":{revision}}}"),
        expires_at_ms,
        revision,
    }
}

pub async fn a_grant_is_written_once_and_then_only_over_its_revision(backend: Backend) {
    let grants = backend.grants.as_ref();
    let first = grant(GrantKind::AuthorizationCode, "k1", 1, NOW + HOUR);
    assert_eq!(
        grants.grant(first.kind, "k1", NOW).await.unwrap(),
        None,
        "nothing yet"
    );
    grants.put_grant(&first, None, NOW).await.unwrap();
    assert_eq!(
        grants.grant(first.kind, "k1", NOW).await.unwrap(),
        Some(first.clone())
    );
    assert!(matches!(
        grants.put_grant(&first, None, NOW).await,
        Err(StoreError::Conflict)
    ));
    // The same key under another kind is another record.
    assert_eq!(
        grants.grant(GrantKind::LinkCode, "k1", NOW).await.unwrap(),
        None
    );
    let second = grant(first.kind, "k1", 2, NOW + HOUR);
    assert!(matches!(
        grants.put_grant(&second, Some(7), NOW).await,
        Err(StoreError::Conflict)
    ));
    grants.put_grant(&second, Some(1), NOW).await.unwrap();
    assert_eq!(
        grants.grant(first.kind, "k1", NOW).await.unwrap(),
        Some(second)
    );
}

pub async fn a_claim_keeps_its_first_body_until_it_expires(backend: Backend) {
    let grants = backend.grants.as_ref();
    let claim = |body: &str, expires_at_ms| GrantItem {
        kind: GrantKind::TurnBinding,
        key: "turn-1".into(),
        body: body.into(),
        expires_at_ms,
        revision: 1,
    };
    assert!(
        grants
            .claim_grant(&claim("ledger-a", NOW + 1000), NOW)
            .await
            .unwrap()
    );
    // The same claim again holds, with its new expiry; another body does not.
    assert!(
        grants
            .claim_grant(&claim("ledger-a", NOW + 2000), NOW)
            .await
            .unwrap()
    );
    assert!(
        !grants
            .claim_grant(&claim("ledger-b", NOW + 2000), NOW + 1999)
            .await
            .unwrap()
    );
    assert_eq!(
        grants
            .grant(GrantKind::TurnBinding, "turn-1", NOW + 1999)
            .await
            .unwrap(),
        Some(claim("ledger-a", NOW + 2000))
    );
    // Once expired, the key is free for another body.
    assert!(
        grants
            .claim_grant(&claim("ledger-b", NOW + HOUR), NOW + 2000)
            .await
            .unwrap()
    );
    assert_eq!(
        grants
            .grant(GrantKind::TurnBinding, "turn-1", NOW + 2000)
            .await
            .unwrap()
            .map(|g| g.body),
        Some("ledger-b".into())
    );
}

pub async fn racing_claims_of_two_bodies_see_one_winner(backend: Backend) {
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let grants = backend.grants.clone();
            tokio::spawn(async move {
                let item = GrantItem {
                    kind: GrantKind::TurnBinding,
                    key: "contested".into(),
                    body: format!("ledger-{}", i % 2),
                    expires_at_ms: NOW + HOUR,
                    revision: 1,
                };
                (
                    item.body.clone(),
                    grants.claim_grant(&item, NOW).await.unwrap(),
                )
            })
        })
        .collect();
    let mut winners = std::collections::HashSet::new();
    for task in tasks {
        let (body, won) = task.await.unwrap();
        if won {
            winners.insert(body);
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
}

fn client(id: &str, revision: u64, expires_at_ms: Option<i64>) -> ClientItem {
    ClientItem {
        client_id: id.into(),
        name: format!("client {id}"),
        redirect_uris: vec!["https://host.example/callback".into()],
        secret_hash: None,
        origin: ClientOrigin::Registration,
        created_at_ms: NOW,
        last_used_at_ms: None,
        expires_at_ms,
        revision,
        document: None,
        assertion_keys: None,
    }
}

pub async fn a_client_is_written_once_then_over_its_revision_and_listed(backend: Backend) {
    let clients = backend.clients.as_ref();
    assert_eq!(clients.client("c1", NOW).await.unwrap(), None);
    let first = client("c1", 1, None);
    clients.put_client(&first, None, NOW).await.unwrap();
    assert!(matches!(
        clients.put_client(&first, None, NOW).await,
        Err(StoreError::Conflict)
    ));
    let mut second = client("c1", 2, None);
    second.last_used_at_ms = Some(NOW + 5);
    assert!(matches!(
        clients.put_client(&second, Some(7), NOW).await,
        Err(StoreError::Conflict)
    ));
    clients.put_client(&second, Some(1), NOW).await.unwrap();
    clients
        .put_client(&client("c0", 1, None), None, NOW)
        .await
        .unwrap();
    assert_eq!(
        clients.client("c1", NOW).await.unwrap(),
        Some(second.clone())
    );
    let listed: Vec<String> = clients
        .clients(NOW)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.client_id)
        .collect();
    assert_eq!(listed, ["c0", "c1"]);
    assert!(clients.delete_client("c1").await.unwrap());
    assert!(!clients.delete_client("c1").await.unwrap());
    assert_eq!(clients.client("c1", NOW).await.unwrap(), None);
    assert_eq!(clients.clients(NOW).await.unwrap().len(), 1);
}

pub async fn a_registration_expires_and_its_id_can_be_taken_again(backend: Backend) {
    let clients = backend.clients.as_ref();
    let unused = client("c2", 1, Some(NOW + 1000));
    clients.put_client(&unused, None, NOW).await.unwrap();
    assert!(clients.client("c2", NOW + 999).await.unwrap().is_some());
    assert_eq!(clients.client("c2", NOW + 1000).await.unwrap(), None);
    assert!(clients.clients(NOW + 1000).await.unwrap().is_empty());
    // An expired registration can be neither rewritten over its revision nor kept...
    assert!(matches!(
        clients
            .put_client(&client("c2", 2, None), Some(1), NOW + 1000)
            .await,
        Err(StoreError::Conflict)
    ));
    // ...but a new one takes its place.
    clients
        .put_client(&client("c2", 1, None), None, NOW + 1000)
        .await
        .unwrap();
    assert!(clients.client("c2", NOW + 5000).await.unwrap().is_some());
}

pub async fn an_expired_grant_reads_as_absent_and_can_be_replaced(backend: Backend) {
    let grants = backend.grants.as_ref();
    let item = grant(GrantKind::LinkCode, "k2", 1, NOW + 1000);
    grants.put_grant(&item, None, NOW).await.unwrap();
    assert!(
        grants
            .grant(item.kind, "k2", NOW + 999)
            .await
            .unwrap()
            .is_some(),
        "live one millisecond before its expiry"
    );
    assert_eq!(
        grants.grant(item.kind, "k2", NOW + 1000).await.unwrap(),
        None
    );
    // An expired record can neither be rewritten over its revision nor claimed...
    let over = grant(item.kind, "k2", 2, NOW + HOUR);
    assert!(matches!(
        grants.put_grant(&over, Some(1), NOW + 1000).await,
        Err(StoreError::Conflict)
    ));
    assert!(
        !grants
            .delete_grant(item.kind, "k2", 1, NOW + 1000)
            .await
            .unwrap()
    );
    // ...but a new one takes its place.
    grants.put_grant(&over, None, NOW + 1000).await.unwrap();
    assert_eq!(
        grants.grant(item.kind, "k2", NOW + 1000).await.unwrap(),
        Some(over)
    );
}

pub async fn a_grant_kept_until_removed_outlives_every_clock(backend: Backend) {
    let grants = backend.grants.as_ref();
    let item = grant(GrantKind::PasskeyOwner, "Y3JlZA", 1, KEPT_UNTIL_REMOVED_MS);
    assert!(grants.claim_grant(&item, NOW).await.unwrap());
    // Read back a century on, it is still there, and another body cannot take its key.
    let century = NOW + 100 * 365 * 24 * HOUR;
    assert_eq!(
        grants
            .grant(GrantKind::PasskeyOwner, "Y3JlZA", century)
            .await
            .unwrap(),
        Some(item.clone())
    );
    let other = GrantItem {
        body: "another household".into(),
        ..item.clone()
    };
    assert!(!grants.claim_grant(&other, century).await.unwrap());
    // Until it is removed.
    assert!(
        grants
            .delete_grant(GrantKind::PasskeyOwner, "Y3JlZA", 1, century)
            .await
            .unwrap()
    );
    assert!(grants.claim_grant(&other, century).await.unwrap());
}

pub async fn a_grant_delete_is_a_single_use_claim(backend: Backend) {
    let grants = backend.grants.clone();
    let item = grant(GrantKind::LinkCode, "k3", 4, NOW + HOUR);
    grants.put_grant(&item, None, NOW).await.unwrap();
    assert!(
        !grants.delete_grant(item.kind, "k3", 3, NOW).await.unwrap(),
        "wrong revision"
    );
    let claims: Vec<_> = (0..8)
        .map(|_| {
            let grants = grants.clone();
            tokio::spawn(
                async move { grants.delete_grant(GrantKind::LinkCode, "k3", 4, NOW).await },
            )
        })
        .collect();
    let mut won = 0;
    for claim in claims {
        if claim.await.unwrap().unwrap() {
            won += 1;
        }
    }
    assert_eq!(won, 1, "exactly one claim wins");
    assert_eq!(grants.grant(item.kind, "k3", NOW).await.unwrap(), None);
    assert!(
        !grants
            .delete_grant(item.kind, "missing", 1, NOW)
            .await
            .unwrap()
    );
}

/// The log append of record `record` onto `log` (a fake tree: the test store only keeps what
/// it is given).
fn log_append(log: Option<&LogHead>, leaf: u8) -> LogAppend {
    let (log_id, epoch, size) = log.map_or(("log-a".to_owned(), 1, 0), |log| {
        (log.log_id.clone(), log.epoch, log.size)
    });
    LogAppend {
        expected: log.cloned(),
        head: LogHead {
            log_id,
            epoch,
            size: size + 1,
            frontier: vec![[leaf; 32]],
            checkpoint: format!("checkpoint of {}\n", size + 1),
            expires_at_ms: None,
        },
        hashes: vec![[leaf; 32], [leaf.wrapping_add(100); 32]],
    }
}

/// Appends one record to `key` with its log grown by one leaf, as a writer would.
async fn append_logged(store: &dyn ChainStore, key: &ChainKey, now: i64, leaf: u8) -> LogHead {
    append_logged_until(store, key, now, leaf, None)
        .await
        .unwrap()
}

/// [`append_logged`] with the log retiring at `retires` (a credential's), and the store's
/// answer.
async fn append_logged_until(
    store: &dyn ChainStore,
    key: &ChainKey,
    now: i64,
    leaf: u8,
    retires: Option<i64>,
) -> Result<LogHead, StoreError> {
    append_growing(store, key, now, |log| {
        let mut grown = log_append(log, leaf);
        grown.head.expires_at_ms = retires;
        grown
    })
    .await
}

/// Appends one record to `key` with its log grown as `grow` says from the head read.
async fn append_growing(
    store: &dyn ChainStore,
    key: &ChainKey,
    now: i64,
    grow: impl FnOnce(Option<&LogHead>) -> LogAppend,
) -> Result<LogHead, StoreError> {
    let (window, log) = store.load_for_append(key, now).await.unwrap();
    let mut append = Append::next(
        window.as_ref().map(|w| &w.head),
        window.as_ref().map_or(&[], |w| &w.records),
        hearth_core::store::Retention {
            window_ms: HOUR,
            capacity: 3,
            max_live_chains: 8,
            max_logs: 8,
        },
        now,
        sealed,
    );
    let grown = grow(log.as_ref());
    append.log = Some(grown.clone());
    store.append(key, append, now).await?;
    Ok(grown.head)
}

/// A writer that lost its race to another learns, where the store can say so in the same
/// round trip, exactly the heads that won: the chain's and its log's, as a read would find
/// them. Built on them and on what it read before, its next append is accepted, and the chain
/// verifies. A store that cannot say leaves the writer to read again, and changes nothing.
pub async fn a_lost_append_names_what_won_or_nothing(backend: Backend) {
    let store = backend.store.as_ref();
    let key = key("raced");
    for leaf in 1..=4 {
        append_logged(store, &key, NOW, leaf).await;
    }
    let retention = hearth_core::store::Retention {
        window_ms: HOUR,
        capacity: 3,
        max_live_chains: 8,
        max_logs: 8,
    };
    let (read, log_read) = store.load_for_append(&key, NOW).await.unwrap();
    let read = read.unwrap();
    append_logged(store, &key, NOW, 5).await;
    let (won, won_log) = store.load_for_append(&key, NOW).await.unwrap();
    let won = won.unwrap();

    let mut late = Append::next(Some(&read.head), &read.records, retention, NOW, sealed);
    late.log = Some(log_append(log_read.as_ref(), 6));
    let (error, winner) = store
        .append_or_winner(&key, late, NOW)
        .await
        .expect_err("the race was lost");
    assert!(matches!(error, StoreError::Conflict), "{error:?}");
    assert_eq!(winner.is_some(), backend.names_winners);
    let Some(winner) = winner else {
        let (unchanged, _) = store.load_for_append(&key, NOW).await.unwrap();
        assert_eq!(unchanged.unwrap(), won);
        return;
    };
    assert_eq!(winner.head, won.head);
    assert_eq!(winner.first_seq, won.records[0].seq);
    assert_eq!(winner.log, won_log);

    let mut retry = Append::after(
        &winner,
        Some(&KnownWindow::from(read.clone())),
        retention,
        NOW,
        sealed,
    )
    .expect("the evicted record was read before");
    retry.log = Some(log_append(winner.log.as_ref(), 6));
    store.append_or_winner(&key, retry, NOW).await.unwrap();
    let (after, log) = store.load_for_append(&key, NOW).await.unwrap();
    let after = after.unwrap();
    assert_eq!(
        after.records.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [4, 5, 6]
    );
    assert_eq!(
        after.head.anchor.as_deref(),
        Some(read.records[1].hash.as_str())
    );
    chain::verify(
        &after.records,
        after.head.anchor.as_deref(),
        &after.head.last_hash,
    )
    .unwrap();
    assert_eq!(log.unwrap().size, 6);
}

/// `count` appends after `start` (a read of the chain), each after the one before, with the
/// log grown by one leaf each from `leaf`: what a batch lands together.
fn chained(
    start: (Option<&hearth_core::store::Snapshot>, Option<&LogHead>),
    retention: hearth_core::store::Retention,
    count: u8,
    leaf: u8,
) -> Vec<Append> {
    let (window, log) = start;
    let mut first = Append::next(
        window.map(|w| &w.head),
        window.map_or(&[], |w| &w.records),
        retention,
        NOW,
        sealed,
    );
    first.log = Some(log_append(log, leaf));
    let mut known = window.cloned().map(KnownWindow::from);
    let mut appends = vec![first];
    for offset in 1..count {
        let before = appends.last().unwrap();
        known = Some(Landed::after(before, known.as_ref(), std::time::Instant::now()).known);
        let winner = Winner {
            head: before.head.clone(),
            first_seq: before.evict_below_seq,
            log: before.log.as_ref().map(|log| log.head.clone()),
        };
        let mut next = Append::after(&winner, known.as_ref(), retention, NOW, sealed)
            .expect("every record of the window is known");
        next.log = Some(log_append(
            before.log.as_ref().map(|log| &log.head),
            leaf + offset,
        ));
        appends.push(next);
    }
    appends
}

/// Appends landed together leave the chain and its log exactly as landing them one at a time
/// would: the window's newest records with the anchor, every record's log hashes, the last
/// log head. A batch over stale heads is a lost race that changes nothing (and names what won,
/// where the store can say); one whose appends do not follow each other, or of more than
/// the store takes at once, is refused before anything is written.
pub async fn appends_landed_together_leave_what_one_at_a_time_would(backend: Backend) {
    let store = backend.store.as_ref();
    let retention = hearth_core::store::Retention {
        window_ms: HOUR,
        capacity: 3,
        max_live_chains: 8,
        max_logs: 8,
    };
    let key = key("together");
    // The first batch opens the window.
    store
        .append_together(&key, chained((None, None), retention, 2, 1), NOW)
        .await
        .unwrap();
    let (read, log) = store.load_for_append(&key, NOW).await.unwrap();
    let read = read.unwrap();
    assert_eq!(
        read.records.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(log.as_ref().unwrap().size, 2);

    // Three more evict the first two into the anchor.
    let batch = chained((Some(&read), log.as_ref()), retention, 3, 3);
    let last = batch.last().unwrap().clone();

    let mut unchained = batch.clone();
    unchained.swap(1, 2);
    let error = store
        .append_together(&key, unchained, NOW)
        .await
        .expect_err("out of order");
    assert!(matches!(error.0, StoreError::Unavailable(_)), "{error:?}");
    let mut too_many = batch.clone();
    while too_many.len() <= MOST_APPENDS_TOGETHER {
        too_many.push(batch[0].clone());
    }
    let error = store
        .append_together(&key, too_many, NOW)
        .await
        .expect_err("too many");
    assert!(matches!(error.0, StoreError::Unavailable(_)), "{error:?}");
    assert_eq!(
        store.load_for_append(&key, NOW).await.unwrap(),
        (Some(read.clone()), log.clone()),
        "a refused batch writes nothing"
    );

    store.append_together(&key, batch, NOW).await.unwrap();
    let (after, after_log) = store.load_for_append(&key, NOW).await.unwrap();
    let after = after.unwrap();
    assert_eq!(
        after.records.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [3, 4, 5]
    );
    assert_eq!(after.head, last.head);
    assert_eq!(
        after.head.anchor.as_deref(),
        Some(read.records[1].hash.as_str())
    );
    chain::verify(
        &after.records,
        after.head.anchor.as_deref(),
        &after.head.last_hash,
    )
    .unwrap();
    assert_eq!(after_log.as_ref(), Some(&last.log.as_ref().unwrap().head));
    let hashes = store.log_hashes(&key, &[0, 1, 2, 3, 4]).await.unwrap();
    for (leaf, stored) in [1u8, 2, 3, 4, 5].into_iter().enumerate() {
        assert_eq!(
            hashes.get(&(leaf as u64)),
            Some(&vec![[stored; 32], [stored.wrapping_add(100); 32]]),
            "leaf {leaf}"
        );
    }

    // The most the store takes at once lands; one more was refused above.
    let roomy = hearth_core::store::Retention {
        capacity: MOST_APPENDS_TOGETHER + 1,
        ..retention
    };
    let most_key = ChainKey {
        name: "together-most".into(),
        ..key.clone()
    };
    let most = chained((None, None), roomy, MOST_APPENDS_TOGETHER as u8, 1);
    store.append_together(&most_key, most, NOW).await.unwrap();
    let (full, _) = store.load_for_append(&most_key, NOW).await.unwrap();
    assert_eq!(full.unwrap().records.len(), MOST_APPENDS_TOGETHER);

    // The same batch again is over stale heads: it loses, and names what won.
    let stale = chained((Some(&read), log.as_ref()), retention, 3, 3);
    let (error, winner) = store
        .append_together(&key, stale, NOW)
        .await
        .expect_err("stale");
    assert!(matches!(error, StoreError::Conflict), "{error:?}");
    assert_eq!(winner.is_some(), backend.names_winners);
    if let Some(winner) = winner {
        assert_eq!(winner.head, after.head);
        assert_eq!(winner.first_seq, 3);
        assert_eq!(winner.log, after_log);
    }
    assert_eq!(
        store.load_for_append(&key, NOW).await.unwrap(),
        (Some(after), after_log)
    );
}

/// A store whose appends wait until let go, counting them: what holds one landing in flight
/// while other calls queue behind it.
struct Held {
    inner: Arc<dyn ChainStore>,
    appends: std::sync::atomic::AtomicUsize,
    started: tokio::sync::Notify,
    go: tokio::sync::Semaphore,
    /// Where the next landing dies, once: its task ends there, as a process that crashed.
    dies: std::sync::Mutex<Option<Dies>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dies {
    /// Sealed and signed, not landed.
    BeforeLanding,
    /// Landed, no call answered.
    AfterLanding,
    /// Landed, then refused as a lost race naming the heads it left: what a retried request
    /// whose first reply was lost gets from a store that does not recognise the retry.
    LandsThenRefuses,
}

impl Held {
    fn over(inner: Arc<dyn ChainStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            appends: Default::default(),
            started: Default::default(),
            go: tokio::sync::Semaphore::new(0),
            dies: Default::default(),
        })
    }
}

#[async_trait::async_trait]
impl ChainStore for Held {
    async fn load(
        &self,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<Option<hearth_core::store::Snapshot>, StoreError> {
        self.inner.load(key, now_ms).await
    }
    async fn load_for_append(
        &self,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<hearth_core::store::AppendStart, StoreError> {
        self.inner.load_for_append(key, now_ms).await
    }
    async fn log_head(
        &self,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<hearth_core::store::LogRead, StoreError> {
        self.inner.log_head(key, now_ms).await
    }
    async fn signed_log_heads(&self, now_ms: i64) -> Result<Vec<(ChainKey, LogHead)>, StoreError> {
        self.inner.signed_log_heads(now_ms).await
    }
    async fn resign_log(
        &self,
        key: &ChainKey,
        expected: &LogHead,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        self.inner.resign_log(key, expected, checkpoint).await
    }
    async fn log_hashes(
        &self,
        key: &ChainKey,
        leaves: &[u64],
    ) -> Result<hearth_core::store::LeafHashes, StoreError> {
        self.inner.log_hashes(key, leaves).await
    }
    async fn append_together(
        &self,
        key: &ChainKey,
        appends: Vec<Append>,
        now_ms: i64,
    ) -> Result<(), (StoreError, Option<Winner>)> {
        self.appends
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.started.notify_one();
        self.go.acquire().await.unwrap().forget();
        let dies = self.dies.lock().unwrap().take();
        if dies == Some(Dies::BeforeLanding) {
            panic!("the landing dies before it lands");
        }
        let landed = self.inner.append_together(key, appends, now_ms).await;
        if dies == Some(Dies::AfterLanding) {
            panic!("the landing dies after it lands");
        }
        if dies == Some(Dies::LandsThenRefuses) {
            let (window, log) = self.inner.load_for_append(key, now_ms).await.unwrap();
            let window = window.unwrap();
            let winner = Winner {
                first_seq: window.records[0].seq,
                head: window.head,
                log,
            };
            return Err((StoreError::Conflict, Some(winner)));
        }
        landed
    }
    async fn remove(&self, key: &ChainKey) -> Result<usize, StoreError> {
        self.inner.remove(key).await
    }
    async fn relocate(
        &self,
        from: &ChainKey,
        to: &ChainKey,
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        self.inner.relocate(from, to, now_ms).await
    }
}

/// The decision `record`'s receipt proves it (at its `seq - 1`) in the checkpoint of `size`,
/// and the log still holds that tree.
async fn assert_receipt_holds(backend: &Backend, key: &ChainKey, record: &Value, size: u64) {
    let seq = record["seq"].as_u64().unwrap();
    let check = hearth_core::transparency::check_proof(
        backend.store.as_ref(),
        &log_keys(),
        hearth_core::transparency::LogKind::Decisions,
        key,
        record["tlog_proof"].as_str().unwrap(),
        NOW,
    )
    .await
    .unwrap();
    assert_eq!(
        check,
        hearth_core::transparency::ProofCheck::Holds {
            index: seq - 1,
            size
        },
        "record {seq}"
    );
}

type Recording = tokio::task::JoinHandle<Result<Value, WhyError>>;

/// `caller` records `action` for the household `home` on a task of its own.
fn recorded_on_its_task(service: &Arc<WhyService>, caller: &Caller, action: String) -> Recording {
    let service = service.clone();
    let caller = caller.clone();
    tokio::spawn(async move {
        let inputs = Map::new();
        service
            .record(&caller, decision("home", &action, &inputs))
            .await
    })
}

/// One decision ("`label`first") held in flight by `held`, and `count` more ("`label`queued
/// N") queued behind it. On a one-thread runtime each queued call runs until it waits for
/// the chain's turn before this returns.
async fn queued_behind_one_in_flight(
    held: &Held,
    service: &Arc<WhyService>,
    caller: &Caller,
    label: &str,
    count: usize,
) -> (Recording, Vec<Recording>) {
    let first = recorded_on_its_task(service, caller, format!("{label}first"));
    held.started.notified().await;
    let queued = (0..count)
        .map(|n| recorded_on_its_task(service, caller, format!("{label}queued {n}")))
        .collect();
    for _ in 0..=count {
        tokio::task::yield_now().await;
    }
    (first, queued)
}

fn log_keys() -> Arc<LogKeys> {
    Arc::new(LogKeys::new("hearth.example", &[(1, [3; 32])]).unwrap())
}

/// Decisions that queue behind an append in flight land together in the next step: one
/// store request for seven decisions. Each call gets its own record, in the order the calls
/// queued, and its own receipt, proven against the one checkpoint signed for the batch; the
/// chain and the log verify as if the decisions had landed one at a time.
pub async fn queued_decisions_land_together_each_with_its_own_receipt(backend: Backend) {
    let held = Held::over(backend.store.clone());
    let clock = Arc::new(ManualClock::new(start()));
    let service = Arc::new(WhyService::new(held.clone(), clock).with_log_keys(Some(log_keys())));
    let caller = Caller::unattested("queued");
    let (first, queued) = queued_behind_one_in_flight(&held, &service, &caller, "", 7).await;
    held.go.add_permits(2);
    let first = first.await.unwrap().unwrap();
    let mut records = Vec::new();
    for call in queued {
        records.push(call.await.unwrap().unwrap());
    }
    assert_eq!(held.appends.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(first["seq"], 1);
    let key = ChainKey {
        scope: format!("{}/why", caller.scope),
        name: "home".into(),
    };
    let batch_checkpoint = |record: &Value| {
        let receipt = record["tlog_proof"].as_str().unwrap();
        receipt[receipt.find("\n\n").unwrap()..].to_owned()
    };
    for (n, record) in records.iter().enumerate() {
        assert_eq!(record["seq"], n as u64 + 2);
        assert_eq!(record["action"], format!("queued {n}"));
        assert_eq!(batch_checkpoint(record), batch_checkpoint(&records[0]));
    }
    assert_ne!(batch_checkpoint(&first), batch_checkpoint(&records[0]));
    for record in std::iter::once(&first).chain(&records) {
        let seq = record["seq"].as_u64().unwrap();
        let size = if seq == 1 { 1 } else { 8 };
        assert_receipt_holds(&backend, &key, record, size).await;
    }
    let snapshot = backend.store.load(&key, NOW).await.unwrap().unwrap();
    assert_eq!(snapshot.head.last_seq, 8);
    chain::verify(
        &snapshot.records,
        snapshot.head.anchor.as_deref(),
        &snapshot.head.last_hash,
    )
    .unwrap();
}

/// A batch whose landing dies between sealing and landing (as a process that crashed there),
/// before the store step or after it: every call it held is told storage was unavailable, never
/// that its decision was recorded or refused; the store holds all of the batch or none of it;
/// and the next decisions, from this process or a new one, land after whatever is there, with
/// the chain and the log whole.
pub async fn a_batch_that_dies_between_seal_and_land_leaves_the_chain_whole(backend: Backend) {
    let held = Held::over(backend.store.clone());
    let clock = Arc::new(ManualClock::new(start()));
    let service =
        Arc::new(WhyService::new(held.clone(), clock.clone()).with_log_keys(Some(log_keys())));
    let caller = Caller::unattested("crashing");
    let key = ChainKey {
        scope: format!("{}/why", caller.scope),
        name: "home".into(),
    };
    let mut expected_seq = 0;
    for dies in [Dies::BeforeLanding, Dies::AfterLanding] {
        let label = format!("{dies:?} ");
        let (first, queued) =
            queued_behind_one_in_flight(&held, &service, &caller, &label, 3).await;
        held.go.add_permits(1);
        first.await.unwrap().unwrap();
        expected_seq += 1;
        *held.dies.lock().unwrap() = Some(dies);
        held.go.add_permits(1);
        for call in queued {
            let error = call.await.unwrap().expect_err("its landing died");
            assert!(matches!(error, WhyError::Unavailable), "{dies:?}: {error}");
        }
        let snapshot = backend.store.load(&key, NOW).await.unwrap().unwrap();
        if dies == Dies::AfterLanding {
            expected_seq += 3;
        }
        assert_eq!(
            snapshot.head.last_seq, expected_seq,
            "{dies:?}: all or none"
        );
    }
    // This process goes on, and so does a new one.
    held.go.add_permits(usize::MAX >> 4);
    let fresh =
        Arc::new(WhyService::new(backend.store.clone(), clock).with_log_keys(Some(log_keys())));
    for service in [&service, &fresh] {
        let record = recorded_on_its_task(service, &caller, "after".into())
            .await
            .unwrap()
            .unwrap();
        expected_seq += 1;
        assert_eq!(record["seq"], expected_seq);
        assert_receipt_holds(&backend, &key, &record, expected_seq).await;
    }
    let (snapshot, log) = backend.store.load_for_append(&key, NOW).await.unwrap();
    let snapshot = snapshot.unwrap();
    assert_eq!(log.unwrap().size, expected_seq);
    chain::verify(
        &snapshot.records,
        snapshot.head.anchor.as_deref(),
        &snapshot.head.last_hash,
    )
    .unwrap();
}

/// A log that fills in the middle of a landing: the decisions that fit land, with their
/// receipts, and every call past the last is told the log is full, none of them anything else.
pub async fn decisions_past_a_full_log_in_one_landing_are_told_it_is_full(backend: Backend) {
    let held = Held::over(backend.store.clone());
    let keys = Arc::new(
        LogKeys::new("hearth.example", &[(1, [3; 32])])
            .unwrap()
            .with_max_size(3),
    );
    let service = Arc::new(
        WhyService::new(held.clone(), Arc::new(ManualClock::new(start())))
            .with_log_keys(Some(keys)),
    );
    let caller = Caller::unattested("filling");
    let (first, queued) = queued_behind_one_in_flight(&held, &service, &caller, "", 4).await;
    held.go.add_permits(2);
    first.await.unwrap().unwrap();
    let mut answers = Vec::new();
    for call in queued {
        answers.push(call.await.unwrap());
    }
    assert_eq!(held.appends.load(std::sync::atomic::Ordering::SeqCst), 2);
    for (n, answer) in answers.iter().enumerate() {
        match (n, answer) {
            (0 | 1, Ok(record)) => assert_eq!(record["seq"], n as u64 + 2),
            (2 | 3, Err(WhyError::LogFull(3))) => {}
            (n, other) => panic!("call {n}: {other:?}"),
        }
    }
}

/// A landing refused as a lost race whose winner is the landing itself (it landed; its reply
/// was lost and the request sent again) counts as landed: each call is answered its record
/// once, and nothing lands twice.
pub async fn a_landing_refused_with_its_own_heads_is_answered_once_and_lands_once(
    backend: Backend,
) {
    let held = Held::over(backend.store.clone());
    held.go.add_permits(usize::MAX >> 4);
    *held.dies.lock().unwrap() = Some(Dies::LandsThenRefuses);
    let service = WhyService::new(held.clone(), Arc::new(ManualClock::new(start())))
        .with_log_keys(Some(log_keys()));
    let caller = Caller::unattested("retried");
    let inputs = Map::new();
    let record = service
        .record(&caller, decision("home", "once", &inputs))
        .await
        .unwrap();
    assert_eq!(record["seq"], 1);
    assert_eq!(held.appends.load(std::sync::atomic::Ordering::SeqCst), 1);
    let key = ChainKey {
        scope: format!("{}/why", caller.scope),
        name: "home".into(),
    };
    let (window, log) = backend.store.load_for_append(&key, NOW).await.unwrap();
    assert_eq!(window.unwrap().head.last_seq, 1, "nothing landed twice");
    assert_eq!(log.unwrap().size, 1);
    assert_receipt_holds(&backend, &key, &record, 1).await;
}

pub async fn a_credentials_log_retires_with_its_hashes(backend: Backend) {
    let store = backend.store.as_ref();
    let key = key("retiring");
    let retires = NOW + 3 * HOUR;
    for leaf in 0..3u8 {
        append_logged_until(store, &key, NOW, leaf, Some(retires))
            .await
            .unwrap();
    }
    let kept = store
        .log_head(&key, retires - 1)
        .await
        .unwrap()
        .log
        .unwrap();
    assert_eq!((kept.size, kept.expires_at_ms), (3, Some(retires)));
    // From its retirement on, the log reads as absent; a new log may take its place.
    assert_eq!(store.log_head(&key, retires).await.unwrap().log, None);
    assert_eq!(store.load_for_append(&key, retires).await.unwrap().1, None);
    let fresh = append_logged_until(store, &key, retires, 9, None)
        .await
        .unwrap();
    assert_eq!(fresh.size, 1, "a new log over the retired one");
    assert_eq!(
        store.log_head(&key, retires).await.unwrap().log,
        Some(fresh)
    );
}

/// Every signed log head still kept is listed with its chain, for the local server's start-up
/// check: a retired log and a head signed by no key are left out.
pub async fn every_kept_signed_log_head_is_listed_with_its_chain(backend: Backend) {
    let store = backend.store.as_ref();
    assert_eq!(store.signed_log_heads(NOW).await.unwrap(), Vec::new());
    let kept = append_logged(store, &key("kept"), NOW, 1).await;
    let retiring = append_logged_until(store, &key("retiring"), NOW, 2, Some(NOW + HOUR))
        .await
        .unwrap();
    append_growing(store, &key("unsigned"), NOW, |log| {
        let mut grown = log_append(log, 3);
        grown.head.checkpoint = String::new();
        grown
    })
    .await
    .unwrap();

    let mut listed = store.signed_log_heads(NOW).await.unwrap();
    listed.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    assert_eq!(
        listed,
        vec![(key("kept"), kept.clone()), (key("retiring"), retiring)]
    );
    assert_eq!(
        store.signed_log_heads(NOW + HOUR).await.unwrap(),
        vec![(key("kept"), kept)],
        "a retired log is not listed"
    );
}

pub async fn a_scope_keeps_at_most_its_logs_and_refuses_the_next(backend: Backend) {
    let store = backend.store.as_ref();
    let retention = |max_logs| hearth_core::store::Retention {
        window_ms: HOUR,
        capacity: 3,
        max_live_chains: 8,
        max_logs,
    };
    let open = |name: String, max_logs: usize, now: i64| {
        let key = ChainKey {
            scope: "scope-of-logs".into(),
            name,
        };
        async move {
            let mut append = Append::next(None, &[], retention(max_logs), now, sealed);
            let mut log = log_append(None, 1);
            log.head.expires_at_ms = Some(now + HOUR + LOG_RETIREMENT_MS);
            append.log = Some(log);
            store.append(&key, append, now).await
        }
    };
    // Three logs may be kept: three chains open, each after the last one's window ended...
    for (n, now) in [NOW, NOW + 2 * HOUR, NOW + 4 * HOUR]
        .into_iter()
        .enumerate()
    {
        open(format!("label-{n}"), 3, now).await.unwrap();
    }
    // ...and a fourth is refused while the first's log is still kept, though no window is
    // live: a log is kept for a week after its window ends.
    assert!(matches!(
        open("label-3".into(), 3, NOW + 6 * HOUR).await,
        Err(StoreError::LogsFull { limit: 3 })
    ));
    // Once the first log retires, the fourth takes its place.
    open("label-3".into(), 3, NOW + HOUR + LOG_RETIREMENT_MS)
        .await
        .unwrap();
    // A removed chain's log no longer counts: what remains of it is a placeholder that only
    // keeps its id and next epoch.
    let later = NOW + 2 * HOUR + LOG_RETIREMENT_MS;
    assert!(matches!(
        open("label-4".into(), 3, later).await,
        Err(StoreError::LogsFull { limit: 3 })
    ));
    store
        .remove(&ChainKey {
            scope: "scope-of-logs".into(),
            name: "label-2".into(),
        })
        .await
        .unwrap();
    open("label-4".into(), 3, later).await.unwrap();
}

pub async fn a_witness_cosignature_is_kept_until_a_larger_tree_of_its_origin(backend: Backend) {
    let store = backend.cosigned.as_ref();
    let chain = key("witnessed");
    let cosigned = |witness: &str, origin: &str, size: u64, expires_at_ms: Option<i64>| Cosigned {
        witness: witness.into(),
        origin: origin.into(),
        size,
        line: format!("\u{2014} {witness} {size}\n"),
        expires_at_ms,
    };
    assert_eq!(store.cosigned(&chain, NOW).await.unwrap(), vec![]);
    let w1 = cosigned("w.example/one", "h/hearth/ab/decisions/1", 5, None);
    let w2 = cosigned("w.example/two", "h/hearth/ab/decisions/1", 3, None);
    store.keep_cosigned(&chain, &w1).await.unwrap();
    store.keep_cosigned(&chain, &w2).await.unwrap();
    assert_eq!(
        store.cosigned(&chain, NOW).await.unwrap(),
        vec![w1.clone(), w2.clone()]
    );
    // An answer about a smaller tree of the same origin, arriving late, changes nothing; a
    // larger one replaces it, and so does any size of another origin (a new epoch).
    let late = cosigned("w.example/one", "h/hearth/ab/decisions/1", 4, None);
    store.keep_cosigned(&chain, &late).await.unwrap();
    assert_eq!(store.cosigned(&chain, NOW).await.unwrap()[0], w1);
    let larger = cosigned("w.example/one", "h/hearth/ab/decisions/1", 6, None);
    store.keep_cosigned(&chain, &larger).await.unwrap();
    assert_eq!(store.cosigned(&chain, NOW).await.unwrap()[0], larger);
    let next_epoch = cosigned("w.example/one", "h/hearth/ab/decisions/2", 1, None);
    store.keep_cosigned(&chain, &next_epoch).await.unwrap();
    assert_eq!(store.cosigned(&chain, NOW).await.unwrap()[0], next_epoch);
    // Another chain's are its own; a retiring log's go with it.
    assert_eq!(store.cosigned(&key("other"), NOW).await.unwrap(), vec![]);
    let retiring = cosigned("w.example/one", "h/hearth/cd/ledger/1", 1, Some(NOW + HOUR));
    store.keep_cosigned(&key("label"), &retiring).await.unwrap();
    assert_eq!(
        store.cosigned(&key("label"), NOW + HOUR - 1).await.unwrap(),
        vec![retiring]
    );
    assert_eq!(
        store.cosigned(&key("label"), NOW + HOUR).await.unwrap(),
        vec![]
    );
    // Removing the chain takes them too (its log starts a new epoch).
    append_logged(backend.store.as_ref(), &chain, NOW, 1).await;
    backend.store.remove(&chain).await.unwrap();
    assert_eq!(store.cosigned(&chain, NOW).await.unwrap(), vec![]);
}

pub async fn a_log_grows_with_its_chain_and_outlives_its_window(backend: Backend) {
    let store = backend.store.as_ref();
    let key = key("logged");
    assert_eq!(
        store.load_for_append(&key, NOW).await.unwrap(),
        (None, None)
    );
    for leaf in 0..5u8 {
        append_logged(store, &key, NOW, leaf).await;
    }
    let (window, log) = store.load_for_append(&key, NOW).await.unwrap();
    assert_eq!(window.unwrap().records.len(), 3, "the window keeps three");
    let log = log.unwrap();
    assert_eq!(
        (log.size, log.epoch, log.checkpoint.as_str()),
        (5, 1, "checkpoint of 5\n")
    );
    assert_eq!(
        store.log_head(&key, NOW).await.unwrap().log,
        Some(log.clone())
    );
    // The window expires; the log does not, and the next append extends it.
    let later = NOW + 2 * HOUR;
    let (window, kept) = store.load_for_append(&key, later).await.unwrap();
    assert_eq!(window, None, "the window is gone");
    assert_eq!(kept, Some(log));
    let grown = append_logged(store, &key, later, 5).await;
    assert_eq!(grown.size, 6);
    let hashes = store.log_hashes(&key, &[0, 4, 5, 99]).await.unwrap();
    assert_eq!(hashes.len(), 3, "leaf 99 does not exist");
    assert_eq!(hashes[&0], vec![[0; 32], [100; 32]]);
    assert_eq!(hashes[&5], vec![[5; 32], [105; 32]]);
    // A read of the window does not carry the log's hashes.
    assert_eq!(
        store
            .load(&key, later)
            .await
            .unwrap()
            .unwrap()
            .records
            .len(),
        1
    );
}

pub async fn a_log_append_over_a_stale_log_head_is_a_conflict_and_changes_nothing(
    backend: Backend,
) {
    let store = backend.store.as_ref();
    let key = key("log-race");
    let first = append_logged(store, &key, NOW, 1).await;
    let (window, _) = store.load_for_append(&key, NOW).await.unwrap();
    // A writer that read the log before `first` (none) but the current window.
    let mut stale = Append::next(
        window.as_ref().map(|w| &w.head),
        window.as_ref().map_or(&[], |w| &w.records),
        hearth_core::store::Retention {
            window_ms: HOUR,
            capacity: 3,
            max_live_chains: 8,
            max_logs: 8,
        },
        NOW,
        sealed,
    );
    stale.log = Some(log_append(None, 9));
    assert!(matches!(
        store.append(&key, stale, NOW).await,
        Err(StoreError::Conflict)
    ));
    let (window, log) = store.load_for_append(&key, NOW).await.unwrap();
    assert_eq!(window.unwrap().records.len(), 1, "no record was added");
    assert_eq!(log, Some(first));
    assert!(!store.log_hashes(&key, &[0]).await.unwrap()[&0].contains(&[9; 32]));
}

pub async fn a_removed_log_keeps_its_id_with_the_next_epoch(backend: Backend) {
    let store = backend.store.as_ref();
    let key = key("log-removed");
    append_logged(store, &key, NOW, 1).await;
    append_logged(store, &key, NOW, 2).await;
    store.remove(&key).await.unwrap();
    let retired = store.log_head(&key, NOW).await.unwrap().log.unwrap();
    assert_eq!(
        (retired.log_id.as_str(), retired.epoch, retired.size),
        ("log-a", 2, 0)
    );
    assert!(retired.frontier.is_empty() && retired.checkpoint.is_empty());
    assert!(store.log_hashes(&key, &[0, 1]).await.unwrap().is_empty());
    let restarted = append_logged(store, &key, NOW, 3).await;
    assert_eq!((restarted.epoch, restarted.size), (2, 1));
}

pub async fn relocating_moves_the_log_with_the_window(backend: Backend) {
    let store = backend.store.as_ref();
    let from = key("log-from");
    let to = ChainKey {
        scope: "scope-b".into(),
        name: "log-to".into(),
    };
    append_logged(store, &from, NOW, 1).await;
    let moved = append_logged(store, &from, NOW, 2).await;
    assert_eq!(store.relocate(&from, &to, NOW).await.unwrap(), 2);
    assert_eq!(store.log_head(&to, NOW).await.unwrap().log, Some(moved));
    assert_eq!(store.log_hashes(&to, &[0, 1]).await.unwrap().len(), 2);
    let left = store.log_head(&from, NOW).await.unwrap().log.unwrap();
    assert_eq!(
        (left.epoch, left.size),
        (2, 0),
        "the old key's log is retired"
    );
}

/// Defines one `#[tokio::test]` per contract case for a backend built by `$make`.
#[macro_export]
macro_rules! contract_tests {
    ($backend:ident, $make:expr) => {
        mod $backend {
            #[allow(unused_imports)]
            use super::*;
            $crate::contract_tests!(@cases $make;
                an_unknown_chain_is_empty,
                appends_are_read_back_in_order,
                a_stale_head_is_a_conflict_and_changes_nothing,
                a_lost_append_names_what_won_or_nothing,
                eviction_keeps_the_newest_and_the_anchor,
                an_expired_window_is_hidden_then_replaced,
                the_scope_cap_counts_live_chains_only,
                concurrent_writers_lose_and_duplicate_nothing,
                decision_windows_follow_the_retention_rules,
                counters_grant_up_to_their_limit_and_refuse_one_past,
                a_refused_take_still_counts_where_there_is_room,
                a_watched_counter_refuses_at_its_limit_and_counts_nothing,
                each_window_counts_alone,
                concurrent_takes_never_pass_the_limit,
                accounts_are_created_once_read_back_and_listed,
                a_sign_up_keeps_its_expiry_until_a_write_without_it,
                account_writes_and_deletes_compare_revisions,
                removing_a_chain_takes_every_record_and_frees_its_place,
                relocating_moves_a_window_exactly_as_stored,
                a_grant_is_written_once_and_then_only_over_its_revision,
                an_expired_grant_reads_as_absent_and_can_be_replaced,
                a_grant_delete_is_a_single_use_claim,
                a_grant_kept_until_removed_outlives_every_clock,
                a_client_is_written_once_then_over_its_revision_and_listed,
                a_registration_expires_and_its_id_can_be_taken_again,
                a_claim_keeps_its_first_body_until_it_expires,
                racing_claims_of_two_bodies_see_one_winner,
                a_log_grows_with_its_chain_and_outlives_its_window,
                a_credentials_log_retires_with_its_hashes,
                every_kept_signed_log_head_is_listed_with_its_chain,
                a_scope_keeps_at_most_its_logs_and_refuses_the_next,
                a_log_append_over_a_stale_log_head_is_a_conflict_and_changes_nothing,
                a_removed_log_keeps_its_id_with_the_next_epoch,
                relocating_moves_the_log_with_the_window,
                a_witness_cosignature_is_kept_until_a_larger_tree_of_its_origin,
                appends_landed_together_leave_what_one_at_a_time_would,
            );
            $crate::contract_tests!(@one_thread $make;
                queued_decisions_land_together_each_with_its_own_receipt,
                a_batch_that_dies_between_seal_and_land_leaves_the_chain_whole,
                decisions_past_a_full_log_in_one_landing_are_told_it_is_full,
                a_landing_refused_with_its_own_heads_is_answered_once_and_lands_once,
            );
        }
    };
    (@one_thread $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                contract::$case($make.await).await;
            }
        )*
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                contract::$case($make.await).await;
            }
        )*
    };
}
