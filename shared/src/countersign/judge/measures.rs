//! Sizes and strengths: a number with a unit ("200 milligram", "2 litre", "20 W") or after a
//! word that makes it a name ("size four", "factor fifty"). Said, such a number describes which
//! variant is wanted, never how many; and when the listing states the same kind of measure
//! with another value, the order is the wrong variant.

use super::words::{number_at, tokenize};

/// A unit as said or written, the kind of measure it is, and its size in that kind's base unit
/// (milligrams, millilitres, millimetres, months; the others are their own base).
const UNITS: &[(&str, &str, f64)] = &[
    ("mcg", "mass", 0.001),
    ("mg", "mass", 1.0),
    ("milligram", "mass", 1.0),
    ("milligrams", "mass", 1.0),
    ("g", "mass", 1_000.0),
    ("gram", "mass", 1_000.0),
    ("grams", "mass", 1_000.0),
    ("kg", "mass", 1_000_000.0),
    ("oz", "mass", 28_349.5),
    ("ounce", "mass", 28_349.5),
    ("ounces", "mass", 28_349.5),
    ("lb", "mass", 453_592.0),
    ("lbs", "mass", 453_592.0),
    ("pound", "mass", 453_592.0),
    ("pounds", "mass", 453_592.0),
    ("ml", "volume", 1.0),
    ("l", "volume", 1_000.0),
    ("litre", "volume", 1_000.0),
    ("litres", "volume", 1_000.0),
    ("liter", "volume", 1_000.0),
    ("liters", "volume", 1_000.0),
    ("mm", "length", 1.0),
    ("cm", "length", 10.0),
    ("inch", "length", 25.4),
    ("inches", "length", 25.4),
    ("w", "power", 1.0),
    ("watt", "power", 1.0),
    ("watts", "power", 1.0),
    ("v", "voltage", 1.0),
    ("volt", "voltage", 1.0),
    ("volts", "voltage", 1.0),
    ("mah", "charge", 1.0),
    ("gb", "storage", 1.0),
    ("tb", "storage", 1_000.0),
    ("percent", "percent", 1.0),
    ("%", "percent", 1.0),
    ("month", "age", 1.0),
    ("months", "age", 1.0),
    ("year", "age", 12.0),
    ("years", "age", 12.0),
];

/// Words before a number that make it a name, not a count, and the kind it names.
const DESIGNATIONS: &[(&str, &str)] = &[
    ("size", "size"),
    ("sizes", "size"),
    ("factor", "spf"),
    ("spf", "spf"),
    ("number", "number"),
    ("no", "number"),
    ("age", "age-group"),
    ("ages", "age-group"),
    ("aged", "age-group"),
    ("stage", "stage"),
    ("level", "level"),
    ("grade", "grade"),
    ("type", "type"),
    ("model", "model"),
    ("tog", "tog"),
];

/// Whether `word` is a unit of measure.
pub fn is_unit(word: &str) -> bool {
    UNITS.iter().any(|(unit, _, _)| *unit == word)
}

/// Whether `word` makes the number after it a name ("size", "factor").
pub fn is_designation(word: &str) -> bool {
    DESIGNATIONS.iter().any(|(name, _)| *name == word)
}

/// One measure: its kind, its value in the kind's base unit, and how it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    kind: &'static str,
    value: f64,
    written: String,
}

impl Measure {
    fn same_as(&self, other: &Measure) -> bool {
        self.kind == other.kind && (self.value - other.value).abs() <= self.value.abs() * 0.02
    }
}

/// The measures in `tokens`, skipping tokens already `used` (a price, a count).
pub fn measures(tokens: &[String], used: &[bool]) -> Vec<Measure> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        if used.get(at).copied().unwrap_or(false) {
            at += 1;
            continue;
        }
        let before = at.checked_sub(1).map(|index| tokens[index].as_str());
        match number_at(tokens, at) {
            Some((value, span)) => {
                let next = tokens.get(at + span).map(String::as_str);
                let unit = next.and_then(|next| UNITS.iter().find(|(unit, _, _)| *unit == next));
                let designation =
                    before.and_then(|before| DESIGNATIONS.iter().find(|(name, _)| *name == before));
                if let Some((unit, kind, scale)) = unit {
                    found.push(Measure {
                        kind,
                        value: value * scale,
                        written: format!("{} {unit}", plain(value)),
                    });
                    at += span + 1;
                    continue;
                }
                if let Some((name, kind)) = designation {
                    found.push(Measure {
                        kind,
                        value,
                        written: format!("{name} {}", plain(value)),
                    });
                }
                at += span;
            }
            None => at += 1,
        }
    }
    found
}

/// "variant: 200 mg was asked for, the listing is 400 mg" for each measure said whose kind the
/// listing (title and variant) states only with other values.
pub fn mismatched(said: &[Measure], listing: &str) -> Vec<String> {
    let tokens = tokenize(listing);
    let offered = measures(&tokens, &[]);
    said.iter()
        .filter_map(|asked| {
            let same_kind: Vec<&Measure> = offered
                .iter()
                .filter(|offer| offer.kind == asked.kind)
                .collect();
            (!same_kind.is_empty() && !same_kind.iter().any(|offer| asked.same_as(offer))).then(
                || {
                    format!(
                        "variant: {} was asked for, the listing is {}",
                        asked.written,
                        same_kind
                            .iter()
                            .map(|offer| offer.written.as_str())
                            .collect::<Vec<_>>()
                            .join(" / ")
                    )
                },
            )
        })
        .collect()
}

fn plain(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(words: &str) -> Vec<Measure> {
        let tokens = tokenize(words);
        measures(&tokens, &vec![false; tokens.len()])
    }

    #[test]
    fn a_measure_said_must_be_the_listings_when_it_states_one() {
        for (words, listing) in [
            (
                "the two hundred milligram ones",
                "Ibuprofen Tablets 400 mg, 24 tablets",
            ),
            ("nappies, size four", "Diapers size 2, 44 count"),
            ("sun cream, factor fifty", "Sun Lotion SPF 30, 200 ml"),
            ("a 2 litre bottle", "Cola 500 ml"),
        ] {
            assert_eq!(mismatched(&said(words), listing).len(), 1, "{words}");
        }
        for (words, listing) in [
            ("the two hundred milligram ones", "Ibuprofen Tablets 200 mg"),
            ("a litre of milk", "Whole Milk 1 litre"),
            ("a 1 litre carton", "Oat Drink 1000 ml carton"),
            ("factor fifty", "Sun Lotion SPF 50"),
            ("a 2 litre carton is fine", "Free Range Eggs 6 eggs"),
            ("six months and up", "Pacifiers 0-6 months, 2 pack"),
        ] {
            assert!(mismatched(&said(words), listing).is_empty(), "{words}");
        }
    }
}
