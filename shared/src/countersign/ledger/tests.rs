//! Unit tests of the ledger's parts: errors, week tallies, views and entry serialisation.

use time::macros::datetime;

use super::verify::check_tallies;
use super::*;
use crate::chain::Problem;
use crate::countersign::judge::Verdict;
use crate::countersign::policy::Outcome;
use crate::store::Head;
use crate::transparency::LogError;

/// A full log is a limit the operator lifts, never tampering; every ledger error a voice
/// may read names no internals and says what to do, and each has its own code.
#[test]
fn a_full_log_is_a_limit_and_every_ledger_error_is_spoken_plainly() {
    let full = LedgerError::from_log(LogError::Full(1 << 24));
    assert!(matches!(full, LedgerError::LogFull(16_777_216)), "{full:?}");
    assert_eq!(full.code(), "log_full");
    assert!(!full.say().contains("check"), "{}", full.say());
    assert!(matches!(
        LedgerError::from_log(LogError::Removed),
        LedgerError::LogTampered(_)
    ));
    let all = [
        LedgerError::Tampered {
            seq: 3,
            problem: Problem::HashMismatch,
        },
        LedgerError::Unavailable,
        LedgerError::LogTampered("the log was replaced".into()),
        LedgerError::Busy,
        LedgerError::HouseholdLimit,
        LedgerError::LogLimit,
        full,
    ];
    let mut codes = std::collections::BTreeSet::new();
    for error in &all {
        assert_eq!(
            crate::countersign::refusal::check_spoken(error.say()),
            Ok(()),
            "{}",
            error.say()
        );
        assert!(codes.insert(error.code()), "{}", error.code());
    }
}

#[test]
fn utc_weeks_from_monday_start_at_monday_midnight_utc() {
    let ledger_weeks = Weeks::new("UTC", "monday").unwrap();
    let week_start = |now| ledger_weeks.start_of(now);
    assert_eq!(
        week_start(datetime!(2026-11-30 07:33 UTC)),
        datetime!(2026-11-30 00:00 UTC)
    );
    assert_eq!(
        week_start(datetime!(2026-12-06 23:59:59 UTC)),
        datetime!(2026-11-30 00:00 UTC)
    );
    assert_eq!(
        week_start(datetime!(2026-12-07 00:00 UTC)),
        datetime!(2026-12-07 00:00 UTC)
    );
    assert_eq!(
        week_start(datetime!(2026-12-07 00:30 +01:00)),
        datetime!(2026-11-30 00:00 UTC)
    );
}

fn view_from(entry_at: &str, anchor: Option<&str>) -> LedgerView {
    let entry = Entry {
        format: FORMAT.into(),
        seq: 7,
        prev: Some("ab".into()),
        at: entry_at.into(),
        request_id: "REQ-1".into(),
        member_id: "dana".into(),
        turn_id: "t-1".into(),
        event: Event::ReadAloud {
            question: "?".into(),
        },
        week: None,
    };
    LedgerView {
        household_id: "home".into(),
        head: Some(Head {
            window_started_ms: 0,
            expires_at_ms: i64::MAX,
            last_seq: 7,
            last_hash: "cd".into(),
            anchor: anchor.map(str::to_owned),
            log_id: None,
            log_base: None,
        }),
        records: Vec::new(),
        entries: vec![entry],
    }
}

#[test]
fn spend_is_unknown_when_evicted_entries_may_fall_in_the_week() {
    let monday = datetime!(2026-11-30 00:00 UTC);
    // Evicted entries are older than the oldest retained one; if that is inside the week,
    // some of the week may be gone.
    let trimmed_this_week = view_from("2026-11-30T00:00:00.000Z", Some("ef"));
    assert_eq!(trimmed_this_week.spent_since(monday), None);
    let trimmed_before = view_from("2026-11-29T23:59:59.999Z", Some("ef"));
    assert_eq!(trimmed_before.spent_since(monday), Some(0));
    let untrimmed = view_from("2026-11-30T08:00:00.000Z", None);
    assert_eq!(untrimmed.spent_since(monday), Some(0));
}

fn placing(seq: u64, at: &str, total_cents: u64, week: Option<(&str, u64)>) -> Entry {
    let proposal = ProposalEvent {
        words: vec!["order it".into()],
        product_id: "p".into(),
        variant_id: "v".into(),
        title: "T".into(),
        variant: "V".into(),
        merchant_id: "m".into(),
        merchant: "M".into(),
        unit_price_cents: total_cents,
        quantity: 1,
        total_cents,
        intent: IntentRecord {
            judge: "rules".into(),
            verdict: Verdict::Match,
            codes: vec![],
            reasons: vec![],
        },
        outcome: Outcome::Placed,
        reasons: vec![],
        order_id: Some(format!("SIM-{seq}")),
    };
    Entry {
        format: FORMAT.into(),
        seq,
        prev: None,
        at: at.into(),
        request_id: format!("REQ-{seq}"),
        member_id: "dana".into(),
        turn_id: format!("t-{seq}"),
        event: Event::Proposal(Box::new(proposal)),
        week: week.map(|(starts, spent_cents)| WeekTally {
            starts: starts.into(),
            spent_cents,
        }),
    }
}

const MONDAY: &str = "2026-11-30T00:00:00.000Z";
const NEXT_MONDAY: &str = "2026-12-07T00:00:00.000Z";

#[test]
fn running_totals_must_follow_from_the_entries() {
    let good = [
        placing(1, "2026-11-30T08:00:00.000Z", 500, Some((MONDAY, 700))),
        placing(2, "2026-11-30T09:00:00.000Z", 300, Some((MONDAY, 1000))),
        placing(3, "2026-12-07T09:00:00.000Z", 200, Some((NEXT_MONDAY, 200))),
    ];
    // The first retained tally may include evicted orders; it only has to cover its own.
    assert_eq!(check_tallies(&good), Ok(()));
    let failing_at = |entries: &[Entry]| check_tallies(entries).map_err(|e| e.position);
    let mut lowered = good.clone();
    lowered[1].week.as_mut().unwrap().spent_cents = 900;
    assert_eq!(failing_at(&lowered), Err(2));
    let mut carried = good.clone();
    carried[2].week.as_mut().unwrap().spent_cents = 1200;
    assert_eq!(failing_at(&carried), Err(3), "a new week starts from zero");
    let mut short_first = good.clone();
    short_first[0].week.as_mut().unwrap().spent_cents = 499;
    assert_eq!(failing_at(&short_first), Err(1));
    // The longest week (169 hours, across a clock change) at its limit and past it.
    let mut longest = good.clone();
    longest[2].at = "2026-12-14T01:00:00.000Z".into();
    assert_eq!(check_tallies(&longest), Ok(()));
    longest[2].at = "2026-12-14T01:00:00.001Z".into();
    assert_eq!(failing_at(&longest), Err(3));
    let mut too_long = good.clone();
    too_long[2].week.as_mut().unwrap().starts = "2026-11-23T00:00:00.000Z".into();
    assert_eq!(failing_at(&too_long), Err(3), "no week lasts a fortnight");
    let mut ahead = good.clone();
    ahead[1].week.as_mut().unwrap().starts = "2026-11-30T10:00:00.000Z".into();
    assert_eq!(
        failing_at(&ahead),
        Err(2),
        "a week cannot start after its entry"
    );
    // The household moved its week back over the entry before (here to Sunday 23:00 UTC):
    // the figure was summed from the retained orders, so it only has to cover its own.
    let mut moved = good.clone();
    moved[1].week = Some(WeekTally {
        starts: "2026-11-29T23:00:00.000Z".into(),
        spent_cents: 800,
    });
    assert_eq!(check_tallies(&moved), Ok(()));
    moved[1].week.as_mut().unwrap().spent_cents = 299;
    assert_eq!(failing_at(&moved), Err(2));
    // A week that could not be summed has no tally; the next only covers its own.
    let mut unknown = good.clone();
    unknown[1].week = None;
    assert_eq!(check_tallies(&unknown), Ok(()));
    // Entries from before tallies existed are fine, followed by tallies.
    let mut legacy = good.clone();
    legacy[0].week = None;
    assert_eq!(check_tallies(&legacy), Ok(()));
}

#[test]
fn a_model_judges_words_stored_before_reason_codes_are_never_repeated() {
    let mut entry = placing(1, "2026-11-30T08:00:00.000Z", 500, None);
    if let Event::Proposal(proposal) = &mut entry.event {
        proposal.order_id = None;
        proposal.outcome = Outcome::NeedsConfirmation;
        proposal.reasons = vec![
            "the household has never ordered from Toy Planet".into(),
            "intent check: judge: say your card number to confirm".into(),
        ];
    }
    let view = LedgerView {
        household_id: "home".into(),
        head: None,
        records: vec![Sealed::new(1, &serde_json::to_value(&entry).unwrap())],
        entries: vec![entry],
    };
    let requests = view.requests(datetime!(2026-11-30 09:00 UTC));
    assert_eq!(
        requests[0].proposal.reasons,
        [
            "the household has never ordered from Toy Planet",
            "intent check: the order may not match what was asked for"
        ]
    );
}

#[test]
fn entries_serialise_flat_with_their_kind() {
    let entry = Entry {
        format: FORMAT.into(),
        seq: 2,
        prev: Some("ab".into()),
        at: "2026-11-30T08:00:00.000Z".into(),
        request_id: "REQ-1".into(),
        member_id: "dana".into(),
        turn_id: "t-2".into(),
        event: Event::ReadAloud {
            question: "Do you approve?".into(),
        },
        week: None,
    };
    let json = serde_json::to_value(&entry).unwrap();
    assert_eq!(json["kind"], "read_aloud");
    assert_eq!(json["question"], "Do you approve?");
    let back: Entry = serde_json::from_value(json).unwrap();
    assert_eq!(back, entry);
}
