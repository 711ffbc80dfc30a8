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
