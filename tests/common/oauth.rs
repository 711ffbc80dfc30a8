//! The person's side of an authorization request, for the tests of linking and of client
//! registration: PKCE, form bodies, and the consent page's hidden fields.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// The code verifier every test request uses.
pub const VERIFIER: &str = "a-code-verifier-of-at-least-43-characters-0123456789";

/// The S256 challenge of `verifier`.
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A form (or query) body of `fields`.
pub fn encode(fields: &HashMap<String, String>) -> String {
    let mut body = form_urlencoded::Serializer::new(String::new());
    for (name, value) in fields {
        body.append_pair(name, value);
    }
    body.finish()
}

/// The same from pairs.
pub fn encode_pairs(fields: &[(&str, &str)]) -> String {
    let mut body = form_urlencoded::Serializer::new(String::new());
    for (name, value) in fields {
        body.append_pair(name, value);
    }
    body.finish()
}

/// The hidden inputs of a rendered consent page's first form (the link code's), unescaped.
pub fn hidden_fields(html: &str) -> HashMap<String, String> {
    let html = html.split("</form>").next().unwrap_or(html);
    let unescape = |value: &str| {
        value
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    html.split(r#"<input type="hidden" name=""#)
        .skip(1)
        .map(|rest| {
            let (name, rest) = rest.split_once('"').unwrap();
            let value = rest.split_once(r#"value=""#).unwrap().1;
            let value = value.split_once('"').unwrap().0;
            (name.to_owned(), unescape(value))
        })
        .collect()
}

/// The query of an authorization request from `client_id` to `redirect_uri` for this test
/// server's resource, with `state`, `scope` and [`VERIFIER`]'s challenge.
pub fn authorize_query(client_id: &str, redirect_uri: &str, state: &str, scope: &str) -> String {
    encode_pairs(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
        ("state", state),
        ("code_challenge", &challenge(VERIFIER)),
        ("code_challenge_method", "S256"),
        ("resource", super::RESOURCE),
        ("scope", scope),
    ])
}

/// The consent page's cookie as a browser sends it back (`name=value`).
pub fn consent_cookie(page: &super::Reply) -> String {
    page.header("set-cookie")
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned()
}
