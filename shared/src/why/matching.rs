//! Deterministic question matching: keyword overlap between a question and each record's
//! action and reason. Not a language model; the same question over the same chain always picks
//! the same record, and ties go to the latest.

use std::collections::HashSet;

/// Words that carry no meaning for matching ("why did you …").
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "are", "at", "be", "because", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how",
    "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so", "that",
    "the", "their", "them", "then", "there", "they", "this", "to", "up", "us", "was", "we", "were",
    "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// The normalised keywords of `text`: lowercase alphanumeric words without stopwords, with a
/// plain plural `s` removed so "light" and "lights" meet.
pub fn keywords(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| !STOPWORDS.contains(&word.as_str()))
        .map(|word| {
            if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
                word[..word.len() - 1].to_owned()
            } else {
                word
            }
        })
        .collect()
}

/// Index of the best match among `candidates` (each the text of one record, oldest first):
/// the most shared keywords, the latest on a tie, `None` if nothing is shared.
pub fn best_match<'a>(question: &str, candidates: impl Iterator<Item = &'a str>) -> Option<usize> {
    let wanted = keywords(question);
    let mut best: Option<(usize, usize)> = None;
    for (index, text) in candidates.enumerate() {
        let score = keywords(text).intersection(&wanted).count();
        if score > 0 && best.is_none_or(|(best_score, _)| score >= best_score) {
            best = Some((score, index));
        }
    }
    best.map(|(_, index)| index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_overlap_wins_and_ties_go_to_the_latest() {
        let texts = [
            "dim lights Movie time",
            "lock door Everyone left",
            "dim lights Bedtime",
        ];
        assert_eq!(
            best_match("Why did you lock the door?", texts.into_iter()),
            Some(1)
        );
        assert_eq!(
            best_match("Why are the lights dim?", texts.into_iter()),
            Some(2)
        );
        assert_eq!(best_match("why movie lights", texts.into_iter()), Some(0));
        assert_eq!(best_match("Why is it raining?", texts.into_iter()), None);
    }
}
