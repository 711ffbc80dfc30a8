//! From proposal to placed order: proposing, confirming, a guardian's decision, and reading
//! what is waiting, with the rules for what one signed attestation authorises.

use time::OffsetDateTime;

use super::{
    CountersignError, CountersignService, MAX_QUANTITY, REQUEST_ID_MAX_CHARS, Speaker, refused,
};
use super::{
    DecisionOutput, ListWaitingOutput, OrderSummary, PlacedOrder, ProposeOutput, WaitingRequest,
};
use crate::auth::Caller;
use crate::auth::attestation::{Attestation, MAX_CLOCK_AHEAD_SECS};
use crate::clock::unix_ms;
use crate::countersign::answer::{Answer, read_latest};
use crate::countersign::household::{HouseholdData, Product};
use crate::countersign::judge::Proposal;
use crate::countersign::ledger::{
    ANSWER_CLOCK_SKEW_SECS, ANSWER_WITHIN_SECS, Event, IntentRecord, LedgerView,
    MAX_PROPOSALS_PER_TURN, NewEntry, ProposalEvent, Request, Resolution, Settled, SpokenAnswer,
    Status, Step, fresh_id,
};
use crate::countersign::notify::WaitingNotice;
use crate::countersign::policy::{self, Order, Outcome};
use crate::countersign::say;
use crate::speech::sanitize::sanitize;

impl CountersignService {
    /// Checks a proposed order against the speaker's words and the household's rules, and
    /// places it, holds it for confirmation or a guardian, or blocks it.
    pub async fn propose(
        &self,
        caller: &Caller,
        product_id: &str,
        variant_id: &str,
        quantity: u32,
    ) -> Result<ProposeOutput, CountersignError> {
        let home = self.home(caller).await?;
        let speaker = self.speaker(caller, &home)?;
        if !(1..=MAX_QUANTITY).contains(&quantity) {
            return Err(refused(format!(
                "The quantity must be between 1 and {MAX_QUANTITY}."
            )));
        }
        let (product, variant) = self.listing(product_id, variant_id)?;
        self.count_acting(caller, &speaker).await?;
        let merchant = self
            .data
            .catalogue
            .merchant_name(&product.merchant)
            .to_owned();
        let total_cents = variant.unit_price_cents * u64::from(quantity);
        let judgement = self
            .judge
            .judge(
                &speaker.attestation.utterances,
                &Proposal {
                    title: product.title.clone(),
                    variant: variant.label.clone(),
                    merchant: merchant.clone(),
                    unit_price_cents: variant.unit_price_cents,
                    text: product.text.clone(),
                    quantity,
                },
            )
            .await;
        let intent = IntentRecord {
            judge: self.judge.name().to_owned(),
            verdict: judgement.verdict,
            codes: judgement.codes.clone(),
            reasons: judgement.notes.clone(),
        };
        let (output, appended) = self
            .ledger
            .transition(caller, home.id(), &home.weeks, |view, now| {
                if let Err(refusal) = check_turn(view, speaker.attestation, product) {
                    return Step::Leave(Err(refusal));
                }
                let spent = view.spent_this_week(home.weeks.start_of(now));
                let order = Order {
                    member: speaker.member,
                    product,
                    total_cents,
                    ordered_from_before: view.has_ordered_from(&product.merchant),
                };
                let assessment = policy::assess(&home, &order, spent, &judgement);
                let request_id = unused_id(view, "REQ-");
                let order_id = (assessment.outcome == Outcome::Placed).then(|| fresh_id("SIM-"));
                let proposal = ProposalEvent {
                    words: speaker.attestation.utterances.clone(),
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
                    order_id: order_id.clone(),
                };
                let status = Status::from(assessment.outcome);
                let say = match assessment.outcome {
                    Outcome::Placed => {
                        say::placed(&proposal, order_id.as_deref().unwrap_or_default())
                    }
                    Outcome::NeedsConfirmation => say::needs_confirmation(&proposal),
                    Outcome::NeedsGuardian => say::needs_guardian(&proposal),
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
                };
                let entry = NewEntry {
                    request_id,
                    member_id: speaker.member.id.clone(),
                    turn_id: speaker.attestation.turn_id.clone(),
                    event: Event::Proposal(Box::new(proposal)),
                };
                Step::Append(entry, Ok((output, order_id)))
            })
            .await?;
        let (mut output, order_id) = output?;
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
                household_id: home.id().to_owned(),
                request_id: output.request_id.clone(),
                requester_role: speaker.member.role,
                title: product.title.clone(),
                total_cents,
                sent_at: self.ledger.now().unix_timestamp(),
            });
        }
        Ok(output)
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
        let speaker = self.speaker(caller, &home)?;
        check_request_id(request_id)?;
        self.count_acting(caller, &speaker).await?;
        self.settle(caller, &home, request_id, |view, request, now| {
            match request.status {
                Status::WaitingForConfirmation => {}
                Status::WaitingForGuardian => {
                    return Err(refused(
                        "That request waits for a guardian; only a guardian can decide it.",
                    ));
                }
                _ => return Ok(None),
            }
            if request.member_id != speaker.member.id {
                return Err(refused(format!(
                    "Only {}, who asked for it, can confirm this order.",
                    say::member_name(&home, &request.member_id)
                )));
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
        let speaker = self.speaker(caller, &home)?;
        check_request_id(request_id)?;
        if !home.is_guardian(&speaker.member.id) {
            return Err(refused(format!(
                "Only a guardian can decide requests, and {} is not a guardian.",
                say::member_name(&home, &speaker.member.id)
            )));
        }
        self.count_acting(caller, &speaker).await?;
        self.settle(caller, &home, request_id, |view, request, now| {
            match request.status {
                Status::WaitingForGuardian => {}
                Status::WaitingForConfirmation => {
                    return Err(refused(format!(
                        "That request waits for {}'s own confirmation, not a guardian's.",
                        say::member_name(&home, &request.member_id)
                    )));
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
                return Err(refused(format!(
                    "Your words say {}, but the decision sent was to {}. Nothing was decided.",
                    if said { "yes" } else { "no" },
                    if approve { "approve" } else { "decline" }
                )));
            }
            Ok(Some(self.resolve(view, request, now, answer, &speaker)))
        })
        .await
    }

    /// Why `speaker` cannot decide the request they made themselves.
    fn own_request(&self, speaker: &Speaker<'_>) -> CountersignError {
        let name = say::member_name(speaker.home, &speaker.member.id);
        if speaker
            .home
            .other_guardians(&speaker.member.id)
            .next()
            .is_some()
        {
            refused(format!(
                "{name} asked for it, and nobody decides their own request: another guardian must."
            ))
        } else {
            refused(format!(
                "{name} asked for it, and nobody decides their own request. {name} is the household's only guardian, so it cannot be approved."
            ))
        }
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
                        format!("I can't place it now: {}.", say::reasons(&[problem])),
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
            Some(order_id) => say::placed(proposal, order_id),
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
                    return Step::Leave(Err(refused(
                        "There is no request with that id in this household's ledger.",
                    )));
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
                        let mut say = format!(
                            "That request was already settled: it is {}.",
                            request.status.spoken()
                        );
                        if let Some(placed) = &request.placed {
                            say.push_str(&format!(" Order {}.", placed.order_id));
                        }
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
        return Err(refused(
            "I can't tell what this turn already ordered, because the ledger no longer holds all of it. Please ask again in a new turn.",
        ));
    }
    let earlier = view.proposals_in_turn(&attestation.member_id, &attestation.turn_id);
    if earlier.iter().any(|p| p.product_id == product.id) {
        return Err(refused(format!(
            "This turn already proposed {}: what was said backs one order of each product. Ask again in a new turn to order more.",
            sanitize(&product.title, 80)
        )));
    }
    if earlier.len() >= MAX_PROPOSALS_PER_TURN {
        return Err(refused(format!(
            "What was said can back at most {MAX_PROPOSALS_PER_TURN} orders in one turn. Ask again in a new turn for the rest."
        )));
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
        return Err(refused(
            "That answer was not given to this request's question, so it does not count. Ask what is waiting, and answer the question you hear.",
        ));
    }
    // A guardian's question is only ever read by `list_waiting`, and a proposal asks only its
    // own proposer, so the newest question names which kind of answer this is.
    let Some(question) = view
        .newest_question_to(&attestation.member_id)
        .filter(|question| question.request_id == request.request_id)
    else {
        return Err(refused(
            "That request is not the last question read to you, so the answer does not count. Ask what is waiting, and answer the question you hear.",
        ));
    };
    if question.turn_id == attestation.turn_id {
        return Err(refused(
            "An answer must come in a later turn than the question it answers.",
        ));
    }
    // Whole milliseconds on both sides; i128 because `issued_at` is any signed integer.
    let issued_ms = i128::from(attestation.issued_at) * 1000;
    let read_ms = i128::from(unix_ms(question.at));
    if issued_ms < read_ms - i128::from(ANSWER_CLOCK_SKEW_SECS) * 1000 {
        return Err(refused(
            "That answer was given before the question was read, so it does not count. Answer the question you hear.",
        ));
    }
    if issued_ms > read_ms + i128::from(ANSWER_WITHIN_SECS) * 1000 {
        return Err(refused(format!(
            "That answer came too long after the question was read (more than {} minutes). Ask what is waiting, and answer again.",
            ANSWER_WITHIN_SECS / 60
        )));
    }
    Ok(())
}

fn check_request_id(request_id: &str) -> Result<(), CountersignError> {
    if request_id.is_empty() || request_id.chars().count() > REQUEST_ID_MAX_CHARS {
        return Err(refused(format!(
            "request_id must be 1 to {REQUEST_ID_MAX_CHARS} characters."
        )));
    }
    Ok(())
}

fn unused_id(view: &LedgerView, prefix: &str) -> String {
    loop {
        let id = fresh_id(prefix);
        if !view.has_request(&id) {
            return id;
        }
    }
}
