//! Checks of a request body's JSON text that a typed parse cannot make, run before rmcp sees
//! it: how deep it nests, and whether a tool's arguments hold an integer that no 64-bit
//! number can carry (serde_json would silently read it as the nearest float, and the tool
//! would store a number other than the one sent).

use serde_json::value::RawValue;

/// The deepest a request body may nest objects and arrays, the body itself counting as one.
/// Below serde_json's own recursion limit (128), so a deeper body gets this clear refusal
/// instead of a parse failure that reads as "not JSON-RPC".
pub const MAX_NESTING_DEPTH: usize = 64;

/// How deep `json` nests objects and arrays, counted over its text (strings skipped, escapes
/// honoured). The text need not be valid JSON; the parse that follows says if it is not.
pub fn nesting_depth(json: &[u8]) -> usize {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Where in `arguments` (a tool call's arguments as sent) the first integer beyond 64 bits
/// is, as a path such as `inputs.list[1]`; `None` when every integer fits `i64` or `u64`.
/// Numbers written with a fraction or an exponent are floats by their own spelling and pass.
pub fn oversized_integer(arguments: &RawValue) -> Option<String> {
    find_oversized(arguments, &mut String::new())
}

fn find_oversized(value: &RawValue, path: &mut String) -> Option<String> {
    let text = value.get().trim_start();
    match text.as_bytes().first() {
        Some(b'{') => {
            // Sorted by key, so the answer does not depend on the order fields were sent in.
            let fields: std::collections::BTreeMap<String, &RawValue> =
                serde_json::from_str(text).ok()?;
            for (key, field) in fields {
                let mark = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
                if let Some(found) = find_oversized(field, path) {
                    return Some(found);
                }
                path.truncate(mark);
            }
            None
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
            for (index, item) in items.into_iter().enumerate() {
                let mark = path.len();
                path.push_str(&format!("[{index}]"));
                if let Some(found) = find_oversized(item, path) {
                    return Some(found);
                }
                path.truncate(mark);
            }
            None
        }
        Some(b'-' | b'0'..=b'9') => {
            let number = text.trim_end();
            let integer = !number.contains(['.', 'e', 'E']);
            let fits = number.parse::<i64>().is_ok() || number.parse::<u64>().is_ok();
            (integer && !fits).then(|| path.clone())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn depth_counts_objects_and_arrays_but_not_brackets_in_strings() {
        assert_eq!(nesting_depth(b"1"), 0);
        assert_eq!(nesting_depth(br#"{"a": [1, {"b": []}]}"#), 4);
        assert_eq!(nesting_depth(br#"{"a": "[[[[{\"]]]"}"#), 1);
        assert_eq!(nesting_depth(br#"[{}, {}, [[]]]"#), 3);
    }

    #[test]
    fn integers_are_checked_at_both_ends_of_64_bits() {
        for fits in [
            r#"{"n": 18446744073709551615}"#,
            r#"{"n": -9223372036854775808}"#,
            r#"{"n": 1e400, "m": 0.5, "s": "18446744073709551616"}"#,
        ] {
            assert_eq!(oversized_integer(&raw(fits)), None, "{fits}");
        }
        assert_eq!(
            oversized_integer(&raw(r#"{"n": 18446744073709551616}"#)).as_deref(),
            Some("n")
        );
        assert_eq!(
            oversized_integer(&raw(r#"{"a": {"b": [0, -9223372036854775809]}}"#)).as_deref(),
            Some("a.b[1]")
        );
    }
}
