//! The credentials Hearth authenticates with, wherever they come from: the environment, the
//! generated local development file, or Secrets Manager secrets under Lambda. All of them use
//! the same names (`MCP_CLIENT_ID`, `MCP_CLIENT_SECRET`, `MCP_JWT_SECRET`,
//! `MCP_JUDGE_TOKEN_HASHES`, and the other keys in [`OTHER_SECRET_NAMES`]), so one parser
//! serves every source.
//!
//! A credential that is missing or too weak is left out, never replaced by something weaker:
//! what depends on it then denies. The problems found are reported by name only, so a caller
//! can log them without logging a value.

use crate::secret::Secret;

/// `MCP_JWT_SECRET` must have at least this many bytes; a shorter key signs nothing.
pub const MIN_JWT_SECRET_BYTES: usize = 32;

/// The names of the credentials that authenticate callers, in the order they are reported.
pub const CREDENTIAL_NAMES: [&str; 4] = [
    "MCP_CLIENT_ID",
    "MCP_CLIENT_SECRET",
    "MCP_JWT_SECRET",
    "MCP_JUDGE_TOKEN_HASHES",
];

/// The key Hearth presents to the AionRealm backend; optional, and kept with the others.
pub const AION_KEY_NAME: &str = "AION_BACKEND_API_KEY";

/// The key devices sign speaker attestations with; without it Countersign's tools refuse.
pub const HOST_KEY_NAME: &str = "COUNTERSIGN_HOST_KEY";

/// The key guardian notifications are signed with; without it none are sent.
pub const NOTIFY_KEY_NAME: &str = "COUNTERSIGN_NOTIFY_KEY";

/// The bearer key of an OpenAI-compatible intent judge's server; optional, and kept with the
/// others (a local server needs none).
pub const JUDGE_KEY_NAME: &str = "COUNTERSIGN_JUDGE_API_KEY";

/// The secret the transparency logs' signing key is derived from; locally generated into the
/// data directory when unset.
pub const LOG_KEY_NAME: &str = "HEARTH_LOG_KEY";

/// During a log key rotation, the previous key's secret: it keeps signing beside the new one.
pub const LOG_KEY_PREVIOUS_NAME: &str = "HEARTH_LOG_KEY_PREVIOUS";

/// Secrets that are not caller credentials but are kept with them.
pub const OTHER_SECRET_NAMES: [&str; 6] = [
    AION_KEY_NAME,
    HOST_KEY_NAME,
    NOTIFY_KEY_NAME,
    JUDGE_KEY_NAME,
    LOG_KEY_NAME,
    LOG_KEY_PREVIOUS_NAME,
];

/// What Hearth accepts and signs with. Every field may be absent; see the module comment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// The OAuth client Alexa+ authenticates as (`MCP_CLIENT_ID`).
    pub client_id: Option<String>,
    /// That client's secret (`MCP_CLIENT_SECRET`).
    pub client_secret: Option<Secret>,
    /// The HS256 key for access tokens (`MCP_JWT_SECRET`), at least 32 bytes.
    pub jwt_secret: Option<Secret>,
    /// SHA-256 of each accepted static judge token (`MCP_JUDGE_TOKEN_HASHES`).
    pub judge_token_hashes: Vec<[u8; 32]>,
    /// The bearer key for the AionRealm backend (`AION_BACKEND_API_KEY`), needed only when
    /// `AION_BACKEND_URL` is set.
    pub aion_api_key: Option<Secret>,
    /// The HMAC key for device attestations (`COUNTERSIGN_HOST_KEY`).
    pub host_key: Option<Secret>,
    /// The HMAC key for guardian notifications (`COUNTERSIGN_NOTIFY_KEY`).
    pub notify_key: Option<Secret>,
    /// The intent judge server's bearer key (`COUNTERSIGN_JUDGE_API_KEY`).
    pub judge_api_key: Option<Secret>,
    /// What the log signing key is derived from (`HEARTH_LOG_KEY`).
    pub log_key: Option<Secret>,
    /// The previous log key during a rotation (`HEARTH_LOG_KEY_PREVIOUS`).
    pub log_key_previous: Option<Secret>,
}

/// Why a credential was left out. Carries names, never values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialProblem {
    #[error("MCP_JWT_SECRET is shorter than {MIN_JWT_SECRET_BYTES} bytes")]
    ShortJwtSecret,
    #[error("MCP_JUDGE_TOKEN_HASHES entry {position} is not a 64-character hex SHA-256")]
    BadJudgeTokenHash { position: usize },
}

impl Credentials {
    /// Reads every credential from any name-to-value source. Blank values count as absent.
    /// Returns what could be used and what was left out.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> (Self, Vec<CredentialProblem>) {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let mut problems = Vec::new();
        let jwt_secret = get("MCP_JWT_SECRET").and_then(|secret| {
            if secret.len() >= MIN_JWT_SECRET_BYTES {
                Some(Secret::new(secret))
            } else {
                problems.push(CredentialProblem::ShortJwtSecret);
                None
            }
        });
        let judge_token_hashes =
            match parse_token_hashes(&get("MCP_JUDGE_TOKEN_HASHES").unwrap_or_default()) {
                Ok(hashes) => hashes,
                Err(problem) => {
                    problems.push(problem);
                    Vec::new()
                }
            };
        let credentials = Self {
            client_id: get("MCP_CLIENT_ID").map(|id| id.trim().to_owned()),
            client_secret: get("MCP_CLIENT_SECRET").map(Secret::new),
            jwt_secret,
            judge_token_hashes,
            aion_api_key: get(AION_KEY_NAME).map(Secret::new),
            host_key: get(HOST_KEY_NAME).map(Secret::new),
            notify_key: get(NOTIFY_KEY_NAME).map(Secret::new),
            judge_api_key: get(JUDGE_KEY_NAME).map(Secret::new),
            log_key: get(LOG_KEY_NAME).map(Secret::new),
            log_key_previous: get(LOG_KEY_PREVIOUS_NAME).map(Secret::new),
        };
        (credentials, problems)
    }

    /// Reads the credentials from a Secrets Manager secret string: one JSON object whose keys
    /// are the credential names and whose values are strings.
    pub fn from_secret_json(
        json: &str,
    ) -> Result<(Self, Vec<CredentialProblem>), SecretFormatError> {
        Ok(Self::from_secret_object(&secret_object(json)?))
    }

    /// Reads the credentials from secret strings already parsed by [`secret_object`] and
    /// merged.
    pub fn from_secret_object(object: &SecretObject) -> (Self, Vec<CredentialProblem>) {
        Self::from_lookup(|name| object.get(name).cloned())
    }

    /// The caller-authenticating credential names that are absent, for a startup warning.
    pub fn missing(&self) -> Vec<&'static str> {
        let present = [
            self.client_id.is_some(),
            self.client_secret.is_some(),
            self.jwt_secret.is_some(),
            !self.judge_token_hashes.is_empty(),
        ];
        CREDENTIAL_NAMES
            .iter()
            .zip(present)
            .filter(|(_, present)| !present)
            .map(|(name, _)| *name)
            .collect()
    }
}

/// A secret string's credentials by name.
pub type SecretObject = std::collections::BTreeMap<String, String>;

/// Parses a Secrets Manager secret string: one JSON object whose values are strings.
pub fn secret_object(json: &str) -> Result<SecretObject, SecretFormatError> {
    serde_json::from_str(json).map_err(|_| SecretFormatError)
}

/// The secret string is not a JSON object of string values. Says nothing about the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the secret is not a JSON object whose values are strings")]
pub struct SecretFormatError;

/// Parses a comma-separated list of hex SHA-256 hashes (blank entries are ignored).
pub fn parse_token_hashes(list: &str) -> Result<Vec<[u8; 32]>, CredentialProblem> {
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .enumerate()
        .map(|(index, entry)| {
            let mut hash = [0u8; 32];
            hex::decode_to_slice(entry, &mut hash)
                .map(|()| hash)
                .map_err(|_| CredentialProblem::BadJudgeTokenHash {
                    position: index + 1,
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::sha256_hex;

    const KEY_32: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_jwt_secret_of_32_bytes_is_used_and_31_is_left_out() {
        let (credentials, problems) =
            Credentials::from_secret_json(&format!(r#"{{"MCP_JWT_SECRET":"{KEY_32}"}}"#)).unwrap();
        assert_eq!(credentials.jwt_secret, Some(Secret::new(KEY_32)));
        assert!(problems.is_empty());
        let (credentials, problems) =
            Credentials::from_secret_json(&format!(r#"{{"MCP_JWT_SECRET":"{}"}}"#, &KEY_32[1..]))
                .unwrap();
        assert_eq!(credentials.jwt_secret, None);
        assert_eq!(problems, vec![CredentialProblem::ShortJwtSecret]);
    }

    #[test]
    fn the_secret_json_carries_every_credential() {
        let hash = sha256_hex("judge");
        let json = format!(
            r#"{{"MCP_CLIENT_ID":"alexa","MCP_CLIENT_SECRET":"s","MCP_JWT_SECRET":"{KEY_32}","MCP_JUDGE_TOKEN_HASHES":"{hash}","OTHER":"ignored"}}"#
        );
        let (credentials, problems) = Credentials::from_secret_json(&json).unwrap();
        assert!(problems.is_empty());
        assert_eq!(credentials.client_id.as_deref(), Some("alexa"));
        assert_eq!(credentials.client_secret, Some(Secret::new("s")));
        assert_eq!(credentials.judge_token_hashes.len(), 1);
        assert!(credentials.missing().is_empty());
    }

    #[test]
    fn malformed_secrets_are_refused_without_echoing_them() {
        for json in ["", "[]", "not json", r#"{"MCP_CLIENT_ID": 7}"#] {
            let error = Credentials::from_secret_json(json).unwrap_err();
            assert!(!error.to_string().contains(json) || json.is_empty());
        }
        let (credentials, problems) =
            Credentials::from_secret_json(r#"{"MCP_JUDGE_TOKEN_HASHES":"abc"}"#).unwrap();
        assert!(credentials.judge_token_hashes.is_empty());
        assert_eq!(
            problems,
            vec![CredentialProblem::BadJudgeTokenHash { position: 1 }]
        );
    }

    #[test]
    fn nothing_configured_means_everything_is_missing() {
        let (credentials, problems) = Credentials::from_lookup(|_| None);
        assert!(problems.is_empty());
        assert_eq!(credentials.missing(), CREDENTIAL_NAMES.to_vec());
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let (credentials, _) = Credentials::from_lookup(|name| match name {
            "MCP_CLIENT_SECRET" => Some("client-secret-value".into()),
            "MCP_JWT_SECRET" => Some(KEY_32.into()),
            _ => None,
        });
        let shown = format!("{credentials:?}");
        assert!(!shown.contains("client-secret-value") && !shown.contains(KEY_32));
    }

    #[test]
    fn hash_lists_are_parsed_with_positions() {
        let good = sha256_hex("a");
        assert_eq!(parse_token_hashes(&format!(" {good} ,")).unwrap().len(), 1);
        assert_eq!(
            parse_token_hashes(&format!("{good},nothex")),
            Err(CredentialProblem::BadJudgeTokenHash { position: 2 })
        );
    }
}
