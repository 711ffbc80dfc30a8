//! Reading a form (a token request's body, RFC 6749 §3.2, or an authorization request's query) and HTTP Basic client
//! authentication (§2.3.1).

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::HeaderMap;
use http::header::AUTHORIZATION;

use super::error::OAuthError;

/// The largest accepted form body. A token request is a few hundred bytes.
pub const MAX_FORM_BYTES: usize = 4096;

/// A parsed form: each parameter at most once; parameters without a value are omitted, as
/// RFC 6749 §3.1 says they must be treated.
#[derive(Debug, Default)]
pub struct Form(HashMap<String, String>);

impl Form {
    pub fn parse(body: &[u8]) -> Result<Self, OAuthError> {
        let mut parameters = HashMap::new();
        for (name, value) in form_urlencoded::parse(body) {
            if parameters.contains_key(name.as_ref()) {
                return Err(OAuthError::invalid_request(format!(
                    "the parameter {} appears more than once",
                    printable(&name)
                )));
            }
            parameters.insert(name.into_owned(), value.into_owned());
        }
        parameters.retain(|_, value: &mut String| !value.is_empty());
        Ok(Self(parameters))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

/// A parameter name safe to echo in an error: known names only, since anything else came
/// from the client and may be anything.
fn printable(name: &str) -> &str {
    const KNOWN: [&str; 20] = [
        "grant_type",
        "resource",
        "scope",
        "client_id",
        "client_secret",
        "judge_token",
        "audience",
        "code",
        "redirect_uri",
        "code_verifier",
        "refresh_token",
        "token",
        "token_type_hint",
        "response_type",
        "state",
        "code_challenge",
        "code_challenge_method",
        "link_code",
        "decision",
        "csrf",
    ];
    KNOWN
        .into_iter()
        .find(|known| *known == name)
        .unwrap_or("(unnamed)")
}

/// The client id and secret from `Authorization: Basic`, each form-urlencoded before base64
/// as RFC 6749 §2.3.1 requires.
pub fn basic_credentials(headers: &HeaderMap) -> Result<(String, String), OAuthError> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = values.next().ok_or_else(|| {
        OAuthError::invalid_client("HTTP Basic client authentication is required")
    })?;
    if values.next().is_some() {
        return Err(OAuthError::invalid_request(
            "more than one Authorization header",
        ));
    }
    let malformed = || OAuthError::invalid_client("malformed Basic credentials");
    let value = value.to_str().map_err(|_| malformed())?;
    let (scheme, encoded) = value.split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(OAuthError::invalid_client(
            "HTTP Basic client authentication is required",
        ));
    }
    let decoded = STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    Ok((form_decode(id), form_decode(secret)))
}

fn form_decode(part: &str) -> String {
    let spaced = part.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn repeated_parameters_are_refused_and_empty_ones_omitted() {
        let form = Form::parse(b"grant_type=client_credentials&scope=&resource=x%2Fy").unwrap();
        assert_eq!(form.get("grant_type"), Some("client_credentials"));
        assert_eq!(form.get("scope"), None);
        assert_eq!(form.get("resource"), Some("x/y"));
        let error = Form::parse(b"scope=a&scope=b").unwrap_err();
        assert_eq!(error.code(), "invalid_request");
        assert!(error.description().contains("scope"));
        let error = Form::parse(b"%3Cscript%3E=1&%3Cscript%3E=2").unwrap_err();
        assert!(!error.description().contains("script"));
    }

    #[test]
    fn basic_credentials_are_form_decoded() {
        let mut headers = HeaderMap::new();
        let encoded = STANDARD.encode("alexa%2Bclient:p%40ss+word");
        headers.insert(
            AUTHORIZATION,
            HeaderValue::from_str(&format!("Basic {encoded}")).unwrap(),
        );
        assert_eq!(
            basic_credentials(&headers).unwrap(),
            ("alexa+client".to_owned(), "p@ss word".to_owned())
        );
        for bad in [
            "Bearer abc",
            "Basic !!!",
            "Basic",
            &format!("Basic {}", STANDARD.encode("nocolon")),
        ] {
            headers.insert(AUTHORIZATION, HeaderValue::from_str(bad).unwrap());
            assert_eq!(
                basic_credentials(&headers).unwrap_err().code(),
                "invalid_client",
                "{bad}"
            );
        }
    }
}
