//! The device half of `hearth assistant`: who is speaking, the key that signs for them, and
//! the one thing a device remembers between turns, which request's question it last read
//! aloud to each person.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use http::{HeaderName, HeaderValue};

use crate::auth::attestation::{
    self, ATTESTATION_HEADER, Attestation, AttestationRefusal, KEY_ID_HEADER, SIGNATURE_HEADER,
};
use crate::secret::Secret;

/// The key a device signs attestations with: the deployment's host key (`COUNTERSIGN_HOST_KEY`,
/// no id), or one of a household's device keys (`hearth admin device-key add`), named by id.
#[derive(Debug, Clone)]
pub struct DeviceKey {
    pub id: Option<String>,
    pub secret: Secret,
}

impl DeviceKey {
    /// The deployment's host key.
    pub fn host(secret: Secret) -> Self {
        Self { id: None, secret }
    }

    /// A household device key as `hearth admin device-key add` prints it, `KEY_ID:KEY`.
    pub fn parse_household(text: &str) -> Result<Self, String> {
        match text.trim().split_once(':') {
            Some((id, key)) if !id.is_empty() && !key.is_empty() => Ok(Self {
                id: Some(id.to_owned()),
                secret: Secret::new(key),
            }),
            _ => Err("HEARTH_DEVICE_KEY must be KEY_ID:KEY, as `hearth admin device-key add` prints them".into()),
        }
    }
}

/// One turn as the device heard it.
#[derive(Debug, Clone)]
pub struct Heard {
    pub member_id: String,
    pub turn_id: String,
    pub words: String,
    /// The request whose question the device last read aloud to this person, if any.
    pub answering: Option<String>,
}

impl Heard {
    /// The signed headers every MCP request of this turn carries. `now` is Unix seconds.
    /// Words or ids the attestation contract refuses are named here, before anything is sent.
    pub fn sign(
        &self,
        key: &DeviceKey,
        now: i64,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
        let attestation = Attestation {
            member_id: self.member_id.clone(),
            turn_id: self.turn_id.clone(),
            utterances: vec![self.words.clone()],
            issued_at: now,
            answering: self.answering.clone(),
        };
        if let Err(AttestationRefusal::Malformed(reason)) = attestation::check_shape(&attestation) {
            return Err(format!("the device cannot sign this turn: {reason}"));
        }
        let encoded = attestation.encode();
        let signature = attestation::sign(key.secret.expose(), &encoded);
        let value = |text: &str| {
            HeaderValue::from_str(text)
                .map_err(|_| "a header value is not visible ASCII".to_owned())
        };
        let mut headers = vec![
            (
                HeaderName::from_static(ATTESTATION_HEADER),
                value(&encoded)?,
            ),
            (
                HeaderName::from_static(SIGNATURE_HEADER),
                value(&signature)?,
            ),
        ];
        if let Some(id) = &key.id {
            headers.push((HeaderName::from_static(KEY_ID_HEADER), value(id)?));
        }
        Ok(headers)
    }
}

/// What the device remembers: per person, the request whose question it last read aloud.
/// The command line keeps it in `<data dir>/assistant-device.json`; the demo page keeps its
/// own.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceMemory {
    pub questions: BTreeMap<String, String>,
}

impl DeviceMemory {
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("assistant-device.json")
    }

    /// The memory in `path`; none yet (no file) is empty. A file that is not this shape is
    /// an error that names it, rather than a silently forgotten question.
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|error| format!("{} is not the device's memory: {error}", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(error) => Err(format!("{} could not be read: {error}", path.display())),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|error| format!("{} could not be created: {error}", dir.display()))?;
        }
        let text = serde_json::to_vec_pretty(self).expect("the memory serialises");
        std::fs::write(path, text)
            .map_err(|error| format!("{} could not be written: {error}", path.display()))
    }

    /// Applies what a turn read aloud or settled for `member`.
    pub fn remember(&mut self, member: &str, change: &QuestionChange) {
        match change {
            QuestionChange::Asked(request) => {
                self.questions.insert(member.to_owned(), request.clone());
            }
            QuestionChange::Settled => {
                self.questions.remove(member);
            }
            QuestionChange::Unchanged => {}
        }
    }
}

/// What one turn did to the question the device holds for the speaker.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "request_id")]
pub enum QuestionChange {
    /// A question was read aloud: the speaker's next answer is for this request.
    Asked(String),
    /// The question was answered (placed, cancelled or decided).
    Settled,
    Unchanged,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heard(words: &str) -> Heard {
        Heard {
            member_id: "dana".into(),
            turn_id: "t-1".into(),
            words: words.into(),
            answering: Some("req-1".into()),
        }
    }

    #[test]
    fn a_turn_is_signed_as_the_attestation_contract_says() {
        let key = DeviceKey::parse_household("dk-1:secret").unwrap();
        let headers = heard("order two packs of AA batteries")
            .sign(&key, 1_800_000_000)
            .unwrap();
        let encoded = headers[0].1.to_str().unwrap();
        assert_eq!(
            headers[1].1.to_str().unwrap(),
            attestation::sign("secret", encoded)
        );
        assert_eq!(
            headers[2],
            (
                HeaderName::from_static(KEY_ID_HEADER),
                HeaderValue::from_static("dk-1")
            )
        );
        let host = DeviceKey::host(Secret::new("host"));
        assert_eq!(heard("yes").sign(&host, 1).unwrap().len(), 2);
    }

    #[test]
    fn words_hold_500_characters_and_not_501() {
        let key = DeviceKey::host(Secret::new("k"));
        assert!(heard(&"a".repeat(500)).sign(&key, 1).is_ok());
        let refused = heard(&"a".repeat(501)).sign(&key, 1).unwrap_err();
        assert!(refused.contains("cannot sign"), "{refused}");
    }

    #[test]
    fn household_keys_are_key_id_colon_key() {
        for bad in ["", "nocolon", ":key", "id:"] {
            assert!(DeviceKey::parse_household(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_memory_keeps_one_question_per_person() {
        let dir = tempfile::tempdir().unwrap();
        let path = DeviceMemory::path(dir.path());
        let mut memory = DeviceMemory::load(&path).unwrap();
        memory.remember("dana", &QuestionChange::Asked("req-1".into()));
        memory.remember("mia", &QuestionChange::Asked("req-2".into()));
        memory.remember("mia", &QuestionChange::Settled);
        memory.save(&path).unwrap();
        let loaded = DeviceMemory::load(&path).unwrap();
        assert_eq!(
            loaded.questions.get("dana").map(String::as_str),
            Some("req-1")
        );
        assert!(!loaded.questions.contains_key("mia"));
        std::fs::write(&path, "[]").unwrap();
        assert!(
            DeviceMemory::load(&path)
                .unwrap_err()
                .contains("not the device's memory")
        );
    }
}
