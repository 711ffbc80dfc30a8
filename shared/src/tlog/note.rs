//! C2SP `signed-note` with Ed25519: signing notes, verifier keys, and verifying notes.
//!
//! A note is text ending in a newline, a blank line, and signature lines
//! `— <key name> <base64(key id || signature)>`. The key id is the first four bytes of
//! `SHA-256(name || 0x0A || 0x01 || public key)`, and a verifier key is written
//! `<name>+<hex key id>+<base64(0x01 || public key)>`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

/// The signature type byte of Ed25519 in keys and key ids.
const ED25519: u8 = 0x01;

/// A verifier key's parts, `<name>+<hex key id>+<base64(type || public key)>`, with the key id
/// checked against the name, type and key (C2SP signed-note). Cosigners' keys (type 0x04,
/// `tlog-cosignature`) are read with the same form.
pub(crate) fn parse_vkey(vkey: &str) -> Result<ParsedVkey<'_>, String> {
    let mut parts = vkey.splitn(3, '+');
    let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("a verifier key is name+hex id+base64 key".into());
    };
    if !is_key_name(name) {
        return Err("the verifier key's name is not a key name".into());
    }
    let mut parsed_id = [0u8; 4];
    if id.len() != 8 || hex::decode_to_slice(id, &mut parsed_id).is_err() {
        return Err("the verifier key's id is not 8 hex digits".into());
    }
    let key = STANDARD
        .decode(key)
        .map_err(|_| "the verifier key's key is not base64".to_owned())?;
    let Some((&key_type, public)) = key.split_first() else {
        return Err("the verifier key has no key".into());
    };
    if typed_key_id(name, key_type, public) != parsed_id {
        return Err("the verifier key's id does not match its name and key".into());
    }
    Ok(ParsedVkey {
        name,
        id: parsed_id,
        key_type,
        public: public.to_vec(),
    })
}

/// A verifier key's parts.
pub(crate) struct ParsedVkey<'a> {
    pub name: &'a str,
    pub id: [u8; 4],
    /// The signature type byte: 0x01 for a note signer, 0x04 for a cosigner.
    pub key_type: u8,
    pub public: Vec<u8>,
}

/// `SHA-256(name || 0x0A || type || key)[:4]`: the key id of signed-note and tlog-cosignature.
pub(crate) fn typed_key_id(name: &str, key_type: u8, public_key: &[u8]) -> [u8; 4] {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update(b"\n");
    hasher.update([key_type]);
    hasher.update(public_key);
    let digest = hasher.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

/// A verifier key `<name>+<hex key id>+<base64(type || key)>`.
pub(crate) fn format_vkey(name: &str, key_type: u8, public_key: &[u8]) -> String {
    let mut key = vec![key_type];
    key.extend_from_slice(public_key);
    format!(
        "{name}+{}+{}",
        hex::encode(typed_key_id(name, key_type, public_key)),
        STANDARD.encode(key)
    )
}

/// Why a note did not verify. The text is safe to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("the note is not text and a signature block")]
    Malformed,
    #[error("a signature line is malformed")]
    MalformedSignature,
    #[error("the signature by {0} does not verify")]
    BadSignature(String),
    #[error("no signature by a known key")]
    NoKnownSignature,
}

/// A key name, or why it is not one (for a signer's or verifier's constructor).
pub(crate) fn check_key_name(name: &str) -> Result<(), String> {
    if is_key_name(name) {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a key name (non-empty, no spaces, no +)"
        ))
    }
}

/// A key name must be non-empty, without spaces or `+` (C2SP signed-note).
pub fn is_key_name(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c == '+')
}

fn key_id(name: &str, public_key: &[u8; 32]) -> [u8; 4] {
    typed_key_id(name, ED25519, public_key)
}

/// A signing key with its name: what signs checkpoints.
pub struct NoteSigner {
    name: String,
    key: SigningKey,
    id: [u8; 4],
}

impl NoteSigner {
    /// The signer of `name` (see [`is_key_name`]) from a 32-byte Ed25519 seed.
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, String> {
        check_key_name(name)?;
        let key = SigningKey::from_bytes(seed);
        let id = key_id(name, key.verifying_key().as_bytes());
        Ok(Self {
            name: name.to_owned(),
            key,
            id,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The public key, 32 bytes.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// The verifier key anyone checks this signer's notes with.
    pub fn vkey(&self) -> String {
        format_vkey(&self.name, ED25519, &self.public_key())
    }

    /// This signer's signature line for `text` (which ends in a newline).
    pub fn signature_line(&self, text: &str) -> String {
        let signature = self.key.sign(text.as_bytes());
        let mut blob = self.id.to_vec();
        blob.extend_from_slice(&signature.to_bytes());
        format!("\u{2014} {} {}\n", self.name, STANDARD.encode(blob))
    }
}

/// Signs `text` (ending in a newline) with every signer, in order: during a key rotation the
/// old and the new key both sign.
pub fn sign(text: &str, signers: &[&NoteSigner]) -> String {
    let mut note = format!("{text}\n");
    for signer in signers {
        note.push_str(&signer.signature_line(text));
    }
    note
}

/// A key notes are verified with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    name: String,
    id: [u8; 4],
    key: VerifyingKey,
}

impl NoteVerifier {
    /// The verifier of `name` (see [`is_key_name`]) with an Ed25519 public key.
    pub fn new(name: &str, public_key: &[u8; 32]) -> Result<Self, String> {
        check_key_name(name)?;
        let key = VerifyingKey::from_bytes(public_key)
            .map_err(|_| "the public key is not a point on the curve".to_owned())?;
        Ok(Self {
            name: name.to_owned(),
            id: key_id(name, public_key),
            key,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The public key, 32 bytes.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// This verifier as a verifier key, `<name>+<hex id>+<base64(0x01 || key)>`.
    pub fn vkey(&self) -> String {
        format_vkey(&self.name, ED25519, &self.public_key())
    }

    /// Parses a verifier key `<name>+<hex id>+<base64(0x01 || key)>`; its id must match.
    pub fn parse(vkey: &str) -> Result<Self, String> {
        let ParsedVkey {
            name,
            id,
            key_type,
            public,
        } = parse_vkey(vkey)?;
        if key_type != ED25519 {
            return Err("the verifier key is not an Ed25519 key".into());
        }
        let public: [u8; 32] = public
            .try_into()
            .map_err(|_| "an Ed25519 public key is 32 bytes".to_owned())?;
        let key = VerifyingKey::from_bytes(&public)
            .map_err(|_| "the verifier key is not a point on the curve".to_owned())?;
        Ok(Self {
            name: name.to_owned(),
            id,
            key,
        })
    }
}

/// Verifies `note` against `verifiers` and returns its text (what was signed). Signatures by
/// unknown keys are ignored; a known key's bad signature fails the note; at least one known
/// key must have signed.
pub fn verify<'a>(note: &'a str, verifiers: &[NoteVerifier]) -> Result<&'a str, NoteError> {
    verify_lines(note, verifiers).map(|(text, _)| text)
}

/// As [`verify`], and also returns the signature lines (without their newlines) that known
/// keys made: what a witness keeps of a checkpoint it cosigns.
pub fn verify_lines<'a>(
    note: &'a str,
    verifiers: &[NoteVerifier],
) -> Result<(&'a str, Vec<&'a str>), NoteError> {
    if note.chars().any(|c| c < ' ' && c != '\n') || !note.ends_with('\n') {
        return Err(NoteError::Malformed);
    }
    let split = note.rfind("\n\n").ok_or(NoteError::Malformed)?;
    let (text, signatures) = (&note[..split + 1], &note[split + 2..]);
    // At least one signature line, each ending in a newline; an empty block is no signature.
    let lines = signatures
        .strip_suffix('\n')
        .filter(|lines| !lines.is_empty())
        .ok_or(NoteError::Malformed)?;
    let mut verified = Vec::new();
    for line in lines.split('\n') {
        let rest = line
            .strip_prefix("\u{2014} ")
            .ok_or(NoteError::MalformedSignature)?;
        let (name, encoded) = rest.split_once(' ').ok_or(NoteError::MalformedSignature)?;
        let blob = STANDARD
            .decode(encoded)
            .map_err(|_| NoteError::MalformedSignature)?;
        if blob.len() < 4 {
            return Err(NoteError::MalformedSignature);
        }
        let Some(verifier) = verifiers
            .iter()
            .find(|v| v.name == name && v.id == blob[..4])
        else {
            continue;
        };
        let signature = Signature::from_slice(&blob[4..])
            .map_err(|_| NoteError::BadSignature(name.to_owned()))?;
        verifier
            .key
            .verify(text.as_bytes(), &signature)
            .map_err(|_| NoteError::BadSignature(name.to_owned()))?;
        verified.push(line);
    }
    if verified.is_empty() {
        Err(NoteError::NoKnownSignature)
    } else {
        Ok((text, verified))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier() -> NoteVerifier {
        let signer = NoteSigner::from_seed("hearth.example/hearth-log/v1", &[4; 32]).unwrap();
        NoteVerifier::parse(&signer.vkey()).unwrap()
    }

    #[test]
    fn a_note_whose_signature_block_is_empty_is_malformed_not_a_panic() {
        // What check_receipt hands to verify from a caller's tlog-proof: text, a blank line,
        // and nothing after it. Found by the tlog fuzz target's seeds.
        for note in ["o\n1\nAAAA\n\n", "\n\n", "x\n\n\n"] {
            assert!(verify(note, &[verifier()]).is_err(), "{note:?}");
        }
    }
}
