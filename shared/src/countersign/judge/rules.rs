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

use std::collections::HashSet;

use async_trait::async_trait;

use super::listing_text::addresses_the_assistant;
use super::measures::{self, is_designation, is_unit};
use super::thesaurus::thesaurus;
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

/// Said words the listing holds under another name (see [`super::thesaurus`]): a run of up
/// to three said words (no punctuation between) sharing a WordNet synset with a name the
/// listing holds. Such words describe the item ("colouring" for "Colored Pencils"); they name
/// it only when the name ends with the title's head noun, what the item is ("crisps" names
/// "Potato Chips", but not "Chocolate Chip Cookies").
struct SynonymsHeld<'a> {
    /// Named by the title's head: these words name the item.
    by_title: HashSet<&'a str>,
    /// Held elsewhere in the title or in the variant: these words describe it.
    describing: HashSet<&'a str>,
}

impl<'a> SynonymsHeld<'a> {
    const LONGEST_RUN: usize = 3;

    fn find(spoken: &[&'a str], title: &[String], variant: &[String]) -> Self {
        let mut held = Self {
            by_title: HashSet::new(),
            describing: HashSet::new(),
        };
        let head = head_noun(title);
        for start in 0..spoken.len() {
            for length in 1..=Self::LONGEST_RUN.min(spoken.len() - start) {
                let run = &spoken[start..start + length];
                if run
                    .iter()
                    .any(|word| !word.chars().any(char::is_alphabetic))
                {
                    break;
                }
                for name in thesaurus().synonyms(run) {
                    let words: Vec<&str> = name.split(' ').collect();
                    let in_title = words.iter().all(|word| listing_holds(word, title, &[]));
                    let names_it = in_title
                        && head.is_some_and(|head| {
                            words.last().is_some_and(|last| same_word(last, head))
                        });
                    let in_listing = words.iter().all(|word| listing_holds(word, title, variant));
                    if names_it {
                        held.by_title.extend(run.iter().copied());
                    }
                    if in_listing {
                        held.describing.extend(run.iter().copied());
                    }
                }
            }
        }
        held
    }

    fn holds(&self, word: &str) -> bool {
        self.by_title.contains(word) || self.describing.contains(word)
    }
}

/// The title's head noun, what the item is: its last alphabetic word of three or more letters
/// ("PowerCell AA Alkaline Batteries" → "batteries").
fn head_noun(title: &[String]) -> Option<&str> {
    title
        .iter()
        .rev()
        .find(|word| word.len() >= 3 && word.chars().all(|c| c.is_alphabetic()))
        .map(String::as_str)
}

/// Words that only set the scene: a purpose clause starts with "for" and one of these.
const PURPOSE_STARTS: &[&str] = &["the", "my", "our", "your", "his", "her", "their", "a", "an"];

/// Containers and packaging: how a product comes, rarely what it is, and a listing often
/// leaves them out ("a bottle of shampoo" for "Shampoo, 400 ml").
const PACKAGING: &[&str] = &[
    "box", "boxes", "bag", "bags", "bottle", "bottles", "jar", "jars", "tin", "tins", "can",
    "cans", "pack", "packs", "packet", "packets", "carton", "cartons", "tub", "tubs", "tube",
    "tubes", "pouch", "pouches", "sachet", "sachets", "case", "cases", "crate", "crates", "bunch",
    "bunches", "loaf", "loaves", "piece", "pieces", "lot", "lots", "couple", "pair", "pairs",
    "dozen", "half", "refill", "refills", "size", "kind", "sort", "type", "one", "ones", "brand",
];

/// Shopping talk that describes nothing about the product, spelled as `tokenize` leaves it
/// ("let's" loses its "'s").
const TALK: &[&str] = &[
    "grab",
    "chuck",
    "pop",
    "pick",
    "up",
    "fetch",
    "bring",
    "buy",
    "order",
    "get",
    "add",
    "need",
    "needs",
    "want",
    "wants",
    "reorder",
    "purchase",
    "restock",
    "stock",
    "put",
    "please",
    "thanks",
    "thank",
    "could",
    "would",
    "can",
    "will",
    "should",
    "you",
    "we",
    "us",
    "our",
    "my",
    "me",
    "i",
    "it",
    "its",
    "them",
    "they",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "low",
    "out",
    "running",
    "run",
    "ran",
    "left",
    "on",
    "of",
    "in",
    "at",
    "to",
    "from",
    "with",
    "the",
    "a",
    "an",
    "some",
    "any",
    "more",
    "another",
    "just",
    "also",
    "too",
    "again",
    "same",
    "usual",
    "new",
    "fresh",
    "shopping",
    "list",
    "basket",
    "cart",
    "trolley",
    "ok",
    "okay",
    "today",
    "tomorrow",
    "tonight",
    "now",
    "soon",
    "is",
    "are",
    "be",
    "been",
    "was",
    "got",
    "have",
    "has",
    "had",
    "do",
    "does",
    "did",
    "like",
    "love",
    "and",
    "or",
    "but",
    "so",
    "if",
    "as",
    "all",
    "much",
    "many",
    "few",
    "little",
    "lot",
    "bit",
    "quick",
    "quickly",
    "i'd",
    "i'm",
    "i'll",
    "we'd",
    "we're",
    "we'll",
    "we've",
    "you're",
    "yes",
    "yeah",
    "hey",
    "hi",
    "alexa",
    "go",
    "ahead",
    "make",
    "sure",
    "think",
    "maybe",
    "one",
    "ones",
    "for",
    "about",
    "around",
    "only",
    "else",
    "something",
    "stuff",
    "thing",
    "things",
    "whatever",
    "anything",
    "what",
    "which",
    "nice",
    "good",
    "great",
    "favourite",
    "favorite",
    "normal",
    "regular-sized",
    "fine",
    "right",
    "proper",
    "decent",
    "cheap",
    "cheapest",
    "best",
    "let",
];

/// The words that describe what is wanted, and the words said after "not" or "no" (which
/// describe what is not). Scene-setting purpose clauses ("for the washing up"), numbers,
/// packaging and shopping talk are left out.
fn described_words<'a>(spoken: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut described = Vec::new();
    let mut negated = Vec::new();
    let mut in_purpose = false;
    let mut after_not = false;
    for (index, word) in spoken.iter().copied().enumerate() {
        if matches!(word, "." | "," | ";" | "and" | "but" | "or") {
            in_purpose = false;
            after_not = false;
            continue;
        }
        if word == "for"
            && spoken
                .get(index + 1)
                .is_some_and(|next| PURPOSE_STARTS.contains(next))
        {
            in_purpose = true;
            continue;
        }
        if matches!(word, "not" | "no" | "without" | "non") {
            after_not = true;
            continue;
        }
        let plain = word.len() >= 2
            && word.parse::<f64>().is_err()
            && word.chars().all(|c| c.is_alphabetic() || c == '-')
            && !is_number_word(word);
        if in_purpose
            || !plain
            || TALK.contains(&word)
            || PACKAGING.contains(&word)
            || is_unit(word)
            || says_who(spoken, index)
        {
            continue;
        }
        if after_not {
            negated.push(word);
        } else {
            described.push(word);
        }
    }
    (described, negated)
}

/// Whether `spoken[index]` says who an order is for rather than what it is: a word whose every
/// noun sense is a person, standing as the subject of shopping talk or alone ("grandad wants
/// a bag of rocket", "…, for grandad"). Before a noun it describes ("vegan mayo").
fn says_who(spoken: &[&str], index: usize) -> bool {
    let next = spoken.get(index + 1).copied();
    thesaurus().is_person(spoken[index])
        && next.is_none_or(|next| TALK.contains(&next) || !next.chars().any(char::is_alphanumeric))
}

/// Whether the title or the variant holds `word`: the same word, or two adjacent words
/// written as one ("cornflakes" / "Corn Flakes").
fn listing_holds(word: &str, title: &[String], variant: &[String]) -> bool {
    [title, variant].into_iter().any(|part| {
        part.iter().any(|token| same_word(word, token))
            // Only exactly: "aaa" is no prefix match for "aa" + "alkaline".
            || part
                .windows(2)
                .any(|pair| stem(word) == stem(&format!("{}{}", pair[0], pair[1])))
            || part.iter().any(|token| {
                token.contains('-') && token.split('-').any(|piece| same_word(word, piece))
            })
    })
}

/// Lower-case tokens; "double A" becomes "aa", possessives lose their "'s", and `$` and
/// sentence punctuation stand alone.
pub(super) fn tokenize(text: &str) -> Vec<String> {
    let spaced: String = text
        .to_lowercase()
        .chars()
        .map(|c| match c {
            '$' | '£' | '€' => format!(" {c} "),
            ',' | ';' | ':' | '!' | '?' | '(' | ')' | '"' | '/' => format!(" {c} "),
            _ => c.to_string(),
        })
        .collect();
    let mut tokens: Vec<String> = Vec::new();
    for raw in spaced.split_whitespace() {
        let mut token = raw.trim_end_matches('.').to_owned();
        if token.is_empty() {
            token = ".".into();
        }
        let token = token
            .strip_suffix("'s")
            .or_else(|| token.strip_suffix('\''))
            .unwrap_or(&token)
            .to_owned();
        match (tokens.last().map(String::as_str), token.as_str()) {
            (Some("double"), "a") => *tokens.last_mut().unwrap() = "aa".into(),
            (Some("triple"), "a") => *tokens.last_mut().unwrap() = "aaa".into(),
            _ => tokens.push(token),
        }
    }
    tokens
}

const UNITS: [(&str, u64); 21] = [
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("zero", 0),
    ("nought", 0),
];
const TENS: [(&str, u64); 8] = [
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
];

/// A word that spells a number or part of one ("four", "twenty", "hundred").
fn is_number_word(word: &str) -> bool {
    UNITS.iter().chain(&TENS).any(|(name, _)| *name == word) || word == "hundred"
}

/// A number starting at `at`: digits, number words ("twenty five", "a hundred"), "a dozen",
/// "half a dozen", "a couple", "a pair". Returns the value and the tokens it spans.
pub(super) fn number_at(tokens: &[String], at: usize) -> Option<(f64, usize)> {
    let word = |offset: usize| tokens.get(at + offset).map(String::as_str);
    if let Some(value) = word(0).and_then(|token| token.parse::<f64>().ok()) {
        return Some((value, 1));
    }
    match (word(0), word(1), word(2)) {
        (Some("half"), Some("a"), Some("dozen")) => return Some((6.0, 3)),
        (Some("a"), Some("dozen"), _) => return Some((12.0, 2)),
        (Some("dozen"), _, _) => return Some((12.0, 1)),
        (Some("a"), Some("couple" | "pair"), _) => return Some((2.0, 2)),
        (Some("couple" | "pair"), _, _) => return Some((2.0, 1)),
        (Some("a"), Some("hundred"), _) => return Some((100.0, 2)),
        _ => {}
    }
    let lookup = |table: &[(&str, u64)], token: Option<&str>| {
        table
            .iter()
            .find(|(name, _)| Some(*name) == token)
            .map(|(_, value)| *value)
    };
    if let Some(tens) = lookup(&TENS, word(0)) {
        return Some(
            match lookup(&UNITS, word(1)).filter(|unit| (1..10).contains(unit)) {
                Some(unit) => ((tens + unit) as f64, 2),
                None => (tens as f64, 1),
            },
        );
    }
    let unit = lookup(&UNITS, word(0))?;
    // "two hundred", "two hundred and fifty", "three hundred twenty".
    if word(1) == Some("hundred") && (1..10).contains(&unit) {
        let mut span = 2;
        if word(span) == Some("and") {
            span += 1;
        }
        return Some(match number_at(tokens, at + span) {
            Some((rest, more))
                if rest < 100.0 && rest.fract() == 0.0 && word(span) != Some("a") =>
            {
                ((unit * 100) as f64 + rest, span + more)
            }
            _ => ((unit * 100) as f64, 2),
        });
    }
    Some((unit as f64, 1))
}

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
fn price_ceiling(tokens: &[String], used: &mut [bool]) -> Option<u64> {
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
fn stated_quantity(tokens: &[String], used: &mut [bool]) -> Option<u64> {
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
fn units_per_pack(variant: &str) -> u64 {
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

/// Words that end a merchant's name.
const NAME_ENDS: &[&str] = &[
    ".", ",", "please", "for", "under", "and", "with", "today", "tonight", "now", "to",
];

/// The merchant named after "from" or "at", when the name is capitalised as a name is.
fn named_merchant(said: &str, tokens: &[String], used: &mut [bool]) -> Option<String> {
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

fn merchant_matches(named: &str, merchant: &str) -> bool {
    let merchant = tokenize(merchant);
    named
        .split(' ')
        .filter(|word| word.len() >= 3)
        .any(|word| merchant.iter().any(|part| same_word(word, part)))
}

/// Attribute values that exclude one another, each with its spellings; the first spelling
/// names the value. The last field says which kind of mismatch a contradiction is.
const EXCLUSIVE: &[(ReasonCode, &[&[&str]])] = &[
    (
        ReasonCode::Item,
        &[&["dog", "puppy", "dogs"], &["cat", "kitten", "cats"]],
    ),
    (
        ReasonCode::Variant,
        &[
            &["small", "little"],
            &["medium"],
            &["large", "big"],
            &["xl", "extra-large"],
            &["mini"],
            &["jumbo"],
        ],
    ),
    (
        ReasonCode::Variant,
        &[&["sparkling", "carbonated", "fizzy"], &["still", "flat"]],
    ),
    (
        ReasonCode::Variant,
        &[&["decaf", "decaffeinated"], &["regular", "caffeinated"]],
    ),
    (
        ReasonCode::Variant,
        &[
            &["unscented", "fragrance-free"],
            &["lavender"],
            &["lemon"],
            &["citrus"],
            &["floral"],
            &["fresh"],
            &["pine"],
            &["ocean"],
        ],
    ),
    (
        ReasonCode::Variant,
        &[
            &["strawberry"],
            &["bubblegum"],
            &["mint", "spearmint", "peppermint"],
            &["vanilla"],
            &["chocolate"],
            &["cherry"],
            &["grape"],
            &["banana"],
            &["orange"],
        ],
    ),
    (
        ReasonCode::Variant,
        &[
            &["black"],
            &["white"],
            &["colour", "color", "tricolor", "tri-color"],
            &["red"],
            &["blue"],
            &["pink"],
            &["grey", "gray"],
            &["clear"],
        ],
    ),
];

/// Whether `word` spells an attribute value the listing names in another spelling ("big" for
/// "large", "fizzy" for "sparkling").
fn same_value_held(word: &str, listing: &[String]) -> bool {
    EXCLUSIVE.iter().any(|(_, values)| {
        values.iter().any(|spellings| {
            spellings.contains(&word)
                && listing
                    .iter()
                    .any(|token| spellings.contains(&token.as_str()))
        })
    })
}

/// A value the words name that the listing contradicts with another value of the same kind.
fn contradictions(spoken: &[&str], listing: &[String]) -> Vec<(ReasonCode, String)> {
    let mut found = Vec::new();
    for (kind, values) in EXCLUSIVE {
        let named = |tokens: &mut dyn Iterator<Item = &str>| -> Vec<&'static str> {
            let tokens: Vec<&str> = tokens.collect();
            values
                .iter()
                .filter(|spellings| spellings.iter().any(|spelling| tokens.contains(spelling)))
                .map(|spellings| spellings[0])
                .collect()
        };
        let asked = named(&mut spoken.iter().copied());
        let offered = named(&mut listing.iter().map(String::as_str));
        if !asked.is_empty()
            && !offered.is_empty()
            && !asked.iter().any(|value| offered.contains(value))
        {
            found.push((
                *kind,
                format!(
                    "{}: {} was asked for, the listing is {}",
                    kind.as_str(),
                    asked.join(" / "),
                    offered.join(" / ")
                ),
            ));
        }
    }
    found
}

/// When every described word is in the title (or, like a colour, in the variant) but the
/// title's head noun was never said, the listing is a different item built around the words
/// ("shower curtain rings", "yoga mat bag").
fn different_item(spoken: &[&str], title: &[String], variant: &[String]) -> Option<String> {
    let described: Vec<&str> = spoken
        .iter()
        .copied()
        .filter(|word| !TALK.contains(word) && word.parse::<f64>().is_err() && word.len() >= 2)
        // A word only the variant holds (a colour, a size) describes the variant, not the item.
        .filter(|word| {
            title.iter().any(|part| same_word(word, part))
                || !variant.iter().any(|part| same_word(word, part))
        })
        .collect();
    let head = head_noun(title)?;
    let all_in_title = !described.is_empty()
        && described
            .iter()
            .all(|word| title.iter().any(|part| same_word(word, part)));
    let head_said = described.iter().any(|word| same_word(word, head));
    (all_in_title && !head_said)
        .then(|| format!("item: the listing is {head}, which was not asked for"))
}

/// The same word up to a plural ending, or one a prefix of the other ("ink" / "inkjet").
fn same_word(a: &str, b: &str) -> bool {
    let (a, b) = (stem(a), stem(b));
    a == b || (a.len() >= 3 && b.starts_with(a)) || (b.len() >= 3 && a.starts_with(b))
}

/// A word without its plural ending.
fn stem(word: &str) -> &str {
    word.strip_suffix("es")
        .filter(|stem| stem.len() >= 3 && !stem.ends_with('s'))
        .or_else(|| word.strip_suffix('s').filter(|stem| stem.len() >= 3))
        .unwrap_or(word)
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
