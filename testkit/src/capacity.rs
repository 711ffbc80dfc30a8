//! DynamoDB's request units for recorded calls ([`crate::Call`]), by its sizing rules: an
//! item's size is its attribute names and values; reads are billed by 4 KB (a strongly
//! consistent read one unit, an eventually consistent one half; a Query sums its items before
//! rounding up; a batch rounds each key up, a missing one included), writes by 1 KB of the
//! larger of the item before and after, a transaction's twice, and a refused write or
//! cancelled transaction still costs its units.
//!
//! `scripts/cost.py` prices the release Lambda binary's calls by the same rules through a
//! recording proxy; this module serves the Rust tests, which read the calls from the SDK
//! client itself.
use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine;
use serde_json::{Map, Value};

use crate::Call;

/// A call's read and write request units (Hearth's Queries project nothing; one that did would
/// be sized here by its narrowed answer). `stored` is the size in bytes of the item a key
/// (`{"pk": {"S": ..}, "sk": {"S": ..}}`) names, the larger of before and after the call (0
/// when there is none): what a write is billed by when the request does not carry the item.
pub fn request_units(call: &Call, stored: &dyn Fn(&Value) -> u64) -> (f64, f64) {
    let request = &call.request;
    let answer = if call.succeeded {
        call.answer.as_ref()
    } else {
        None
    };
    let consistent = if request["ConsistentRead"] == Value::Bool(true) {
        1.0
    } else {
        0.5
    };
    match call.operation.as_str() {
        "GetItem" => {
            // A projection narrows the answer, not the bill: the whole item is read.
            let size = if request["ProjectionExpression"].is_string() {
                stored(&key_of(request))
            } else {
                answer
                    .and_then(|a| a["Item"].as_object())
                    .map_or(0, item_size)
            };
            (units(size, 4096) * consistent, 0.0)
        }
        "Query" => {
            let size = answer
                .and_then(|a| a["Items"].as_array())
                .map_or(0, |items| {
                    items
                        .iter()
                        .filter_map(Value::as_object)
                        .map(item_size)
                        .sum()
                });
            (units(size, 4096) * consistent, 0.0)
        }
        "BatchGetItem" => {
            let mut read = 0.0;
            for (table, keys) in request["RequestItems"].as_object().into_iter().flatten() {
                let factor = if keys["ConsistentRead"] == Value::Bool(true) {
                    1.0
                } else {
                    0.5
                };
                let found: Vec<&Map<String, Value>> = answer
                    .and_then(|a| a["Responses"][table].as_array())
                    .map(|items| items.iter().filter_map(Value::as_object).collect())
                    .unwrap_or_default();
                let asked = keys["Keys"].as_array().map_or(0, Vec::len);
                read += found
                    .iter()
                    .map(|item| units(item_size(item), 4096) * factor)
                    .sum::<f64>();
                read += asked.saturating_sub(found.len()) as f64 * factor;
            }
            (read, 0.0)
        }
        "PutItem" | "UpdateItem" | "DeleteItem" => {
            let kind = call.operation.trim_end_matches("Item");
            (0.0, units(write_size(kind, request, stored), 1024))
        }
        "TransactWriteItems" => {
            let write = request["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
                .flat_map(|entry| entry.iter())
                .map(|(kind, body)| 2.0 * units(write_size(kind, body, stored), 1024))
                .sum();
            (0.0, write)
        }
        "TransactGetItems" => {
            let items = request["TransactItems"].as_array().map_or(0, Vec::len);
            (2.0 * items as f64, 0.0)
        }
        _ => (0.0, 0.0),
    }
}

/// What one write is billed by: the larger of the item before and after it. A `ConditionCheck`
/// in a transaction is billed as a write of the item it reads.
fn write_size(kind: &str, body: &Value, stored: &dyn Fn(&Value) -> u64) -> u64 {
    let key = key_of(body);
    match (kind, body["Item"].as_object()) {
        ("Put", Some(item)) => item_size(item).max(stored(&key)),
        _ => stored(&key),
    }
}

/// The primary key a write names (Hearth's table: `pk` and `sk`).
pub fn key_of(body: &Value) -> Value {
    let attributes = if body["Item"].is_object() {
        &body["Item"]
    } else {
        &body["Key"]
    };
    let mut key = Map::new();
    for name in ["pk", "sk"] {
        if let Some(value) = attributes.get(name) {
            key.insert(name.to_owned(), value.clone());
        }
    }
    Value::Object(key)
}

/// Units of `size` bytes billed by `per`: at least one.
fn units(size: u64, per: u64) -> f64 {
    size.div_ceil(per).max(1) as f64
}

/// An item's size by DynamoDB's rules, from its wire JSON (`{"name": {"S": "..."}, ...}`).
pub fn item_size(item: &Map<String, Value>) -> u64 {
    item.iter()
        .map(|(name, value)| name.len() as u64 + value_size(value))
        .sum()
}

/// An attribute value's size: strings and binaries their bytes, numbers one byte per two
/// significant digits plus one, maps and lists three bytes plus one per element.
fn value_size(value: &Value) -> u64 {
    let Some((kind, inner)) = value.as_object().and_then(|v| v.iter().next()) else {
        return 0;
    };
    let text = || inner.as_str().unwrap_or_default();
    let each = || inner.as_array().into_iter().flatten();
    match kind.as_str() {
        "S" => text().len() as u64,
        "N" => number_size(text()),
        "B" => binary_size(text()),
        "BOOL" | "NULL" => 1,
        "SS" => each()
            .map(|s| s.as_str().unwrap_or_default().len() as u64)
            .sum(),
        "NS" => each()
            .map(|n| number_size(n.as_str().unwrap_or_default()))
            .sum(),
        "BS" => each()
            .map(|b| binary_size(b.as_str().unwrap_or_default()))
            .sum(),
        "M" => {
            3 + inner
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, v)| name.len() as u64 + value_size(v) + 1)
                .sum::<u64>()
        }
        "L" => 3 + each().map(|v| value_size(v) + 1).sum::<u64>(),
        _ => 0,
    }
}

fn number_size(number: &str) -> u64 {
    let digits: String = number.trim_start_matches('-').replace('.', "");
    let significant = digits.trim_matches('0');
    (significant.len().max(1) as u64).div_ceil(2) + 1
}

fn binary_size(encoded: &str) -> u64 {
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_or(0, |bytes| bytes.len() as u64)
}

/// An item as the SDK returns it, in the wire JSON [`item_size`] reads.
pub fn wire_item(item: &HashMap<String, AttributeValue>) -> Map<String, Value> {
    item.iter()
        .map(|(name, value)| (name.clone(), wire_value(value)))
        .collect()
}

fn wire_value(value: &AttributeValue) -> Value {
    let b64 = |bytes: &[u8]| Value::String(base64::engine::general_purpose::STANDARD.encode(bytes));
    let (kind, inner) = match value {
        AttributeValue::S(s) => ("S", Value::String(s.clone())),
        AttributeValue::N(n) => ("N", Value::String(n.clone())),
        AttributeValue::B(b) => ("B", b64(b.as_ref())),
        AttributeValue::Bool(b) => ("BOOL", Value::Bool(*b)),
        AttributeValue::Null(n) => ("NULL", Value::Bool(*n)),
        AttributeValue::Ss(ss) => ("SS", ss.iter().cloned().map(Value::String).collect()),
        AttributeValue::Ns(ns) => ("NS", ns.iter().cloned().map(Value::String).collect()),
        AttributeValue::Bs(bs) => ("BS", bs.iter().map(|b| b64(b.as_ref())).collect()),
        AttributeValue::M(m) => ("M", Value::Object(wire_item(m))),
        AttributeValue::L(l) => ("L", l.iter().map(wire_value).collect()),
        _ => ("NULL", Value::Bool(true)),
    };
    serde_json::json!({ kind: inner })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(operation: &str, request: Value, answer: Value) -> Call {
        Call {
            operation: operation.into(),
            round: 1,
            request,
            answer: Some(answer),
            succeeded: true,
        }
    }

    #[test]
    fn sizes_follow_dynamodbs_rules() {
        let item = json!({"pk": {"S": "abc"}, "n": {"N": "-12.300"}, "b": {"B": "AAEC"},
            "m": {"M": {"x": {"BOOL": true}}}, "l": {"L": [{"S": "ab"}, {"NULL": true}]}});
        // pk 2+3, n 1+(3 digits: 2+1), b 1+3, m 1+(3+1+1+1), l 1+(3+3+2)
        assert_eq!(item_size(item.as_object().unwrap()), 5 + 4 + 4 + 7 + 9);
    }

    #[test]
    fn reads_round_up_by_4_kb_and_writes_by_1_kb_of_the_larger_item() {
        let big = "x".repeat(5000);
        let get = call(
            "GetItem",
            json!({"ConsistentRead": true}),
            json!({"Item": {"v": {"S": big}}}),
        );
        assert_eq!(request_units(&get, &|_| 0), (2.0, 0.0));
        let projected = call(
            "GetItem",
            json!({"ConsistentRead": true, "ProjectionExpression": "hits",
                "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}}),
            json!({"Item": {"hits": {"N": "1"}}}),
        );
        assert_eq!(
            request_units(&projected, &|_| 5000),
            (2.0, 0.0),
            "a projection is billed for the whole item"
        );
        let missing = call("GetItem", json!({}), json!({}));
        assert_eq!(
            request_units(&missing, &|_| 0),
            (0.5, 0.0),
            "a miss still costs"
        );
        let update = call(
            "UpdateItem",
            json!({"Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}}),
            json!({}),
        );
        assert_eq!(request_units(&update, &|_| 2049), (0.0, 3.0));
        let transaction = call(
            "TransactWriteItems",
            json!({"TransactItems": [
                {"Put": {"Item": {"pk": {"S": "a"}, "sk": {"S": "b"}}}},
                {"Delete": {"Key": {"pk": {"S": "a"}, "sk": {"S": "c"}}}}]}),
            json!({}),
        );
        assert_eq!(
            request_units(&transaction, &|_| 10),
            (0.0, 4.0),
            "twice each"
        );
    }
}
