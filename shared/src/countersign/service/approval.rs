//! Orders from hosts that sign nothing: a household token without a device proposes, the
//! request waits for a member's passkey on Hearth's own page, and the approver takes the
//! requester's place under the full policy.
//!
//! - **Proposing** checks what needs no speaker ([`policy::assess_unattested`]): the budget
//!   blocks; a new merchant and a listing that addresses the assistant are shown on the page.
//!   The entry's `member_id` is [`UNATTESTED`] and its `turn_id` `call-` and ten hex digits.
//!   At most [`UNATTESTED_CALLS_PER_HOUSEHOLD`] such proposals per household per window, and
//!   [`MAX_WAITING_APPROVALS`] waiting at once; each waits [`APPROVAL_WAIT`].
//! - **Deciding** ([`CountersignService::decide_by_passkey`]) is called only with an
//!   assertion the passkeys module has checked. A parent's approval places the order within
//!   their limits and the budget (a new merchant was on the page, so it needs no second
//!   confirmation); a child's makes it the child's request, still waiting, until a guardian
//!   approves with their own passkey on the same link. Nobody approves twice. The entry
//!   carries the signed approval, so it checks offline.
//! - `confirm_purchase` and `decide_request` never settle such a request.

use async_trait::async_trait;

use super::{
    CountersignError, CountersignService, MAX_QUANTITY, MAX_WAITING_APPROVALS, OrderSummary,
    PlacedOrder, ProposeOutput, UNATTESTED_CALLS_PER_HOUSEHOLD,
};
use crate::accounts::Standing;
use crate::auth::Caller;
use crate::chain::short_hash;
use crate::clock::unix_ms;
use crate::countersign::household::{HouseholdData, Role};
use crate::countersign::judge::{Judgement, Verdict};
use crate::countersign::ledger::{
    APPROVAL_WAIT, ApprovalRecord, ApprovalResult, Event, HouseholdActionEvent, IntentRecord,
    LedgerError, NewEntry, PasskeyDecision, PasskeyResolution, ProposalEvent, Request, Status,
    Step, UNATTESTED, fresh_id,
};
use crate::countersign::notify::WaitingNotice;
use crate::countersign::policy::{self, Order, Outcome};
use crate::countersign::refusal::Refusal;
use crate::countersign::say;
use crate::store::{Taken, Window};

/// Where a request proposed without a device gets its approval page (the passkeys module,
/// over the household's account).
#[async_trait]
pub trait ApprovalLinks: Send + Sync {
    /// Whether anyone in the household could approve: a live passkey exists.
    async fn ready(&self, household_id: &str) -> Result<(), LinkRefusal>;
    /// Opens the page for `request_id` until `expires_at_ms`; its URL.
    async fn open(
        &self,
        household_id: &str,
        request_id: &str,
        expires_at_ms: i64,
    ) -> Result<String, LinkRefusal>;
    /// A new URL for the page of a request whose link is still open (the one it was opened
    /// with is kept only as a hash); `None` once it is closed.
    async fn reopen(&self, household_id: &str, request_id: &str) -> Option<String>;
    /// Tells the members' phones (only the guardians' when `guardians_only`) that the page
    /// at `url` waits for them (a phone that subscribed from the household's page is sent
    /// there, to `request_id`), before answering, within a short budget.
    async fn announce(&self, household_id: &str, request_id: &str, url: &str, guardians_only: bool);
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkRefusal {
    #[error("nobody in the household has a passkey")]
    NoPasskeys,
    #[error("the household account could not be read or written")]
    Unavailable,
}

/// What an approval page shows of a request, from the ledger and the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalView {
    pub household_name: String,
    pub request_id: String,
    pub status: Status,
    pub order: ProposalEvent,
    pub new_merchant: bool,
    pub listing_warning: bool,
    pub spent_cents: Option<u64>,
    pub budget_cents: u64,
    /// The proposal entry's hash: what a decision signs.
    pub proposal_hash: String,
    /// Members who approved already (a child, before a guardian).
    pub approved_by: Vec<String>,
    /// The name of the first of them, for the page.
    pub approved_by_name: Option<String>,
    /// Whether only a guardian can approve it now.
    pub needs_guardian: bool,
    /// The members who may still decide it, with whether each is a guardian.
    pub deciders: Vec<String>,
}

/// A signed statement's nonce: its last line (every statement ends with one).
fn nonce_of(statement: &str) -> String {
    statement.lines().last().unwrap_or_default().to_owned()
}

/// Whether a member may still decide a request waiting for approval on a phone: anyone who
/// has not approved it yet, and once someone has (a child), only a guardian.
pub fn may_decide(request: &Request, member_id: &str, guardian: bool) -> bool {
    !request
        .approved_by
        .iter()
        .any(|approver| approver == member_id)
        && (request.approved_by.is_empty() || guardian)
}

/// What a passkey decision did.
#[derive(Debug, Clone)]
pub struct PasskeyOutcome {
    pub status: Status,
    /// `None` when nothing changed (already settled).
    pub result: Option<ApprovalResult>,
    pub reasons: Vec<String>,
    pub order: OrderSummary,
    pub placed: Option<PlacedOrder>,
    /// For the page, in plain words.
    pub message: String,
}

impl CountersignService {
    /// Whether this call proposes without a device: a household token, no attestation at
    /// all, and approval pages to send it to.
    pub(super) fn proposes_unattested(&self, caller: &Caller) -> bool {
        use crate::auth::attestation::{AttestationRefusal, HostClaim};
        self.approval_links.is_some()
            && caller.household.is_some()
            && matches!(caller.host, HostClaim::Refused(AttestationRefusal::Missing))
    }

    /// A household token without a device proposes: see the module comment.
    pub(super) async fn propose_unattested(
        &self,
        caller: &Caller,
        home: &HouseholdData,
        product_id: &str,
        variant_id: &str,
        quantity: u32,
    ) -> Result<ProposeOutput, CountersignError> {
        let links = self
            .approval_links
            .clone()
            .ok_or(LedgerError::Unavailable)?;
        if !(1..=MAX_QUANTITY).contains(&quantity) {
            return Err(Refusal::QuantityOutOfRange.into());
        }
        let (product, variant) = self.listing(product_id, variant_id)?;
        links
            .ready(home.id())
            .await
            .map_err(|refusal| match refusal {
                LinkRefusal::NoPasskeys => CountersignError::from(Refusal::NoPasskeys),
                LinkRefusal::Unavailable => LedgerError::Unavailable.into(),
            })?;
        self.take_unattested_counter(caller, home).await?;
        let merchant = self
            .data
            .catalogue
            .merchant_name(&product.merchant)
            .to_owned();
        let total_cents = variant.unit_price_cents * u64::from(quantity);
        let request_id = fresh_id("REQ-");
        let turn_id = fresh_id("call-");
        let (output, appended) = self
            .ledger
            .transition(caller, home.id(), &home.weeks, |view, now| {
                let waiting = view
                    .requests(now)
                    .iter()
                    .filter(|request| request.status == Status::WaitingForApproval)
                    .count();
                if waiting >= MAX_WAITING_APPROVALS {
                    return Step::Leave(Err(CountersignError::from(
                        Refusal::TooManyWaitingApprovals,
                    )));
                }
                let spent = view.spent_this_week(home.weeks.start_of(now));
                let assessment = policy::assess_unattested(
                    home,
                    product,
                    total_cents,
                    spent,
                    view.has_ordered_from(&product.merchant),
                );
                let intent = IntentRecord {
                    judge: "none".into(),
                    verdict: Verdict::Unclear,
                    codes: Vec::new(),
                    reasons: vec!["no words were signed: a member decides on their phone".into()],
                };
                let proposal = ProposalEvent {
                    words: Vec::new(),
                    product_id: product.id.clone(),
                    variant_id: variant.id.clone(),
                    title: product.title.clone(),
                    variant: variant.label.clone(),
                    merchant_id: product.merchant.clone(),
                    merchant: merchant.clone(),
                    unit_price_cents: variant.unit_price_cents,
                    quantity,
                    total_cents,
                    intent: intent.clone(),
                    outcome: assessment.outcome,
                    reasons: assessment.reasons.clone(),
                    order_id: None,
                };
                let say = match assessment.outcome {
                    Outcome::Blocked => say::blocked(&proposal),
                    _ => say::sent_to_phones(&proposal),
                };
                let output = ProposeOutput {
                    request_id: request_id.clone(),
                    outcome: assessment.outcome,
                    status: Status::from(assessment.outcome),
                    reasons: assessment.reasons,
                    order: OrderSummary::from(&proposal),
                    intent,
                    placed: None,
                    say,
                    tlog_proof: None,
                    approval_url: None,
                };
                let entry = NewEntry {
                    request_id: request_id.clone(),
                    member_id: UNATTESTED.into(),
                    turn_id: turn_id.clone(),
                    event: Event::Proposal(Box::new(proposal)),
                };
                Step::Append(entry, Ok(output))
            })
            .await?;
        let mut output: ProposeOutput = output?;
        output.tlog_proof = appended
            .as_ref()
            .and_then(|appended| appended.tlog_proof.clone());
        if output.status == Status::WaitingForApproval {
            let expires_at_ms =
                unix_ms(self.ledger.now()) + APPROVAL_WAIT.whole_milliseconds() as i64;
            let url = links
                .open(home.id(), &request_id, expires_at_ms)
                .await
                .map_err(|error| {
                    tracing::warn!(%error, "an approval page could not be opened");
                    CountersignError::from(LedgerError::Unavailable)
                })?;
            self.announce(home, &output.order, &request_id, None, &url)
                .await;
            links.announce(home.id(), &request_id, &url, false).await;
            output.approval_url = Some(url);
        }
        Ok(output)
    }

    /// Tells the guardians' webhook a request waits for a passkey, before answering (under
    /// Lambda a task left running may be frozen), within a short budget.
    async fn announce(
        &self,
        home: &HouseholdData,
        order: &OrderSummary,
        request_id: &str,
        requester_role: Option<Role>,
        approval_url: &str,
    ) {
        let Some(notifier) = &self.notifier else {
            return;
        };
        let notice = WaitingNotice {
            kind: "request",
            household_id: home.id().to_owned(),
            request_id: request_id.to_owned(),
            requester_role,
            title: order.title.clone(),
            total_cents: order.total_cents,
            approval_url: Some(approval_url.to_owned()),
            sent_at: self.ledger.now().unix_timestamp(),
        };
        notifier.deliver(&notice).await;
    }

    /// Counts one proposal without a device against the household's window.
    async fn take_unattested_counter(
        &self,
        caller: &Caller,
        home: &HouseholdData,
    ) -> Result<(), CountersignError> {
        let now_ms = unix_ms(self.ledger.now());
        let window = Window::containing(now_ms, super::ACTING_WINDOW_MS);
        let household = short_hash(format!("{}\n{}", caller.scope, home.id()));
        let counter = window.counter(
            &format!("unattested/{household}"),
            UNATTESTED_CALLS_PER_HOUSEHOLD,
        );
        match self.counters.take(&[counter], window.end_ms, now_ms).await {
            Ok(Taken::Granted) => Ok(()),
            Ok(Taken::Refused { .. }) => Err(Refusal::TooManyUnattested {
                minutes: (window.end_ms - now_ms).div_euclid(60_000) + 1,
            }
            .into()),
            Err(error) => {
                tracing::warn!(%error, "unattested-call counters unavailable");
                Err(LedgerError::Unavailable.into())
            }
        }
    }

    /// What the approval page of `request_id` shows.
    pub async fn approval_view(
        &self,
        household_id: &str,
        request_id: &str,
    ) -> Result<ApprovalView, CountersignError> {
        let caller = Caller::of_household(household_id, Standing::Current);
        let home = self.home(&caller).await?;
        let view = self.ledger.read(&caller, household_id).await?;
        let now = self.ledger.now();
        let request = view
            .requests(now)
            .into_iter()
            .find(|request| request.request_id == request_id)
            .ok_or(Refusal::UnknownRequest)?;
        let proposal_hash = view
            .proposal_hash(request_id)
            .ok_or(Refusal::UnknownRequest)?;
        let needs_guardian = !request.approved_by.is_empty();
        let deciders = home
            .household
            .members
            .iter()
            .filter(|member| may_decide(&request, &member.id, home.is_guardian(&member.id)))
            .map(|member| member.id.clone())
            .collect();
        let known = home.is_known_merchant(&request.proposal.merchant_id)
            || view.has_ordered_from(&request.proposal.merchant_id);
        Ok(ApprovalView {
            household_name: home.household.name.clone(),
            request_id: request.request_id.clone(),
            status: request.status,
            new_merchant: !known,
            listing_warning: request
                .proposal
                .reasons
                .iter()
                .any(|reason| reason == policy::LISTING_WARNING),
            spent_cents: view.spent_this_week(home.weeks.start_of(now)),
            budget_cents: home.household.weekly_budget_cents,
            proposal_hash,
            approved_by_name: request
                .approved_by
                .first()
                .map(|id| say::member_name(&home, id)),
            approved_by: request.approved_by.clone(),
            needs_guardian,
            deciders,
            order: request.proposal,
        })
    }

    /// Keeps a guardian's signed action on the household's page in the ledger, verbatim, so
    /// that it checks offline like an approval. Refused unless `guardian` is one by the
    /// household's rules. `false`, with nothing kept, when the entry would be stamped more
    /// than `within_ms` after `asked_at_ms`, when the page asked for the signature: the offline
    /// check holds the entry's own time to that window.
    pub async fn record_household_action(
        &self,
        household_id: &str,
        guardian: &str,
        action: &str,
        target: &str,
        approval: ApprovalRecord,
        (asked_at_ms, within_ms): (i64, i64),
    ) -> Result<bool, CountersignError> {
        let caller = Caller::of_household(household_id, Standing::Current);
        let home = self.home(&caller).await?;
        let member = home.member(guardian).ok_or(Refusal::NotAMember)?.clone();
        if !home.is_guardian(&member.id) {
            return Err(Refusal::NotAGuardian { name: member.name }.into());
        }
        let nonce = nonce_of(&approval.statement);
        let request_id = fresh_id("ACT-");
        let (in_time, appended) = self
            .ledger
            .transition(&caller, home.id(), &home.weeks, |_, now| {
                if unix_ms(now) - asked_at_ms > within_ms {
                    return Step::Leave(false);
                }
                Step::Append(
                    NewEntry {
                        request_id: request_id.clone(),
                        member_id: member.id.clone(),
                        turn_id: format!("passkey-{nonce}"),
                        event: Event::HouseholdAction(Box::new(HouseholdActionEvent {
                            action: action.to_owned(),
                            target: target.to_owned(),
                            approval: approval.clone(),
                        })),
                    },
                    true,
                )
            })
            .await?;
        if in_time && appended.is_none() {
            return Err(LedgerError::Busy.into());
        }
        Ok(in_time)
    }

    /// Settles (or, for a child's approval, passes to a guardian) a request waiting for
    /// approval, on a decision whose passkey assertion the caller has checked: `approver` is
    /// the passkey's member, and `approval` goes into the entry.
    pub async fn decide_by_passkey(
        &self,
        household_id: &str,
        request_id: &str,
        approver: &str,
        decision: PasskeyDecision,
        approval: ApprovalRecord,
    ) -> Result<PasskeyOutcome, CountersignError> {
        let caller = Caller::of_household(household_id, Standing::Current);
        let home = self.home(&caller).await?;
        let member = home.member(approver).ok_or(Refusal::NotAMember)?.clone();
        let nonce = nonce_of(&approval.statement);
        let (outcome, appended) = self
            .ledger
            .transition(&caller, home.id(), &home.weeks, |view, now| {
                let requests = view.requests(now);
                let Some(request) = requests.iter().find(|r| r.request_id == request_id) else {
                    return Step::Leave(Err(CountersignError::from(Refusal::UnknownRequest)));
                };
                let order = OrderSummary::from(&request.proposal);
                if request.status != Status::WaitingForApproval {
                    return Step::Leave(Ok((
                        PasskeyOutcome {
                            status: request.status,
                            result: None,
                            reasons: Vec::new(),
                            order,
                            placed: None,
                            message: format!(
                                "Nothing was changed: this order is {}.",
                                request.status.spoken()
                            ),
                        },
                        None,
                    )));
                }
                if request.approved_by.iter().any(|id| id == &member.id) {
                    return Step::Leave(Err(CountersignError::from(Refusal::AlreadyApproved)));
                }
                let needs_guardian = !request.approved_by.is_empty();
                if needs_guardian && !home.is_guardian(&member.id) {
                    return Step::Leave(Err(CountersignError::from(Refusal::NotAGuardian {
                        name: member.name.clone(),
                    })));
                }
                let (result, reasons) = match decision {
                    PasskeyDecision::Decline => (ApprovalResult::Declined, Vec::new()),
                    PasskeyDecision::Approve => {
                        let spent = view.spent_this_week(home.weeks.start_of(now));
                        let product = self.data.catalogue.product(&request.proposal.product_id);
                        match product {
                            None => (
                                ApprovalResult::Blocked,
                                vec!["the product is no longer in the catalogue".into()],
                            ),
                            Some(product) => {
                                let order = Order {
                                    member: &member,
                                    product,
                                    total_cents: request.proposal.total_cents,
                                    ordered_from_before: view
                                        .has_ordered_from(&request.proposal.merchant_id),
                                };
                                // The approver read the real order on Hearth's page: that
                                // is the intent check, and the new merchant's confirmation.
                                let seen = Judgement::found(Verdict::Match, Vec::new());
                                let assessed = policy::assess(&home, &order, spent, &seen);
                                match assessed.outcome {
                                    Outcome::Placed | Outcome::NeedsConfirmation => {
                                        (ApprovalResult::Placed, Vec::new())
                                    }
                                    Outcome::NeedsGuardian | Outcome::NeedsApproval
                                        if !needs_guardian =>
                                    {
                                        (ApprovalResult::NeedsGuardian, assessed.reasons)
                                    }
                                    _ => (ApprovalResult::Blocked, assessed.reasons),
                                }
                            }
                        }
                    }
                };
                let order_id = (result == ApprovalResult::Placed).then(|| fresh_id("SIM-"));
                let (status, message) = match result {
                    ApprovalResult::Placed => (
                        Status::Placed,
                        format!("Approved. Hearth ordered {}.", say::order_phrase(&request.proposal)),
                    ),
                    ApprovalResult::Declined => (
                        Status::Declined,
                        "Declined. Nothing will be ordered.".to_owned(),
                    ),
                    ApprovalResult::Blocked => (
                        Status::Blocked,
                        format!(
                            "It can't be ordered now: {}. {}",
                            say::reasons(&reasons),
                            say::BLOCKED_NEXT_STEP
                        ),
                    ),
                    ApprovalResult::NeedsGuardian => (
                        Status::WaitingForApproval,
                        "Thank you. A guardian approves it too, with their own passkey, before it is ordered."
                            .to_owned(),
                    ),
                };
                let entry = NewEntry {
                    request_id: request.request_id.clone(),
                    member_id: member.id.clone(),
                    turn_id: format!("passkey-{nonce}"),
                    event: Event::PasskeyDecision(Box::new(PasskeyResolution {
                        decision,
                        result,
                        reasons: reasons.clone(),
                        order_id: order_id.clone(),
                        approval: approval.clone(),
                    })),
                };
                Step::Append(
                    entry,
                    Ok((
                        PasskeyOutcome {
                            status,
                            result: Some(result),
                            reasons,
                            order,
                            placed: None,
                            message,
                        },
                        order_id,
                    )),
                )
            })
            .await?;
        let (mut outcome, order_id) = outcome?;
        if let (Some(order_id), Some(appended)) = (order_id, &appended) {
            outcome.placed = Some(PlacedOrder {
                order_id,
                total_cents: outcome.order.total_cents,
                receipt: appended.receipt.clone(),
            });
        }
        if outcome.result == Some(ApprovalResult::NeedsGuardian)
            && let Some(links) = &self.approval_links
            && let Some(url) = links.reopen(household_id, request_id).await
        {
            self.announce(&home, &outcome.order, request_id, Some(member.role), &url)
                .await;
            links.announce(household_id, request_id, &url, true).await;
        }
        Ok(outcome)
    }
}
