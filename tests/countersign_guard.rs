//! What one signed attestation authorises, shown on both stores (SQLite, and DynamoDB on
//! moto):
//! - one (member, turn) backs at most one proposal per product, and at most
//!   `MAX_PROPOSALS_PER_TURN` in all;
//! - the requester never decides their own request, and a proposal is no reading for a
//!   guardian;
//! - an answer counts only for the newest question read to that member, dated after it (less
//!   a small clock skew) and close to it;
//! - a flood of entries cannot make this week's spending unknown.

mod common;

use common::Backend;

use std::sync::Arc;

use hearth_core::auth::Caller;
use hearth_core::auth::attestation::{Attestation, HostClaim};
use hearth_core::clock::{Clock, ManualClock};
use hearth_core::countersign::CountersignService;
use hearth_core::countersign::household::HouseholdData;
use hearth_core::countersign::judge::rules::RulesJudge;
use hearth_core::countersign::ledger::{
    ANSWER_CLOCK_SKEW_SECS, ANSWER_WITHIN_SECS, Ledger, MAX_PROPOSALS_PER_TURN, Settled, Status,
};
use hearth_core::countersign::refusal::Refusal;
use hearth_core::countersign::service::{
    ACTING_CALLS_PER_MEMBER, ACTING_WINDOW_MS, CountersignError, ProposeOutput,
};
use hearth_core::store::dynamodb::DynamoStore;
use hearth_core::store::sqlite::SqliteStore;
use hearth_core::store::{ChainStore, CounterStore, GrantStore};
use hearth_testkit::moto::{Moto, unique_name};
use time::{Duration, OffsetDateTime};

const HOUSEHOLD: &str = include_str!("../data/household.json");
const CATALOGUE: &str = include_str!("../data/catalogue.json");

struct Stores {
    chains: Arc<dyn ChainStore>,
    counters: Arc<dyn CounterStore>,
    turns: Arc<dyn GrantStore>,
    _dir: Option<tempfile::TempDir>,
}

async fn stores(backend: Backend) -> Stores {
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let store = Arc::new(SqliteStore::open(&dir.path().join("guard.db")).unwrap());
            Stores {
                chains: store.clone(),
                counters: store.clone(),
                turns: store,
                _dir: Some(dir),
            }
        }
        Backend::Dynamo => {
            let client = Moto::shared().dynamodb_client();
            let store = DynamoStore::new(client, unique_name("hearth-guard"));
            store.ensure_table().await.expect("create the table");
            let store = Arc::new(store);
            Stores {
                chains: store.clone(),
                counters: store.clone(),
                turns: store,
                _dir: None,
            }
        }
    }
}

struct Home {
    service: CountersignService,
    clock: Arc<ManualClock>,
    stores: Stores,
}

impl Home {
    async fn new(backend: Backend) -> Self {
        Self::with(backend, HouseholdData::built_in().unwrap(), None).await
    }

    /// The built-in household with its JSON edited.
    async fn edited(backend: Backend, edit: impl FnOnce(&mut serde_json::Value)) -> Self {
        let mut household: serde_json::Value = serde_json::from_str(HOUSEHOLD).unwrap();
        edit(&mut household);
        let data = HouseholdData::parse(&household.to_string(), CATALOGUE).unwrap();
        Self::with(backend, data, None).await
    }

    /// A ledger that keeps only `capacity` entries, to show eviction without a thousand
    /// appends.
    async fn keeping(backend: Backend, capacity: usize) -> Self {
        Self::with(backend, HouseholdData::built_in().unwrap(), Some(capacity)).await
    }

    async fn with(backend: Backend, data: HouseholdData, capacity: Option<usize>) -> Self {
        let stores = stores(backend).await;
        // Monday morning, on a whole second, so that second-resolution attestation times line
        // up exactly with the ledger's milliseconds at the limits tested below.
        let clock = Arc::new(ManualClock::new(
            OffsetDateTime::from_unix_timestamp(1_796_029_200).unwrap(),
        ));
        let mut ledger = Ledger::new(stores.chains.clone(), clock.clone());
        if let Some(capacity) = capacity {
            ledger = ledger.with_capacity(capacity);
        }
        let service = CountersignService::new(
            Arc::new(data),
            ledger,
            Arc::new(RulesJudge),
            stores.counters.clone(),
            stores.turns.clone(),
        );
        Self {
            service,
            clock,
            stores,
        }
    }

    /// Another service over the same store and clock, for the household with its JSON
    /// edited: what a restart after changing the household file gives.
    fn reconfigured(&self, edit: impl FnOnce(&mut serde_json::Value)) -> CountersignService {
        let mut household: serde_json::Value = serde_json::from_str(HOUSEHOLD).unwrap();
        edit(&mut household);
        let data = HouseholdData::parse(&household.to_string(), CATALOGUE).unwrap();
        CountersignService::new(
            Arc::new(data),
            Ledger::new(self.stores.chains.clone(), self.clock.clone()),
            Arc::new(RulesJudge),
            self.stores.counters.clone(),
            self.stores.turns.clone(),
        )
    }

    /// `member` saying `words` in `turn`, attested now.
    fn says(&self, member: &str, turn: &str, words: &str) -> Caller {
        speaking(member, turn, words, None, self.now_secs())
    }

    /// `member` in `turn`, attested now, with the device carrying `utterances` (the newest
    /// last), as a device may carry words from earlier turns.
    fn carries(&self, member: &str, turn: &str, utterances: &[&str]) -> Caller {
        let mut caller = speaking(member, turn, "", None, self.now_secs());
        if let HostClaim::Verified(attestation) = &mut caller.host {
            attestation.utterances = utterances.iter().map(|w| w.to_string()).collect();
        }
        caller
    }

    /// `member` saying `words` in `turn`, attested now, answering `request_id`.
    fn answers(&self, member: &str, turn: &str, words: &str, request_id: &str) -> Caller {
        speaking(member, turn, words, Some(request_id), self.now_secs())
    }

    /// `member` says `words` in `turn`, and the assistant proposes that order; it must not
    /// be refused.
    async fn proposes(
        &self,
        member: &str,
        turn: &str,
        words: &str,
        product: &str,
        variant: &str,
        quantity: u32,
    ) -> ProposeOutput {
        let speaker = self.says(member, turn, words);
        self.service
            .propose(&speaker, product, variant, quantity)
            .await
            .unwrap_or_else(|error| panic!("{member} proposing {product}: {error}"))
    }

    fn now_secs(&self) -> i64 {
        self.clock.now().unix_timestamp()
    }

    fn wait(&self, duration: Duration) {
        self.clock.advance(duration);
    }
}

/// An attested speaker: who, in which turn, saying what, answering which request.
fn speaking(
    member: &str,
    turn: &str,
    words: &str,
    answering: Option<&str>,
    issued_at: i64,
) -> Caller {
    Caller {
        scope: "guarded-household".into(),
        household: None,
        host: HostClaim::Verified(Attestation {
            member_id: member.into(),
            turn_id: turn.into(),
            utterances: vec![words.into()],
            issued_at,
            answering: answering.map(str::to_owned),
        }),
        read_ahead: None,
    }
}

fn refusal<T: std::fmt::Debug>(result: Result<T, CountersignError>) -> Refusal {
    match result {
        Err(CountersignError::Refused(refusal)) => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// ---- one utterance, one order --------------------------------------------------------------

async fn one_signed_utterance_places_at_most_one_order_per_product(backend: Backend) {
    let home = Home::new(backend).await;
    let turn = home.says("dana", "t-1", "order two packs of double A batteries");
    let first = home
        .service
        .propose(&turn, "aa-batteries", "12-pack", 2)
        .await
        .unwrap();
    assert_eq!(first.status, Status::Placed);
    // A prompt-injected model repeats the call with the same attestation, within its five
    // minutes, and tries another variant of the same product too.
    for repeat in 0..14 {
        home.wait(Duration::seconds(10));
        let variant = if repeat % 2 == 0 { "12-pack" } else { "4-pack" };
        let message = refusal(
            home.service
                .propose(&turn, "aa-batteries", variant, 2)
                .await,
        );
        assert_eq!(
            message,
            Refusal::TurnAlreadyProposed {
                title: "PowerCell AA Alkaline Batteries".into()
            }
        );
    }
    let activity = home.service.activity(&turn).await.unwrap();
    assert_eq!(activity.placed.len(), 1, "one order, not fifteen");
    assert_eq!(activity.spent_cents, Some(2598));
}

async fn one_turn_may_propose_a_few_different_products_and_no_more(backend: Backend) {
    let home = Home::new(backend).await;
    let turn = home.says(
        "dana",
        "t-1",
        "order batteries, milk, paper towels and detergent",
    );
    let products = [
        ("aa-batteries", "4-pack"),
        ("whole-milk", "1l"),
        ("paper-towels", "6-rolls"),
        ("laundry-detergent", "unscented-2l"),
    ];
    for (product, variant) in &products[..MAX_PROPOSALS_PER_TURN] {
        home.service
            .propose(&turn, product, variant, 1)
            .await
            .unwrap_or_else(|error| panic!("{product}: {error}"));
    }
    let (product, variant) = products[MAX_PROPOSALS_PER_TURN];
    let message = refusal(home.service.propose(&turn, product, variant, 1).await);
    assert_eq!(message, Refusal::TurnFull);
    // The next turn may ask again; another member's turn with the same id is their own.
    let next = home.says("dana", "t-2", "and detergent");
    home.service
        .propose(&next, product, variant, 1)
        .await
        .unwrap();
    let chris = home.says("chris", "t-1", "order AA batteries");
    home.service
        .propose(&chris, "aa-batteries", "4-pack", 1)
        .await
        .unwrap();
}

// ---- words carried between turns back one order ---------------------------------------------

/// A device may carry up to three of the person's recent words into later turns. Words that
/// already backed a proposal of a product back no other proposal of it: the same words in
/// three turns place one order, and a clear answer to the question still counts.
async fn words_carried_into_later_turns_back_one_order(backend: Backend) {
    let home = Home::new(backend).await;
    const ASKED: &str = "order two packs of double A batteries";
    let first = home
        .service
        .propose(
            &home.carries("dana", "c-1", &[ASKED]),
            "aa-batteries",
            "12-pack",
            2,
        )
        .await
        .unwrap();
    assert_eq!(first.status, Status::Placed);
    let mut last = first;
    for (turn, newest) in [("c-2", "thanks"), ("c-3", "great, thank you")] {
        home.wait(Duration::seconds(20));
        let carried = home.carries("dana", turn, &[ASKED, newest]);
        last = home
            .service
            .propose(&carried, "aa-batteries", "12-pack", 2)
            .await
            .unwrap();
        assert_ne!(last.status, Status::Placed, "{turn}: {}", last.say);
        assert_eq!(last.status, Status::WaitingForConfirmation, "{turn}");
    }
    let activity = home
        .service
        .activity(&home.says("dana", "c-4", "what did we buy"))
        .await
        .unwrap();
    assert_eq!(
        activity.placed.len(),
        1,
        "the same words in three turns place one order"
    );
    // The question the last proposal asked is answered as any other: "no" cancels it.
    home.wait(Duration::seconds(5));
    let answer = home.answers("dana", "c-5", "no", &last.request_id);
    let cancelled = home
        .service
        .confirm(&answer, &last.request_id)
        .await
        .unwrap();
    assert_eq!(cancelled.status, Status::Cancelled);
    // New words in a later turn back a new order, beside the carried ones.
    home.wait(Duration::seconds(5));
    let again = home.carries(
        "dana",
        "c-6",
        &[ASKED, "and two more packs of double A batteries"],
    );
    let placed = home
        .service
        .propose(&again, "aa-batteries", "12-pack", 2)
        .await
        .unwrap();
    assert_eq!(placed.status, Status::Placed, "{}", placed.say);
}

/// A cancelled order's words do not come back either: "no" means no.
async fn words_of_a_cancelled_order_do_not_back_it_again(backend: Backend) {
    let home = Home::new(backend).await;
    // Corner Electrics is known, so only the intent check can hold this one: 3, not two.
    const ASKED: &str = "order two packs of double A batteries";
    let held = home
        .service
        .propose(
            &home.carries("dana", "n-1", &[ASKED]),
            "aa-batteries",
            "12-pack",
            3,
        )
        .await
        .unwrap();
    assert_eq!(held.status, Status::WaitingForConfirmation);
    home.wait(Duration::seconds(5));
    let no = home.answers("dana", "n-2", "no", &held.request_id);
    home.service.confirm(&no, &held.request_id).await.unwrap();
    home.wait(Duration::seconds(5));
    let carried = home.carries("dana", "n-3", &[ASKED, "no"]);
    let again = home
        .service
        .propose(&carried, "aa-batteries", "12-pack", 2)
        .await
        .unwrap();
    assert_eq!(
        again.status,
        Status::WaitingForConfirmation,
        "{}",
        again.say
    );
}

// ---- a host-key attestation speaks for one ledger -------------------------------------------

/// The deployment's host key names no household or credential, so the first ledger an
/// attested turn acts in is the only one it may act in: replayed under another credential's
/// token it places nothing there.
async fn a_host_key_attestation_acts_for_one_ledger_only(backend: Backend) {
    let home = Home::new(backend).await;
    let judge = home.says("dana", "h-1", "order two packs of double A batteries");
    let placed = home
        .service
        .propose(&judge, "aa-batteries", "12-pack", 2)
        .await
        .unwrap();
    assert_eq!(placed.status, Status::Placed);
    let mut client = judge.clone();
    client.scope = "another-credential".into();
    let message = refusal(
        home.service
            .propose(&client, "aa-batteries", "12-pack", 2)
            .await,
    );
    assert_eq!(message, Refusal::TurnUsedElsewhere);
    let activity = home.service.activity(&client).await.unwrap();
    assert!(
        activity.placed.is_empty(),
        "nothing placed under the second credential"
    );
    // Every acting call is bound, reading what is waiting included.
    assert!(home.service.list_waiting(&client).await.is_err());
    // The first ledger still takes the turn's other calls.
    home.service.list_waiting(&judge).await.unwrap();
}

// ---- nobody decides their own request ------------------------------------------------------

async fn a_guardian_never_decides_their_own_request(backend: Backend) {
    // Grandma Rose is a guardian here, and gift cards she buys need a guardian.
    let home = Home::edited(backend, |household| {
        household["guardians"] = serde_json::json!(["dana", "rose"]);
    })
    .await;
    let asked = home
        .proposes(
            "rose",
            "r-1",
            "buy a fifty dollar gift card",
            "gift-card",
            "50",
            1,
        )
        .await;
    assert_eq!(asked.status, Status::WaitingForGuardian);
    let id = asked.request_id;
    home.wait(Duration::seconds(5));

    // Her own request is not read to her as a guardian's question...
    let waiting = home
        .service
        .list_waiting(&home.says("rose", "r-2", "what's waiting"))
        .await
        .unwrap();
    assert_eq!(waiting.waiting, 0, "{}", waiting.say);
    // ...and her yes, answering it in a later turn, decides nothing.
    let message = refusal(
        home.service
            .decide(&home.answers("rose", "r-3", "yes", &id), &id, true)
            .await,
    );
    assert_eq!(
        message,
        Refusal::OwnRequest {
            name: "Grandma Rose".into(),
            another_guardian: true
        }
    );
    assert!(message.say().contains("Grandma Rose asked for it"));

    // Dana, the other guardian, hears it and decides.
    home.service
        .list_waiting(&home.says("dana", "d-1", "what's waiting"))
        .await
        .unwrap();
    home.wait(Duration::seconds(5));
    let decided = home
        .service
        .decide(&home.answers("dana", "d-2", "yes", &id), &id, true)
        .await
        .unwrap();
    assert_eq!(decided.result, Some(Settled::Placed));
}

async fn a_request_only_its_requester_could_decide_is_refused_and_says_why(backend: Backend) {
    let home = Home::edited(backend, |household| {
        household["guardians"] = serde_json::json!(["rose"]);
    })
    .await;
    let asked = home
        .proposes(
            "rose",
            "r-1",
            "buy a fifty dollar gift card",
            "gift-card",
            "50",
            1,
        )
        .await;
    assert_eq!(asked.status, Status::Blocked, "{}", asked.say);
    assert!(
        asked
            .reasons
            .iter()
            .any(|reason| reason.contains("Grandma Rose, who asked, is the only guardian")),
        "{:?}",
        asked.reasons
    );
    assert!(asked.say.contains("is the only guardian"), "{}", asked.say);
}

// ---- answers belong to their question ------------------------------------------------------

/// Mia asks; Dana hears the question; returns the request id and when it was read (seconds).
async fn read_to_dana(home: &Home) -> (String, i64) {
    let asked = home
        .proposes(
            "mia",
            "m-1",
            "order a 4 pack of AA batteries",
            "aa-batteries",
            "4-pack",
            1,
        )
        .await;
    assert_eq!(asked.status, Status::WaitingForGuardian);
    home.wait(Duration::seconds(20));
    let read_at = home.now_secs();
    let read = home
        .service
        .list_waiting(&speaking("dana", "d-read", "what's waiting", None, read_at))
        .await
        .unwrap();
    assert_eq!(
        read.read_aloud.as_ref().map(|r| r.request_id.as_str()),
        Some(asked.request_id.as_str())
    );
    (asked.request_id, read_at)
}

async fn a_yes_signed_before_the_question_was_read_does_not_count(backend: Backend) {
    let home = Home::new(backend).await;
    let (id, read_at) = read_to_dana(&home).await;
    home.wait(Duration::seconds(10));
    // Signed fifteen seconds before the question was read, still inside its five minutes.
    let early = speaking("dana", "d-early", "yes", Some(&id), read_at - 15);
    let message = refusal(home.service.decide(&early, &id, true).await);
    assert_eq!(message, Refusal::AnswerBeforeQuestion);
}

async fn a_yes_long_after_the_question_does_not_count(backend: Backend) {
    let home = Home::new(backend).await;
    let (id, _) = read_to_dana(&home).await;
    home.wait(Duration::hours(3));
    let late = home.answers("dana", "d-late", "yes", &id);
    let message = refusal(home.service.decide(&late, &id, true).await);
    assert_eq!(message, Refusal::AnswerTooLate);
}

/// An unclear answer passes every check and changes nothing, so it probes where the limits
/// are without settling the request.
async fn answer_times_hold_at_their_limits_and_fail_one_second_past(backend: Backend) {
    let home = Home::new(backend).await;
    let (id, read_at) = read_to_dana(&home).await;
    let probe = |turn: &str, issued_at: i64| speaking("dana", turn, "maybe", Some(&id), issued_at);
    home.wait(Duration::seconds(1));

    let earliest = read_at - ANSWER_CLOCK_SKEW_SECS;
    let at_limit = home
        .service
        .decide(&probe("a-1", earliest), &id, true)
        .await;
    assert_eq!(at_limit.unwrap().status, Status::WaitingForGuardian);
    let past = home
        .service
        .decide(&probe("a-2", earliest - 1), &id, true)
        .await;
    assert_eq!(refusal(past), Refusal::AnswerBeforeQuestion);

    home.wait(Duration::seconds(ANSWER_WITHIN_SECS));
    let latest = read_at + ANSWER_WITHIN_SECS;
    let at_limit = home.service.decide(&probe("a-3", latest), &id, true).await;
    assert_eq!(at_limit.unwrap().status, Status::WaitingForGuardian);
    let past = home
        .service
        .decide(&probe("a-4", latest + 1), &id, true)
        .await;
    assert_eq!(refusal(past), Refusal::AnswerTooLate);
}

async fn only_the_newest_question_read_to_a_member_can_be_answered(backend: Backend) {
    let home = Home::new(backend).await;
    let (child_request, _) = read_to_dana(&home).await;
    home.wait(Duration::seconds(5));
    // Dana's own proposal asks her a newer question.
    let own = home
        .proposes(
            "dana",
            "d-own",
            "get the dino blocks",
            "dino-blocks",
            "standard",
            1,
        )
        .await;
    assert_eq!(own.status, Status::WaitingForConfirmation);
    home.wait(Duration::seconds(5));
    let stale = home.answers("dana", "d-answer", "yes", &child_request);
    let message = refusal(home.service.decide(&stale, &child_request, true).await);
    assert_eq!(message, Refusal::AnswerNotToNewestQuestion);

    // Her answer to the newest question counts, and uses that reading up.
    let answer = home.answers("dana", "d-answer-2", "no", &own.request_id);
    let cancelled = home
        .service
        .confirm(&answer, &own.request_id)
        .await
        .unwrap();
    assert_eq!(cancelled.result, Some(Settled::Cancelled));
    // Hearing the child's request again makes it answerable again.
    home.service
        .list_waiting(&home.says("dana", "d-read-2", "what's waiting"))
        .await
        .unwrap();
    home.wait(Duration::seconds(5));
    let yes = home.answers("dana", "d-answer-3", "yes", &child_request);
    let placed = home
        .service
        .decide(&yes, &child_request, true)
        .await
        .unwrap();
    assert_eq!(placed.result, Some(Settled::Placed));
}

// ---- floods --------------------------------------------------------------------------------

/// An order early in the week, then more entries than the ledger keeps: the week's spending
/// is still known, so purchases go on.
async fn evicted_entries_never_make_the_week_unknown(backend: Backend) {
    let home = Home::keeping(backend, 6).await;
    let first = home
        .proposes(
            "dana",
            "d-0",
            "order two packs of double A batteries",
            "aa-batteries",
            "12-pack",
            2,
        )
        .await;
    assert_eq!(first.status, Status::Placed);
    for turn in 0..8 {
        home.wait(Duration::minutes(2));
        home.service
            .propose(
                &home.says(
                    "leo",
                    &format!("l-{turn}"),
                    "order a 4 pack of AA batteries",
                ),
                "aa-batteries",
                "4-pack",
                1,
            )
            .await
            .unwrap();
    }
    let activity = home
        .service
        .activity(&home.says("chris", "c-1", "what did we buy"))
        .await
        .unwrap();
    assert_eq!(activity.ledger.entries, 6, "the ledger keeps six");
    assert_eq!(activity.spent_cents, Some(2598), "{}", activity.say);
    let next = home
        .proposes("chris", "c-2", "order milk", "whole-milk", "1l", 1)
        .await;
    assert_eq!(next.status, Status::Placed, "{}", next.say);
}

/// Acting calls are counted per member in the store, so a flood stops at the limit on every
/// instance, and the next window opens again.
async fn each_member_may_act_twenty_times_in_ten_minutes(backend: Backend) {
    let home = Home::new(backend).await;
    let read = |turn: usize| home.says("leo", &format!("l-{turn}"), "what's waiting");
    for turn in 0..ACTING_CALLS_PER_MEMBER as usize {
        home.service.list_waiting(&read(turn)).await.unwrap();
    }
    let message = refusal(home.service.list_waiting(&read(99)).await);
    assert!(
        matches!(&message, Refusal::TooManyRequests { name, .. } if name == "Leo"),
        "{message:?}"
    );
    assert!(
        message
            .say()
            .contains("Leo has made 20 requests in ten minutes")
    );
    // Another member is counted apart.
    home.service
        .list_waiting(&home.says("mia", "m-1", "what's waiting"))
        .await
        .unwrap();
    home.wait(Duration::milliseconds(ACTING_WINDOW_MS));
    home.service.list_waiting(&read(100)).await.unwrap();
}

/// "The household has never ordered from Toy Planet" stays true when it is spoken: once an
/// order from a merchant is placed, the merchant is known.
async fn a_merchant_is_known_once_the_household_has_ordered_from_it(backend: Backend) {
    let home = Home::new(backend).await;
    // Each time in other words: words that backed one request of a product back no other.
    let ask = |turn: &str| {
        let words = match turn {
            "d-1" => "get the dino blocks",
            "d-3" => "get the dino blocks after all",
            _ => "and the dino blocks again",
        };
        home.says("dana", turn, words)
    };
    let first = home
        .service
        .propose(&ask("d-1"), "dino-blocks", "standard", 1)
        .await
        .unwrap();
    assert_eq!(first.status, Status::WaitingForConfirmation);
    assert!(
        first.reasons[0].contains("never ordered from Toy Planet"),
        "{:?}",
        first.reasons
    );
    // Turned down: still never ordered from.
    let no = home.answers("dana", "d-2", "no", &first.request_id);
    home.service.confirm(&no, &first.request_id).await.unwrap();
    let second = home
        .service
        .propose(&ask("d-3"), "dino-blocks", "standard", 1)
        .await
        .unwrap();
    assert_eq!(second.status, Status::WaitingForConfirmation);
    let yes = home.answers("dana", "d-4", "yes", &second.request_id);
    let placed = home
        .service
        .confirm(&yes, &second.request_id)
        .await
        .unwrap();
    assert_eq!(placed.result, Some(Settled::Placed));
    let third = home
        .service
        .propose(&ask("d-5"), "dino-blocks", "standard", 1)
        .await
        .unwrap();
    assert_eq!(third.status, Status::Placed, "{:?}", third.reasons);
}

/// The week is the household's: in New York, with weeks from Sunday, Monday 09:00 UTC is in
/// the week that began Sunday 00:00 EST (05:00 UTC), and an order placed on Saturday evening
/// there counts in it until the Sunday midnight that starts the next.
async fn budget_weeks_are_counted_in_the_households_time_zone(backend: Backend) {
    let home = Home::edited(backend, |household| {
        household["time_zone"] = "America/New_York".into();
        household["week_starts"] = "sunday".into();
    })
    .await;
    let ask = home.says("dana", "d-1", "order milk");
    home.service
        .propose(&ask, "whole-milk", "1l", 1)
        .await
        .unwrap();
    let activity = home.service.activity(&ask).await.unwrap();
    assert_eq!(activity.week_start, "2026-11-29T05:00:00.000Z");
    assert_eq!(activity.spent_cents, Some(189));
    // Saturday 23:59:59 EST is still this week; a second later it is the next.
    home.wait(Duration::days(6) - Duration::hours(9) + Duration::hours(5) - Duration::seconds(1));
    let late = home.service.activity(&ask).await.unwrap();
    assert_eq!(late.spent_cents, Some(189), "{}", late.week_start);
    home.wait(Duration::seconds(1));
    let next = home.service.activity(&ask).await.unwrap();
    assert_eq!(next.week_start, "2026-12-06T05:00:00.000Z");
    assert_eq!(next.spent_cents, Some(0));
}

/// Moving the week's boundary (another time zone, another first day) neither stops the
/// ledger nor forgets what this week already spent.
async fn changing_the_households_week_keeps_the_ledger_and_the_weeks_spending(backend: Backend) {
    let home = Home::new(backend).await;
    let batteries = home
        .proposes(
            "dana",
            "d-1",
            "order two packs of double A batteries",
            "aa-batteries",
            "12-pack",
            2,
        )
        .await;
    assert_eq!(batteries.status, Status::Placed);

    // Berlin's week began an hour before UTC's: the same orders fall in it.
    let berlin = home.reconfigured(|h| h["time_zone"] = "Europe/Berlin".into());
    let milk = berlin
        .propose(
            &home.says("dana", "d-2", "and a carton of milk"),
            "whole-milk",
            "1l",
            1,
        )
        .await
        .unwrap();
    assert_eq!(milk.status, Status::Placed, "{}", milk.say);
    let report = berlin
        .activity(&home.says("chris", "c-1", "what did we buy"))
        .await
        .unwrap();
    assert_eq!(report.spent_cents, Some(2598 + 189), "{}", report.say);
    assert!(
        berlin
            .verify(&home.says("chris", "c-2", "check"))
            .await
            .unwrap()
            .check
            .intact
    );

    // New York's began five hours after UTC's (four, in summer): still every order so far.
    let new_york = home.reconfigured(|h| h["time_zone"] = "America/New_York".into());
    let report = new_york
        .activity(&home.says("chris", "c-3", "what did we buy"))
        .await
        .unwrap();
    assert_eq!(report.week_start, "2026-11-30T05:00:00.000Z");
    assert_eq!(report.spent_cents, Some(2598 + 189), "{}", report.say);
    let more = new_york
        .propose(
            &home.says("dana", "d-3", "one more carton of milk please"),
            "whole-milk",
            "1l",
            1,
        )
        .await
        .unwrap();
    assert_eq!(more.status, Status::Placed, "{}", more.say);
    let report = new_york
        .activity(&home.says("chris", "c-4", "and now"))
        .await
        .unwrap();
    assert_eq!(report.spent_cents, Some(2598 + 189 + 189), "{}", report.say);
    assert!(report.ledger.intact);
}

/// If the entries of a live turn may have been evicted, what the turn already ordered cannot
/// be told, and a proposal in it is refused rather than guessed (per-member limits keep this
/// from happening with the real capacity; a ledger that keeps two shows the path).
async fn a_turn_whose_entries_may_be_evicted_is_refused(backend: Backend) {
    let home = Home::keeping(backend, 2).await;
    let turn = home.says("dana", "d-1", "order batteries and milk");
    home.service
        .propose(&turn, "aa-batteries", "4-pack", 1)
        .await
        .unwrap();
    for member in ["chris", "mia"] {
        home.service
            .list_waiting(&home.says(member, "x-1", "what's waiting"))
            .await
            .unwrap();
        home.proposes(member, "x-2", "order milk", "whole-milk", "1l", 1)
            .await;
    }
    let message = refusal(home.service.propose(&turn, "whole-milk", "1l", 1).await);
    assert_eq!(message, Refusal::TurnPartlyEvicted);
    // A later turn, whose entries can only be newer than everything evicted, is judged on
    // its own.
    home.wait(Duration::minutes(1));
    home.proposes("dana", "d-2", "and some milk", "whole-milk", "1l", 1)
        .await;
}

on_both_stores!(
    words_carried_into_later_turns_back_one_order,
    words_of_a_cancelled_order_do_not_back_it_again,
    a_host_key_attestation_acts_for_one_ledger_only,
    one_signed_utterance_places_at_most_one_order_per_product,
    one_turn_may_propose_a_few_different_products_and_no_more,
    a_guardian_never_decides_their_own_request,
    a_request_only_its_requester_could_decide_is_refused_and_says_why,
    a_yes_signed_before_the_question_was_read_does_not_count,
    a_yes_long_after_the_question_does_not_count,
    answer_times_hold_at_their_limits_and_fail_one_second_past,
    only_the_newest_question_read_to_a_member_can_be_answered,
    evicted_entries_never_make_the_week_unknown,
    each_member_may_act_twenty_times_in_ten_minutes,
    a_merchant_is_known_once_the_household_has_ordered_from_it,
    budget_weeks_are_counted_in_the_households_time_zone,
    changing_the_households_week_keeps_the_ledger_and_the_weeks_spending,
    a_turn_whose_entries_may_be_evicted_is_refused,
);
