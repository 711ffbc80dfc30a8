//! Local development credentials: created once in the data directory when the local server
//! starts without any configured credential, so `cargo run` works without weakening
//! authentication. The file is JSON, readable by its owner only, and holds a judge token, an
//! OAuth client id and secret, and the JWT signing key.

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

/// The credentials stored in `data_dir`, or new ones (`true`) that [`save_new`] writes once
/// the server is sure to start: a server that refuses to start leaves nothing behind. A file
/// that exists but cannot be read as credentials is an error, never replaced.
pub fn existing_or_new(data_dir: &Path) -> std::io::Result<(DevCredentials, bool)> {
    match read(data_dir) {
        Ok(credentials) => Ok((credentials, false)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok((DevCredentials::generate(), true))
        }
        Err(error) if error.kind() == std::io::ErrorKind::InvalidData => Err(std::io::Error::new(
            error.kind(),
            format!("{error}; remove it to start afresh"),
        )),
        Err(error) => Err(error),
    }
}

/// Writes new credentials into `data_dir` (the folder 0700, the file 0600); an existing file
/// is never replaced.
pub fn save_new(data_dir: &Path, credentials: &DevCredentials) -> std::io::Result<()> {
    crate::private_files::create_dir(data_dir)?;
    let mut text = serde_json::to_vec_pretty(credentials)?;
    text.push(b'\n');
    crate::private_files::write_new(&path(data_dir), &text)
}

/// The credentials stored in `data_dir`, for `hearth admin`, which never creates them: a
/// missing file is an error that names the path looked at.
pub fn read(data_dir: &Path) -> std::io::Result<DevCredentials> {
    let path = path(data_dir);
    let bytes = std::fs::read(&path).map_err(|error| named(&path, error))?;
    serde_json::from_slice(&bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not a Hearth credentials file", path.display()),
        )
    })
}

/// `error` with the path it happened at, and for a missing file what to check.
fn named(path: &Path, error: std::io::Error) -> std::io::Error {
    let text = if error.kind() == std::io::ErrorKind::NotFound {
        format!(
            "{} does not exist: point --data-dir (HEARTH_DATA_DIR) at the server's data folder",
            path.display()
        )
    } else {
        format!("{}: {error}", path.display())
    };
    std::io::Error::new(error.kind(), text)
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// The file a local server's log signing secret lives in.
pub const LOG_KEY_FILE: &str = "log-key";

pub fn log_key_path(data_dir: &Path) -> PathBuf {
    data_dir.join(LOG_KEY_FILE)
}

/// The local log signing secret in `data_dir`, or `None` when there is no such file. A file
/// that holds no key is an error, never replaced.
pub fn read_log_key(data_dir: &Path) -> std::io::Result<Option<Secret>> {
    let path = log_key_path(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().len() >= 32 => Ok(Some(Secret::new(text.trim()))),
        Ok(_) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} holds no log key; restore it from a backup, or move it aside and start with --new-log-key",
                path.display()
            ),
        )),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(named(&path, error)),
    }
}

/// Creates a new random log signing secret in `data_dir` (mode 0600). Whoever holds it can
/// sign checkpoints, so it is kept like the other credentials. An existing file is never
/// replaced: the server decides first whether a new key may be made (see
/// `app::settle_log_key`).
pub fn create_log_key(data_dir: &Path) -> std::io::Result<Secret> {
    crate::private_files::create_dir(data_dir)?;
    let secret = random_hex();
    crate::private_files::write_new(&log_key_path(data_dir), format!("{secret}\n").as_bytes())?;
    Ok(Secret::new(secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            read(dir.path()).err().unwrap().kind(),
            std::io::ErrorKind::NotFound
        );
        let (first, new) = existing_or_new(dir.path()).unwrap();
        assert!(new);
        assert!(
            !path(dir.path()).exists(),
            "nothing is written before save_new"
        );
        assert!(first.judge_token.starts_with("hearth-dev-") && first.judge_token.len() == 11 + 64);
        assert!(first.credentials().missing().is_empty());
        save_new(dir.path(), &first).unwrap();
        let (second, new) = existing_or_new(dir.path()).unwrap();
        assert!(!new);
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
        assert_eq!(read_log_key(dir.path()).unwrap(), None);
        let first = create_log_key(dir.path()).unwrap();
        assert_eq!(first.expose().len(), 64);
        assert_eq!(read_log_key(dir.path()).unwrap(), Some(first));
        assert_eq!(
            create_log_key(dir.path()).unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists,
            "an existing key is never replaced"
        );
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
            read_log_key(dir.path()).is_err(),
            "a damaged file is an error"
        );
    }

    #[test]
    fn a_damaged_file_is_reported_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(path(dir.path()), "garbage").unwrap();
        let error = existing_or_new(dir.path()).err().unwrap();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(
            std::fs::read_to_string(path(dir.path())).unwrap(),
            "garbage"
        );
    }
}
