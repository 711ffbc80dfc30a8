//! The local development token: created once in the data directory when the local server
//! starts without any configured token hashes, so `cargo run` is usable without weakening
//! authentication. The file is readable by its owner only.

use std::io::Write;
use std::path::{Path, PathBuf};

use rand::RngExt;

pub const FILE_NAME: &str = "dev-token";

/// Returns the token stored in `data_dir`, creating it (mode 0600) if there is none.
pub fn ensure(data_dir: &Path) -> std::io::Result<String> {
    let path = path(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(token) if !token.trim().is_empty() => return Ok(token.trim().to_owned()),
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::create_dir_all(data_dir)?;
    let bytes: [u8; 32] = rand::rng().random();
    let token = format!("hearth-dev-{}", hex::encode(bytes));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    Ok(token)
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path()).unwrap();
        assert!(first.starts_with("hearth-dev-") && first.len() == 11 + 64);
        assert_eq!(ensure(dir.path()).unwrap(), first);
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
}
