//! Host attestations: the device, not the model, says who is speaking and what they said.
//!
//! Every MCP request may carry two headers:
//! - `X-Countersign-Attestation`: base64url JSON
//!   `{member_id, turn_id, utterances, issued_at, answering}`, where `issued_at` is Unix
//!   seconds, `utterances` holds at most three of the person's recent words and `answering`
//!   is the id of the request whose question the device last read aloud to them (or null);
//! - `X-Countersign-Signature`: lowercase hex HMAC-SHA256 of the attestation header value
//!   exactly as sent, keyed with `COUNTERSIGN_HOST_KEY`.
//!
//! With a household token the signature is keyed instead with one of that household's device
//! keys, which a third header names: `X-Countersign-Key-Id` (from `hearth admin device-key
//! add`). A key of another household, or a revoked one, verifies nothing. Tokens of a
//! credential (judge, client) keep the one `COUNTERSIGN_HOST_KEY` and ignore the key id.
//!
//! The signature is checked (in constant time) before the JSON is even decoded, and an
//! attestation older than five minutes is refused. Tools that act or reveal household data
//! run only for a [`HostClaim::Verified`] caller; identity is never a tool argument.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use http::HeaderMap;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::accounts::Accounts;
use crate::clock::Clock;
use crate::secret::Secret;
use crate::store::{AccountItem, StoreError};

/// A household's account as read from the store in this request (`None`: no such account).
pub type AccountRead = Result<Option<AccountItem>, StoreError>;

pub const ATTESTATION_HEADER: &str = "x-countersign-attestation";
pub const SIGNATURE_HEADER: &str = "x-countersign-signature";
/// Names the household device key that signed, for household tokens.
pub const KEY_ID_HEADER: &str = "x-countersign-key-id";
/// The longest accepted key id header.
pub const MAX_KEY_ID_BYTES: usize = 64;

/// An attestation is refused once it is older than this.
pub const MAX_AGE_SECS: i64 = 5 * 60;
/// Device clocks drift; an attestation dated further ahead than this is refused.
pub const MAX_CLOCK_AHEAD_SECS: i64 = 30;
/// The attestation header as sent (base64url text).
pub const MAX_ATTESTATION_BYTES: usize = 4096;
pub const MAX_UTTERANCES: usize = 3;
pub const MAX_UTTERANCE_CHARS: usize = 500;
/// `member_id`, `turn_id` and `answering`.
pub const MAX_ID_CHARS: usize = 64;

/// `COUNTERSIGN_HOST_KEY=development` selects this publicly known key for local development.
/// Anyone can sign with it, so it is refused under Lambda and announced loudly at start.
pub const DEVELOPMENT_HOST_KEY: &str = "development";

/// What the device signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attestation {
    pub member_id: String,
    pub turn_id: String,
    pub utterances: Vec<String>,
    /// Unix seconds.
    pub issued_at: i64,
    pub answering: Option<String>,
}

impl Attestation {
    /// The header value: base64url (no padding) of the JSON.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).expect("an attestation serialises"))
    }
}

/// What the host claims for this request, after checking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostClaim {
    Verified(Attestation),
    Refused(AttestationRefusal),
}

/// Why an attestation was not accepted. The text is safe to show a caller and to log: it
/// never quotes the attestation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttestationRefusal {
    #[error(
        "this server has no host key (COUNTERSIGN_HOST_KEY), so it cannot tell who is speaking"
    )]
    NoHostKey,
    #[error(
        "the request carries no device attestation (X-Countersign-Attestation with X-Countersign-Signature)"
    )]
    Missing,
    #[error("the device attestation came without its signature, or the signature without it")]
    Incomplete,
    #[error("the device attestation is longer than {MAX_ATTESTATION_BYTES} bytes")]
    TooLong,
    #[error("the device signature does not match the attestation")]
    BadSignature,
    #[error("the device attestation is not readable: {0}")]
    Malformed(String),
    #[error("the device attestation is older than five minutes")]
    Expired,
    #[error("the device attestation is dated in the future")]
    Future,
    #[error("the device attestation names no device key (X-Countersign-Key-Id)")]
    NoKeyId,
    #[error("the device key is not one of this household's, or it was revoked")]
    UnknownKey,
    #[error("the household's device keys could not be read (storage unavailable)")]
    KeysUnavailable,
}

/// Checks attestation headers with the host key.
#[derive(Clone)]
pub struct AttestationVerifier {
    key: Option<Secret>,
    clock: Arc<dyn Clock>,
}

impl AttestationVerifier {
    /// `key` is `None` when no host key is configured: every claim is then refused.
    pub fn new(key: Option<Secret>, clock: Arc<dyn Clock>) -> Self {
        Self { key, clock }
    }

    /// The claim `headers` make now.
    pub fn check(&self, headers: &HeaderMap) -> HostClaim {
        self.check_at(headers, self.clock.now().unix_timestamp())
    }

    /// The claim `headers` make at `now_secs` (Unix seconds).
    pub fn check_at(&self, headers: &HeaderMap, now_secs: i64) -> HostClaim {
        claim(
            self.key
                .as_ref()
                .ok_or(AttestationRefusal::NoHostKey)
                .and_then(|key| verify(key, headers, now_secs)),
        )
    }

    /// The claim `headers` make for a household token of `household_id`: signed with the
    /// device key `X-Countersign-Key-Id` names, from the household's account read fresh in
    /// this request: `read_ahead` if the HTTP layer read it beside admission, else read now.
    /// The account read comes back too, for whatever else the request needs of it.
    pub async fn check_household(
        &self,
        headers: &HeaderMap,
        accounts: &Accounts,
        household_id: &str,
        read_ahead: Option<AccountRead>,
    ) -> (HostClaim, Option<Arc<AccountItem>>) {
        let now_secs = self.clock.now().unix_timestamp();
        if headers.get(ATTESTATION_HEADER).is_none() && headers.get(SIGNATURE_HEADER).is_none() {
            // Nothing to check; an account read ahead still serves the tools that need it.
            let account = read_ahead.and_then(|read| read.ok().flatten());
            return (
                HostClaim::Refused(AttestationRefusal::Missing),
                account.map(Arc::new),
            );
        }
        let key_id = match headers.get(KEY_ID_HEADER).map(|value| value.to_str()) {
            None => return (HostClaim::Refused(AttestationRefusal::NoKeyId), None),
            Some(Ok(id)) if !id.is_empty() && id.len() <= MAX_KEY_ID_BYTES => id,
            Some(_) => {
                let refusal = malformed(&format!(
                    "X-Countersign-Key-Id must be 1 to {MAX_KEY_ID_BYTES} visible ASCII characters"
                ));
                return (HostClaim::Refused(refusal), None);
            }
        };
        let read = match read_ahead {
            Some(read) => read,
            None => accounts.fresh(household_id).await,
        };
        let account = match read {
            Ok(Some(account)) => Arc::new(account),
            Ok(None) => return (HostClaim::Refused(AttestationRefusal::UnknownKey), None),
            Err(error) => {
                tracing::warn!(%error, "device keys unavailable");
                return (
                    HostClaim::Refused(AttestationRefusal::KeysUnavailable),
                    None,
                );
            }
        };
        let key = account
            .device_keys
            .iter()
            .find(|key| key.key_id == key_id)
            .map(|key| Secret::new(key.key.clone()));
        let claim = match key {
            Some(key) => claim(verify(&key, headers, now_secs)),
            None => HostClaim::Refused(AttestationRefusal::UnknownKey),
        };
        (claim, Some(account))
    }
}

fn claim(result: Result<Attestation, AttestationRefusal>) -> HostClaim {
    match result {
        Ok(attestation) => HostClaim::Verified(attestation),
        Err(refusal) => HostClaim::Refused(refusal),
    }
}

/// Checks the attestation headers against `key` at `now_secs`.
fn verify(
    key: &Secret,
    headers: &HeaderMap,
    now_secs: i64,
) -> Result<Attestation, AttestationRefusal> {
    let (encoded, signature) = match (
        headers.get(ATTESTATION_HEADER),
        headers.get(SIGNATURE_HEADER),
    ) {
        (None, None) => return Err(AttestationRefusal::Missing),
        (Some(encoded), Some(signature)) => (encoded.as_bytes(), signature.as_bytes()),
        _ => return Err(AttestationRefusal::Incomplete),
    };
    if encoded.len() > MAX_ATTESTATION_BYTES {
        return Err(AttestationRefusal::TooLong);
    }
    let signature = hex::decode(signature).map_err(|_| AttestationRefusal::BadSignature)?;
    mac(key.expose().as_bytes(), encoded)
        .verify_slice(&signature)
        .map_err(|_| AttestationRefusal::BadSignature)?;
    let json = URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| malformed("it is not base64url without padding"))?;
    let attestation: Attestation = serde_json::from_slice(&json).map_err(|_| {
        malformed(
            "expected JSON {member_id, turn_id, utterances, issued_at, answering} and nothing else",
        )
    })?;
    check_shape(&attestation)?;
    check_age(attestation.issued_at, now_secs)?;
    Ok(attestation)
}

/// Whether an attestation issued at `issued_at` is still fresh at `now_secs`. Both are
/// signed or configured integers that may sit anywhere in `i64`, so the age is computed in
/// `i128`: a subtraction in `i64` would panic in a debug build and wrap in a release one,
/// making a date near `i64::MIN` look brand new.
fn check_age(issued_at: i64, now_secs: i64) -> Result<(), AttestationRefusal> {
    let age = i128::from(now_secs) - i128::from(issued_at);
    if age < -i128::from(MAX_CLOCK_AHEAD_SECS) {
        return Err(AttestationRefusal::Future);
    }
    if age > i128::from(MAX_AGE_SECS) {
        return Err(AttestationRefusal::Expired);
    }
    Ok(())
}

fn malformed(reason: &str) -> AttestationRefusal {
    AttestationRefusal::Malformed(reason.to_owned())
}

/// Whether an attestation keeps the contract's bounds (ids, number and length of utterances).
pub fn check_shape(attestation: &Attestation) -> Result<(), AttestationRefusal> {
    let ids = [
        ("member_id", Some(&attestation.member_id)),
        ("turn_id", Some(&attestation.turn_id)),
        ("answering", attestation.answering.as_ref()),
    ];
    for (name, value) in ids {
        if let Some(value) = value {
            let length = value.chars().count();
            if length == 0 || length > MAX_ID_CHARS || value.chars().any(char::is_control) {
                return Err(malformed(&format!(
                    "{name} must be 1 to {MAX_ID_CHARS} characters without control characters"
                )));
            }
        }
    }
    if attestation.utterances.len() > MAX_UTTERANCES {
        return Err(malformed(&format!(
            "at most {MAX_UTTERANCES} utterances may be attested"
        )));
    }
    if attestation
        .utterances
        .iter()
        .any(|words| words.chars().count() > MAX_UTTERANCE_CHARS)
    {
        return Err(malformed(&format!(
            "an utterance is longer than {MAX_UTTERANCE_CHARS} characters"
        )));
    }
    Ok(())
}

fn mac(key: &[u8], message: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(message);
    mac
}

/// The signature header value for an attestation header value: what a device computes.
pub fn sign(key: &str, encoded: &str) -> String {
    hex::encode(
        mac(key.as_bytes(), encoded.as_bytes())
            .finalize()
            .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;

    const KEY: &str = "a shared device key";
    const NOW: i64 = 1_796_000_000;

    fn attestation() -> Attestation {
        Attestation {
            member_id: "mia".into(),
            turn_id: "t-1".into(),
            utterances: vec!["buy the dino blocks".into()],
            issued_at: NOW,
            answering: None,
        }
    }

    fn headers_for(encoded: &str, signature: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ATTESTATION_HEADER, encoded.parse().unwrap());
        headers.insert(SIGNATURE_HEADER, signature.parse().unwrap());
        headers
    }

    fn signed(attestation: &Attestation) -> HeaderMap {
        let encoded = attestation.encode();
        headers_for(&encoded, &sign(KEY, &encoded))
    }

    fn check(headers: &HeaderMap) -> HostClaim {
        AttestationVerifier::new(Some(Secret::new(KEY)), Arc::new(SystemClock))
            .check_at(headers, NOW)
    }

    fn refused(headers: &HeaderMap) -> AttestationRefusal {
        match check(headers) {
            HostClaim::Refused(refusal) => refusal,
            HostClaim::Verified(_) => panic!("accepted"),
        }
    }

    #[test]
    fn a_signed_fresh_attestation_is_verified() {
        assert_eq!(
            check(&signed(&attestation())),
            HostClaim::Verified(attestation())
        );
    }

    #[test]
    fn without_a_host_key_nothing_is_verified() {
        let verifier = AttestationVerifier::new(None, Arc::new(SystemClock));
        assert_eq!(
            verifier.check_at(&signed(&attestation()), NOW),
            HostClaim::Refused(AttestationRefusal::NoHostKey)
        );
    }

    #[test]
    fn missing_or_half_present_headers_are_refused() {
        assert_eq!(refused(&HeaderMap::new()), AttestationRefusal::Missing);
        let mut only_attestation = signed(&attestation());
        only_attestation.remove(SIGNATURE_HEADER);
        assert_eq!(refused(&only_attestation), AttestationRefusal::Incomplete);
    }

    #[test]
    fn any_change_to_the_signed_text_or_signature_is_refused() {
        let encoded = attestation().encode();
        let signature = sign(KEY, &encoded);
        let mut other = attestation();
        other.member_id = "dana".into();
        let swapped = headers_for(&other.encode(), &signature);
        assert_eq!(refused(&swapped), AttestationRefusal::BadSignature);
        let wrong_key = headers_for(&encoded, &sign("another key", &encoded));
        assert_eq!(refused(&wrong_key), AttestationRefusal::BadSignature);
        let not_hex = headers_for(&encoded, "zz");
        assert_eq!(refused(&not_hex), AttestationRefusal::BadSignature);
        let upper = headers_for(&encoded, &signature.to_uppercase());
        assert!(matches!(check(&upper), HostClaim::Verified(_)));
    }

    #[test]
    fn five_minutes_old_is_accepted_and_one_second_more_is_not() {
        let mut old = attestation();
        old.issued_at = NOW - MAX_AGE_SECS;
        assert!(matches!(check(&signed(&old)), HostClaim::Verified(_)));
        old.issued_at -= 1;
        assert_eq!(refused(&signed(&old)), AttestationRefusal::Expired);
        let mut ahead = attestation();
        ahead.issued_at = NOW + MAX_CLOCK_AHEAD_SECS;
        assert!(matches!(check(&signed(&ahead)), HostClaim::Verified(_)));
        ahead.issued_at += 1;
        assert_eq!(refused(&signed(&ahead)), AttestationRefusal::Future);
    }

    #[test]
    fn dates_at_the_ends_of_the_integer_range_are_refused_without_overflow() {
        let mut ancient = attestation();
        ancient.issued_at = i64::MIN;
        assert_eq!(refused(&signed(&ancient)), AttestationRefusal::Expired);
        let mut distant = attestation();
        distant.issued_at = i64::MAX;
        assert_eq!(refused(&signed(&distant)), AttestationRefusal::Future);
        // The server's own clock at either end must not overflow either.
        let verifier = AttestationVerifier::new(Some(Secret::new(KEY)), Arc::new(SystemClock));
        assert!(matches!(
            verifier.check_at(&signed(&distant), i64::MAX),
            HostClaim::Verified(_)
        ));
        assert_eq!(
            verifier.check_at(&signed(&attestation()), i64::MIN),
            HostClaim::Refused(AttestationRefusal::Future)
        );
    }

    #[test]
    fn three_utterances_are_accepted_and_four_are_not() {
        let mut words = attestation();
        words.utterances = vec!["a".repeat(MAX_UTTERANCE_CHARS); 3];
        assert!(matches!(check(&signed(&words)), HostClaim::Verified(_)));
        words.utterances.push("yes".into());
        assert!(matches!(
            refused(&signed(&words)),
            AttestationRefusal::Malformed(reason) if reason.contains("at most 3")
        ));
        words.utterances = vec!["a".repeat(MAX_UTTERANCE_CHARS + 1)];
        assert!(matches!(
            refused(&signed(&words)),
            AttestationRefusal::Malformed(reason) if reason.contains("longer than 500")
        ));
    }

    #[test]
    fn ids_are_bounded_at_64_characters() {
        let mut long = attestation();
        long.turn_id = "t".repeat(MAX_ID_CHARS);
        long.answering = Some("r".repeat(MAX_ID_CHARS));
        assert!(matches!(check(&signed(&long)), HostClaim::Verified(_)));
        long.turn_id.push('t');
        assert!(matches!(
            refused(&signed(&long)),
            AttestationRefusal::Malformed(_)
        ));
        let mut empty = attestation();
        empty.member_id.clear();
        assert!(matches!(
            refused(&signed(&empty)),
            AttestationRefusal::Malformed(_)
        ));
    }

    #[test]
    fn the_header_is_bounded_before_anything_is_decoded() {
        let at_limit = "A".repeat(MAX_ATTESTATION_BYTES);
        let signature = sign(KEY, &at_limit);
        // At the limit the signature matches, and only the content is unreadable.
        assert!(matches!(
            refused(&headers_for(&at_limit, &signature)),
            AttestationRefusal::Malformed(_)
        ));
        let past = "A".repeat(MAX_ATTESTATION_BYTES + 1);
        assert_eq!(
            refused(&headers_for(&past, &sign(KEY, &past))),
            AttestationRefusal::TooLong
        );
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_malformed() {
        for json in [
            r#"{"member_id":"mia","turn_id":"t","utterances":[],"issued_at":1796000000,"answering":null,"role":"parent"}"#,
            r#"{"member_id":"mia","turn_id":"t","utterances":"yes","issued_at":1796000000,"answering":null}"#,
            r#"[]"#,
        ] {
            let encoded = URL_SAFE_NO_PAD.encode(json);
            let headers = headers_for(&encoded, &sign(KEY, &encoded));
            assert!(
                matches!(refused(&headers), AttestationRefusal::Malformed(_)),
                "{json}"
            );
        }
    }
}
