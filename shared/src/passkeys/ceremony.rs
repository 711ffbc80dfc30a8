//! The WebAuthn ceremonies, over the `caden` crate: what a browser is asked to do, and the
//! checks on what it answers (origin, relying party id, user presence and verification, the
//! signature, the sign counter).
//!
//! Why `caden` and not the others: an approval's challenge is the SHA-256 of a statement (so
//! the ledger can prove what was approved), and members' passkeys may be Ed25519.
//! `webauthn-rs-core` 0.6 (kanidm; pure RustCrypto since 0.6) refuses Ed25519 keys
//! (`SshPublicKeyEDUnsupported`) and only verifies against a random challenge of its own
//! making, kept in a state whose fields are private; `webauthn_rp` fixes every challenge at
//! 16 random bytes. `caden` verifies ES256 and Ed25519 with `ring` (already in the build, no
//! OpenSSL to cross-compile for Lambda) and takes the challenge as bytes. (Its library is
//! named `webauthn`.)
//!
//! Keys are kept as DER SubjectPublicKeyInfo, the form `verify_approvals.py` and any X.509
//! tool reads. The two encodings are fixed byte prefixes (RFC 5480 for P-256, RFC 8410 for
//! Ed25519), written here rather than through an ASN.1 crate because nothing varies but the
//! key.

use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use webauthn::{
    AuthenticatorAssertionResponse, AuthenticatorAttestationResponse, COSE_EDDSA, COSE_ES256,
    Challenge, Credential, PublicKey, RelyingParty, WebAuthnError,
};

/// How long a browser has to answer a ceremony, in milliseconds (what the page asks of the
/// authenticator, and how long the server keeps the challenge).
pub const CEREMONY_TIMEOUT_MS: i64 = 5 * 60 * 1000;

/// DER SubjectPublicKeyInfo up to the key: id-ecPublicKey, prime256v1, a 66-byte BIT STRING
/// holding the uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];
/// DER SubjectPublicKeyInfo up to the key: id-Ed25519, a 33-byte BIT STRING.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The two signature algorithms a passkey may use, by their names in `passkey list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Es256,
    Ed25519,
}

impl Algorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Es256 => "ES256",
            Algorithm::Ed25519 => "Ed25519",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(Algorithm::Es256),
            "Ed25519" => Some(Algorithm::Ed25519),
            _ => None,
        }
    }
}

/// Where passkeys are used: the relying party id and the one origin pages are served on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub rp_id: String,
    pub origin: String,
}

/// A credential the browser created and the server checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCredential {
    /// base64url, no padding.
    pub credential_id: String,
    pub algorithm: Algorithm,
    /// DER SubjectPublicKeyInfo, base64url without padding.
    pub public_key_spki: String,
    pub sign_count: u32,
    pub backup_eligible: bool,
}

/// What a stored passkey needs to check an assertion.
pub struct StoredKey<'a> {
    pub credential_id: &'a str,
    pub algorithm: &'a str,
    pub public_key_spki: &'a str,
    pub sign_count: u32,
    pub backup_eligible: bool,
}

/// An assertion as the browser returned it (the `PublicKeyCredential` JSON form, every byte
/// string base64url), checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assertion {
    pub credential_id: String,
    pub authenticator_data: String,
    pub client_data_json: String,
    pub signature: String,
    pub sign_count: u32,
}

/// Why a ceremony failed; `CounterWentBack` marks the passkey suspect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CeremonyError {
    #[error("{0}")]
    Malformed(String),
    #[error("the passkey's answer did not check out: {0}")]
    Refused(String),
    #[error(
        "the passkey's sign counter went backwards ({received} after {stored}): it may have been copied"
    )]
    CounterWentBack { stored: u32, received: u32 },
}

impl Site {
    fn relying_party(&self) -> RelyingParty {
        RelyingParty::new(&self.rp_id, &self.origin, "Hearth")
            .require_user_verification(true)
            .reject_cross_origin(true)
            .allowed_algorithms([COSE_ES256, COSE_EDDSA])
    }

    /// `PublicKeyCredentialCreationOptions` as JSON, byte strings base64url (the page turns
    /// them into buffers): ES256 and Ed25519, user verification required, a discoverable
    /// (resident) key required so that the household's page can sign in without a name typed,
    /// no attestation, the member's existing credentials excluded.
    pub fn creation_options(
        &self,
        challenge: &[u8],
        user_handle: &[u8],
        user_name: &str,
        display_name: &str,
        exclude: &[String],
    ) -> Value {
        json!({
            "challenge": URL_SAFE_NO_PAD.encode(challenge),
            "rp": {"id": self.rp_id, "name": "Hearth"},
            "user": {
                "id": URL_SAFE_NO_PAD.encode(user_handle),
                "name": user_name,
                "displayName": display_name,
            },
            "pubKeyCredParams": [
                {"type": "public-key", "alg": COSE_ES256},
                {"type": "public-key", "alg": COSE_EDDSA},
            ],
            "timeout": CEREMONY_TIMEOUT_MS,
            "attestation": "none",
            "authenticatorSelection": {
                "residentKey": "required",
                "requireResidentKey": true,
                "userVerification": "required",
            },
            "excludeCredentials": exclude.iter().map(|id| json!({"type": "public-key", "id": id})).collect::<Vec<_>>(),
        })
    }

    /// `PublicKeyCredentialRequestOptions` as JSON for an assertion over `challenge`, limited
    /// to `allow` (credential ids, base64url), user verification required. With `allow`
    /// empty, any discoverable passkey of this relying party may answer (a sign-in).
    pub fn request_options(&self, challenge: &[u8], allow: &[String]) -> Value {
        json!({
            "challenge": URL_SAFE_NO_PAD.encode(challenge),
            "rpId": self.rp_id,
            "timeout": CEREMONY_TIMEOUT_MS,
            "userVerification": "required",
            "allowCredentials": allow.iter().map(|id| json!({"type": "public-key", "id": id})).collect::<Vec<_>>(),
        })
    }

    /// Checks a registration (`navigator.credentials.create`'s answer) made for `challenge`.
    /// The caller checks that the challenge was issued, unused and in time.
    pub fn verify_registration(
        &self,
        challenge: &[u8],
        user_handle: &[u8],
        credential: &Value,
    ) -> Result<NewCredential, CeremonyError> {
        let wire: RegistrationWire =
            serde_json::from_value(credential.clone()).map_err(|error| {
                CeremonyError::Malformed(format!("not a passkey registration: {error}"))
            })?;
        if wire.kind != "public-key" {
            return Err(CeremonyError::Malformed(
                "the credential is not a public key".into(),
            ));
        }
        let response = AuthenticatorAttestationResponse {
            client_data_json: decode("clientDataJSON", &wire.response.client_data_json)?,
            attestation_object: decode("attestationObject", &wire.response.attestation_object)?,
        };
        if !user_verified_at_registration(&response.attestation_object)? {
            return Err(CeremonyError::Refused(
                "the authenticator did not verify the person (no PIN, fingerprint or face)".into(),
            ));
        }
        let result = self
            .relying_party()
            .verify_registration(&fresh(challenge), &response, user_handle)
            .map_err(refused)?;
        let credential = result.credential;
        let (algorithm, spki) = spki_of(&credential.public_key)?;
        Ok(NewCredential {
            credential_id: URL_SAFE_NO_PAD.encode(&credential.id),
            algorithm,
            public_key_spki: URL_SAFE_NO_PAD.encode(spki),
            sign_count: credential.sign_count,
            backup_eligible: result.backup_eligible,
        })
    }

    /// Checks an assertion (`navigator.credentials.get`'s answer) over `challenge`, made by
    /// `key`. The caller has found `key` by the assertion's credential id (see
    /// [`assertion_credential_id`]) and decides what the passkey may do.
    pub fn verify_assertion(
        &self,
        challenge: &[u8],
        key: &StoredKey<'_>,
        credential: &Value,
    ) -> Result<Assertion, CeremonyError> {
        let wire = assertion_wire(credential)?;
        let raw_id = decode("rawId", &wire.raw_id)?;
        if URL_SAFE_NO_PAD.encode(&raw_id) != key.credential_id {
            return Err(CeremonyError::Refused("another passkey answered".into()));
        }
        let algorithm = Algorithm::parse(key.algorithm).ok_or_else(|| {
            CeremonyError::Malformed("the stored passkey's algorithm is unknown".into())
        })?;
        let spki = URL_SAFE_NO_PAD.decode(key.public_key_spki).map_err(|_| {
            CeremonyError::Malformed("the stored passkey's key is not base64url".into())
        })?;
        let public_key = public_key_of(algorithm, &spki)?;
        let stored = Credential {
            id: raw_id.clone(),
            public_key,
            sign_count: key.sign_count,
            user_id: Vec::new(),
            // The configured relying party, not the one at enrolment: a changed
            // HEARTH_PASSKEY_RP_ID voids every passkey, as the manual says.
            rp_id: self.rp_id.clone(),
            created_at: SystemTime::now(),
            backup_eligible: key.backup_eligible,
            backup_state: false,
        };
        let response = AuthenticatorAssertionResponse {
            client_data_json: decode("clientDataJSON", &wire.response.client_data_json)?,
            authenticator_data: decode("authenticatorData", &wire.response.authenticator_data)?,
            signature: decode("signature", &wire.response.signature)?,
            user_handle: None,
            credential_id: raw_id,
        };
        let result = self
            .relying_party()
            .verify_authentication(&stored, &fresh(challenge), &response)
            .map_err(|error| match error {
                WebAuthnError::SignCountInvalid { stored, received } => {
                    CeremonyError::CounterWentBack { stored, received }
                }
                other => refused(other),
            })?;
        Ok(Assertion {
            credential_id: key.credential_id.to_owned(),
            authenticator_data: URL_SAFE_NO_PAD.encode(&response.authenticator_data),
            client_data_json: URL_SAFE_NO_PAD.encode(&response.client_data_json),
            signature: URL_SAFE_NO_PAD.encode(&response.signature),
            sign_count: result.new_sign_count,
        })
    }
}

/// Whether a registration's authenticator data carries the UV flag. `caden` 0.9 checks it on
/// assertions but not on registrations (WebAuthn §7.1 step 15, "if user verification is
/// required"), so it is checked here: a passkey enrolled without verifying its holder would
/// later sign with the same laxity on other authenticators' terms.
fn user_verified_at_registration(attestation_object: &[u8]) -> Result<bool, CeremonyError> {
    let malformed = || CeremonyError::Malformed("the attestation object is not readable".into());
    let object: ciborium::Value =
        ciborium::from_reader(attestation_object).map_err(|_| malformed())?;
    let entries = object.as_map().ok_or_else(malformed)?;
    // CBOR maps must not repeat a key (RFC 8949 §5.6), and a repeated authData would let this
    // check read one and `caden` another: refused whole.
    for (at, (key, _)) in entries.iter().enumerate() {
        if entries[..at].iter().any(|(earlier, _)| earlier == key) {
            return Err(CeremonyError::Malformed(
                "the attestation object repeats a key".into(),
            ));
        }
    }
    let auth_data = entries
        .iter()
        .find(|(key, _)| key.as_text() == Some("authData"))
        .and_then(|(_, value)| value.as_bytes())
        .ok_or_else(malformed)?;
    let parsed = webauthn::authenticator_data::parse_authenticator_data(auth_data)
        .map_err(|_| malformed())?;
    Ok(parsed.flags.user_verified)
}

/// The credential id an assertion names (base64url), to find its stored passkey by.
pub fn assertion_credential_id(credential: &Value) -> Result<String, CeremonyError> {
    let wire = assertion_wire(credential)?;
    Ok(URL_SAFE_NO_PAD.encode(decode("rawId", &wire.raw_id)?))
}

/// The SHA-256 a statement is signed through: the WebAuthn challenge.
pub fn challenge_of(statement: &str) -> [u8; 32] {
    Sha256::digest(statement.as_bytes()).into()
}

/// The challenge as `caden` takes it. Its own five-minute expiry counts from now: how long a
/// challenge lives is decided by the caller, on the server's clock.
fn fresh(challenge: &[u8]) -> Challenge {
    Challenge {
        bytes: challenge.to_vec(),
        created_at: SystemTime::now(),
    }
}

fn refused(error: WebAuthnError) -> CeremonyError {
    CeremonyError::Refused(error.to_string())
}

fn decode(field: &str, text: &str) -> Result<Vec<u8>, CeremonyError> {
    // Browsers' toJSON writes base64url without padding; tolerate padding some encoders add.
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|_| CeremonyError::Malformed(format!("{field} is not base64url")))
}

#[derive(Deserialize)]
struct RegistrationWire {
    #[serde(rename = "type")]
    kind: String,
    response: AttestationWire,
}

#[derive(Deserialize)]
struct AttestationWire {
    #[serde(rename = "clientDataJSON")]
    client_data_json: String,
    #[serde(rename = "attestationObject")]
    attestation_object: String,
}

#[derive(Deserialize)]
struct AssertionWire {
    #[serde(rename = "rawId")]
    raw_id: String,
    #[serde(rename = "type")]
    kind: String,
    response: AssertionResponseWire,
}

#[derive(Deserialize)]
struct AssertionResponseWire {
    #[serde(rename = "clientDataJSON")]
    client_data_json: String,
    #[serde(rename = "authenticatorData")]
    authenticator_data: String,
    signature: String,
}

fn assertion_wire(credential: &Value) -> Result<AssertionWire, CeremonyError> {
    let wire: AssertionWire = serde_json::from_value(credential.clone())
        .map_err(|error| CeremonyError::Malformed(format!("not a passkey assertion: {error}")))?;
    if wire.kind != "public-key" {
        return Err(CeremonyError::Malformed(
            "the credential is not a public key".into(),
        ));
    }
    Ok(wire)
}

/// The algorithm and DER SubjectPublicKeyInfo of a registered key.
/// The key is checked here, at enrolment: with attestation `none` nothing signs over it, and
/// `caden` 0.9 first parses it when it verifies an assertion, so a point off its curve (or a
/// small-order Ed25519 point, which matches signatures it never made) would otherwise be kept.
fn spki_of(key: &PublicKey) -> Result<(Algorithm, Vec<u8>), CeremonyError> {
    let not_a_key = || CeremonyError::Refused("the passkey's public key is not a valid key".into());
    match key {
        PublicKey::ES256 { x, y } if x.len() == 32 && y.len() == 32 => {
            let mut point = vec![0x04];
            point.extend_from_slice(x);
            point.extend_from_slice(y);
            p256::PublicKey::from_sec1_bytes(&point).map_err(|_| not_a_key())?;
            let mut spki = P256_SPKI_PREFIX.to_vec();
            spki.extend_from_slice(&point);
            Ok((Algorithm::Es256, spki))
        }
        PublicKey::EdDSA(raw) if raw.len() == 32 => {
            let bytes: &[u8; 32] = raw.as_slice().try_into().map_err(|_| not_a_key())?;
            let point = ed25519_dalek::VerifyingKey::from_bytes(bytes).map_err(|_| not_a_key())?;
            if point.is_weak() {
                return Err(not_a_key());
            }
            let mut spki = ED25519_SPKI_PREFIX.to_vec();
            spki.extend_from_slice(raw);
            Ok((Algorithm::Ed25519, spki))
        }
        _ => Err(CeremonyError::Refused(
            "only ES256 (P-256) and Ed25519 passkeys are accepted".into(),
        )),
    }
}

fn public_key_of(algorithm: Algorithm, spki: &[u8]) -> Result<PublicKey, CeremonyError> {
    let unreadable = || CeremonyError::Malformed("the stored passkey's key is unreadable".into());
    match algorithm {
        Algorithm::Es256 => {
            let point = spki
                .strip_prefix(&P256_SPKI_PREFIX[..])
                .ok_or_else(unreadable)?;
            match point {
                [0x04, coordinates @ ..] if coordinates.len() == 64 => Ok(PublicKey::ES256 {
                    x: coordinates[..32].to_vec(),
                    y: coordinates[32..].to_vec(),
                }),
                _ => Err(unreadable()),
            }
        }
        Algorithm::Ed25519 => {
            let raw = spki
                .strip_prefix(&ED25519_SPKI_PREFIX[..])
                .ok_or_else(unreadable)?;
            if raw.len() != 32 {
                return Err(unreadable());
            }
            Ok(PublicKey::EdDSA(raw.to_vec()))
        }
    }
}
