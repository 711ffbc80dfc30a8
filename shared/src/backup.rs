//! `hearth admin backup PATH` and `hearth admin restore PATH --yes`: a local server's whole
//! state in one file, and back.
//!
//! A backup is itself a SQLite database (so `sqlite3` can open one): an online, consistent copy
//! of the store, plus one table, `hearth_backup`, holding the log key and the development
//! credentials that sit beside the store in the data folder. A store restored without its log
//! key is the failure the start-up check exists for (see `log_key_start`), so the two travel
//! together. The file is created 0600: it holds every secret the server does.
//!
//! A restore writes only into an empty data folder, and only after checking, on an in-memory
//! copy, that the backup's log key verifies the log heads it holds. On DynamoDB there is
//! nothing to copy: the table's point-in-time recovery is the backup (see the manual).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::auth::dev_credentials;
use crate::clock::{Clock, SystemClock, unix_ms};
use crate::config::{Config, StoreChoice};
use crate::secret::Secret;
use crate::store::sqlite::SqliteStore;
use crate::store::sqlite_files::snapshot_into;
use crate::store::{AccountStore, ChainStore};

/// What a backup file says it is, in its `hearth_backup` table.
pub const FORMAT: &str = "hearth-backup/1";

/// The table a backup adds to the copied store.
const TABLE: &str = "hearth_backup";

/// What `hearth admin backup` wrote.
#[derive(Debug, Serialize)]
pub struct Written {
    pub path: PathBuf,
    pub bytes: u64,
    pub households: usize,
    pub signed_log_heads: usize,
    /// Whether the log key went in: false when it comes from `HEARTH_LOG_KEY`, which the
    /// operator keeps with the backup.
    pub log_key: bool,
    pub dev_credentials: bool,
}

/// What `hearth admin restore` wrote.
#[derive(Debug, Serialize)]
pub struct Restored {
    pub data_dir: PathBuf,
    pub db: PathBuf,
    pub households: usize,
    pub signed_log_heads: usize,
    pub log_key: bool,
    pub dev_credentials: bool,
}

fn sqlite_path(config: &Config) -> anyhow::Result<&Path> {
    match &config.store {
        StoreChoice::Sqlite(path) => Ok(path),
        StoreChoice::DynamoDb(table) => bail!(
            "the store is the DynamoDB table {table}: its backups are point-in-time recovery (see the manual, Backups), not a file"
        ),
        StoreChoice::Unconfigured => bail!("no store is configured"),
    }
}

/// Copies the configured SQLite store, with the log key and development credentials of the
/// data folder, into the new file `path`.
pub async fn backup(config: &Config, path: &Path) -> anyhow::Result<Written> {
    let source = sqlite_path(config)?;
    if path.exists() {
        bail!(
            "{} exists already: name a new file (a backup never replaces one)",
            path.display()
        );
    }
    // The key the server signs with: HEARTH_LOG_KEY when set (then the operator keeps it, and
    // a stale file beside it is not the server's), else the data folder's.
    let log_key = match config.credentials.log_key {
        Some(_) => None,
        None => dev_credentials::read_log_key(&config.data_dir)?,
    };
    let dev = match dev_credentials::read(&config.data_dir) {
        Ok(_) => Some(std::fs::read(dev_credentials::path(&config.data_dir))?),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(error.into()),
    };
    if log_key.is_none() && config.credentials.log_key.is_none() {
        bail!(
            "there is no log key at {} and HEARTH_LOG_KEY is not set: point --data-dir at the server's data folder",
            dev_credentials::log_key_path(&config.data_dir).display()
        );
    }
    let copy = snapshot_into(source, path)?;
    let added = (|| -> rusqlite::Result<()> {
        copy.execute_batch(&format!(
            "CREATE TABLE {TABLE} (name TEXT NOT NULL PRIMARY KEY, content BLOB NOT NULL)"
        ))?;
        let mut insert = copy.prepare(&format!("INSERT INTO {TABLE} VALUES (?1, ?2)"))?;
        insert.execute(params!["format", FORMAT.as_bytes()])?;
        if let Some(key) = &log_key {
            insert.execute(params![
                dev_credentials::LOG_KEY_FILE,
                key.expose().as_bytes()
            ])?;
        }
        if let Some(dev) = &dev {
            insert.execute(params![dev_credentials::FILE_NAME, dev])?;
        }
        Ok(())
    })();
    drop(copy);
    if let Err(error) = added {
        let _ = std::fs::remove_file(path);
        bail!("writing {}: {error}", path.display());
    }
    // What the copy holds, counted in the copy itself.
    let store = SqliteStore::open_copy(path)?;
    let now_ms = unix_ms(SystemClock.now());
    Ok(Written {
        path: path.to_owned(),
        bytes: std::fs::metadata(path)?.len(),
        households: store.accounts().await?.len(),
        signed_log_heads: store.signed_log_heads(now_ms).await?.len(),
        log_key: log_key.is_some(),
        dev_credentials: dev.is_some(),
    })
}

/// The files a backup carries beside the store.
struct Carried {
    log_key: Option<Secret>,
    dev_credentials: Option<Vec<u8>>,
}

fn carried(path: &Path) -> anyhow::Result<Carried> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let connection = rusqlite::Connection::open_with_flags(path, flags)
        .with_context(|| format!("opening {}", path.display()))?;
    let read = |name: &str| -> anyhow::Result<Option<Vec<u8>>> {
        connection
            .query_row(
                &format!("SELECT content FROM {TABLE} WHERE name = ?1"),
                [name],
                |row| row.get(0),
            )
            .optional()
            .map_err(|_| anyhow::anyhow!("{} is not a Hearth backup", path.display()))
    };
    if read("format")?.as_deref() != Some(FORMAT.as_bytes()) {
        bail!(
            "{} is not a Hearth backup of this release's format ({FORMAT})",
            path.display()
        );
    }
    let log_key = read(dev_credentials::LOG_KEY_FILE)?
        .map(|bytes| String::from_utf8(bytes).map(|text| text.trim().to_owned()))
        .transpose()
        .map_err(|_| anyhow::anyhow!("the log key in {} is not text", path.display()))?;
    // What the server accepts in a key file (dev_credentials::read_log_key).
    if log_key.as_ref().is_some_and(|key| key.len() < 32) {
        bail!("the log key in {} is too short to be one", path.display());
    }
    let log_key = log_key.map(Secret::new);
    Ok(Carried {
        log_key,
        dev_credentials: read(dev_credentials::FILE_NAME)?,
    })
}

/// Restores the backup `path` into the configured data folder, which must be empty (or not
/// exist), after checking that its log key verifies the log heads it holds.
pub async fn restore(config: &Config, path: &Path) -> anyhow::Result<Restored> {
    let db = sqlite_path(config)?.to_owned();
    let data_dir = config.data_dir.clone();
    if let Ok(mut entries) = std::fs::read_dir(&data_dir)
        && entries.next().is_some()
    {
        bail!(
            "{} is not empty: restore into an empty data folder (a running server's folder never is), or point --data-dir at a new one",
            data_dir.display()
        );
    }
    if db.exists() {
        bail!(
            "{} exists already: a restore never replaces a store",
            db.display()
        );
    }
    if !path.is_file() {
        bail!("there is no backup at {}", path.display());
    }
    let carried = carried(path)?;
    // The check, on a copy in memory: nothing is written until it passes.
    let mut checked = config.clone();
    if carried.log_key.is_some() {
        checked.credentials.log_key = carried.log_key.clone();
    }
    if checked.credentials.log_key.is_none() {
        bail!(
            "{} holds no log key and HEARTH_LOG_KEY is not set: set the key the backed-up server used",
            path.display()
        );
    }
    let copy = SqliteStore::open_copy(path)?;
    let keys = crate::app::log_keys(&checked);
    let seed = checked
        .credentials
        .log_key
        .as_ref()
        .map(crate::config::log_key_seed)
        .expect("checked above");
    let now_ms = unix_ms(SystemClock.now());
    let heads = copy.signed_log_heads(now_ms).await?;
    // Each head is checked under the key names its own checkpoint was signed with, so a
    // restore run without the server's MCP_RESOURCE_URL (its host names the key) still
    // checks the key, and then under the configured keys and identities.
    let unverified = heads
        .iter()
        .filter(|(_, head)| {
            !signed_with(&head.checkpoint, seed)
                && !keys.as_ref().is_some_and(|keys| {
                    crate::tlog::note::verify(&head.checkpoint, keys.verifiers()).is_ok()
                })
        })
        .count();
    if unverified > 0 {
        bail!(
            "{unverified} of the {} signed log heads in {} verify under neither its log key nor a configured identity (HEARTH_LOG_KEY_NAMES_PREVIOUS): nothing was restored",
            heads.len(),
            path.display()
        );
    }
    let households = copy.accounts().await?.len();
    drop(copy);

    crate::private_files::create_dir(&data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    if let Some(parent) = db.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        crate::private_files::create_dir(parent)?;
    }
    let restored = snapshot_into(path, &db)?;
    // secure_delete: the dropped table's pages are zeroed, so the store alone never carries the
    // log key or the credentials.
    restored
        .execute_batch(&format!(
            "PRAGMA secure_delete=ON; DROP TABLE {TABLE}; PRAGMA journal_mode=WAL;"
        ))
        .with_context(|| format!("writing {}", db.display()))?;
    drop(restored);
    if let Some(key) = &carried.log_key {
        crate::private_files::write_new(
            &dev_credentials::log_key_path(&data_dir),
            format!("{}\n", key.expose()).as_bytes(),
        )?;
    }
    if let Some(dev) = &carried.dev_credentials {
        crate::private_files::write_new(&dev_credentials::path(&data_dir), dev)?;
    }
    Ok(Restored {
        data_dir,
        db,
        households,
        signed_log_heads: heads.len(),
        log_key: carried.log_key.is_some(),
        dev_credentials: carried.dev_credentials.is_some(),
    })
}

/// Whether the key whose seed is `seed` signed `checkpoint`, under any of the key names its
/// signature lines carry (`<host>/hearth-log/v<N>`).
fn signed_with(checkpoint: &str, seed: [u8; 32]) -> bool {
    checkpoint
        .lines()
        .filter_map(|line| line.strip_prefix("\u{2014} "))
        .filter_map(|signature| signature.split_once(' ').map(|(name, _)| name))
        .filter_map(|name| {
            let (host, version) = name.split_once("/hearth-log/v")?;
            Some((host, version.parse::<u32>().ok()?))
        })
        .any(|(host, version)| {
            crate::transparency::LogKeys::new(host, &[(version, seed)])
                .is_ok_and(|keys| crate::tlog::note::verify(checkpoint, keys.verifiers()).is_ok())
        })
}
