//! The sentences the device reads word for word. Only catalogue facts, household names and
//! Countersign's own reasons go into them, each sanitised and bounded; listing text never
//! does, so a seller cannot put words in the device's mouth.

use super::household::HouseholdData;
use super::ledger::{ProposalEvent, Request};
use super::money::dollars;
use crate::speech::sanitize::sanitize;

/// Characters of one reason quoted aloud.
const REASON_CHARS: usize = 160;
/// Reasons read aloud; the rest are in the structured result.
const REASONS_READ: usize = 3;

/// "2 of PowerCell AA Alkaline Batteries, 12 pack, from Corner Electrics, for $25.98"
pub fn order_phrase(proposal: &ProposalEvent) -> String {
    format!(
        "{} of {}, {}, from {}, for {}",
        proposal.quantity,
        sanitize(&proposal.title, 80),
        sanitize(&proposal.variant, 60),
        sanitize(&proposal.merchant, 60),
        dollars(proposal.total_cents)
    )
}

pub fn reasons(reasons: &[String]) -> String {
    let mut read: Vec<String> = reasons
        .iter()
        .take(REASONS_READ)
        .map(|reason| sanitize(reason, REASON_CHARS))
        .collect();
    if reasons.len() > REASONS_READ {
        read.push(format!("and {} more", reasons.len() - REASONS_READ));
    }
    read.join("; ")
}

/// The order number is in the structured result, not read aloud: a voice reads no ids.
pub fn placed(proposal: &ProposalEvent) -> String {
    format!("Done. I ordered {}.", order_phrase(proposal))
}

pub fn confirmation_question(proposal: &ProposalEvent) -> String {
    format!(
        "Should I order {}? Please answer yes or no.",
        order_phrase(proposal)
    )
}

pub fn needs_confirmation(proposal: &ProposalEvent) -> String {
    format!(
        "Before I order, please check: {}. {}",
        reasons(&proposal.reasons),
        confirmation_question(proposal)
    )
}

pub fn needs_guardian(proposal: &ProposalEvent) -> String {
    format!(
        "I've asked a guardian to decide on {}, because {}.",
        order_phrase(proposal),
        reasons(&proposal.reasons)
    )
}

/// An order proposed without a device: it went to the household's phones. No link is read:
/// a voice reads no URLs.
pub fn sent_to_phones(proposal: &ProposalEvent) -> String {
    format!(
        "I've sent {} to your household's phones. Approve or decline it there with a passkey; it waits 30 minutes.",
        order_phrase(proposal)
    )
}

/// A blocked order, and what the person can do about it: the rules are the household's.
pub fn blocked(proposal: &ProposalEvent) -> String {
    format!(
        "I can't order {}: {}. {BLOCKED_NEXT_STEP}",
        order_phrase(proposal),
        reasons(&proposal.reasons)
    )
}

/// What to do about an order the household's rules block.
pub const BLOCKED_NEXT_STEP: &str =
    "If it is still needed, ask for less, or ask a parent to change the household's rules.";

/// The question read to a guardian by `list_waiting`.
pub fn guardian_question(data: &HouseholdData, request: &Request) -> String {
    format!(
        "{} asked for {}. The reasons it waits: {}. Do you approve? Please answer yes or no.",
        member_name(data, &request.member_id),
        order_phrase(&request.proposal),
        reasons(&request.proposal.reasons)
    )
}

pub fn member_name(data: &HouseholdData, member_id: &str) -> String {
    data.member(member_id).map_or_else(
        || sanitize(member_id, 40),
        |member| sanitize(&member.name, 40),
    )
}
