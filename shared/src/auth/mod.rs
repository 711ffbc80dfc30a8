//! Who may call Hearth. For now: static bearer tokens whose SHA-256 is configured in
//! `MCP_JUDGE_TOKEN_HASHES`. Missing configuration denies every request (fail closed); the only
//! opt-out is the explicit local-development flag `MCP_ALLOW_NO_AUTH=true`.

pub mod dev_token;

use http::HeaderMap;
use http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::chain::sha256_hex;
use crate::toolset::Caller;

/// The verified identity behind a request: the hex SHA-256 of the presented token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject(String);

impl Subject {
    /// The data scope of this subject: SHA-256 of the subject, so stored keys never contain a
    /// credential or anything a credential can be derived from.
    pub fn caller(&self) -> Caller {
        Caller {
            scope: sha256_hex(&self.0),
        }
    }
}

/// Why a request was not authenticated. The messages are safe to return to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    #[error("missing bearer token")]
    Missing,
    #[error("only bearer tokens are accepted")]
    WrongScheme,
    #[error("invalid token")]
    Invalid,
}

#[derive(Debug, thiserror::Error)]
#[error("MCP_JUDGE_TOKEN_HASHES entry {position} is not a 64-character hex SHA-256")]
pub struct BadTokenHash {
    pub position: usize,
}

/// Verifies `Authorization: Bearer <token>` against a list of token hashes.
#[derive(Clone)]
pub struct BearerAuth {
    token_hashes: Vec<[u8; 32]>,
    allow_anonymous: bool,
}

/// The subject every request gets when authentication is switched off for local development.
const ANONYMOUS: &str = "local-development-without-auth";

impl BearerAuth {
    /// Accepts tokens whose SHA-256 is in `token_hashes`. An empty list accepts nothing.
    pub fn new(token_hashes: Vec<[u8; 32]>) -> Self {
        Self {
            token_hashes,
            allow_anonymous: false,
        }
    }

    /// Accepts every request as one fixed local subject. Only for `MCP_ALLOW_NO_AUTH=true`
    /// outside Lambda; configuration refuses it anywhere else.
    pub fn allow_anonymous() -> Self {
        Self {
            token_hashes: Vec::new(),
            allow_anonymous: true,
        }
    }

    /// Parses a comma-separated list of hex SHA-256 hashes (blank entries are ignored).
    pub fn parse_hashes(list: &str) -> Result<Vec<[u8; 32]>, BadTokenHash> {
        list.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .enumerate()
            .map(|(index, entry)| {
                let mut hash = [0u8; 32];
                hex::decode_to_slice(entry, &mut hash)
                    .map(|()| hash)
                    .map_err(|_| BadTokenHash {
                        position: index + 1,
                    })
            })
            .collect()
    }

    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Subject, AuthFailure> {
        if self.allow_anonymous {
            return Ok(Subject(ANONYMOUS.to_owned()));
        }
        let token = bearer_token(headers)?;
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Compare against every configured hash without stopping early.
        let mut matched = subtle::Choice::from(0);
        for hash in &self.token_hashes {
            matched |= hash.ct_eq(&presented);
        }
        if bool::from(matched) {
            Ok(Subject(hex::encode(presented)))
        } else {
            Err(AuthFailure::Invalid)
        }
    }
}

fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthFailure> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = values.next().ok_or(AuthFailure::Missing)?;
    if values.next().is_some() {
        return Err(AuthFailure::Invalid);
    }
    let value = value.to_str().map_err(|_| AuthFailure::Invalid)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthFailure::WrongScheme)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthFailure::WrongScheme);
    }
    let token = token.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(AuthFailure::Invalid);
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    fn auth_for(token: &str) -> BearerAuth {
        BearerAuth::new(BearerAuth::parse_hashes(&sha256_hex(token)).unwrap())
    }

    #[test]
    fn a_listed_token_is_accepted_and_its_hash_is_the_subject() {
        let subject = auth_for("s3cret")
            .authenticate(&headers("Bearer s3cret"))
            .unwrap();
        assert_eq!(subject, Subject(sha256_hex("s3cret")));
        assert_eq!(subject.caller().scope, sha256_hex(sha256_hex("s3cret")));
    }

    #[test]
    fn everything_else_is_refused() {
        let auth = auth_for("s3cret");
        let cases = [
            ("Bearer wrong", AuthFailure::Invalid),
            ("Basic czNjcmV0Og==", AuthFailure::WrongScheme),
            ("s3cret", AuthFailure::WrongScheme),
            ("Bearer ", AuthFailure::Invalid),
            ("Bearer s3cret extra", AuthFailure::Invalid),
        ];
        for (value, expected) in cases {
            assert_eq!(auth.authenticate(&headers(value)), Err(expected), "{value}");
        }
        assert_eq!(
            auth.authenticate(&HeaderMap::new()),
            Err(AuthFailure::Missing)
        );
    }

    #[test]
    fn no_configured_hashes_means_no_access() {
        let auth = BearerAuth::new(Vec::new());
        assert_eq!(
            auth.authenticate(&headers("Bearer anything")),
            Err(AuthFailure::Invalid)
        );
    }

    #[test]
    fn malformed_hash_lists_are_refused_with_their_position() {
        let good = sha256_hex("a");
        assert_eq!(
            BearerAuth::parse_hashes(&format!(" {good} ,"))
                .unwrap()
                .len(),
            1
        );
        let error = BearerAuth::parse_hashes(&format!("{good},nothex")).unwrap_err();
        assert_eq!(error.position, 2);
    }
}
