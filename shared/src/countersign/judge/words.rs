//! The words as the rules read them: lower-case tokens, and numbers said in words or digits
//! ("a couple", "half a dozen", "twenty five").

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
pub(super) fn is_number_word(word: &str) -> bool {
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
