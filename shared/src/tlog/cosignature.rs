//! C2SP `tlog-cosignature` v1 with Ed25519: a witness's timestamped signature over a
//! checkpoint, as a signed-note signature line.
//!
//! The key id is `SHA-256(name || 0x0A || 0x04 || public key)[:4]`, the signature blob is
//! `key id || timestamp (u64, big-endian) || Ed25519 signature`, and what is signed is
//! `cosignature/v1\ntime <timestamp>\n` followed by the checkpoint's whole note text.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

use super::note::{ParsedVkey, check_key_name, format_vkey, parse_vkey, typed_key_id};

/// The signature type byte of an Ed25519 cosignature (tlog-cosignature v1).
pub const COSIGNATURE_V1: u8 = 0x04;

/// The latest timestamp a cosignature may carry.
const MAX_TIMESTAMP: u64 = (1 << 63) - 1;

/// The message a v1 cosignature signs.
fn signed_message(timestamp: u64, checkpoint_text: &str) -> String {
    format!("cosignature/v1\ntime {timestamp}\n{checkpoint_text}")
}

/// A witness's signing key with its name.
pub struct Cosigner {
    name: String,
    key: SigningKey,
    id: [u8; 4],
}

impl Cosigner {
    /// The cosigner `name` (a signed-note key name) from a 32-byte Ed25519 seed.
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, String> {
        check_key_name(name)?;
        let key = SigningKey::from_bytes(seed);
        let id = typed_key_id(name, COSIGNATURE_V1, key.verifying_key().as_bytes());
        Ok(Self {
            name: name.to_owned(),
            key,
            id,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw 32-byte public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// The verifier key, type 0x04.
    pub fn vkey(&self) -> String {
        format_vkey(&self.name, COSIGNATURE_V1, &self.public_key())
    }

    /// The cosignature line over `checkpoint_text` (a checkpoint's note text, ending in a
    /// newline) at `timestamp` (Unix seconds, never 0).
    pub fn cosign(&self, checkpoint_text: &str, timestamp: u64) -> String {
        let timestamp = timestamp.clamp(1, MAX_TIMESTAMP);
        let signature = self
            .key
            .sign(signed_message(timestamp, checkpoint_text).as_bytes());
        let mut blob = self.id.to_vec();
        blob.extend_from_slice(&timestamp.to_be_bytes());
        blob.extend_from_slice(&signature.to_bytes());
        format!("\u{2014} {} {}\n", self.name, STANDARD.encode(blob))
    }
}

/// A witness's public key, to check its cosignatures with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignatureVerifier {
    name: String,
    id: [u8; 4],
    key: VerifyingKey,
}

/// Why a cosignature line did not verify. The text is safe to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CosignatureError {
    #[error("not a signature line")]
    Malformed,
    #[error("by another key")]
    OtherKey,
    #[error("the cosignature by {0} does not verify")]
    BadSignature(String),
}

impl CosignatureVerifier {
    /// Parses a type-0x04 verifier key.
    pub fn parse(vkey: &str) -> Result<Self, String> {
        let ParsedVkey {
            name,
            id,
            key_type,
            public,
        } = parse_vkey(vkey)?;
        if key_type != COSIGNATURE_V1 {
            return Err(format!(
                "{name}'s key is not a tlog-cosignature v1 key (type 0x04)"
            ));
        }
        let public: [u8; 32] = public
            .try_into()
            .map_err(|_| "an Ed25519 public key is 32 bytes".to_owned())?;
        let key = VerifyingKey::from_bytes(&public)
            .map_err(|_| "the key is not a point on the curve".to_owned())?;
        Ok(Self {
            name: name.to_owned(),
            id,
            key,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn public_key(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    pub fn vkey(&self) -> String {
        format_vkey(&self.name, COSIGNATURE_V1, &self.public_key())
    }

    /// Checks one signature line (`— <name> <base64>`, with or without its newline) as this
    /// witness's cosignature of `checkpoint_text`, and returns its timestamp.
    pub fn verify_line(&self, line: &str, checkpoint_text: &str) -> Result<u64, CosignatureError> {
        let (name, blob) = split_line(line)?;
        if name != self.name || blob.len() < 4 || blob[..4] != self.id {
            return Err(CosignatureError::OtherKey);
        }
        let bad = || CosignatureError::BadSignature(self.name.clone());
        if blob.len() != 4 + 8 + 64 {
            return Err(bad());
        }
        let timestamp = u64::from_be_bytes(blob[4..12].try_into().expect("8 bytes"));
        let signature = Signature::from_slice(&blob[12..]).map_err(|_| bad())?;
        if timestamp == 0 || timestamp > MAX_TIMESTAMP {
            return Err(bad());
        }
        self.key
            .verify(
                signed_message(timestamp, checkpoint_text).as_bytes(),
                &signature,
            )
            .map_err(|_| bad())?;
        Ok(timestamp)
    }
}

/// A signature line's key name and decoded blob.
fn split_line(line: &str) -> Result<(&str, Vec<u8>), CosignatureError> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let rest = line
        .strip_prefix("\u{2014} ")
        .ok_or(CosignatureError::Malformed)?;
    let (name, encoded) = rest.split_once(' ').ok_or(CosignatureError::Malformed)?;
    let blob = STANDARD
        .decode(encoded)
        .map_err(|_| CosignatureError::Malformed)?;
    Ok((name, blob))
}

/// A signed note's text and its signature lines (each without its newline), or `None` when
/// it is not text, a blank line and at least one signature line.
pub fn split_note(note: &str) -> Option<(&str, Vec<&str>)> {
    if !note.ends_with('\n') {
        return None;
    }
    let split = note.rfind("\n\n")?;
    let (text, signatures) = (&note[..split + 1], &note[split + 2..]);
    let lines: Vec<&str> = signatures.strip_suffix('\n')?.split('\n').collect();
    (!lines.is_empty() && lines.iter().all(|line| line.starts_with('\u{2014}')))
        .then_some((text, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECKPOINT: &str = "example.com/log\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";

    #[test]
    fn a_cosignature_verifies_with_its_own_key_and_time_only() {
        let witness = Cosigner::from_seed("witness.example/w1", &[9; 32]).unwrap();
        let verifier = CosignatureVerifier::parse(&witness.vkey()).unwrap();
        let line = witness.cosign(CHECKPOINT, 1_700_000_000);
        assert_eq!(verifier.verify_line(&line, CHECKPOINT), Ok(1_700_000_000));
        assert_eq!(
            verifier.verify_line(&line, &CHECKPOINT.replace('3', "4")),
            Err(CosignatureError::BadSignature("witness.example/w1".into()))
        );
        let other = Cosigner::from_seed("witness.example/w2", &[9; 32]).unwrap();
        assert_eq!(
            verifier.verify_line(&other.cosign(CHECKPOINT, 5), CHECKPOINT),
            Err(CosignatureError::OtherKey)
        );
        // The same name and key as a log key (type 0x01) is not a cosigner's key.
        let as_log_key = crate::tlog::note::NoteSigner::from_seed("witness.example/w1", &[9; 32]);
        assert!(CosignatureVerifier::parse(&as_log_key.unwrap().vkey()).is_err());
    }

    #[test]
    fn a_timestamp_of_zero_is_never_written() {
        let witness = Cosigner::from_seed("w", &[1; 32]).unwrap();
        let verifier = CosignatureVerifier::parse(&witness.vkey()).unwrap();
        assert_eq!(
            verifier.verify_line(&witness.cosign(CHECKPOINT, 0), CHECKPOINT),
            Ok(1)
        );
    }

    #[test]
    fn a_note_splits_into_text_and_signature_lines() {
        let note = format!("{CHECKPOINT}\n\u{2014} a AAAA\n\u{2014} b BBBB\n");
        let (text, lines) = split_note(&note).unwrap();
        assert_eq!((text, lines.len()), (CHECKPOINT, 2));
        assert!(split_note(CHECKPOINT).is_none());
        assert!(split_note(&format!("{CHECKPOINT}\n")).is_none());
        assert!(split_note(&format!("{CHECKPOINT}\nnot a signature\n")).is_none());
    }
}
