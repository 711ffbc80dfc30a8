//! Amounts said: a price limit ("under fifteen dollars", "no more than $20"), a quantity, and
//! how many units one pack of a variant holds, so that "a dozen eggs" matches one pack of 12.

use super::measures::{is_designation, is_unit};
use super::words::{number_at, tokenize};

const CEILINGS: &[&[&str]] = &[
    &["no", "more", "than"],
    &["not", "more", "than"],
    &["less", "than"],
    &["at", "most"],
    &["up", "to"],
    &["cheaper", "than"],
    &["nothing", "over"],
    &["nothing", "above"],
    &["not", "over"],
    &["under"],
    &["below"],
    &["max"],
    &["maximum"],
    &["within"],
];
/// Currency after an amount. A limit is compared with the listing's price as said: the
/// listing is in the store's currency, whatever the person calls it ("ten pounds" at a store
/// that prices in dollars is a limit of 10.00).
const CURRENCY: &[&str] = &[
    "dollars", "dollar", "bucks", "usd", "pounds", "pound", "quid", "gbp", "euros", "euro", "eur",
];
const CURRENCY_SIGNS: &[&str] = &["$", "£", "€"];

/// A stated price limit in cents, marking the tokens it used.
pub(super) fn price_ceiling(tokens: &[String], used: &mut [bool]) -> Option<u64> {
    for start in 0..tokens.len() {
        let Some(trigger) = CEILINGS.iter().find(|phrase| {
            phrase
                .iter()
                .enumerate()
                .all(|(offset, word)| tokens.get(start + offset).map(String::as_str) == Some(*word))
        }) else {
            continue;
        };
        let mut at = start + trigger.len();
        let dollar_sign = tokens
            .get(at)
            .is_some_and(|token| CURRENCY_SIGNS.contains(&token.as_str()));
        if dollar_sign {
            at += 1;
        }
        // "under a fiver", "less than a tenner": the amount and its currency in one word.
        let idiom = match (
            tokens.get(at).map(String::as_str),
            tokens.get(at + 1).map(String::as_str),
        ) {
            (Some("a"), Some("fiver")) => Some(500),
            (Some("a"), Some("tenner")) => Some(1000),
            _ => None,
        };
        if let Some(cents) = idiom {
            used[start..at + 2].iter_mut().for_each(|flag| *flag = true);
            return Some(cents);
        }
        let Some((value, span)) = number_at(tokens, at) else {
            continue;
        };
        let after = at + span;
        let currency = tokens
            .get(after)
            .is_some_and(|token| CURRENCY.contains(&token.as_str()));
        if !dollar_sign && !currency {
            continue;
        }
        let end = after + usize::from(currency);
        used[start..end].iter_mut().for_each(|flag| *flag = true);
        return Some((value * 100.0).round() as u64);
    }
    None
}

/// The number of items asked for, if the words state one.
pub(super) fn stated_quantity(tokens: &[String], used: &mut [bool]) -> Option<u64> {
    let mut at = 0;
    while at < tokens.len() {
        if used[at] {
            at += 1;
            continue;
        }
        match number_at(tokens, at) {
            Some((value, span)) if value.fract() == 0.0 && value >= 0.0 => {
                let next = tokens.get(at + span).map(String::as_str);
                let currency = next.is_some_and(|token| CURRENCY.contains(&token));
                let spec = next.is_some_and(is_unit);
                let before = at.checked_sub(1).map(|index| tokens[index].as_str());
                let after_sign = before.is_some_and(|token| CURRENCY_SIGNS.contains(&token));
                let designation = before.is_some_and(is_designation);
                if !(currency || spec || after_sign || designation) {
                    used[at..at + span].iter_mut().for_each(|flag| *flag = true);
                    return Some(value as u64);
                }
                at += span;
            }
            _ => at += 1,
        }
    }
    None
}

/// How many units one of the variant holds: the number before a pack word ("0-6 months, 2
/// pack" holds 2), else its first number that is not a measure ("12 pack", "6 eggs"; "500 g"
/// is one), doubled for pairs ("1 pair" is two gloves, so "a pair of gloves" is one of it).
pub(super) fn units_per_pack(variant: &str) -> u64 {
    const PACK_WORDS: &[&str] = &[
        "pack", "packs", "pk", "count", "ct", "pcs", "pieces", "piece",
    ];
    let tokens = tokenize(variant);
    let number = |index: usize| tokens[index].parse::<u64>().ok();
    let next = |index: usize| tokens.get(index + 1).map(String::as_str).unwrap_or("");
    let count = (0..tokens.len())
        .find(|&index| number(index).is_some() && PACK_WORDS.contains(&next(index)))
        .or_else(|| {
            (0..tokens.len()).find(|&index| number(index).is_some() && !is_unit(next(index)))
        })
        .and_then(number)
        .unwrap_or(1);
    let pairs = tokens.iter().any(|word| word == "pair" || word == "pairs");
    if pairs {
        count.saturating_mul(2)
    } else {
        count
    }
}
