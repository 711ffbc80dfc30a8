//! A verified ledger and what is read from it: the requests and their state, the week's
//! spend, who ordered what.

use std::collections::HashMap;

use time::OffsetDateTime;

use crate::chain::Sealed;
use crate::clock::timestamp;
use crate::countersign::policy::Outcome;
use crate::store::Head;

use super::verify::placed_cents;
use super::{
    APPROVAL_WAIT, ApprovalResult, Entry, Event, NewEntry, PasskeyDecision, Placement,
    ProposalEvent, Question, Receipt, Request, Status, UNATTESTED, WAITING_FOR, WeekTally,
    parse_time,
};

/// A verified ledger as read: the head (if any entry exists) and every retained entry.
#[derive(Debug, Clone)]
pub struct LedgerView {
    pub household_id: String,
    pub head: Option<Head>,
    pub records: Vec<Sealed>,
    pub entries: Vec<Entry>,
}

/// Before judges answered reason codes, a model judge's own words were stored in a request's
/// reasons behind this prefix. Requests from then are read with Hearth's fixed words in their
/// place, so no report, question or result repeats them.
const MODEL_WORDS: &str = "intent check: judge: ";

fn without_model_words(mut proposal: ProposalEvent) -> ProposalEvent {
    for reason in &mut proposal.reasons {
        if reason.starts_with(MODEL_WORDS) {
            *reason = "intent check: the order may not match what was asked for".into();
        }
    }
    proposal
}

pub fn window_label(head: &Head) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(head.window_started_ms) * 1_000_000)
        .map_or_else(|_| head.window_started_ms.to_string(), timestamp)
}

impl LedgerView {
    /// Every request, in the order proposed.
    pub fn requests(&self, now: OffsetDateTime) -> Vec<Request> {
        let mut requests: Vec<Request> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (entry, record) in self.entries.iter().zip(&self.records) {
            let at = parse_time(&entry.at).expect("verified entries have readable times");
            match &entry.event {
                Event::Proposal(proposal) => {
                    let status = Status::from(proposal.outcome);
                    index.insert(&entry.request_id, requests.len());
                    requests.push(Request {
                        request_id: entry.request_id.clone(),
                        member_id: entry.member_id.clone(),
                        proposed_at: at,
                        proposal: without_model_words((**proposal).clone()),
                        status,
                        placed: proposal.order_id.clone().map(|order_id| Placement {
                            order_id,
                            at,
                            receipt: self.receipt(record),
                        }),
                        approved_by: Vec::new(),
                    });
                }
                Event::PasskeyDecision(resolution) => {
                    if let Some(&i) = index.get(entry.request_id.as_str()) {
                        let request = &mut requests[i];
                        // An approver takes the requester's place: the order is theirs.
                        if resolution.decision == PasskeyDecision::Approve {
                            request.approved_by.push(entry.member_id.clone());
                            if request.member_id == UNATTESTED {
                                request.member_id = entry.member_id.clone();
                            }
                        }
                        match resolution.result {
                            // A child approved: it waits on, for a guardian.
                            ApprovalResult::NeedsGuardian => {}
                            ApprovalResult::Placed => {
                                request.status = Status::Placed;
                                request.placed =
                                    resolution.order_id.clone().map(|order_id| Placement {
                                        order_id,
                                        at,
                                        receipt: self.receipt(record),
                                    });
                            }
                            ApprovalResult::Declined => request.status = Status::Declined,
                            ApprovalResult::Blocked => request.status = Status::Blocked,
                        }
                    }
                }
                Event::ReadAloud { .. }
                | Event::LogReset { .. }
                | Event::DecisionLogReset(_)
                | Event::HouseholdAction(_) => {}
                Event::Confirmation(resolution) | Event::GuardianDecision(resolution) => {
                    if let Some(&i) = index.get(entry.request_id.as_str()) {
                        let request = &mut requests[i];
                        request.status = Status::from(resolution.result);
                        request.placed = resolution.order_id.clone().map(|order_id| Placement {
                            order_id,
                            at,
                            receipt: self.receipt(record),
                        });
                    }
                }
            }
        }
        for request in &mut requests {
            // Entries keep milliseconds; compare in whole milliseconds so that a request is
            // answerable for exactly WAITING_FOR after the time its entry records.
            let waited = (now - request.proposed_at).whole_milliseconds();
            let limit = match request.status {
                Status::WaitingForApproval => APPROVAL_WAIT,
                _ => WAITING_FOR,
            };
            if request.status.is_waiting() && waited > limit.whole_milliseconds() {
                request.status = Status::Expired;
            }
        }
        requests
    }

    /// What orders placed since `since` total, summed from the retained entries, or `None`
    /// when entries from then on might have been evicted (the ledger then cannot say, and the
    /// budget check blocks), or an answer since then placed a request whose proposal is gone.
    pub fn spent_since(&self, since: OffsetDateTime) -> Option<u64> {
        if self.may_have_evicted_since(since) {
            return None;
        }
        let mut spent: u64 = 0;
        for entry in &self.entries {
            if parse_time(&entry.at).is_some_and(|at| at >= since) {
                let placed = placed_cents(&entry.event, &entry.request_id, |id| {
                    self.proposal(id).map(|proposal| proposal.total_cents)
                })?;
                spent = spent.checked_add(placed)?;
            }
        }
        Some(spent)
    }

    /// What placed orders total in the budget week that began at `since`: the newest entry's
    /// running figure, which eviction never touches. After the household moved its week, or
    /// on a ledger written before entries kept the figure, [`Self::spent_since`] sums the
    /// retained orders instead, and may not know.
    pub fn spent_this_week(&self, since: OffsetDateTime) -> Option<u64> {
        let Some(newest) = self.entries.last() else {
            return Some(0);
        };
        if parse_time(&newest.at).is_some_and(|at| at < since) {
            // Nothing was written since the week began, so nothing was placed in it.
            return Some(0);
        }
        let tally = newest
            .week
            .as_ref()
            .and_then(|tally| parse_time(&tally.starts).map(|starts| (starts, tally.spent_cents)));
        match tally {
            Some((starts, spent)) if starts == since => Some(spent),
            // The week's start moved (the household changed its time zone or first day), or
            // the ledger predates tallies: sum the retained orders, if they tell it all.
            _ => self.spent_since(since),
        }
    }

    /// The running figure an entry appended now should carry, or `None` while this week's
    /// spending cannot be known (an older ledger whose week was partly evicted).
    pub(super) fn tally_after(
        &self,
        entry: &NewEntry,
        week_start: OffsetDateTime,
    ) -> Option<WeekTally> {
        let spent = self.spent_this_week(week_start)?;
        let placed = placed_cents(&entry.event, &entry.request_id, |id| {
            self.proposal(id).map(|proposal| proposal.total_cents)
        })?;
        Some(WeekTally {
            starts: timestamp(week_start),
            spent_cents: spent.checked_add(placed)?,
        })
    }

    /// The proposal of `request_id`, if it is retained.
    fn proposal(&self, request_id: &str) -> Option<&ProposalEvent> {
        self.entries.iter().find_map(|entry| match &entry.event {
            Event::Proposal(proposal) if entry.request_id == request_id => Some(&**proposal),
            _ => None,
        })
    }

    /// Whether a retained entry placed an order from `merchant_id`. Once such entries are
    /// evicted the merchant is new again, and the next order from it asks first.
    pub fn has_ordered_from(&self, merchant_id: &str) -> bool {
        let placed: std::collections::HashSet<&str> = self
            .entries
            .iter()
            .filter(|entry| entry.event.places_an_order())
            .map(|entry| entry.request_id.as_str())
            .collect();
        self.entries.iter().any(|entry| match &entry.event {
            Event::Proposal(proposal) => {
                proposal.merchant_id == merchant_id && placed.contains(entry.request_id.as_str())
            }
            _ => false,
        })
    }

    /// The proposals `member_id` made in `turn_id`.
    pub fn proposals_in_turn(&self, member_id: &str, turn_id: &str) -> Vec<&ProposalEvent> {
        self.entries
            .iter()
            .filter(|entry| entry.member_id == member_id && entry.turn_id == turn_id)
            .filter_map(|entry| match &entry.event {
                Event::Proposal(proposal) => Some(&**proposal),
                _ => None,
            })
            .collect()
    }

    /// Every retained proposal `member_id` made, oldest first.
    pub fn proposals_by<'a>(
        &'a self,
        member_id: &'a str,
    ) -> impl Iterator<Item = &'a ProposalEvent> + 'a {
        self.entries
            .iter()
            .filter(move |entry| entry.member_id == member_id)
            .filter_map(|entry| match &entry.event {
                Event::Proposal(proposal) => Some(&**proposal),
                _ => None,
            })
    }

    /// Whether entries written at or after `since` may have been evicted, so that the
    /// retained ones no longer tell the whole story from then on.
    pub fn may_have_evicted_since(&self, since: OffsetDateTime) -> bool {
        let evicted = self.head.as_ref().is_some_and(|head| head.anchor.is_some());
        let oldest_retained = self.entries.first().and_then(|e| parse_time(&e.at));
        evicted && oldest_retained.is_none_or(|oldest| oldest >= since)
    }

    /// The newest question put to `member_id`: the only one their answer may decide.
    pub fn newest_question_to(&self, member_id: &str) -> Option<Question> {
        self.entries
            .iter()
            .rev()
            .filter(|entry| entry.member_id == member_id)
            .find(|entry| match &entry.event {
                Event::Proposal(proposal) => proposal.outcome == Outcome::NeedsConfirmation,
                Event::ReadAloud { .. } => true,
                Event::Confirmation(_)
                | Event::GuardianDecision(_)
                | Event::PasskeyDecision(_)
                | Event::LogReset { .. }
                | Event::DecisionLogReset(_)
                | Event::HouseholdAction(_) => false,
            })
            .map(|entry| Question {
                request_id: entry.request_id.clone(),
                turn_id: entry.turn_id.clone(),
                at: parse_time(&entry.at).expect("verified entries have readable times"),
            })
    }

    fn receipt(&self, record: &Sealed) -> Receipt {
        Receipt {
            household_id: self.household_id.clone(),
            window: self.head.as_ref().map(window_label).unwrap_or_default(),
            seq: record.seq,
            entry_hash: record.hash.clone(),
        }
    }

    /// The hash of `request_id`'s proposal entry, if it is retained: what a passkey approval
    /// of it signs.
    pub fn proposal_hash(&self, request_id: &str) -> Option<String> {
        self.entries
            .iter()
            .zip(&self.records)
            .find(|(entry, _)| {
                entry.request_id == request_id && matches!(entry.event, Event::Proposal(_))
            })
            .map(|(_, record)| record.hash.clone())
    }

    /// Whether `request_id` is already used in this ledger.
    pub fn has_request(&self, request_id: &str) -> bool {
        self.entries
            .iter()
            .any(|entry| entry.request_id == request_id)
    }
}
