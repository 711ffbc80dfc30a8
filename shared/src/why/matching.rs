//! Deterministic question matching: keyword overlap between a question and each record's
//! action and reason. Not a language model; the same question over the same chain always picks
//! the same record, and ties go to the latest.

use std::borrow::Cow;

/// Words that carry no meaning for matching ("why did you …"). A `match` compiles to a
/// length switch and short compares, far cheaper per word than searching a list.
fn is_stopword(word: &str) -> bool {
    matches!(
        word,
        "a" | "about"
            | "all"
            | "an"
            | "and"
            | "are"
            | "at"
            | "be"
            | "because"
            | "been"
            | "but"
            | "by"
            | "can"
            | "could"
            | "did"
            | "do"
            | "does"
            | "for"
            | "from"
            | "had"
            | "has"
            | "have"
            | "he"
            | "her"
            | "his"
            | "how"
            | "i"
            | "if"
            | "in"
            | "is"
            | "it"
            | "its"
            | "me"
            | "my"
            | "of"
            | "on"
            | "or"
            | "our"
            | "she"
            | "so"
            | "that"
            | "the"
            | "their"
            | "them"
            | "then"
            | "there"
            | "they"
            | "this"
            | "to"
            | "up"
            | "us"
            | "was"
            | "we"
            | "were"
            | "what"
            | "when"
            | "where"
            | "which"
            | "who"
            | "why"
            | "will"
            | "with"
            | "would"
            | "you"
            | "your"
    )
}

/// The normalised keywords of `text`, sorted and without repeats: lowercase alphanumeric
/// words without stopwords, with a plain plural `s` removed so "light" and "lights" meet.
pub fn keywords(text: &str) -> Vec<String> {
    let mut keywords: Vec<String> = words(text).map(Cow::into_owned).collect();
    keywords.sort_unstable();
    keywords.dedup();
    keywords
}

/// The normalised words of `text`, borrowed where no lowercasing was needed.
fn words(text: &str) -> impl Iterator<Item = Cow<'_, str>> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| {
            if word.chars().any(char::is_uppercase) {
                Cow::Owned(word.to_lowercase())
            } else {
                Cow::Borrowed(word)
            }
        })
        .filter(|word| !is_stopword(word))
        .map(|word| {
            let plural = word.len() > 3 && word.ends_with('s') && !word.ends_with("ss");
            match word {
                Cow::Borrowed(word) if plural => Cow::Borrowed(&word[..word.len() - 1]),
                Cow::Owned(mut word) if plural => {
                    word.pop();
                    Cow::Owned(word)
                }
                word => word,
            }
        })
}

/// How many distinct keywords of `wanted` (sorted) occur in the given texts. `hits` is scratch
/// space of `wanted.len()` flags, reused across records.
fn overlap(wanted: &[String], texts: &[&str], hits: &mut [bool]) -> usize {
    hits.fill(false);
    let mut count = 0;
    for word in texts.iter().flat_map(|text| words(text)) {
        if let Ok(index) = wanted.binary_search_by(|keyword| keyword.as_str().cmp(&word))
            && !hits[index]
        {
            hits[index] = true;
            count += 1;
        }
    }
    count
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
    let mut hits = vec![false; wanted.len()];
    let mut best: Option<(usize, usize)> = None;
    for (index, texts) in candidates.enumerate() {
        let score = overlap(&wanted, texts, &mut hits);
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
        assert_eq!(best("MOVIE"), Some(0), "case does not matter");
    }

    #[test]
    fn stopwords_are_dropped() {
        assert!(is_stopword("why") && is_stopword("the") && !is_stopword("lights"));
        assert!(keywords("why did you do that").is_empty());
    }

    #[test]
    fn keywords_are_normalised() {
        assert_eq!(
            keywords("Why did you DIM the Lights, lights?"),
            ["dim", "light"]
        );
        assert_eq!(keywords("Glass bus"), ["bus", "glass"]);
    }
}
