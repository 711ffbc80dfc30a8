//! RFC 7523 §2.2 client assertions (`private_key_jwt`): a client named by a metadata document
//! that declares keys proves itself at the token endpoint with a JWT it signed, instead of a
//! secret. ChatGPT's document declares one, RS256 over keys at its `jwks_uri`.
//!
//! What is checked, and why each rule is as it is:
//! - the signature, with the algorithm from Hearth's allow-list ([`ALGORITHMS`]), the key's own
//!   type and the document's declared algorithm, never from the token's header alone. The `jku`,
//!   `x5u`, `jwk` and `x5c` headers, which would let a token name its own key, are ignored;
//! - an RSA key of at least [`MIN_RSA_BITS`] bits;
//! - `iss` and `sub` are the client id, and `aud` names the token endpoint or the issuer (RFC
//!   7523bis: servers must accept the issuer; ChatGPT sends the token endpoint);
//! - `exp` is present and at most [`MAX_LIFETIME_SECS`] after `iat` (or after now, without
//!   `iat`); [`CLOCK_SKEW_SECS`] applies only against the server's clock (`exp` in the past,
//!   `iat` or `nbf` in the future), never to the lifetime;
//! - `jti` is present; that it was not used before is the caller's to check, in the store.
//!
//! The signature is checked by `jsonwebtoken` (its JWK support builds the key); its own time
//! checks are turned off, since they read the system clock and Hearth's runs on a `Clock`.

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// The `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The signing algorithms Hearth accepts, as metadata advertises them.
pub const ALGORITHMS: [&str; 4] = ["RS256", "PS256", "ES256", "EdDSA"];
/// The longest an assertion may live, `exp` − `iat`, exactly.
pub const MAX_LIFETIME_SECS: i64 = 600;
/// Clock skew allowed against the server's clock.
pub const CLOCK_SKEW_SECS: i64 = 60;
/// The smallest RSA modulus accepted.
pub const MIN_RSA_BITS: usize = 2048;
/// The longest `jti` kept.
pub const MAX_JTI_CHARS: usize = 256;

/// Why an assertion is refused; safe to return as `invalid_client`'s description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssertionError {
    #[error("the client assertion is not a JWT")]
    Malformed,
    #[error(
        "the client assertion's algorithm is not accepted (RS256, PS256, ES256 or EdDSA, as the client's document declares)"
    )]
    Algorithm,
    /// No key of the client's has the assertion's key id (`kid`); fetching the keys again may
    /// find it.
    #[error("no key of the client's signed the client assertion")]
    UnknownKey,
    #[error("the client's key is not usable: {0}")]
    BadKey(&'static str),
    #[error("the client assertion's signature does not verify")]
    Signature,
    #[error("the client assertion's {0}")]
    Claims(&'static str),
}

/// What a verified assertion leaves to check against the store: its `jti`, used once, and
/// when it can be forgotten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub jti: String,
    /// `exp` plus the skew, in seconds: past this the assertion is refused anyway.
    pub forget_after_secs: i64,
}

/// The client id an assertion claims (`iss`), read without verifying anything: which client's
/// keys to verify it with, when the request names no `client_id`.
pub fn claimed_client(assertion: &str) -> Option<String> {
    let payload = assertion.split('.').nth(1)?;
    let bytes = base64_url(payload)?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_owned)
}

/// Verifies `assertion` as `client_id`'s, signed by one of `keys` with `declared` (the
/// document's algorithm, when it named one), for one of `audiences`, at `now_secs`.
pub fn verify(
    assertion: &str,
    client_id: &str,
    keys: &JwkSet,
    declared: Option<&str>,
    audiences: &[&str],
    now_secs: i64,
) -> Result<Verified, AssertionError> {
    let header = jsonwebtoken::decode_header(assertion).map_err(|_| AssertionError::Malformed)?;
    let name = algorithm_name(header.alg).ok_or(AssertionError::Algorithm)?;
    if declared.is_some_and(|declared| declared != name) {
        return Err(AssertionError::Algorithm);
    }
    let candidates: Vec<&Jwk> = match &header.kid {
        Some(kid) => keys
            .keys
            .iter()
            .filter(|key| key.common.key_id.as_deref() == Some(kid.as_str()))
            .collect(),
        None => keys.keys.iter().collect(),
    };
    let candidates: Vec<&Jwk> = candidates
        .into_iter()
        .filter(|key| fits(key, header.alg, name))
        .collect();
    if candidates.is_empty() {
        return Err(AssertionError::UnknownKey);
    }
    let mut validation = Validation::new(header.alg);
    // Time, audience and issuer are checked below against Hearth's clock and rules.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let mut refused = AssertionError::Signature;
    for key in candidates {
        let decoding = match usable_key(key) {
            Ok(decoding) => decoding,
            Err(error) => {
                refused = error;
                continue;
            }
        };
        match jsonwebtoken::decode::<Value>(assertion, &decoding, &validation) {
            Ok(data) => return check_claims(&data.claims, client_id, audiences, now_secs),
            Err(_) => refused = AssertionError::Signature,
        }
    }
    Err(refused)
}

fn algorithm_name(algorithm: Algorithm) -> Option<&'static str> {
    match algorithm {
        Algorithm::RS256 => Some("RS256"),
        Algorithm::PS256 => Some("PS256"),
        Algorithm::ES256 => Some("ES256"),
        Algorithm::EdDSA => Some("EdDSA"),
        _ => None,
    }
}

/// Whether `key` may verify `algorithm`: its type and curve, its own `alg` if it names one, and
/// a `use` of `sig` if it names one.
fn fits(key: &Jwk, algorithm: Algorithm, name: &str) -> bool {
    if key
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|usage| *usage != PublicKeyUse::Signature)
    {
        return false;
    }
    if let Some(declared) = key.common.key_algorithm
        && serde_json::to_value(declared)
            .ok()
            .as_ref()
            .and_then(Value::as_str)
            != Some(name)
    {
        return false;
    }
    match (&key.algorithm, algorithm) {
        (AlgorithmParameters::RSA(_), Algorithm::RS256 | Algorithm::PS256) => true,
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => {
            okp.curve == EllipticCurve::Ed25519
        }
        _ => false,
    }
}

/// The key to verify with, once it is strong enough.
fn usable_key(key: &Jwk) -> Result<DecodingKey, AssertionError> {
    if let AlgorithmParameters::RSA(rsa) = &key.algorithm {
        let modulus =
            base64_url(&rsa.n).ok_or(AssertionError::BadKey("its modulus is not base64url"))?;
        let leading_zeros = modulus.iter().take_while(|byte| **byte == 0).count();
        let bits = (modulus.len() - leading_zeros) * 8;
        if bits < MIN_RSA_BITS {
            return Err(AssertionError::BadKey(
                "an RSA key must have at least 2048 bits",
            ));
        }
    }
    DecodingKey::from_jwk(key).map_err(|_| AssertionError::BadKey("it cannot be read"))
}

fn check_claims(
    claims: &Value,
    client_id: &str,
    audiences: &[&str],
    now_secs: i64,
) -> Result<Verified, AssertionError> {
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    let number = |name: &str| claims.get(name).and_then(Value::as_i64);
    if text("iss") != Some(client_id) {
        return Err(AssertionError::Claims("iss is not the client id"));
    }
    if text("sub") != Some(client_id) {
        return Err(AssertionError::Claims("sub is not the client id"));
    }
    let audience_matches = match claims.get("aud") {
        Some(Value::String(audience)) => audiences.contains(&audience.as_str()),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .any(|audience| audiences.contains(&audience)),
        _ => false,
    };
    if !audience_matches {
        return Err(AssertionError::Claims(
            "aud names neither the token endpoint nor the issuer",
        ));
    }
    let expires = number("exp").ok_or(AssertionError::Claims("exp is missing"))?;
    if expires <= now_secs - CLOCK_SKEW_SECS {
        return Err(AssertionError::Claims("exp has passed"));
    }
    let issued = match claims.get("iat") {
        None => None,
        Some(value) => Some(
            value
                .as_i64()
                .ok_or(AssertionError::Claims("iat is not a number"))?,
        ),
    };
    if issued.is_some_and(|issued| issued > now_secs + CLOCK_SKEW_SECS) {
        return Err(AssertionError::Claims("iat is in the future"));
    }
    if let Some(not_before) = claims.get("nbf") {
        let not_before = not_before
            .as_i64()
            .ok_or(AssertionError::Claims("nbf is not a number"))?;
        if not_before > now_secs + CLOCK_SKEW_SECS {
            return Err(AssertionError::Claims("nbf is in the future"));
        }
    }
    if expires - issued.unwrap_or(now_secs) > MAX_LIFETIME_SECS {
        return Err(AssertionError::Claims(
            "lifetime (exp − iat) is over 600 seconds",
        ));
    }
    let jti = text("jti")
        .filter(|jti| !jti.is_empty() && jti.chars().count() <= MAX_JTI_CHARS)
        .ok_or(AssertionError::Claims(
            "jti is missing or longer than 256 characters",
        ))?;
    Ok(Verified {
        jti: jti.to_owned(),
        forget_after_secs: expires + CLOCK_SKEW_SECS,
    })
}

fn base64_url(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()
}
