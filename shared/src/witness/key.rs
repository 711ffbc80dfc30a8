//! The witness's Ed25519 key: 32 random bytes in `<dir>/witness-key` (hex, mode 0600), made
//! by whichever command runs first. The file is written whole under a temporary name and then
//! hard-linked into place, which fails if another process got there first: so two commands
//! starting together agree on one key, and a half-written key is never read.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::random::os_bytes;
use crate::tlog::cosignature::Cosigner;

/// The key file's name in the witness directory.
pub const KEY_FILE: &str = "witness-key";

/// The state database's name in the witness directory.
pub const STATE_FILE: &str = "witness.db";

pub fn key_path(dir: &Path) -> PathBuf {
    dir.join(KEY_FILE)
}

/// The witness's seed, created if the directory has none.
pub fn ensure_seed(dir: &Path) -> anyhow::Result<[u8; 32]> {
    let path = key_path(dir);
    if let Some(seed) = read_seed(&path)? {
        return Ok(seed);
    }
    crate::private_files::create_dir(dir)
        .map_err(|error| anyhow::anyhow!("creating {}: {error}", dir.display()))?;
    let seed = os_bytes::<32>().map_err(|_| anyhow::anyhow!("the OS random source failed"))?;
    let suffix =
        hex::encode(os_bytes::<8>().map_err(|_| anyhow::anyhow!("the OS random source failed"))?);
    let temporary = dir.join(format!(".{KEY_FILE}.{suffix}"));
    crate::private_files::write_new(&temporary, format!("{}\n", hex::encode(seed)).as_bytes())
        .map_err(|error| anyhow::anyhow!("creating {}: {error}", temporary.display()))?;
    let linked = std::fs::hard_link(&temporary, &path);
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(seed),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => read_seed(&path)?
            .ok_or_else(|| anyhow::anyhow!("{} vanished while it was read", path.display())),
        Err(error) => Err(anyhow::anyhow!("creating {}: {error}", path.display())),
    }
}

fn read_seed(path: &Path) -> anyhow::Result<Option<[u8; 32]>> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let mut seed = [0u8; 32];
            hex::decode_to_slice(text.trim(), &mut seed)
                .map_err(|_| anyhow::anyhow!("{} is not 64 hex digits", path.display()))?;
            Ok(Some(seed))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(anyhow::anyhow!("reading {}: {error}", path.display())),
    }
}

/// The name a witness goes by unless `HEARTH_WITNESS_NAME` says otherwise: derived from its
/// public key, so two witnesses never share one.
pub fn default_name(seed: &[u8; 32]) -> String {
    let public = ed25519_dalek::SigningKey::from_bytes(seed)
        .verifying_key()
        .to_bytes();
    format!(
        "hearth-witness/{}",
        hex::encode(&Sha256::digest(public)[..8])
    )
}

/// The witness's cosigner: its key from `dir` (created if missing) under `name`, or the name
/// derived from its key.
pub fn cosigner(dir: &Path, name: Option<&str>) -> anyhow::Result<Cosigner> {
    let seed = ensure_seed(dir)?;
    let name = name.map_or_else(|| default_name(&seed), str::to_owned);
    Cosigner::from_seed(&name, &seed)
        .map_err(|error| anyhow::anyhow!("HEARTH_WITNESS_NAME: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_command_makes_the_key_and_every_later_one_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let witness_dir = dir.path().join("w");
        let first = ensure_seed(&witness_dir).unwrap();
        assert_eq!(ensure_seed(&witness_dir).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(key_path(&witness_dir))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&witness_dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(KEY_FILE)]);
    }

    #[test]
    fn racing_commands_agree_on_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("race");
        let seeds: Vec<[u8; 32]> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| ensure_seed(&path).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(seeds.iter().all(|seed| *seed == seeds[0]));
    }

    #[test]
    fn two_keys_never_share_a_default_name() {
        assert_ne!(default_name(&[1; 32]), default_name(&[2; 32]));
        assert!(crate::tlog::note::is_key_name(&default_name(&[1; 32])));
    }
}
