//! Media types in HTTP headers, for the endpoints that check what they are sent and the
//! clients that check what they receive.

use http::{HeaderMap, header};

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
