//! What the words describe, beside what the listing holds: the words that describe the item
//! (not the scene, the packaging or shopping talk), the words said after "not", the listing's
//! words under other everyday names ([`super::thesaurus`]), values that exclude one another
//! (dog / cat, small / large), and a listing whose item is something else built around the
//! words.

use std::collections::HashSet;

use super::ReasonCode;
use super::measures::is_unit;
use super::thesaurus::thesaurus;
use super::words::is_number_word;

/// Said words the listing holds under another name (see [`super::thesaurus`]): a run of up
/// to three said words (no punctuation between) sharing a WordNet synset with a name the
/// listing holds. Such words describe the item ("colouring" for "Colored Pencils"); they name
/// it only when the name ends with the title's head noun, what the item is ("crisps" names
/// "Potato Chips", but not "Chocolate Chip Cookies").
pub(super) struct SynonymsHeld<'a> {
    /// Named by the title's head: these words name the item.
    pub(super) by_title: HashSet<&'a str>,
    /// Held elsewhere in the title or in the variant: these words describe it.
    describing: HashSet<&'a str>,
}

impl<'a> SynonymsHeld<'a> {
    const LONGEST_RUN: usize = 3;

    pub(super) fn find(spoken: &[&'a str], title: &[String], variant: &[String]) -> Self {
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

    pub(super) fn holds(&self, word: &str) -> bool {
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
pub(super) fn described_words<'a>(spoken: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
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
pub(super) fn listing_holds(word: &str, title: &[String], variant: &[String]) -> bool {
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
pub(super) fn same_value_held(word: &str, listing: &[String]) -> bool {
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
pub(super) fn contradictions(spoken: &[&str], listing: &[String]) -> Vec<(ReasonCode, String)> {
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
pub(super) fn different_item(
    spoken: &[&str],
    title: &[String],
    variant: &[String],
) -> Option<String> {
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
pub(super) fn same_word(a: &str, b: &str) -> bool {
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
