//! What every page Hearth renders shares: the base style (one inline block, allowed by its
//! hash in each page's Content-Security-Policy), HTML escaping, and how files built into the
//! binary are served. Below the pages that use it (the consent page, the passkey pages, the
//! household page and sign-up), so none of them imports another for these.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, header};

/// The pages' base style: the consent page's whole style, and the start of the others'.
pub const STYLE: &str = "body{font:17px/1.45 system-ui,sans-serif;margin:0;background:#f6f4ef;color:#1d1b16}\
main{max-width:32rem;margin:0 auto;padding:1.25rem}\
h1{font-size:1.35rem;margin:.5rem 0 1rem}h2{font-size:1.1rem;margin:1.6rem 0 .4rem}\
ul{padding-left:1.2rem}li{margin:.3rem 0}\
label{display:block;font-weight:600;margin:1.2rem 0 .4rem}\
input[type=text]{box-sizing:border-box;width:100%;font:1.3rem ui-monospace,monospace;letter-spacing:.08em;padding:.6rem;border:2px solid #8a8578;border-radius:.4rem;text-transform:uppercase}\
.actions{display:flex;gap:.75rem;margin-top:1.2rem;flex-wrap:wrap}\
button{flex:1 1 8rem;font:inherit;font-weight:600;padding:.75rem;border-radius:.4rem;border:2px solid #3d5a40;cursor:pointer}\
.allow{background:#3d5a40;color:#fff}.deny{background:#fff;color:#3d5a40}\
.problem{background:#fbe3df;border-left:4px solid #a33a2a;padding:.6rem .8rem}\
.small{font-size:.9rem;color:#555}\
.unverified{font-weight:400;color:#7a3b00}\
.destination strong{font-size:1.15rem}\
input.name{font:inherit;letter-spacing:normal;text-transform:none}\
.done{background:#e3f1e4;border-left:4px solid #3d5a40;padding:.6rem .8rem}";

/// HTML-escapes text for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// A file built into the binary, cached briefly (it changes with releases).
pub fn static_asset(body: impl Into<axum::body::Body>, content_type: &'static str) -> Response {
    let mut response = body.into().into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_request_values_is_escaped() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
