//! Everyday names for the same thing, from WordNet: the rules judge asks before ordering when
//! a word said is not in the listing, and "crisps" for "Potato Chips" or "torch" for
//! "Flashlight" should not be asked about.
//!
//! The data is a subset of WordNet 3.1 kept in `data/wordnet/` and built into the binary:
//! synsets of things one buys (artifacts, food, substances, plants, and attributes, which hold
//! spellings such as colour/color) with two or more common-noun lemmas, and the words whose
//! every noun sense is a person ("grandad"). `scripts/eval/wordnet_subset.py` writes it from
//! WordNet itself; nothing in it was chosen by looking at evaluation cases. Noun base forms
//! follow WordNet's own morphology rules (Morphy's detachments), so "nappies" finds "nappy".

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

const SYNONYMS: &str = include_str!("../../../../data/wordnet/synonyms.txt");
const PERSONS: &str = include_str!("../../../../data/wordnet/persons.txt");

/// The synsets and person words, parsed once per process.
pub struct Thesaurus {
    synsets: Vec<Vec<&'static str>>,
    by_lemma: HashMap<&'static str, Vec<usize>>,
    persons: HashSet<&'static str>,
}

/// The thesaurus built into the binary.
pub fn thesaurus() -> &'static Thesaurus {
    static THESAURUS: OnceLock<Thesaurus> = OnceLock::new();
    THESAURUS.get_or_init(|| Thesaurus::parse(SYNONYMS, PERSONS))
}

impl Thesaurus {
    /// Reads the two files' lines; `#` lines are their notice.
    fn parse(synonyms: &'static str, persons: &'static str) -> Self {
        let data = |text: &'static str| {
            text.lines()
                .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        };
        let synsets: Vec<Vec<&'static str>> = data(synonyms)
            .map(|line| line.split('|').collect())
            .collect();
        let mut by_lemma: HashMap<&'static str, Vec<usize>> = HashMap::new();
        for (index, lemmas) in synsets.iter().enumerate() {
            for lemma in lemmas {
                by_lemma.entry(lemma).or_default().push(index);
            }
        }
        Self {
            synsets,
            by_lemma,
            persons: data(persons).collect(),
        }
    }

    /// Every lemma that shares a synset with `phrase` (lower-case words; the last may be
    /// plural), other than the phrase itself.
    pub fn synonyms(&self, phrase: &[&str]) -> Vec<&'static str> {
        let Some((last, before)) = phrase.split_last() else {
            return Vec::new();
        };
        let mut found: Vec<&'static str> = Vec::new();
        for base in base_forms(last) {
            let mut words: Vec<&str> = before.to_vec();
            words.push(&base);
            let key = words.join(" ");
            for &synset in self.by_lemma.get(key.as_str()).into_iter().flatten() {
                for &lemma in &self.synsets[synset] {
                    if lemma != key && !found.contains(&lemma) {
                        found.push(lemma);
                    }
                }
            }
        }
        found
    }

    /// Whether every noun sense WordNet knows of `word` (or its base form) is a person.
    pub fn is_person(&self, word: &str) -> bool {
        base_forms(word)
            .iter()
            .any(|base| self.persons.contains(base.as_str()))
    }
}

/// `word` and the singulars WordNet's noun detachment rules give it ("nappies" → "nappy",
/// "boxes" → "box", "women" → "woman").
fn base_forms(word: &str) -> Vec<String> {
    const DETACH: [(&str, &str); 8] = [
        ("ies", "y"),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("s", ""),
    ];
    let mut forms = vec![word.to_owned()];
    for (suffix, ending) in DETACH {
        if let Some(stem) = word.strip_suffix(suffix)
            && !stem.is_empty()
        {
            let base = format!("{stem}{ending}");
            if !forms.contains(&base) {
                forms.push(base);
            }
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everyday_names_share_a_synset_and_plurals_find_it() {
        let words = thesaurus();
        assert!(words.synonyms(&["crisps"]).contains(&"potato chip"));
        assert!(words.synonyms(&["torch"]).contains(&"flashlight"));
        assert!(words.synonyms(&["nappies"]).contains(&"diaper"));
        assert!(words.synonyms(&["colour"]).contains(&"color"));
        assert!(words.synonyms(&["potato", "chips"]).contains(&"crisp"));
        assert!(words.synonyms(&["qwertyuiop"]).is_empty());
    }

    #[test]
    fn people_are_who_an_order_is_for_not_what_it_is() {
        let words = thesaurus();
        assert!(words.is_person("grandad"));
        assert!(words.is_person("grandads"));
        assert!(!words.is_person("batteries"));
        // "baby" has senses that are not people (a baby grand), so it still describes.
        assert!(!words.is_person("baby"));
    }

    #[test]
    fn the_data_carries_its_notice_and_every_line_is_a_synset() {
        for text in [SYNONYMS, PERSONS] {
            assert!(text.starts_with("# Derived from WordNet 3.1 (Princeton University)"));
        }
        let words = thesaurus();
        assert!(words.synsets.len() > 5000);
        assert!(words.synsets.iter().all(|lemmas| {
            lemmas.len() >= 2
                && lemmas
                    .iter()
                    .all(|lemma| !lemma.is_empty() && *lemma == lemma.to_lowercase())
        }));
    }
}
