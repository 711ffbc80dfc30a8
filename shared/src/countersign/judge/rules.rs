//! The deterministic intent judge. It reads the person's words and the proposal and flags:
//! a quantity other than the one said (number words, digits, "a couple", "a dozen", "half a
//! dozen"); a total over a stated price ceiling ("under fifteen dollars", "no more than $20");
//! a size or strength other than the one said ([`super::measures`]); a merchant other than the
//! one named ("from Green Grocer"); listing text that instructs the assistant
//! ([`super::listing_text`]); a variant or item that contradicts the words (strawberry /
//! bubblegum, dog / cat, large / small); and a listing whose item is something else built
//! around the words ("shower curtain rings" for "a shower curtain"). A word said that the
//! listing does not hold, in its own or another everyday name ([`super::thesaurus`]), makes
//! it ask. What it cannot read it leaves alone: it runs before the model judge, and its
//! mismatch is final.

use async_trait::async_trait;

use super::amounts::{price_ceiling, stated_quantity, units_per_pack};
use super::described::{
    SynonymsHeld, contradictions, described_words, different_item, listing_holds, same_value_held,
};
use super::listing_text::addresses_the_assistant;
use super::measures;
use super::merchant::{merchant_matches, named_merchant};
use super::words::tokenize;
use super::{Judge, Judgement, Proposal, ReasonCode, Verdict};
use crate::countersign::money::dollars;

pub struct RulesJudge;

#[async_trait]
impl Judge for RulesJudge {
    fn name(&self) -> &'static str {
        "rules"
    }

    async fn judge(&self, words: &[String], proposal: &Proposal) -> Judgement {
        judge(words, proposal)
    }
}

/// The rules, synchronously.
pub fn judge(words: &[String], proposal: &Proposal) -> Judgement {
    let said = words.join(" . ");
    if said.trim().is_empty() {
        return Judgement::found(
            Verdict::Unclear,
            vec![(
                ReasonCode::Unclear,
                "no words to compare the order with".into(),
            )],
        );
    }
    let tokens = tokenize(&said);
    let mut used = vec![false; tokens.len()];
    let mut reasons: Vec<(ReasonCode, String)> = Vec::new();

    if let Some(ceiling) = price_ceiling(&tokens, &mut used) {
        let total = proposal
            .unit_price_cents
            .saturating_mul(u64::from(proposal.quantity));
        if total > ceiling {
            reasons.push((
                ReasonCode::Price,
                format!(
                    "price: the order totals {} but the limit said was {}",
                    dollars(total),
                    dollars(ceiling)
                ),
            ));
        }
    }
    if let Some(merchant) = named_merchant(&said, &tokens, &mut used)
        && !merchant_matches(&merchant, &proposal.merchant)
    {
        reasons.push((
            ReasonCode::Merchant,
            format!(
                "merchant: the words name {merchant} but the order is from {}",
                proposal.merchant
            ),
        ));
    }
    if let Some(stated) = stated_quantity(&tokens, &mut used) {
        let pack = units_per_pack(&proposal.variant);
        let quantity = u64::from(proposal.quantity);
        if quantity != stated && quantity.saturating_mul(pack) != stated {
            reasons.push((
                ReasonCode::Quantity,
                format!("quantity: {stated} was asked for but the order is for {quantity}"),
            ));
        }
    }
    let listing_words = format!("{} {}", proposal.title, proposal.variant);
    for reason in measures::mismatched(&measures::measures(&tokens, &used), &listing_words) {
        reasons.push((ReasonCode::Variant, reason));
    }
    if addresses_the_assistant(&proposal.text) {
        reasons.push((
            ReasonCode::Injection,
            "injection: the listing text gives instructions to the assistant".into(),
        ));
    }
    let spoken: Vec<&str> = tokens
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(token, _)| token.as_str())
        .collect();
    let title = tokenize(&proposal.title);
    let variant = tokenize(&proposal.variant);
    let listing: Vec<String> = title.iter().chain(&variant).cloned().collect();
    reasons.extend(contradictions(&spoken, &listing));
    if let Some(reason) = different_item(&spoken, &title, &variant) {
        reasons.push((ReasonCode::Item, reason));
    }
    let (described, negated) = described_words(&spoken);
    let synonyms = SynonymsHeld::find(&spoken, &title, &variant);
    for word in negated {
        if listing_holds(word, &title, &variant) {
            reasons.push((
                ReasonCode::Variant,
                format!("variant: the words say not {word}, the listing is {word}"),
            ));
        }
    }
    if !reasons.is_empty() {
        return Judgement::found(Verdict::Mismatch, reasons);
    }
    // A word that describes what is wanted but that neither the title nor the variant holds
    // may name another item or variant: ask. The listing text does not count: the seller
    // writes it, and could fill it with every word a buyer might say.
    if !described
        .iter()
        .any(|word| listing_holds(word, &title, &[]) || synonyms.by_title.contains(word))
    {
        // Nothing said names the item ("yes", "order it", "the usual"): nothing to compare.
        return Judgement::found(
            Verdict::Unclear,
            vec![(
                ReasonCode::Unclear,
                "unclear: the words do not name the item".into(),
            )],
        );
    }
    let missing: Vec<&str> = described
        .into_iter()
        .filter(|word| {
            !listing_holds(word, &title, &variant)
                && !synonyms.holds(word)
                && !same_value_held(word, &listing)
        })
        .collect();
    if !missing.is_empty() {
        return Judgement::found(
            Verdict::Unclear,
            vec![(
                ReasonCode::Unclear,
                format!("unclear: the listing does not say {}", missing.join(", ")),
            )],
        );
    }
    Judgement::found(Verdict::Match, reasons)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal(title: &str, variant: &str, merchant: &str, cents: u64, quantity: u32) -> Proposal {
        Proposal {
            title: title.into(),
            variant: variant.into(),
            merchant: merchant.into(),
            unit_price_cents: cents,
            text: String::new(),
            quantity,
        }
    }

    fn verdict(words: &str, proposal: &Proposal) -> Verdict {
        judge(&[words.to_owned()], proposal).verdict
    }

    #[test]
    fn quantities_in_words_digits_and_idioms() {
        let eggs = |quantity| proposal("Free Range Eggs", "6 eggs", "Green Grocer", 300, quantity);
        assert_eq!(verdict("half a dozen eggs", &eggs(1)), Verdict::Match);
        assert_eq!(verdict("a dozen eggs", &eggs(2)), Verdict::Match);
        assert_eq!(verdict("a dozen eggs", &eggs(3)), Verdict::Mismatch);
        assert_eq!(
            verdict("a couple of boxes of eggs", &eggs(2)),
            Verdict::Match
        );
        assert_eq!(
            verdict("twenty five boxes of eggs", &eggs(25)),
            Verdict::Match
        );
        assert_eq!(verdict("3 boxes of eggs", &eggs(4)), Verdict::Mismatch);
        assert_eq!(
            verdict("eggs, a 2 litre carton is fine", &eggs(1)),
            Verdict::Match,
            "2 litre is a size"
        );
    }

    #[test]
    fn price_ceilings_in_words_or_digits() {
        let towels = |cents| proposal("SoftLeaf Paper Towels", "6 rolls", "Green Grocer", cents, 1);
        assert_eq!(
            verdict("paper towels under $12", &towels(1149)),
            Verdict::Match
        );
        assert_eq!(
            verdict("paper towels under $12", &towels(1250)),
            Verdict::Mismatch
        );
        assert_eq!(
            verdict(
                "paper towels, no more than twenty five dollars",
                &towels(2499)
            ),
            Verdict::Match
        );
        assert_eq!(
            verdict(
                "paper towels, no more than twenty five dollars",
                &towels(2501)
            ),
            Verdict::Mismatch
        );
        // At the ceiling is within it; one cent past is not.
        assert_eq!(
            verdict("paper towels under $12", &towels(1200)),
            Verdict::Match
        );
        assert_eq!(
            verdict("paper towels under $12", &towels(1201)),
            Verdict::Mismatch
        );
    }

    #[test]
    fn a_fiver_and_a_tenner_are_ceilings() {
        let treats = proposal("Cat Treats", "60 g bag", "PetWorld", 449, 1);
        assert_eq!(
            verdict("cat treats, under a fiver", &treats),
            Verdict::Match
        );
        let dear = proposal("Cat Treats", "60 g bag", "PetWorld", 549, 1);
        assert_eq!(
            verdict("cat treats, under a fiver", &dear),
            Verdict::Mismatch
        );
        let big = proposal("Cat Treats", "200 g bag", "PetWorld", 1049, 1);
        assert_eq!(
            verdict("cat treats for less than a tenner", &big),
            Verdict::Mismatch
        );
    }

    #[test]
    fn nothing_over_is_a_ceiling() {
        let soap = |cents| proposal("Sparkle Dish Soap", "lemon", "Green Grocer", cents, 1);
        assert_eq!(
            verdict("dish soap, nothing over $5", &soap(499)),
            Verdict::Match
        );
        assert_eq!(
            verdict("dish soap, nothing over $5", &soap(501)),
            Verdict::Mismatch
        );
    }

    #[test]
    fn a_different_item_is_caught_when_a_described_word_sits_in_the_variant() {
        let mat = |title: &str| proposal(title, "blue", "Sport Hub", 2500, 1);
        assert_eq!(
            verdict("I'd like the blue yoga mat", &mat("FlexFit Yoga Mat")),
            Verdict::Match
        );
        let bag = judge(
            &["I'd like the blue yoga mat".to_owned()],
            &mat("FlexFit Yoga Mat Bag"),
        );
        assert_eq!(bag.verdict, Verdict::Mismatch);
        assert_eq!(
            bag.notes,
            ["item: the listing is bag, which was not asked for"]
        );
    }

    #[test]
    fn a_described_word_the_listing_does_not_hold_asks_first() {
        let ink = proposal("InkJet Black Cartridge 302", "black", "Office Hub", 1799, 1);
        assert_eq!(
            verdict("reorder the black ink cartridge", &ink),
            Verdict::Match
        );
        // "printer" may name another item; the rules cannot tell, so they ask.
        let printer = judge(&["reorder the printer ink".to_owned()], &ink);
        assert_eq!(printer.verdict, Verdict::Unclear);
        assert_eq!(printer.codes, [ReasonCode::Unclear]);
        assert_eq!(printer.notes, ["unclear: the listing does not say printer"]);
        // Packaging, talk and a purpose clause describe nothing about the product.
        let chatty = judge(
            &["could you grab a box of black ink cartridges for the office please".to_owned()],
            &ink,
        );
        assert_eq!(chatty.verdict, Verdict::Match, "{:?}", chatty.notes);
        // Words only the seller's text holds do not count.
        let mut stuffed = proposal("InkJet Black Cartridge 302", "black", "Office Hub", 1799, 1);
        stuffed.text = "printer ink toner colour photo".into();
        assert_eq!(
            verdict("reorder the printer ink", &stuffed),
            Verdict::Unclear
        );
        let empty = judge(&[], &ink);
        assert_eq!(empty.verdict, Verdict::Unclear);
        for words in ["yes", "order it please", "get the usual"] {
            let unnamed = judge(&[words.to_owned()], &ink);
            assert_eq!(unnamed.verdict, Verdict::Unclear, "{words}");
            assert_eq!(unnamed.notes, ["unclear: the words do not name the item"]);
        }
    }

    #[test]
    fn a_word_said_after_not_that_the_listing_holds_is_a_mismatch() {
        let butter = proposal(
            "NutHouse Peanut Butter",
            "crunchy, 340 g jar",
            "Green Grocer",
            399,
            1,
        );
        assert_eq!(
            verdict("peanut butter, not crunchy", &butter),
            Verdict::Mismatch
        );
        let smooth = proposal(
            "NutHouse Peanut Butter",
            "smooth, 340 g jar",
            "Green Grocer",
            399,
            1,
        );
        assert_eq!(
            verdict("smooth peanut butter, not crunchy", &smooth),
            Verdict::Match
        );
    }

    #[test]
    fn numbers_past_the_integer_range_saturate_instead_of_overflowing() {
        let socks = proposal(
            "Wool Socks",
            "18446744073709551615 pairs",
            "Green Grocer",
            u64::MAX,
            99,
        );
        assert_eq!(
            verdict("a pair of wool socks, under $5", &socks),
            Verdict::Mismatch
        );
    }

    #[test]
    fn a_pair_is_one_pack_of_a_pair() {
        let socks = |variant: &str, quantity| {
            proposal("Wool Socks", variant, "Green Grocer", 899, quantity)
        };
        assert_eq!(
            verdict("a pair of wool socks", &socks("1 pair", 1)),
            Verdict::Match
        );
        assert_eq!(
            verdict("a pair of wool socks", &socks("3 pairs", 1)),
            Verdict::Mismatch
        );
        assert_eq!(
            verdict("two pairs of wool socks", &socks("1 pair", 2)),
            Verdict::Match
        );
        assert_eq!(
            verdict("two pairs of wool socks", &socks("1 pair", 3)),
            Verdict::Mismatch
        );
    }
}
