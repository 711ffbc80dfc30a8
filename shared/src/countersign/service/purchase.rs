//! From proposal to placed order: proposing, confirming, a guardian's decision, and reading
//! what is waiting, with the rules for what one signed attestation authorises.

use time::OffsetDateTime;

use std::collections::HashSet;

use super::{CountersignError, CountersignService, MAX_QUANTITY, REQUEST_ID_MAX_CHARS, Speaker};
use super::{
    DecisionOutput, ListWaitingOutput, OrderSummary, PlacedOrder, ProposeOutput, WaitingRequest,
};
use crate::auth::Caller;
use crate::auth::attestation::{Attestation, MAX_CLOCK_AHEAD_SECS};
use crate::clock::unix_ms;
use crate::countersign::answer::{Answer, read_latest};
use crate::countersign::household::{HouseholdData, Product, Variant};
use crate::countersign::judge::{Judgement, Proposal, ReasonCode, Verdict};
use crate::countersign::ledger::{
    ANSWER_CLOCK_SKEW_SECS, ANSWER_WITHIN_SECS, Event, IntentRecord, LedgerError, LedgerView,
    MAX_PROPOSALS_PER_TURN, NewEntry, ProposalEvent, Request, Resolution, Settled, SpokenAnswer,
    Status, Step, fresh_id,
};
use crate::countersign::notify::WaitingNotice;
use crate::countersign::policy::{self, Order, Outcome};
use crate::countersign::refusal::Refusal;
use crate::countersign::say;

impl CountersignService {
    /// Checks a proposed order against the speaker's words and the household's rules, and
    /// places it, holds it for confirmation or a guardian, or blocks it.
    ///
    /// Words back one order of a product: a device may carry a person's recent words into
    /// later turns, so words that already backed a proposal of this product (whatever became
    /// of it) are set aside, and the intent check judges only the rest (see
    /// [`unused_words`]). The judge may call a model, so it runs before the ledger's
    /// conditional append; the append checks again that the words it judged are still the
    /// unused ones, and otherwise the judge runs once more on those.
    pub async fn propose(
        &self,
        caller: &Caller,
        product_id: &str,
        variant_id: &str,
        quantity: u32,
    ) -> Result<ProposeOutput, CountersignError> {
        let home = self.home(caller).await?;
        if self.proposes_unattested(caller) {
            return self
                .propose_unattested(caller, &home, product_id, variant_id, quantity)
                .await;
        }
        let speaker = self.speaker(caller, &home)?;
        if !(1..=MAX_QUANTITY).contains(&quantity) {
            return Err(Refusal::QuantityOutOfRange.into());
        }
        let (product, variant) = self.listing(product_id, variant_id)?;
        self.count_acting(caller, &speaker).await?;
        let merchant = self
            .data
            .catalogue
            .merchant_name(&product.merchant)
            .to_owned();
        let listing = Proposal {
            title: product.title.clone(),
            variant: variant.label.clone(),
            merchant,
            unit_price_cents: variant.unit_price_cents,
            text: product.text.clone(),
            quantity,
        };
        let order = Listed {
            product,
            variant,
            listing,
        };
        // Most proposals carry no used words and are judged once.
        let mut words = speaker.attestation.utterances.clone();
        for _ in 0..2 {
            let judgement = self.judge_words(&words, &order.listing).await;
            match self
                .record_proposal(caller, &home, &speaker, &order, &words, judgement)
                .await?
            {
                Proposed::Recorded(output) => return Ok(*output),
                Proposed::WordsChanged(unused) => words = unused,
            }
        }
        // Proposals of this product raced this one twice: let the person ask again.
        Err(LedgerError::Busy.into())
    }

    /// The intent check on `words`; with none left, `unclear` without asking the judge.
    async fn judge_words(&self, words: &[String], listing: &Proposal) -> Judgement {
        if words.is_empty() {
            return Judgement::found(
                Verdict::Unclear,
                vec![(
                    ReasonCode::Unclear,
                    "every word said already backed an earlier request for this product".into(),
                )],
            );
        }
        self.judge.judge(words, listing).await
    }

    /// Appends the proposal judged on `words`, unless those are no longer exactly the
    /// speaker's unused words for this product.
    async fn record_proposal(
        &self,
        caller: &Caller,
        home: &HouseholdData,
        speaker: &Speaker<'_>,
        order: &Listed<'_>,
        words: &[String],
        judgement: Judgement,
    ) -> Result<Proposed, CountersignError> {
        let Listed {
            product,
            variant,
            listing,
        } = order;
        let quantity = listing.quantity;
        let total_cents = variant.unit_price_cents * u64::from(quantity);
        let intent = IntentRecord {
            judge: self.judge.name().to_owned(),
            verdict: judgement.verdict,
            codes: judgement.codes.clone(),
            reasons: judgement.notes.clone(),
        };
        let (step, appended) = self
            .ledger
            .transition(caller, home.id(), &home.weeks, |view, now| {
                if let Err(refusal) = check_turn(view, speaker.attestation, product) {
                    return Step::Leave(Err(refusal));
                }
                let unused = unused_words(view, speaker.attestation, &product.id);
                if unused != words {
                    return Step::Leave(Ok(Judged::WordsChanged(unused)));
                }
                let spent = view.spent_this_week(home.weeks.start_of(now));
                let order = Order {
                    member: speaker.member,
                    product,
                    total_cents,
                    ordered_from_before: view.has_ordered_from(&product.merchant),
                };
                let assessment = policy::assess(home, &order, spent, &judgement);
                let request_id = unused_id(view, "REQ-");
                let order_id = (assessment.outcome == Outcome::Placed).then(|| fresh_id("SIM-"));
                let proposal = ProposalEvent {
                    words: words.to_vec(),
                    product_id: product.id.clone(),
                    variant_id: variant.id.clone(),
                    title: product.title.clone(),
                    variant: variant.label.clone(),
                    merchant_id: product.merchant.clone(),
                    merchant: listing.merchant.clone(),
                    unit_price_cents: variant.unit_price_cents,
                    quantity,
                    total_cents,
                    intent: intent.clone(),
                    outcome: assessment.outcome,
                    reasons: assessment.reasons.clone(),
                    order_id: order_id.clone(),
                };
                let status = Status::from(assessment.outcome);
                let say = match assessment.outcome {
                    Outcome::Placed => say::placed(&proposal),
                    Outcome::NeedsConfirmation => say::needs_confirmation(&proposal),
                    Outcome::NeedsGuardian => say::needs_guardian(&proposal),
                    Outcome::NeedsApproval => say::sent_to_phones(&proposal),
                    Outcome::Blocked => say::blocked(&proposal),
                };
                let output = ProposeOutput {
                    request_id: request_id.clone(),
                    outcome: assessment.outcome,
                    status,
                    reasons: assessment.reasons,
                    order: OrderSummary::from(&proposal),
                    intent: intent.clone(),
                    placed: None,
                    say,
                    tlog_proof: None,
                    approval_url: None,
                };
                let entry = NewEntry {
                    request_id,
                    member_id: speaker.member.id.clone(),
                    turn_id: speaker.attestation.turn_id.clone(),
                    event: Event::Proposal(Box::new(proposal)),
                };
                Step::Append(entry, Ok(Judged::Output(Box::new(output), order_id)))
            })
            .await?;
        let (mut output, order_id) = match step? {
            Judged::WordsChanged(unused) => return Ok(Proposed::WordsChanged(unused)),
            Judged::Output(output, order_id) => (output, order_id),
        };
        if let (Some(order_id), Some(appended)) = (order_id, &appended) {
            output.placed = Some(PlacedOrder {
                order_id,
                total_cents,
                receipt: appended.receipt.clone(),
            });
        }
        output.tlog_proof = appended
            .as_ref()
            .and_then(|appended| appended.tlog_proof.clone());
        if let (Some(notifier), Some(_), Status::WaitingForGuardian) =
            (&self.notifier, &appended, output.status)
        {
            notifier.send(WaitingNotice {
                kind: "request",
                household_id: home.id().to_owned(),
                request_id: output.request_id.clone(),
                requester_role: Some(speaker.member.role),
                title: product.title.clone(),
                total_cents,
                approval_url: None,
                sent_at: self.ledger.now().unix_timestamp(),
            });
        }
        Ok(Proposed::Recorded(output))
    }

    /// The proposer answers their own waiting request: a clear yes in a later turn, answering
    /// exactly this request's question, places it; a clear no cancels it; anything else
    /// leaves it waiting.
    pub async fn confirm(
        &self,
        caller: &Caller,
        request_id: &str,
    ) -> Result<DecisionOutput, CountersignError> {
        let home = self.home(caller).await?;
        if self.proposes_unattested(caller) {
            return Err(Refusal::DecidedOnPhones.into());
        }
        let speaker = self.speaker(caller, &home)?;
        check_request_id(request_id)?;
        self.count_acting(caller, &speaker).await?;
        self.settle(caller, &home, request_id, |view, request, now| {
            match request.status {
                Status::WaitingForConfirmation => {}
                Status::WaitingForGuardian => return Err(Refusal::WaitsForGuardian.into()),
                Status::WaitingForApproval => return Err(Refusal::DecidedOnPhones.into()),
                _ => return Ok(None),
            }
            if request.member_id != speaker.member.id {
                return Err(Refusal::OnlyRequesterConfirms {
                    requester: say::member_name(&home, &request.member_id),
                }
                .into());
            }
            check_answer(view, speaker.attestation, request)?;
            let answer = read_latest(&speaker.attestation.utterances);
            Ok(Some(self.resolve(view, request, now, answer, &speaker)))
        })
        .await
    }

    /// A guardian approves or declines the request that was read to them; `approve` must be
    /// what their own words say.
    pub async fn decide(
        &self,
        caller: &Caller,
        request_id: &str,
        approve: bool,
    ) -> Result<DecisionOutput, CountersignError> {
        let home = self.home(caller).await?;
        if self.proposes_unattested(caller) {
            return Err(Refusal::DecidedOnPhones.into());
        }
        let speaker = self.speaker(caller, &home)?;
        check_request_id(request_id)?;
        if !home.is_guardian(&speaker.member.id) {
            return Err(Refusal::NotAGuardian {
                name: say::member_name(&home, &speaker.member.id),
            }
            .into());
        }
        self.count_acting(caller, &speaker).await?;
        self.settle(caller, &home, request_id, |view, request, now| {
            match request.status {
                Status::WaitingForGuardian => {}
                Status::WaitingForApproval => return Err(Refusal::DecidedOnPhones.into()),
                Status::WaitingForConfirmation => {
                    return Err(Refusal::WaitsForRequester {
                        requester: say::member_name(&home, &request.member_id),
                    }
                    .into());
                }
                _ => return Ok(None),
            }
            if request.member_id == speaker.member.id {
                return Err(self.own_request(&speaker));
            }
            check_answer(view, speaker.attestation, request)?;
            let answer = read_latest(&speaker.attestation.utterances);
            let said = match answer {
                Answer::Yes => Some(true),
                Answer::No => Some(false),
                Answer::Unclear => None,
            };
            if let Some(said) = said
                && said != approve
            {
                return Err(Refusal::DecisionAgainstWords { said_yes: said }.into());
            }
            Ok(Some(self.resolve(view, request, now, answer, &speaker)))
        })
        .await
    }

    /// Why `speaker` cannot decide the request they made themselves.
    fn own_request(&self, speaker: &Speaker<'_>) -> CountersignError {
        Refusal::OwnRequest {
            name: say::member_name(speaker.home, &speaker.member.id),
            another_guardian: speaker
                .home
                .other_guardians(&speaker.member.id)
                .next()
                .is_some(),
        }
        .into()
    }

    /// What a strictly read answer does to a waiting request: the proposer's answer is a
    /// confirmation, a guardian's a guardian decision.
    fn resolve(
        &self,
        view: &LedgerView,
        request: &Request,
        now: OffsetDateTime,
        answer: Answer,
        speaker: &Speaker<'_>,
    ) -> Resolved {
        let proposal = &request.proposal;
        let by_guardian = request.status == Status::WaitingForGuardian;
        let on_no = if by_guardian {
            Settled::Declined
        } else {
            Settled::Cancelled
        };
        let (answer, result, reasons, say) = match answer {
            Answer::Unclear => {
                return Resolved::Unchanged(format!(
                    "I didn't hear a clear yes or no, so nothing was decided and the request is still waiting. {}",
                    if by_guardian {
                        say::guardian_question(speaker.home, request)
                    } else {
                        say::confirmation_question(proposal)
                    }
                ));
            }
            Answer::No => (
                SpokenAnswer::No,
                on_no,
                Vec::new(),
                if on_no == Settled::Declined {
                    format!("Declined. I won't order {}.", say::order_phrase(proposal))
                } else {
                    format!("Cancelled. I won't order {}.", say::order_phrase(proposal))
                },
            ),
            Answer::Yes => {
                let spent = view.spent_this_week(speaker.home.weeks.start_of(now));
                match policy::budget_problem(speaker.home, spent, proposal.total_cents) {
                    Some(problem) => (
                        SpokenAnswer::Yes,
                        Settled::Blocked,
                        vec![problem.clone()],
                        format!(
                            "I can't place it now: {}. {}",
                            say::reasons(&[problem]),
                            say::BLOCKED_NEXT_STEP
                        ),
                    ),
                    None => (
                        SpokenAnswer::Yes,
                        Settled::Placed,
                        Vec::new(),
                        String::new(),
                    ),
                }
            }
        };
        let order_id = (result == Settled::Placed).then(|| fresh_id("SIM-"));
        let say = match &order_id {
            Some(_) => say::placed(proposal),
            None => say,
        };
        Resolved::Changed {
            entry: NewEntry {
                request_id: request.request_id.clone(),
                member_id: speaker.member.id.clone(),
                turn_id: speaker.attestation.turn_id.clone(),
                event: {
                    let resolution = Resolution {
                        answer,
                        result,
                        reasons: reasons.clone(),
                        order_id: order_id.clone(),
                    };
                    if by_guardian {
                        Event::GuardianDecision(resolution)
                    } else {
                        Event::Confirmation(resolution)
                    }
                },
            },
            result,
            reasons,
            order_id,
            say,
        }
    }

    /// Runs a settling transition on one request: `decide` returns `Ok(None)` when the
    /// request is already settled, or what the answer does.
    async fn settle(
        &self,
        caller: &Caller,
        home: &HouseholdData,
        request_id: &str,
        decide: impl Fn(
            &LedgerView,
            &Request,
            OffsetDateTime,
        ) -> Result<Option<Resolved>, CountersignError>,
    ) -> Result<DecisionOutput, CountersignError> {
        let (output, appended) = self
            .ledger
            .transition(caller, home.id(), &home.weeks, |view, now| {
                let requests = view.requests(now);
                let Some(request) = requests.iter().find(|r| r.request_id == request_id) else {
                    return Step::Leave(Err(Refusal::UnknownRequest.into()));
                };
                let base = |status, result, reasons, say| DecisionOutput {
                    request_id: request.request_id.clone(),
                    status,
                    result,
                    reasons,
                    order: OrderSummary::from(&request.proposal),
                    placed: None,
                    say,
                    tlog_proof: None,
                };
                match decide(view, request, now) {
                    Err(error) => Step::Leave(Err(error)),
                    Ok(None) => {
                        let say = format!(
                            "That request was already settled: it is {}. Ask what is waiting to hear anything else.",
                            request.status.spoken()
                        );
                        let mut output = base(request.status, None, Vec::new(), say);
                        output.placed = request.placed.as_ref().map(|placed| PlacedOrder {
                            order_id: placed.order_id.clone(),
                            total_cents: request.proposal.total_cents,
                            receipt: placed.receipt.clone(),
                        });
                        Step::Leave(Ok((output, None)))
                    }
                    Ok(Some(Resolved::Unchanged(say))) => {
                        Step::Leave(Ok((base(request.status, None, Vec::new(), say), None)))
                    }
                    Ok(Some(Resolved::Changed {
                        entry,
                        result,
                        reasons,
                        order_id,
                        say,
                    })) => {
                        let output = base(Status::from(result), Some(result), reasons, say);
                        Step::Append(entry, Ok((output, order_id)))
                    }
                }
            })
            .await?;
        let (mut output, order_id) = output?;
        output.tlog_proof = appended
            .as_ref()
            .and_then(|appended| appended.tlog_proof.clone());
        if let (Some(order_id), Some(appended)) = (order_id, appended) {
            output.placed = Some(PlacedOrder {
                order_id,
                total_cents: output.order.total_cents,
                receipt: appended.receipt,
            });
        }
        Ok(output)
    }

    /// Reads the oldest request waiting for this speaker aloud, and records that it was read:
    /// that reading is what lets their answer in a later turn count.
    pub async fn list_waiting(
        &self,
        caller: &Caller,
    ) -> Result<ListWaitingOutput, CountersignError> {
        let home = self.home(caller).await?;
        let speaker = self.speaker(caller, &home)?;
        let guardian = home.is_guardian(&speaker.member.id);
        self.count_acting(caller, &speaker).await?;
        let (output, appended) = self
            .ledger
            .transition(caller, home.id(), &home.weeks, |view, now| {
                let waiting: Vec<Request> = view
                    .requests(now)
                    .into_iter()
                    .filter(|request| match request.status {
                        // Nobody decides their own request, so it is not read to them.
                        Status::WaitingForGuardian => {
                            guardian && request.member_id != speaker.member.id
                        }
                        Status::WaitingForConfirmation => request.member_id == speaker.member.id,
                        _ => false,
                    })
                    .collect();
                let Some(first) = waiting.first() else {
                    return Step::Leave(ListWaitingOutput {
                        waiting: 0,
                        read_aloud: None,
                        say: "Nothing is waiting for you.".into(),
                        tlog_proof: None,
                    });
                };
                let question = if first.status == Status::WaitingForGuardian {
                    say::guardian_question(&home, first)
                } else {
                    say::confirmation_question(&first.proposal)
                };
                let say = match waiting.len() {
                    1 => question.clone(),
                    n => format!("{n} requests are waiting. The first: {question}"),
                };
                let output = ListWaitingOutput {
                    waiting: waiting.len(),
                    read_aloud: Some(WaitingRequest {
                        request_id: first.request_id.clone(),
                        requested_by: first.member_id.clone(),
                        status: first.status,
                        reasons: first.proposal.reasons.clone(),
                        order: OrderSummary::from(&first.proposal),
                    }),
                    say,
                    tlog_proof: None,
                };
                let entry = NewEntry {
                    request_id: first.request_id.clone(),
                    member_id: speaker.member.id.clone(),
                    turn_id: speaker.attestation.turn_id.clone(),
                    event: Event::ReadAloud { question },
                };
                Step::Append(entry, output)
            })
            .await?;
        let mut output = output;
        output.tlog_proof = appended.and_then(|appended| appended.tlog_proof);
        Ok(output)
    }
}

/// What answering a waiting request does.
enum Resolved {
    /// No clear answer: nothing is written; the text re-asks.
    Unchanged(String),
    Changed {
        entry: NewEntry,
        result: Settled,
        reasons: Vec<String>,
        order_id: Option<String>,
        say: String,
    },
}

/// One attested turn backs at most one proposal per product and
/// [`MAX_PROPOSALS_PER_TURN`] in all, so a model repeating a call cannot turn one utterance
/// into many orders. Read from the ledger the proposal is appended to, so the check and the
/// append are one conditional write and racing repeats cannot both pass.
fn check_turn(
    view: &LedgerView,
    attestation: &Attestation,
    product: &Product,
) -> Result<(), CountersignError> {
    // Entries of this turn are written while its attestation is live: at the earliest 30 s
    // before `issued_at` by the server's clock (a device clock may run that far ahead).
    // Per-member limits keep them retained; if they may nevertheless be gone, refuse rather
    // than guess.
    let turn_began = OffsetDateTime::from_unix_timestamp(
        attestation.issued_at.saturating_sub(MAX_CLOCK_AHEAD_SECS),
    )
    .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    if view.may_have_evicted_since(turn_began) {
        return Err(Refusal::TurnPartlyEvicted.into());
    }
    let earlier = view.proposals_in_turn(&attestation.member_id, &attestation.turn_id);
    if earlier.iter().any(|p| p.product_id == product.id) {
        return Err(Refusal::TurnAlreadyProposed {
            title: product.title.clone(),
        }
        .into());
    }
    if earlier.len() >= MAX_PROPOSALS_PER_TURN {
        return Err(Refusal::TurnFull.into());
    }
    Ok(())
}

/// An answer counts only for the newest question read to its speaker: it must name that
/// request, come in another turn, and be dated by the device no earlier than
/// [`ANSWER_CLOCK_SKEW_SECS`] before the question was read and no later than
/// [`ANSWER_WITHIN_SECS`] after it.
fn check_answer(
    view: &LedgerView,
    attestation: &Attestation,
    request: &Request,
) -> Result<(), CountersignError> {
    if attestation.answering.as_deref() != Some(request.request_id.as_str()) {
        return Err(Refusal::AnswerNotToThisRequest.into());
    }
    // A guardian's question is only ever read by `list_waiting`, and a proposal asks only its
    // own proposer, so the newest question names which kind of answer this is.
    let Some(question) = view
        .newest_question_to(&attestation.member_id)
        .filter(|question| question.request_id == request.request_id)
    else {
        return Err(Refusal::AnswerNotToNewestQuestion.into());
    };
    if question.turn_id == attestation.turn_id {
        return Err(Refusal::AnswerInQuestionsTurn.into());
    }
    // Whole milliseconds on both sides; i128 because `issued_at` is any signed integer.
    let issued_ms = i128::from(attestation.issued_at) * 1000;
    let read_ms = i128::from(unix_ms(question.at));
    if issued_ms < read_ms - i128::from(ANSWER_CLOCK_SKEW_SECS) * 1000 {
        return Err(Refusal::AnswerBeforeQuestion.into());
    }
    if issued_ms > read_ms + i128::from(ANSWER_WITHIN_SECS) * 1000 {
        return Err(Refusal::AnswerTooLate.into());
    }
    Ok(())
}

fn check_request_id(request_id: &str) -> Result<(), CountersignError> {
    if request_id.is_empty() || request_id.chars().count() > REQUEST_ID_MAX_CHARS {
        return Err(Refusal::RequestIdOutOfRange.into());
    }
    Ok(())
}

/// A product and variant from the catalogue, and the proposal the intent check reads.
struct Listed<'a> {
    product: &'a Product,
    variant: &'a Variant,
    listing: Proposal,
}

/// What one attempt at recording a proposal came to.
enum Proposed {
    Recorded(Box<ProposeOutput>),
    /// The words judged are not the speaker's unused words any more: judge these instead.
    WordsChanged(Vec<String>),
}

/// What the ledger transition of a proposal decided.
enum Judged {
    Output(Box<ProposeOutput>, Option<String>),
    WordsChanged(Vec<String>),
}

/// The attested utterances that have backed no proposal of `product_id` by the same member
/// in the retained ledger, in the order said. Words back one order: a device may carry a
/// person's words into later turns (the host contract allows up to three recent ones), and
/// without this every turn that carries "order two packs of batteries" would back another
/// order. Any earlier proposal counts, whatever became of it: a cancelled or declined
/// order's words must not bring it back either. Utterances compare with case and spacing
/// set aside; an answer ("yes") is read by `confirm_purchase` and `decide_request`, which
/// this does not touch.
pub(super) fn unused_words(
    view: &LedgerView,
    attestation: &Attestation,
    product_id: &str,
) -> Vec<String> {
    let used: HashSet<String> = view
        .proposals_by(&attestation.member_id)
        .filter(|proposal| proposal.product_id == product_id)
        .flat_map(|proposal| proposal.words.iter().map(|words| comparable(words)))
        .collect();
    attestation
        .utterances
        .iter()
        .filter(|words| !used.contains(&comparable(words)))
        .cloned()
        .collect()
}

/// Words as compared for reuse: lower case, single spaces, no surrounding punctuation.
fn comparable(words: &str) -> String {
    words
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_matches(|c: char| c.is_ascii_punctuation())
        .to_lowercase()
}

fn unused_id(view: &LedgerView, prefix: &str) -> String {
    loop {
        let id = fresh_id(prefix);
        if !view.has_request(&id) {
            return id;
        }
    }
}
