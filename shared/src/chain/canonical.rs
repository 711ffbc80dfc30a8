//! Canonical JSON: byte-for-byte what Python prints with
//! `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)`.
//!
//! Written by hand because no crate reproduces Python's exact choices together: keys sorted by
//! code point, every non-ASCII character (and DEL) escaped as lowercase `\uXXXX` with surrogate
//! pairs above U+FFFF, and floats in Python `repr` form (`1e-05`, `1e+16`, `100.0`). A stdlib
//! Python script must be able to re-derive every hash the server writes, so these bytes are the
//! contract; `tests/vectors/canonical.json` pins Rust and Python to the same output.

use serde_json::Value;
use std::fmt::Write as _;

/// Renders `value` as canonical JSON.
///
/// `serde_json::Map` keeps keys in a `BTreeMap`, whose byte-wise order on UTF-8 strings equals
/// Python's code-point order, so objects come out sorted without extra work.
pub fn to_canonical_string(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, number: &serde_json::Number) {
    if let Some(integer) = number.as_i64() {
        let _ = write!(out, "{integer}");
    } else if let Some(integer) = number.as_u64() {
        let _ = write!(out, "{integer}");
    } else if let Some(float) = number.as_f64() {
        write_python_float(out, float);
    }
}

/// Python's `float.__repr__`: the shortest digits that round-trip, in positional notation when
/// the decimal exponent is in `-4 ..= 15`, otherwise scientific with a signed, two-digit minimum
/// exponent. serde_json never yields NaN or infinity, and `allow_nan=False` forbids them anyway.
pub fn write_python_float(out: &mut String, value: f64) {
    if value == 0.0 {
        out.push_str(if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        });
        return;
    }
    // Rust's `{:e}` prints the shortest round-trip digits, e.g. "1.2345e-7" or "-5e20".
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always prints an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` prints an integer exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.push_str(sign);
    // Python's `decpt` is the exponent of the digit string read as 0.DIGITS.
    let decimal_point = exponent + 1;
    if !(-4 < decimal_point && decimal_point <= 16) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        );
    } else if decimal_point <= 0 {
        out.push_str("0.");
        for _ in 0..-decimal_point {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let point = decimal_point as usize;
        if digits.len() <= point {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
}

fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(character),
            _ => {
                let mut units = [0u16; 2];
                for unit in character.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn float(value: f64) -> String {
        let mut out = String::new();
        write_python_float(&mut out, value);
        out
    }

    #[test]
    fn floats_follow_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (123456789.123, "123456789.123"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
        ];
        for (value, expected) in cases {
            assert_eq!(float(value), expected, "repr of {value:?}");
        }
    }

    #[test]
    fn strings_escape_like_ensure_ascii() {
        let value = json!("a\"b\\c\n\t\u{7f}\u{1}é😀");
        assert_eq!(
            to_canonical_string(&value),
            r#""a\"b\\c\n\t\u007f\u0001\u00e9\ud83d\ude00""#
        );
    }

    #[test]
    fn objects_are_sorted_and_compact() {
        let value = json!({"b": [1, 2.5, null], "a": {"z": true, "B": false}, "é": 1});
        assert_eq!(
            to_canonical_string(&value),
            r#"{"a":{"B":false,"z":true},"b":[1,2.5,null],"\u00e9":1}"#
        );
    }
}
