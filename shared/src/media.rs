//! Request bodies and media types: what the endpoints check about what they are sent, and
//! the clients about what they receive.

use axum::body::{Body, Bytes};
use http::{HeaderMap, header};

/// The body, unless its declared `Content-Length` or its actual length exceeds `max` bytes
/// (a declared excess is refused before anything is read).
pub async fn read_body(headers: &HeaderMap, body: Body, max: usize) -> Option<Bytes> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if declared.is_some_and(|length| length > max) {
        return None;
    }
    axum::body::to_bytes(body, max).await.ok()
}

/// Whether `Accept` lets the answer be `application/json`: no header at all, `*/*`,
/// `application/*` or `application/json`, each unless its weight is zero (RFC 9110 §12.5.1).
/// Several headers count as one list.
pub fn accepts_json(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    values
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| {
            let mut parts = range.split(';');
            let essence = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|parameter| {
                parameter.split_once('=').is_some_and(|(name, weight)| {
                    name.trim().eq_ignore_ascii_case("q")
                        && weight.trim().parse::<f32>().is_ok_and(|q| q == 0.0)
                })
            });
            !refused
                && ["*/*", "application/*", "application/json"]
                    .iter()
                    .any(|json| essence.eq_ignore_ascii_case(json))
        })
}

/// Whether `Content-Type` names `essence` (`type/subtype`, any case), parameters aside.
pub fn has_media_type(headers: &HeaderMap, essence: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .eq_ignore_ascii_case(essence)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> bool {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::ACCEPT, value.parse().unwrap());
        }
        accepts_json(&headers)
    }

    #[test]
    fn json_is_acceptable_unless_the_client_rules_it_out() {
        assert!(accept(&[]));
        assert!(accept(&["*/*"]));
        assert!(accept(&["application/json"]));
        assert!(accept(&["Application/JSON; charset=utf-8"]));
        assert!(accept(&["application/*;q=0.5"]));
        assert!(accept(&["application/json, text/event-stream"]));
        assert!(accept(&["text/html", "application/json"]));
        assert!(!accept(&["text/event-stream"]));
        assert!(!accept(&["text/html, image/*"]));
        assert!(!accept(&["application/json;q=0", "text/event-stream"]));
        assert!(!accept(&["*/*; q=0.000"]));
    }
}
