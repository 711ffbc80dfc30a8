//! Folders and files only their owner can read: Hearth's data folder (0700) and everything
//! it writes there (0600), whatever the process's umask. The SQLite store holds device keys
//! and passkey credentials, and the folder holds the log key and the development credentials,
//! so nothing may depend on a service manager's `UMask` to keep them private.
//!
//! A mode given at creation can only be narrowed by the umask, never widened, so creating
//! with the private mode is enough; nothing here changes the mode of what already exists
//! (`hearth doctor` reports wider modes instead of silently changing an operator's choice).

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// The mode of a data folder Hearth creates.
pub const FOLDER_MODE: u32 = 0o700;

/// The mode of every file Hearth creates in it.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and any missing parent) with mode 0700; an existing folder is left as it is.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(FOLDER_MODE);
    }
    builder.create(dir)
}

/// Creates the file `path`, which must not exist yet, with mode 0600.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE);
    }
    options.open(path)
}

/// Writes `bytes` to the new file `path` (mode 0600) and flushes them to the disk.
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = create_new(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// The permission bits of `path` (Unix), for reports.
#[cfg(unix)]
pub fn mode_of(path: &Path) -> std::io::Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o7777)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn folders_and_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a/b");
        create_dir(&folder).unwrap();
        assert_eq!(mode_of(&folder).unwrap(), 0o700);
        assert_eq!(mode_of(&dir.path().join("a")).unwrap(), 0o700);
        write_new(&folder.join("f"), b"x").unwrap();
        assert_eq!(mode_of(&folder.join("f")).unwrap(), 0o600);
        assert_eq!(
            write_new(&folder.join("f"), b"y").unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists,
            "an existing file is never overwritten"
        );
        create_dir(&folder).unwrap();
    }
}
