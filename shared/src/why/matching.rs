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
    words(text).collect()
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| !STOPWORDS.contains(&word.as_str()))
        .map(|mut word| {
            if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
                word.pop();
            }
            word
        })
}

/// How many distinct keywords of `wanted` occur in the given texts.
fn overlap(wanted: &HashSet<String>, texts: &[&str]) -> usize {
    let mut seen: Vec<&String> = Vec::new();
    for word in texts.iter().flat_map(|text| words(text)) {
        if let Some(keyword) = wanted.get(&word)
            && !seen.contains(&keyword)
        {
            seen.push(keyword);
        }
    }
    seen.len()
}

/// Index of the best match among `candidates` (the texts of each record, oldest first): the
/// most shared keywords, the latest on a tie, `None` if nothing is shared.
pub fn best_match<'a, 'b>(
    question: &str,
    candidates: impl Iterator<Item = &'a [&'b str]>,
) -> Option<usize>
where
    'b: 'a,
{
    let wanted = keywords(question);
    let mut best: Option<(usize, usize)> = None;
    for (index, texts) in candidates.enumerate() {
        let score = overlap(&wanted, texts);
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
        let texts: [&[&str]; 3] = [
            &["dim lights", "Movie time"],
            &["lock door", "Everyone left"],
            &["dim lights", "Bedtime"],
        ];
        let best = |question: &str| best_match(question, texts.into_iter());
        assert_eq!(best("Why did you lock the door?"), Some(1));
        assert_eq!(best("Why are the lights dim?"), Some(2));
        assert_eq!(best("why movie lights"), Some(0));
        assert_eq!(best("Why is it raining?"), None);
        assert_eq!(best("lights lights lights"), Some(2), "a word counts once");
    }
}
