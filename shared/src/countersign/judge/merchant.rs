//! A merchant named in the words ("from Green Grocer"), and whether the order's merchant is it.

use super::described::same_word;
use super::words::tokenize;

/// Words that end a merchant's name.
const NAME_ENDS: &[&str] = &[
    ".", ",", "please", "for", "under", "and", "with", "today", "tonight", "now", "to",
];

/// The merchant named after "from" or "at", when the name is capitalised as a name is.
pub(super) fn named_merchant(said: &str, tokens: &[String], used: &mut [bool]) -> Option<String> {
    let capitalised: Vec<&str> = said
        .split_whitespace()
        .zip(said.split_whitespace().skip(1))
        .filter(|(before, _)| matches!(before.to_lowercase().as_str(), "from" | "at"))
        .map(|(_, name)| name)
        .filter(|name| name.starts_with(|c: char| c.is_uppercase()))
        .collect();
    let first = capitalised.first()?;
    let first = tokenize(first).into_iter().next()?;
    let start = tokens.iter().enumerate().position(|(index, token)| {
        *token == first && index > 0 && matches!(tokens[index - 1].as_str(), "from" | "at")
    })?;
    let end = (start..tokens.len())
        .find(|index| NAME_ENDS.contains(&tokens[*index].as_str()))
        .unwrap_or(tokens.len())
        .min(start + 4);
    used[start - 1..end]
        .iter_mut()
        .for_each(|flag| *flag = true);
    Some(tokens[start..end].join(" "))
}

pub(super) fn merchant_matches(named: &str, merchant: &str) -> bool {
    let merchant = tokenize(merchant);
    named
        .split(' ')
        .filter(|word| word.len() >= 3)
        .any(|word| merchant.iter().any(|part| same_word(word, part)))
}
