//! Local development credentials: created once in the data directory when the local server
//! starts without any configured credential, so `cargo run` works without weakening
//! authentication. The file is JSON, readable by its owner only, and holds a judge token, an
//! OAuth client id and secret, and the JWT signing key.

use std::io::Write;
use std::path::{Path, PathBuf};

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::credentials::{Credentials, parse_token_hashes};
use crate::chain::sha256_hex;
use crate::secret::Secret;

pub const FILE_NAME: &str = "dev-credentials.json";

/// The generated credentials, as stored.
#[derive(Clone, Serialize, Deserialize)]
pub struct DevCredentials {
    pub judge_token: String,
    pub client_id: String,
    pub client_secret: String,
    pub jwt_secret: String,
}

impl DevCredentials {
    fn generate() -> Self {
        Self {
            judge_token: format!("hearth-dev-{}", random_hex()),
            client_id: "hearth-local".to_owned(),
            client_secret: random_hex(),
            jwt_secret: random_hex(),
        }
    }

    /// The credentials the server runs with: the judge token's hash, never the token.
    pub fn credentials(&self) -> Credentials {
        Credentials {
            client_id: Some(self.client_id.clone()),
            client_secret: Some(Secret::new(self.client_secret.clone())),
            jwt_secret: Some(Secret::new(self.jwt_secret.clone())),
            judge_token_hashes: parse_token_hashes(&sha256_hex(&self.judge_token))
                .expect("a SHA-256 hex digest is a valid hash entry"),
            aion_api_key: None,
            host_key: None,
            notify_key: None,
            judge_api_key: None,
            log_key: None,
            log_key_previous: None,
        }
    }
}

fn random_hex() -> String {
    let bytes: [u8; 32] = rand::rng().random();
    hex::encode(bytes)
}

/// Returns the credentials stored in `data_dir`, creating them (mode 0600) if there are none.
/// A file that exists but cannot be read as credentials is an error, not overwritten.
pub fn ensure(data_dir: &Path) -> std::io::Result<DevCredentials> {
    let path = path(data_dir);
    match std::fs::read(&path) {
        Ok(bytes) => {
            return serde_json::from_slice(&bytes).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{} is not a Hearth credentials file; remove it to start afresh",
                        path.display()
                    ),
                )
            });
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::create_dir_all(data_dir)?;
    let credentials = DevCredentials::generate();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path)?;
    serde_json::to_writer_pretty(&mut file, &credentials)?;
    file.write_all(b"\n")?;
    Ok(credentials)
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// The file a local server's log signing secret lives in.
pub const LOG_KEY_FILE: &str = "log-key";

/// The local log signing secret in `data_dir`, created (random, mode 0600) if there is none.
/// Whoever holds it can sign checkpoints, so it is kept like the other credentials.
pub fn ensure_log_key(data_dir: &Path) -> std::io::Result<Secret> {
    let path = data_dir.join(LOG_KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().len() >= 32 => return Ok(Secret::new(text.trim())),
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} holds no log key; remove it to start afresh",
                    path.display()
                ),
            ));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::create_dir_all(data_dir)?;
    let secret = random_hex();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path)?;
    file.write_all(secret.as_bytes())?;
    file.write_all(b"\n")?;
    Ok(Secret::new(secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path()).unwrap();
        assert!(first.judge_token.starts_with("hearth-dev-") && first.judge_token.len() == 11 + 64);
        assert!(first.credentials().missing().is_empty());
        let second = ensure(dir.path()).unwrap();
        assert_eq!(second.client_secret, first.client_secret);
        assert_eq!(second.judge_token, first.judge_token);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn the_log_key_is_made_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure_log_key(dir.path()).unwrap();
        assert_eq!(first.expose().len(), 64);
        assert_eq!(ensure_log_key(dir.path()).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(LOG_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.path().join(LOG_KEY_FILE), "short").unwrap();
        assert!(
            ensure_log_key(dir.path()).is_err(),
            "a damaged file is not replaced"
        );
    }

    #[test]
    fn a_damaged_file_is_reported_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(path(dir.path()), "garbage").unwrap();
        let error = ensure(dir.path()).err().unwrap();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(
            std::fs::read_to_string(path(dir.path())).unwrap(),
            "garbage"
        );
    }
}
