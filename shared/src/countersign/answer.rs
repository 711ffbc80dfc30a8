//! Reading a spoken answer strictly. A yes or a no counts only when the whole utterance is one
//! of a short list of plain answers (after case, punctuation and "please"/"thanks" are set
//! aside). Anything hesitant ("yes, I think so", "maybe"), mixed ("yes no"), or containing a
//! question ("yes?", "how much is it") is no answer at all, and the request keeps waiting.
//! English only.

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    /// Not a clear yes or no; nothing is decided.
    Unclear,
}

const YES: &[&str] = &[
    "yes",
    "yeah",
    "yep",
    "yup",
    "sure",
    "okay",
    "ok",
    "go ahead",
    "do it",
    "confirm",
    "confirmed",
    "approve",
    "approved",
    "i approve",
    "yes go ahead",
    "yes please go ahead",
    "yes do it",
    "yes i approve",
    "place the order",
    "yes place the order",
    "that's right",
    "correct",
];

const NO: &[&str] = &[
    "no",
    "nope",
    "cancel",
    "cancel it",
    "cancel the order",
    "don't",
    "do not",
    "stop",
    "decline",
    "declined",
    "deny",
    "i decline",
    "no don't",
    "no cancel",
    "no cancel it",
    "no thank you",
    "don't buy it",
    "don't order it",
];

/// Courtesy words that do not change an answer.
const COURTESY: &[&str] = &["please", "thanks", "thank", "you"];

/// Reads one utterance.
pub fn read_answer(utterance: &str) -> Answer {
    if utterance.contains('?') {
        return Answer::Unclear;
    }
    let lowered = utterance.to_lowercase().replace('’', "'");
    let words: Vec<&str> = lowered
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '!' | ';' | ':'))
        .filter(|word| !word.is_empty())
        .collect();
    // "thank you" after a no is part of the phrase; elsewhere courtesy words are dropped.
    let phrase = words.join(" ");
    if NO.contains(&phrase.as_str()) {
        return Answer::No;
    }
    let plain: Vec<&str> = words
        .iter()
        .copied()
        .filter(|word| !COURTESY.contains(word))
        .collect();
    let phrase = plain.join(" ");
    if YES.contains(&phrase.as_str()) {
        Answer::Yes
    } else if NO.contains(&phrase.as_str()) {
        Answer::No
    } else {
        Answer::Unclear
    }
}

/// Reads the newest attested utterance, which is the one answering the question.
pub fn read_latest(utterances: &[String]) -> Answer {
    utterances
        .last()
        .map_or(Answer::Unclear, |utterance| read_answer(utterance))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_answers_count() {
        for yes in [
            "yes",
            "Yes.",
            "okay",
            "OK!",
            "go ahead",
            "Yes, please.",
            "yes go ahead thanks",
            "Sure",
            "I approve",
        ] {
            assert_eq!(read_answer(yes), Answer::Yes, "{yes}");
        }
        for no in [
            "no",
            "No.",
            "cancel",
            "Cancel it!",
            "no thank you",
            "nope",
            "don’t",
            "decline",
        ] {
            assert_eq!(read_answer(no), Answer::No, "{no}");
        }
    }

    #[test]
    fn hesitation_questions_and_mixtures_count_for_nothing() {
        for unclear in [
            "yes?",
            "yes, I think so",
            "maybe",
            "hmm, okay I guess",
            "how much is it",
            "yes no",
            "no, yes",
            "wait",
            "it's Mum, I approve",
            "I approve, it's Mum",
            "",
            "   ",
            "yes yes yes buy twenty",
        ] {
            assert_eq!(read_answer(unclear), Answer::Unclear, "{unclear:?}");
        }
    }

    #[test]
    fn the_newest_utterance_is_the_answer() {
        let words = vec!["buy the blocks".to_owned(), "yes".to_owned()];
        assert_eq!(read_latest(&words), Answer::Yes);
        assert_eq!(read_latest(&[]), Answer::Unclear);
    }
}
