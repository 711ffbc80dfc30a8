//! What the ledger tells: this week's activity, the chain's own check, and kept receipts
//! compared with it.

use time::OffsetDateTime;

use super::{
    ActivityItem, ActivityOutput, LedgerCheck, OrderSummary, ReceiptOutput, ReceiptVerdict,
    VerifyOutput,
};
use super::{CountersignError, CountersignService, count};
use crate::auth::Caller;
use crate::clock::timestamp;
use crate::countersign::household::HouseholdData;
use crate::countersign::ledger::{
    Check, LedgerError, LedgerView, Receipt, ReceiptArg, Request, Status, WINDOW_MS, parse_time,
    window_label,
};
use crate::countersign::money::dollars;
use crate::countersign::refusal::Refusal;
use crate::transparency::{ProofCheck, ProvenWindow};

impl CountersignService {
    /// This week's orders, stops and waiting requests, rebuilt from the ledger, with the
    /// ledger's own check.
    pub async fn activity(&self, caller: &Caller) -> Result<ActivityOutput, CountersignError> {
        let home = self.home(caller).await?;
        self.reader(caller, &home)?;
        let now = self.ledger.now();
        let since = home.weeks.start_of(now);
        let budget_cents = home.household.weekly_budget_cents;
        let mut output = ActivityOutput {
            household_id: home.id().to_owned(),
            week_start: timestamp(since),
            spent_cents: None,
            budget_cents,
            placed: Vec::new(),
            stopped: Vec::new(),
            waiting: Vec::new(),
            ledger: intact_check(0, None),
            say: String::new(),
        };
        let view = match self.ledger.read(caller, home.id()).await {
            Ok(view) => view,
            Err(LedgerError::Tampered { seq, problem }) => {
                output.ledger = broken_check(seq, &problem.to_string());
                output.say = format!(
                    "I can't tell you what was bought: the ledger fails its check at entry {seq} ({problem})."
                );
                return Ok(output);
            }
            Err(error) => return Err(error.into()),
        };
        output.ledger = intact_check(
            view.entries.len(),
            view.head.as_ref().map(|h| h.last_hash.clone()),
        );
        let requests = view.requests(now);
        output.spent_cents = view.spent_this_week(since);
        for request in requests {
            let at = request
                .placed
                .as_ref()
                .map_or(request.proposed_at, |p| p.at);
            if at < since && !request.status.is_waiting() {
                continue;
            }
            let item = ActivityItem {
                request_id: request.request_id.clone(),
                requested_by: request.member_id.clone(),
                at: timestamp(at),
                status: request.status,
                order: OrderSummary::from(&request.proposal),
                reasons: request.proposal.reasons.clone(),
                order_id: request.placed.as_ref().map(|p| p.order_id.clone()),
            };
            match request.status {
                Status::Placed => output.placed.push(item),
                status if status.is_waiting() => output.waiting.push(item),
                _ => output.stopped.push(item),
            }
        }
        let spent = output
            .spent_cents
            .map_or_else(|| "an amount the ledger cannot rebuild".to_owned(), dollars);
        output.say = format!(
            "This week {} placed for {} of the {} budget; {} stopped; {} waiting. The ledger's {} check out.",
            count(output.placed.len(), "order was", "orders were"),
            spent,
            dollars(budget_cents),
            output.stopped.len(),
            output.waiting.len(),
            count(output.ledger.entries, "entry", "entries"),
        );
        Ok(output)
    }

    /// The household's retained ledger, verified, and the requests read from it, oldest
    /// first: what the household's page lists.
    pub async fn ledger_requests(
        &self,
        caller: &Caller,
    ) -> Result<(LedgerView, Vec<Request>), CountersignError> {
        let home = self.home(caller).await?;
        self.reader(caller, &home)?;
        let view = self.ledger.read(caller, home.id()).await?;
        let requests = view.requests(self.ledger.now());
        Ok((view, requests))
    }

    /// The household's ledger with every entry's inclusion proof, for a reader to check on
    /// its own (the household page's phone); `None` before the first entry.
    pub async fn ledger_window(
        &self,
        caller: &Caller,
    ) -> Result<Option<ProvenWindow>, CountersignError> {
        let home = self.home(caller).await?;
        self.reader(caller, &home)?;
        Ok(self.ledger.proven_window(caller, home.id()).await?)
    }

    /// Recomputes the whole hash chain and names the first altered entry.
    pub async fn verify(&self, caller: &Caller) -> Result<VerifyOutput, CountersignError> {
        let home = self.home(caller).await?;
        self.reader(caller, &home)?;
        let (snapshot, check) = self.ledger.inspect(caller, home.id()).await?;
        let head = snapshot.as_ref().map(|s| &s.head);
        let entries = snapshot.as_ref().map_or(0, |s| s.records.len());
        let (check, say) = match check {
            Check::Intact => (
                intact_check(entries, head.map(|h| h.last_hash.clone())),
                format!(
                    "The ledger checks out: all {} link up to the latest.",
                    count(entries, "entry", "entries")
                ),
            ),
            Check::Broken { seq, problem } => (
                broken_check(seq, &problem.to_string()),
                format!("The ledger has been altered: entry {seq} fails the check ({problem})."),
            ),
        };
        Ok(VerifyOutput {
            household_id: home.id().to_owned(),
            check,
            first_seq: snapshot
                .as_ref()
                .and_then(|s| s.records.first())
                .map(|r| r.seq),
            last_seq: head.map(|h| h.last_seq),
            anchor: head.and_then(|h| h.anchor.clone()),
            window: head.map(window_label),
            say,
        })
    }

    /// Compares a receipt the device kept with the ledger.
    pub async fn check_receipt(
        &self,
        caller: &Caller,
        receipt: &ReceiptArg,
    ) -> Result<ReceiptOutput, CountersignError> {
        let home = self.home(caller).await?;
        self.reader(caller, &home)?;
        let receipt = match receipt {
            ReceiptArg::Entry(receipt) => receipt,
            ReceiptArg::Proof(text) => return self.check_tlog_proof(caller, &home, text).await,
        };
        if receipt.entry_hash.len() != 64
            || !receipt.entry_hash.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(Refusal::ReceiptHashMalformed.into());
        }
        if receipt.seq == 0 {
            return Err(Refusal::ReceiptSeqZero.into());
        }
        let verdict = if receipt.household_id != home.id() {
            ReceiptVerdict::OtherHousehold
        } else {
            let (snapshot, check) = self.ledger.inspect(caller, home.id()).await?;
            let now = self.ledger.now();
            match (snapshot, check) {
                (_, Check::Broken { .. }) => ReceiptVerdict::LedgerBroken,
                (None, _) => deleted_or_gone(receipt, now),
                (Some(snapshot), Check::Intact) => {
                    if window_label(&snapshot.head) != receipt.window {
                        deleted_or_gone(receipt, now)
                    } else if receipt.seq > snapshot.head.last_seq {
                        ReceiptVerdict::HistoryDeleted
                    } else {
                        match snapshot.records.iter().find(|r| r.seq == receipt.seq) {
                            Some(record)
                                if record.hash.eq_ignore_ascii_case(&receipt.entry_hash) =>
                            {
                                ReceiptVerdict::Matches
                            }
                            Some(_) => ReceiptVerdict::HistoryRewritten,
                            None => {
                                let anchored = snapshot.records.first().is_some_and(|first| {
                                    first.seq == receipt.seq + 1
                                        && snapshot.head.anchor.as_deref()
                                            == Some(receipt.entry_hash.as_str())
                                });
                                if anchored {
                                    ReceiptVerdict::Matches
                                } else {
                                    ReceiptVerdict::NotRetained
                                }
                            }
                        }
                    }
                }
            }
        };
        let say = match verdict {
            ReceiptVerdict::Matches => format!(
                "That receipt matches entry {} of the ledger, and the ledger checks out.",
                receipt.seq
            ),
            ReceiptVerdict::HistoryDeleted => format!(
                "Warning: the ledger no longer holds entry {} from that receipt. History was deleted.",
                receipt.seq
            ),
            ReceiptVerdict::HistoryRewritten => format!(
                "Warning: entry {} in the ledger differs from that receipt. History was rewritten.",
                receipt.seq
            ),
            ReceiptVerdict::LedgerBroken => {
                "Warning: the ledger itself fails its check, so the receipt cannot be trusted against it.".to_owned()
            }
            ReceiptVerdict::NotRetained => format!(
                "Entry {} is older than what the ledger keeps, so that receipt cannot be compared.",
                receipt.seq
            ),
            ReceiptVerdict::OtherHousehold => "That receipt is for another household.".to_owned(),
            // Only a tlog-proof names a log; a receipt names a window.
            ReceiptVerdict::LogReplaced => "Warning: the log was replaced.".to_owned(),
        };
        Ok(ReceiptOutput {
            valid: verdict == ReceiptVerdict::Matches,
            verdict,
            say,
        })
    }
}

impl CountersignService {
    /// `check_receipt` with a tlog-proof: checked against the household's signed ledger log,
    /// which catches deleted and rewritten history beyond the retained window too.
    async fn check_tlog_proof(
        &self,
        caller: &Caller,
        home: &HouseholdData,
        text: &str,
    ) -> Result<ReceiptOutput, CountersignError> {
        let check = self
            .ledger
            .check_tlog_proof(caller, home.id(), text)
            .await?
            .ok_or(Refusal::NoLogKey)?;
        let (verdict, say) = match check {
            ProofCheck::Holds { index, size } => (
                ReceiptVerdict::Matches,
                format!(
                    "That proof holds: entry {index} is in the signed ledger log, and the log still holds those {size} entries unchanged."
                ),
            ),
            ProofCheck::NotOurs(reason) => {
                return Err(Refusal::NotOurProof { reason }.into());
            }
            ProofCheck::OtherLog => (
                ReceiptVerdict::OtherHousehold,
                "That proof is for another kind of log, not the purchase record.".to_owned(),
            ),
            ProofCheck::Replaced(_) => (
                ReceiptVerdict::LogReplaced,
                "Warning: the log was replaced. That proof is from a log this household no longer has. Please ask whoever runs Hearth why.".to_owned(),
            ),
            ProofCheck::Truncated(reason) => (
                ReceiptVerdict::HistoryDeleted,
                format!("Warning: {reason}. History was deleted."),
            ),
            ProofCheck::Rewritten(reason) => (
                ReceiptVerdict::HistoryRewritten,
                format!("Warning: {reason}. History was rewritten."),
            ),
        };
        Ok(ReceiptOutput {
            valid: verdict == ReceiptVerdict::Matches,
            verdict,
            say,
        })
    }
}

/// A receipt from a window other than the current one: if that window should still be live,
/// the ledger was deleted; otherwise it simply expired.
fn deleted_or_gone(receipt: &Receipt, now: OffsetDateTime) -> ReceiptVerdict {
    match parse_time(&receipt.window) {
        Some(started) if (now - started).whole_milliseconds() < i128::from(WINDOW_MS) => {
            ReceiptVerdict::HistoryDeleted
        }
        _ => ReceiptVerdict::NotRetained,
    }
}

fn intact_check(entries: usize, head_hash: Option<String>) -> LedgerCheck {
    LedgerCheck {
        intact: true,
        entries,
        first_bad_entry: None,
        problem: None,
        head_hash,
    }
}

fn broken_check(seq: u64, problem: &str) -> LedgerCheck {
    LedgerCheck {
        intact: false,
        entries: 0,
        first_bad_entry: Some(seq),
        problem: Some(problem.to_owned()),
        head_hash: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn receipt(window: &str) -> Receipt {
        Receipt {
            household_id: "home".into(),
            window: window.into(),
            seq: 3,
            entry_hash: "0".repeat(64),
        }
    }

    #[test]
    fn a_vanished_window_that_should_still_be_live_means_deleted_history() {
        let now = datetime!(2026-11-30 08:00 UTC);
        let recent = receipt("2026-11-20T08:00:00.000Z");
        assert_eq!(
            deleted_or_gone(&recent, now),
            ReceiptVerdict::HistoryDeleted
        );
        // 400 days is the window: a receipt from a window that has run out cannot be checked.
        let just_live = receipt("2025-10-26T08:00:00.001Z");
        assert_eq!(
            deleted_or_gone(&just_live, now),
            ReceiptVerdict::HistoryDeleted
        );
        let expired = receipt("2025-10-26T08:00:00.000Z");
        assert_eq!(deleted_or_gone(&expired, now), ReceiptVerdict::NotRetained);
        let unreadable = receipt("last spring");
        assert_eq!(
            deleted_or_gone(&unreadable, now),
            ReceiptVerdict::NotRetained
        );
    }
}
