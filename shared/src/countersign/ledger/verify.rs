//! Verifying a ledger as read: every entry hashes, links and parses, and every week's
//! running total follows from the entries.

use std::collections::HashMap;

use time::{Duration, OffsetDateTime};

use crate::chain::{self, IntegrityError, Problem};
use crate::store::Snapshot;

use super::{Entry, Event, FORMAT, LedgerError, LedgerView, parse_time};

/// What verifying the ledger found, for `verify_ledger` and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Every retained entry hashes and links correctly up to the head.
    Intact,
    /// The first entry that fails, by its position in the whole history.
    Broken { seq: u64, problem: Problem },
}

pub(super) fn verify(snapshot: &Snapshot) -> Result<Vec<Entry>, IntegrityError> {
    let entries: Vec<Entry> = chain::verify_parsed(
        &snapshot.records,
        snapshot.head.anchor.as_deref(),
        &snapshot.head.last_hash,
    )?;
    // Every entry must also be readable as what it claims to be: a ledger entry whose time
    // parses. Anything else is as untrustworthy as a bad hash.
    for (index, entry) in entries.iter().enumerate() {
        if entry.format != FORMAT || parse_time(&entry.at).is_none() {
            return Err(IntegrityError {
                position: index + 1,
                problem: Problem::Unreadable,
            });
        }
    }
    check_tallies(&entries)?;
    Ok(entries)
}

/// A budget week lasts seven days, one more hour or one less across a daylight-saving
/// change; a tally whose week began longer ago than this before its entry is not a week's.
const LONGEST_WEEK: Duration = Duration::hours(7 * 24 + 1);

/// Every week tally must follow from the entry before it and what its own entry placed:
/// - in the same week as the entry before, the figure before plus this entry's amount;
/// - in a week that began after the entry before, this entry's amount alone;
/// - in a week whose start differs from the entry before's while that entry falls inside it
///   (the household moved its week, with another time zone or first day), at least this
///   entry's amount: it was summed from the retained orders, which this check cannot tell
///   apart from evicted ones. Which instants are real week starts depends on settings that
///   may have changed, so a start is only held to lie within the week before its entry.
///
/// The first retained tally (what came before it may be evicted), one whose request's proposal
/// is no longer retained, and one after an entry without a tally (an older ledger, or a week
/// that could not be summed) can only be checked for covering their own entry's amount.
pub(super) fn check_tallies(entries: &[Entry]) -> Result<(), IntegrityError> {
    let mut totals: HashMap<&str, u64> = HashMap::new();
    // The entry before: when it was written, and its tally's week and figure.
    let mut previous: Option<(OffsetDateTime, Option<(OffsetDateTime, u64)>)> = None;
    for (index, entry) in entries.iter().enumerate() {
        let fail = |problem| IntegrityError {
            position: index + 1,
            problem,
        };
        if let Event::Proposal(proposal) = &entry.event {
            totals.insert(&entry.request_id, proposal.total_cents);
        }
        let at = parse_time(&entry.at).ok_or(fail(Problem::Unreadable))?;
        let tally = match &entry.week {
            None => None,
            Some(tally) => {
                let starts = parse_time(&tally.starts).ok_or(fail(Problem::Unreadable))?;
                if starts > at || at - starts > LONGEST_WEEK {
                    return Err(fail(Problem::WrongTotal));
                }
                let placed = placed_cents(&entry.event, &entry.request_id, |id| {
                    totals.get(id).copied()
                });
                let expected = match (previous, placed) {
                    (Some((_, Some((before, spent)))), Some(placed)) if before == starts => {
                        spent.checked_add(placed)
                    }
                    (Some((written, _)), Some(placed)) if written < starts => Some(placed),
                    _ => None,
                };
                let consistent = match expected {
                    Some(expected) => tally.spent_cents == expected,
                    None => tally.spent_cents >= placed.unwrap_or(0),
                };
                if !consistent {
                    return Err(fail(Problem::WrongTotal));
                }
                Some((starts, tally.spent_cents))
            }
        };
        previous = Some((at, tally));
    }
    Ok(())
}

/// What an entry for `request_id` placed, in cents: `Some(0)` for one that placed nothing,
/// `None` when it placed an order whose proposal `total_of` no longer knows.
pub(super) fn placed_cents(
    event: &Event,
    request_id: &str,
    total_of: impl Fn(&str) -> Option<u64>,
) -> Option<u64> {
    match event {
        _ if !event.places_an_order() => Some(0),
        Event::Proposal(proposal) => Some(proposal.total_cents),
        _ => total_of(request_id),
    }
}

pub(super) fn broken(snapshot: &Snapshot, error: &IntegrityError) -> Check {
    // Positions count retained records from 1; report the entry's place in the whole history.
    let first_seq = snapshot
        .records
        .first()
        .map_or(snapshot.head.last_seq, |r| r.seq);
    let seq = match snapshot.records.get(error.position - 1) {
        Some(record) => record.seq,
        None => first_seq + error.position as u64 - 1,
    };
    Check::Broken {
        seq: seq.max(1),
        problem: error.problem,
    }
}

pub(super) fn verified(
    household_id: &str,
    snapshot: Option<Snapshot>,
) -> Result<LedgerView, LedgerError> {
    let Some(snapshot) = snapshot else {
        return Ok(LedgerView {
            household_id: household_id.to_owned(),
            head: None,
            records: Vec::new(),
            entries: Vec::new(),
        });
    };
    match verify(&snapshot) {
        Ok(entries) => Ok(LedgerView {
            household_id: household_id.to_owned(),
            head: Some(snapshot.head),
            records: snapshot.records,
            entries,
        }),
        Err(error) => match broken(&snapshot, &error) {
            Check::Broken { seq, problem } => Err(LedgerError::Tampered { seq, problem }),
            Check::Intact => unreachable!("a verification error is never intact"),
        },
    }
}
