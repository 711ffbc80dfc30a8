//! PKCE (RFC 7636) with the S256 method only: `plain` would let anyone who sees the
//! authorization request redeem its code.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Why a `code_challenge` was not accepted. The text is safe to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.description())]
pub enum ChallengeRefusal {
    Missing,
    NotS256,
    Malformed,
}

impl ChallengeRefusal {
    pub fn description(self) -> &'static str {
        match self {
            ChallengeRefusal::Missing => "code_challenge is required (PKCE with S256)",
            ChallengeRefusal::NotS256 => {
                "code_challenge_method must be S256; plain is not accepted"
            }
            ChallengeRefusal::Malformed => {
                "code_challenge must be the base64url SHA-256 of a code verifier (43 characters)"
            }
        }
    }
}

/// Checks an authorization request's challenge. A missing method means `plain` (RFC 7636
/// §4.3), which is refused like an explicit one.
pub fn check_challenge(
    challenge: Option<&str>,
    method: Option<&str>,
) -> Result<(), ChallengeRefusal> {
    let challenge = challenge.ok_or(ChallengeRefusal::Missing)?;
    if method != Some("S256") {
        return Err(ChallengeRefusal::NotS256);
    }
    // base64url of 32 bytes without padding is exactly 43 characters.
    let decodes = URL_SAFE_NO_PAD
        .decode(challenge)
        .is_ok_and(|bytes| bytes.len() == 32);
    if challenge.len() != 43 || !decodes {
        return Err(ChallengeRefusal::Malformed);
    }
    Ok(())
}

/// Whether `verifier` is a well-formed code verifier (43 to 128 unreserved characters,
/// RFC 7636 §4.1) whose S256 transform is `challenge`. Compared in constant time.
pub fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    if !well_formed {
        return false;
    }
    let transformed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    bool::from(transformed.as_bytes().ct_eq(challenge.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7636 Appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn the_rfc_7636_example_verifies_and_nothing_else_does() {
        assert_eq!(check_challenge(Some(CHALLENGE), Some("S256")), Ok(()));
        assert!(verifier_matches(VERIFIER, CHALLENGE));
        assert!(!verifier_matches(&VERIFIER.replace('d', "e"), CHALLENGE));
        assert!(
            !verifier_matches(CHALLENGE, CHALLENGE),
            "plain would be the challenge itself"
        );
    }

    #[test]
    fn plain_missing_and_malformed_challenges_are_refused() {
        assert_eq!(
            check_challenge(None, Some("S256")),
            Err(ChallengeRefusal::Missing)
        );
        assert_eq!(
            check_challenge(Some(CHALLENGE), None),
            Err(ChallengeRefusal::NotS256)
        );
        assert_eq!(
            check_challenge(Some(CHALLENGE), Some("plain")),
            Err(ChallengeRefusal::NotS256)
        );
        assert_eq!(
            check_challenge(Some(&CHALLENGE[1..]), Some("S256")),
            Err(ChallengeRefusal::Malformed)
        );
        assert_eq!(
            check_challenge(Some(&format!("{CHALLENGE}A")), Some("S256")),
            Err(ChallengeRefusal::Malformed)
        );
    }

    #[test]
    fn verifiers_hold_43_to_128_characters() {
        for (length, ok) in [(42, false), (43, true), (128, true), (129, false)] {
            let verifier = "a".repeat(length);
            let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            assert_eq!(verifier_matches(&verifier, &challenge), ok, "{length}");
        }
        let odd = format!("{}!", "a".repeat(43));
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(odd.as_bytes()));
        assert!(!verifier_matches(&odd, &challenge), "outside the alphabet");
    }
}
