//! The embedded store: one SQLite file (rusqlite, bundled), used for local runs and tests.
//!
//! Every append runs in one `BEGIN IMMEDIATE` transaction that compares the stored head with
//! the caller's, so the optimistic-concurrency contract is the same as DynamoDB's conditional
//! writes. One connection sits behind a mutex and statements run inline on the async task:
//! each is a few tens of microseconds on a local file, far less than a hop to a blocking pool.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{
    AccountItem, AccountStore, AccountSummary, Append, ChainKey, ChainStore, ClientItem,
    ClientStore, Cosigned, CosignedStore, Counter, CounterStore, GrantItem, GrantKind, GrantStore,
    Head, LogBase, LogHead, LogRead, Snapshot, StoreError, Taken,
};
use crate::chain::Sealed;

/// Columns later releases added to earlier tables, which opening a store adds when missing.
pub(super) const ADDED_COLUMNS: [(&str, &str, &str); 5] = [
    ("chain_heads", "log_id", "TEXT"),
    ("chain_heads", "log_base_size", "INTEGER"),
    ("chain_heads", "log_base", "BLOB"),
    ("chain_logs", "expires_at_ms", "INTEGER"),
    ("log_hashes", "expires_at_ms", "INTEGER"),
];

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS chain_heads (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    window_started_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    last_hash TEXT NOT NULL,
    anchor TEXT,
    log_id TEXT,
    log_base_size INTEGER,
    log_base BLOB,
    PRIMARY KEY (scope, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chain_records (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (scope, name, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS accounts (
    household_id TEXT NOT NULL PRIMARY KEY,
    revision INTEGER NOT NULL,
    body TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chain_logs (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    log_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    size INTEGER NOT NULL,
    frontier BLOB NOT NULL,
    checkpoint TEXT NOT NULL,
    expires_at_ms INTEGER,
    PRIMARY KEY (scope, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log_hashes (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    leaf INTEGER NOT NULL,
    hashes BLOB NOT NULL,
    expires_at_ms INTEGER,
    PRIMARY KEY (scope, name, leaf)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS grants (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    revision INTEGER NOT NULL,
    body TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS grants_by_expiry ON grants (expires_at_ms);
CREATE TABLE IF NOT EXISTS clients (
    client_id TEXT NOT NULL PRIMARY KEY,
    revision INTEGER NOT NULL,
    body TEXT NOT NULL,
    expires_at_ms INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cosigned (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    witness TEXT NOT NULL,
    origin TEXT NOT NULL,
    size INTEGER NOT NULL,
    line TEXT NOT NULL,
    expires_at_ms INTEGER,
    PRIMARY KEY (scope, name, witness)
) WITHOUT ROWID;
";

/// The rate counters live in this process, in a table of their own so counter writes never
/// queue behind chain reads. They are written on every request and matter for one minute, so
/// durability buys nothing locally: a restart starts every window afresh. A file cost about
/// 45% of `explain_why` throughput even without fsync, and an in-memory SQLite database (two
/// upserts in a transaction per request) still cost more than this map; see the manual's
/// performance notes. The local server is one process, so one process's memory is the whole
/// picture; under Lambda the counters live in DynamoDB, shared by every instance.
#[derive(Default)]
struct CounterTable {
    /// Counter key → (hits, the window's end in Unix ms).
    hits: HashMap<String, (u32, i64)>,
}

pub struct SqliteStore {
    connection: Mutex<Connection>,
    /// Read-only connections for the chain window every read-only call reads (see
    /// [`Readers`]); none for `hearth admin`, which reads through `connection`.
    readers: Readers,
    counters: Mutex<CounterTable>,
}

/// A few read-only connections to the same file, so that concurrent calls reading a window do
/// not queue on the one connection's lock: under load a blocked lock puts a worker thread to
/// sleep, and the kernel's switching cost more than the reads (`scripts/bench/profile`). WAL
/// lets them read beside the writer; each read is one statement, so one consistent snapshot.
struct Readers {
    connections: Vec<Mutex<Connection>>,
    next: std::sync::atomic::AtomicUsize,
}

impl Readers {
    /// One per core the runtime may run calls on, at least two and at most four.
    fn open(path: &Path) -> Result<Self, StoreError> {
        let count = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let connections = (0..count)
            .map(|_| {
                let connection = Connection::open_with_flags(path, flags).map_err(unavailable)?;
                connection
                    .execute_batch("PRAGMA busy_timeout=5000;")
                    .map_err(unavailable)?;
                connection
                    .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
                    .map_err(unavailable)?;
                Ok(Mutex::new(connection))
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Self {
            connections,
            next: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    fn none() -> Self {
        Self {
            connections: Vec::new(),
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`, and its parent directory.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if path != Path::new(":memory:") {
            create_private(path)?;
        }
        let mut store = Self::open_with(Connection::open(path).map_err(unavailable)?)?;
        // An in-memory database is private to its connection: there, reads share it.
        if path != Path::new(":memory:") {
            store.readers = Readers::open(path)?;
        }
        Ok(store)
    }

    /// Opens the database file at `path` only if it already exists (for `hearth admin`, which
    /// never creates a store); its schema is brought up to date as the server would.
    pub fn open_existing(path: &Path) -> Result<Self, StoreError> {
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let connection = Connection::open_with_flags(path, flags).map_err(|_| {
            StoreError::Unavailable(format!(
                "there is no SQLite store at {}: point --db or --data-dir at the server's store, or start the server once to create it",
                path.display()
            ))
        })?;
        Self::open_with(connection)
    }

    /// An in-memory copy of the database at `path`, opened as a store; the file is only read.
    /// What `hearth admin restore` checks a backup with before it writes anything.
    pub fn open_copy(path: &Path) -> Result<Self, StoreError> {
        let mut connection = Connection::open_in_memory().map_err(unavailable)?;
        super::sqlite_files::copy_into(path, &mut connection)?;
        Self::open_with(connection)
    }

    fn open_with(connection: Connection) -> Result<Self, StoreError> {
        // WAL keeps readers and the single writer out of each other's way and makes a commit
        // one sequential write; NORMAL sync is durable across process crashes.
        connection
            .execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000;",
            )
            .map_err(unavailable)?;
        // Without the query-planner stability guarantee SQLite marks some cached statements to
        // be re-prepared (parsed and planned again) whenever a parameter is re-bound, which is
        // every call here. Hearth's statements are primary-key lookups with one right plan.
        connection
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(unavailable)?;
        connection.execute_batch(SCHEMA).map_err(unavailable)?;
        // Stores made by earlier releases gain the newer columns: chain heads name their log
        // (empty: such a window is taken as written before logs), and a credential's logs
        // retire (empty: kept).
        for (table, column, kind) in ADDED_COLUMNS {
            let present: i64 = connection
                .query_row(
                    &format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
                    [column],
                    |row| row.get(0),
                )
                .map_err(unavailable)?;
            if present == 0 {
                connection
                    .execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))
                    .map_err(unavailable)?;
            }
        }
        connection
            .execute_batch(
                "CREATE INDEX IF NOT EXISTS log_hashes_by_expiry ON log_hashes (expires_at_ms)
                   WHERE expires_at_ms IS NOT NULL;
                 CREATE INDEX IF NOT EXISTS chain_logs_by_expiry ON chain_logs (expires_at_ms)
                   WHERE expires_at_ms IS NOT NULL;",
            )
            .map_err(unavailable)?;
        Ok(Self {
            connection: Mutex::new(connection),
            readers: Readers::none(),
            counters: Mutex::new(CounterTable::default()),
        })
    }

    fn with_connection<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        locked(&self.connection, work)
    }

    /// Runs a read on a free reader connection (any, if all are busy), or on the one
    /// connection where there are no readers.
    fn with_reader<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let readers = &self.readers.connections;
        if readers.is_empty() {
            return self.with_connection(work);
        }
        let start = self
            .readers
            .next
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for offset in 0..readers.len() {
            if let Ok(mut connection) = readers[(start + offset) % readers.len()].try_lock() {
                return work(&mut connection);
            }
        }
        locked(&readers[start % readers.len()], work)
    }
}

fn locked<T>(
    connection: &Mutex<Connection>,
    work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut connection = connection
        .lock()
        .map_err(|_| StoreError::Unavailable("store lock poisoned".into()))?;
    work(&mut connection)
}

/// Creates the database file (mode 0600) and its folder (0700) when missing, before SQLite
/// does: SQLite would create it 0644, and gives its `-wal` and `-shm` files the database's
/// own mode.
fn create_private(path: &Path) -> Result<(), StoreError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::private_files::create_dir(parent).map_err(unavailable)?;
    }
    match crate::private_files::create_new(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(unavailable(error)),
    }
}

pub(super) fn unavailable(error: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(error.to_string())
}

/// The log head of `key`, if it is still kept at `now_ms`.
fn read_log(
    connection: &Connection,
    key: &ChainKey,
    now_ms: i64,
) -> Result<Option<LogHead>, StoreError> {
    let row = connection
        .prepare_cached(
            "SELECT log_id, epoch, size, frontier, checkpoint, expires_at_ms
             FROM chain_logs WHERE scope = ?1 AND name = ?2
               AND (expires_at_ms IS NULL OR expires_at_ms > ?3)",
        )
        .and_then(|mut statement| {
            statement
                .query_row(params![key.scope, key.name, now_ms], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, i64>(2)?,
                        row.get::<_, Vec<u8>>(3)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, Option<i64>>(5)?,
                    ))
                })
                .optional()
        })
        .map_err(unavailable)?;
    row.map(log_of).transpose()
}

/// The columns of a `chain_logs` row, as read.
type LogRow = (String, i64, i64, Vec<u8>, String, Option<i64>);

fn log_of(
    (log_id, epoch, size, frontier, checkpoint, expires_at_ms): LogRow,
) -> Result<LogHead, StoreError> {
    Ok(LogHead {
        log_id,
        epoch: epoch as u64,
        size: size as u64,
        frontier: super::hashes_from(&frontier)?,
        expires_at_ms,
        checkpoint,
    })
}

fn write_log(connection: &Connection, key: &ChainKey, log: &LogHead) -> Result<(), StoreError> {
    connection
        .execute(
            "INSERT INTO chain_logs
               (scope, name, log_id, epoch, size, frontier, checkpoint, expires_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (scope, name) DO UPDATE SET
               log_id = excluded.log_id, epoch = excluded.epoch, size = excluded.size,
               frontier = excluded.frontier, checkpoint = excluded.checkpoint,
               expires_at_ms = excluded.expires_at_ms",
            params![
                key.scope,
                key.name,
                log.log_id,
                log.epoch as i64,
                log.size as i64,
                log.frontier.concat(),
                log.checkpoint,
                log.expires_at_ms
            ],
        )
        .map_err(unavailable)?;
    Ok(())
}

fn read_head(connection: &Connection, key: &ChainKey) -> Result<Option<Head>, StoreError> {
    connection
        .prepare_cached(
            "SELECT window_started_ms, expires_at_ms, last_seq, last_hash, anchor, log_id,
                    log_base_size, log_base
             FROM chain_heads WHERE scope = ?1 AND name = ?2",
        )
        .and_then(|mut statement| {
            statement
                .query_row(params![key.scope, key.name], |row| {
                    Ok((
                        Head {
                            window_started_ms: row.get(0)?,
                            expires_at_ms: row.get(1)?,
                            last_seq: row.get::<_, i64>(2)? as u64,
                            last_hash: row.get(3)?,
                            anchor: row.get(4)?,
                            log_id: row.get(5)?,
                            log_base: None,
                        },
                        row.get::<_, Option<i64>>(6)?,
                        row.get::<_, Option<Vec<u8>>>(7)?,
                    ))
                })
                .optional()
        })
        .map_err(unavailable)?
        .map(|(head, size, frontier)| {
            Ok(Head {
                log_base: log_base_from(size, frontier)?,
                ..head
            })
        })
        .transpose()
}

/// A window's log base as its two columns hold it: both or neither.
fn log_base_from(
    size: Option<i64>,
    frontier: Option<Vec<u8>>,
) -> Result<Option<LogBase>, StoreError> {
    match (size, frontier) {
        (Some(size), frontier) => Ok(Some(LogBase {
            size: size as u64,
            frontier: super::hashes_from(&frontier.unwrap_or_default())?,
        })),
        (None, _) => Ok(None),
    }
}

#[async_trait]
impl ChainStore for SqliteStore {
    async fn load(&self, key: &ChainKey, now_ms: i64) -> Result<Option<Snapshot>, StoreError> {
        // One statement reads the head and its records: a single SELECT sees one consistent
        // snapshot, so no explicit transaction (two more statements per read) is needed.
        self.with_reader(|connection| {
            let mut statement = connection
                .prepare_cached(
                    "SELECT h.window_started_ms, h.expires_at_ms, h.last_seq, h.last_hash, h.anchor,
                            r.seq, r.hash, r.body, h.log_id, h.log_base_size, h.log_base
                     FROM chain_heads h
                     LEFT JOIN chain_records r ON r.scope = h.scope AND r.name = h.name
                     WHERE h.scope = ?1 AND h.name = ?2
                     ORDER BY r.seq",
                )
                .map_err(unavailable)?;
            let mut rows = statement
                .query(params![key.scope, key.name])
                .map_err(unavailable)?;
            let mut snapshot: Option<Snapshot> = None;
            while let Some(row) = rows.next().map_err(unavailable)? {
                let snapshot = match &mut snapshot {
                    Some(snapshot) => snapshot,
                    None => snapshot.insert(Snapshot {
                        head: Head {
                            window_started_ms: row.get(0).map_err(unavailable)?,
                            expires_at_ms: row.get(1).map_err(unavailable)?,
                            last_seq: row.get::<_, i64>(2).map_err(unavailable)? as u64,
                            last_hash: row.get(3).map_err(unavailable)?,
                            anchor: row.get(4).map_err(unavailable)?,
                            log_id: row.get(8).map_err(unavailable)?,
                            log_base: log_base_from(
                                row.get(9).map_err(unavailable)?,
                                row.get(10).map_err(unavailable)?,
                            )?,
                        },
                        records: Vec::new(),
                    }),
                };
                if let Some(seq) = row.get::<_, Option<i64>>(5).map_err(unavailable)? {
                    snapshot.records.push(Sealed {
                        seq: seq as u64,
                        hash: row.get(6).map_err(unavailable)?,
                        body: row.get(7).map_err(unavailable)?,
                    });
                }
            }
            Ok(snapshot.filter(|snapshot| snapshot.head.is_live(now_ms)))
        })
    }

    async fn load_for_append(
        &self,
        key: &ChainKey,
        now_ms: i64,
    ) -> Result<(Option<Snapshot>, Option<LogHead>), StoreError> {
        let snapshot = self.load(key, now_ms).await?;
        let log = self.with_connection(|connection| read_log(connection, key, now_ms))?;
        Ok((snapshot, log))
    }

    async fn log_head(&self, key: &ChainKey, now_ms: i64) -> Result<LogRead, StoreError> {
        self.with_connection(|connection| {
            Ok(LogRead {
                log: read_log(connection, key, now_ms)?,
                named: read_head(connection, key)?.and_then(|head| head.log_id),
            })
        })
    }

    async fn signed_log_heads(&self, now_ms: i64) -> Result<Vec<(ChainKey, LogHead)>, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection
                .prepare(
                    "SELECT scope, name, log_id, epoch, size, frontier, checkpoint, expires_at_ms
                     FROM chain_logs WHERE checkpoint != ''
                       AND (expires_at_ms IS NULL OR expires_at_ms > ?1)",
                )
                .map_err(unavailable)?;
            let rows = statement
                .query_map(params![now_ms], |row| {
                    Ok((
                        ChainKey {
                            scope: row.get(0)?,
                            name: row.get(1)?,
                        },
                        (
                            row.get(2)?,
                            row.get(3)?,
                            row.get(4)?,
                            row.get(5)?,
                            row.get(6)?,
                            row.get(7)?,
                        ),
                    ))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (key, columns) = row.map_err(unavailable)?;
                Ok((key, log_of(columns)?))
            })
            .collect()
        })
    }

    async fn resign_log(
        &self,
        key: &ChainKey,
        expected: &LogHead,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        self.with_connection(|connection| {
            let changed = connection
                .execute(
                    "UPDATE chain_logs SET checkpoint = ?1
                     WHERE scope = ?2 AND name = ?3 AND log_id = ?4 AND epoch = ?5
                       AND size = ?6 AND checkpoint = ?7",
                    params![
                        checkpoint,
                        key.scope,
                        key.name,
                        expected.log_id,
                        expected.epoch as i64,
                        expected.size as i64,
                        expected.checkpoint
                    ],
                )
                .map_err(unavailable)?;
            if changed == 1 {
                Ok(())
            } else {
                Err(StoreError::Conflict)
            }
        })
    }

    async fn log_hashes(
        &self,
        key: &ChainKey,
        leaves: &[u64],
    ) -> Result<HashMap<u64, Vec<[u8; 32]>>, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection
                .prepare_cached(
                    "SELECT hashes FROM log_hashes WHERE scope = ?1 AND name = ?2 AND leaf = ?3",
                )
                .map_err(unavailable)?;
            let mut found = HashMap::with_capacity(leaves.len());
            for leaf in leaves {
                let hashes: Option<Vec<u8>> = statement
                    .query_row(params![key.scope, key.name, *leaf as i64], |row| row.get(0))
                    .optional()
                    .map_err(unavailable)?;
                if let Some(hashes) = hashes {
                    found.insert(*leaf, super::hashes_from(&hashes)?);
                }
            }
            Ok(found)
        })
    }

    /// One SQLite transaction applying each append in turn: each finds the heads the one
    /// before it left, so its own checks are the whole batch's.
    async fn append_together(
        &self,
        key: &ChainKey,
        appends: Vec<Append>,
        now_ms: i64,
    ) -> Result<(), (StoreError, Option<super::Winner>)> {
        if let Some(error) = super::unchained(&appends) {
            return Err((error, None));
        }
        self.with_connection(|connection| {
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            for append in &appends {
                apply_append(&transaction, key, append, now_ms)?;
            }
            transaction.commit().map_err(unavailable)
        })
        .map_err(|error| (error, None))
    }

    async fn remove(&self, key: &ChainKey) -> Result<usize, StoreError> {
        self.with_connection(|connection| {
            let transaction = connection.transaction().map_err(unavailable)?;
            let removed = delete_chain(&transaction, key)?;
            retire_log(&transaction, key)?;
            transaction.commit().map_err(unavailable)?;
            Ok(removed)
        })
    }

    async fn relocate(
        &self,
        from: &ChainKey,
        to: &ChainKey,
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        self.with_connection(|connection| {
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            if read_head(&transaction, from)?.is_none_or(|head| !head.is_live(now_ms)) {
                return Ok(0);
            }
            if read_head(&transaction, to)?.is_some_and(|head| head.is_live(now_ms)) {
                return Err(StoreError::Conflict);
            }
            delete_chain(&transaction, to)?;
            transaction
                .execute(
                    "INSERT INTO chain_heads
                       (scope, name, window_started_ms, expires_at_ms, last_seq, last_hash, anchor,
                        log_id, log_base_size, log_base)
                     SELECT ?3, ?4, window_started_ms, expires_at_ms, last_seq, last_hash, anchor,
                            log_id, log_base_size, log_base
                     FROM chain_heads WHERE scope = ?1 AND name = ?2",
                    params![from.scope, from.name, to.scope, to.name],
                )
                .map_err(unavailable)?;
            let moved = transaction
                .execute(
                    "INSERT INTO chain_records (scope, name, seq, hash, body)
                     SELECT ?3, ?4, seq, hash, body
                     FROM chain_records WHERE scope = ?1 AND name = ?2",
                    params![from.scope, from.name, to.scope, to.name],
                )
                .map_err(unavailable)?;
            if let Some(mut log) = read_log(&transaction, from, now_ms)? {
                // A household account keeps its log for good.
                log.expires_at_ms = None;
                transaction
                    .execute(
                        "DELETE FROM log_hashes WHERE scope = ?1 AND name = ?2",
                        params![to.scope, to.name],
                    )
                    .map_err(unavailable)?;
                transaction
                    .execute(
                        "INSERT INTO log_hashes (scope, name, leaf, hashes)
                         SELECT ?3, ?4, leaf, hashes
                         FROM log_hashes WHERE scope = ?1 AND name = ?2",
                        params![from.scope, from.name, to.scope, to.name],
                    )
                    .map_err(unavailable)?;
                write_log(&transaction, to, &log)?;
            }
            delete_chain(&transaction, from)?;
            retire_log(&transaction, from)?;
            transaction.commit().map_err(unavailable)?;
            Ok(moved)
        })
    }
}

/// Deletes a chain's head and records; returns how many records there were.
fn delete_chain(connection: &Connection, key: &ChainKey) -> Result<usize, StoreError> {
    connection
        .execute(
            "DELETE FROM chain_heads WHERE scope = ?1 AND name = ?2",
            params![key.scope, key.name],
        )
        .map_err(unavailable)?;
    connection
        .execute(
            "DELETE FROM chain_records WHERE scope = ?1 AND name = ?2",
            params![key.scope, key.name],
        )
        .map_err(unavailable)
}

/// Deletes a log's hashes and what witnesses cosigned of it, and leaves its head as a
/// placeholder of size 0 with the next epoch.
fn retire_log(connection: &Connection, key: &ChainKey) -> Result<(), StoreError> {
    for table in ["log_hashes", "cosigned"] {
        connection
            .execute(
                &format!("DELETE FROM {table} WHERE scope = ?1 AND name = ?2"),
                params![key.scope, key.name],
            )
            .map_err(unavailable)?;
    }
    connection
        .execute(
            "UPDATE chain_logs SET epoch = epoch + 1, size = 0, frontier = x'', checkpoint = ''
             WHERE scope = ?1 AND name = ?2",
            params![key.scope, key.name],
        )
        .map_err(unavailable)?;
    Ok(())
}

#[async_trait]
impl ClientStore for SqliteStore {
    async fn client(&self, client_id: &str, now_ms: i64) -> Result<Option<ClientItem>, StoreError> {
        self.with_connection(|connection| {
            let body: Option<String> = connection
                .prepare_cached(
                    "SELECT body FROM clients WHERE client_id = ?1
                       AND (expires_at_ms IS NULL OR expires_at_ms > ?2)",
                )
                .and_then(|mut statement| {
                    statement
                        .query_row(params![client_id, now_ms], |row| row.get(0))
                        .optional()
                })
                .map_err(unavailable)?;
            body.map(|body| ClientItem::from_stored(&body)).transpose()
        })
    }

    async fn clients(&self, now_ms: i64) -> Result<Vec<ClientItem>, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection
                .prepare_cached(
                    "SELECT body FROM clients WHERE expires_at_ms IS NULL OR expires_at_ms > ?1
                     ORDER BY client_id",
                )
                .map_err(unavailable)?;
            let bodies = statement
                .query_map(params![now_ms], |row| row.get::<_, String>(0))
                .map_err(unavailable)?;
            bodies
                .map(|body| ClientItem::from_stored(&body.map_err(unavailable)?))
                .collect()
        })
    }

    async fn put_client(
        &self,
        item: &ClientItem,
        expected: Option<u64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(item).map_err(unavailable)?;
        self.with_connection(|connection| {
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            expect_revision(
                &transaction,
                "SELECT revision FROM clients WHERE client_id = ?1
                   AND (expires_at_ms IS NULL OR expires_at_ms > ?2)",
                params![item.client_id, now_ms],
                expected,
            )?;
            transaction
                .execute(
                    "INSERT INTO clients (client_id, revision, body, expires_at_ms)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (client_id) DO UPDATE SET
                       revision = excluded.revision, body = excluded.body,
                       expires_at_ms = excluded.expires_at_ms",
                    params![
                        item.client_id,
                        item.revision as i64,
                        body,
                        item.expires_at_ms
                    ],
                )
                .map_err(unavailable)?;
            // What DynamoDB's TTL does: registrations never used go as new ones arrive.
            transaction
                .execute(
                    "DELETE FROM clients WHERE expires_at_ms <= ?1",
                    params![now_ms],
                )
                .map_err(unavailable)?;
            transaction.commit().map_err(unavailable)
        })
    }

    async fn delete_client(&self, client_id: &str) -> Result<bool, StoreError> {
        self.with_connection(|connection| {
            let deleted = connection
                .execute(
                    "DELETE FROM clients WHERE client_id = ?1",
                    params![client_id],
                )
                .map_err(unavailable)?;
            Ok(deleted == 1)
        })
    }
}

#[async_trait]
impl AccountStore for SqliteStore {
    async fn account(&self, household_id: &str) -> Result<Option<AccountItem>, StoreError> {
        self.with_connection(|connection| {
            let body: Option<String> = connection
                .prepare_cached("SELECT body FROM accounts WHERE household_id = ?1")
                .and_then(|mut statement| {
                    statement
                        .query_row(params![household_id], |row| row.get(0))
                        .optional()
                })
                .map_err(unavailable)?;
            body.map(|body| AccountItem::from_stored(&body)).transpose()
        })
    }

    async fn accounts(&self) -> Result<Vec<AccountSummary>, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection
                .prepare_cached("SELECT body FROM accounts ORDER BY household_id")
                .map_err(unavailable)?;
            let bodies = statement
                .query_map([], |row| row.get::<_, String>(0))
                .map_err(unavailable)?;
            bodies
                .map(|body| Ok(AccountItem::from_stored(&body.map_err(unavailable)?)?.summary()))
                .collect()
        })
    }

    async fn put_account(
        &self,
        item: &AccountItem,
        expected: Option<u64>,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(item).map_err(unavailable)?;
        self.with_connection(|connection| {
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            if stored_revision(&transaction, &item.household_id)? != expected {
                return Err(StoreError::Conflict);
            }
            transaction
                .execute(
                    "INSERT INTO accounts (household_id, revision, body) VALUES (?1, ?2, ?3)
                     ON CONFLICT (household_id) DO UPDATE SET
                       revision = excluded.revision, body = excluded.body",
                    params![item.household_id, item.revision as i64, body],
                )
                .map_err(unavailable)?;
            if expected.is_none() {
                // A creation sweeps the sign-ups that expired unlinked (DynamoDB's TTL does
                // this by itself): only their own row, by the expiry their body keeps.
                transaction
                    .execute(
                        "DELETE FROM accounts
                         WHERE json_extract(body, '$.signup_expires_at_ms') <= ?1",
                        params![item.created_at_ms],
                    )
                    .map_err(unavailable)?;
            }
            transaction.commit().map_err(unavailable)
        })
    }

    async fn delete_account(&self, household_id: &str, expected: u64) -> Result<bool, StoreError> {
        self.with_connection(|connection| {
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            match stored_revision(&transaction, household_id)? {
                None => return Ok(false),
                Some(revision) if revision != expected => return Err(StoreError::Conflict),
                Some(_) => {}
            }
            transaction
                .execute(
                    "DELETE FROM accounts WHERE household_id = ?1",
                    params![household_id],
                )
                .map_err(unavailable)?;
            transaction.commit().map_err(unavailable)?;
            Ok(true)
        })
    }
}

#[async_trait]
impl GrantStore for SqliteStore {
    async fn grant(
        &self,
        kind: GrantKind,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<GrantItem>, StoreError> {
        self.with_connection(|connection| {
            connection
                .prepare_cached(
                    "SELECT revision, body, expires_at_ms FROM grants
                     WHERE kind = ?1 AND key = ?2 AND expires_at_ms > ?3",
                )
                .and_then(|mut statement| {
                    statement
                        .query_row(params![kind.as_str(), key, now_ms], |row| {
                            Ok(GrantItem {
                                kind,
                                key: key.to_owned(),
                                revision: row.get::<_, i64>(0)? as u64,
                                body: row.get(1)?,
                                expires_at_ms: row.get(2)?,
                            })
                        })
                        .optional()
                })
                .map_err(unavailable)
        })
    }

    async fn put_grant(
        &self,
        item: &GrantItem,
        expected: Option<u64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.with_connection(|connection| {
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            expect_revision(
                &transaction,
                "SELECT revision FROM grants
                 WHERE kind = ?1 AND key = ?2 AND expires_at_ms > ?3",
                params![item.kind.as_str(), item.key, now_ms],
                expected,
            )?;
            transaction
                .execute(
                    "INSERT INTO grants (kind, key, revision, body, expires_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (kind, key) DO UPDATE SET
                       revision = excluded.revision, body = excluded.body,
                       expires_at_ms = excluded.expires_at_ms",
                    params![
                        item.kind.as_str(),
                        item.key,
                        item.revision as i64,
                        item.body,
                        item.expires_at_ms
                    ],
                )
                .map_err(unavailable)?;
            sweep_expired_grants(&transaction, now_ms)?;
            transaction.commit().map_err(unavailable)
        })
    }

    async fn claim_grant(&self, item: &GrantItem, now_ms: i64) -> Result<bool, StoreError> {
        self.with_connection(|connection| {
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            // Written when the key is free, expired, or already this body's.
            let written = transaction
                .execute(
                    "INSERT INTO grants (kind, key, revision, body, expires_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (kind, key) DO UPDATE SET
                       revision = excluded.revision, body = excluded.body,
                       expires_at_ms = excluded.expires_at_ms
                     WHERE grants.expires_at_ms <= ?6 OR grants.body = excluded.body",
                    params![
                        item.kind.as_str(),
                        item.key,
                        item.revision as i64,
                        item.body,
                        item.expires_at_ms,
                        now_ms
                    ],
                )
                .map_err(unavailable)?;
            sweep_expired_grants(&transaction, now_ms)?;
            transaction.commit().map_err(unavailable)?;
            Ok(written == 1)
        })
    }

    async fn delete_grant(
        &self,
        kind: GrantKind,
        key: &str,
        expected: u64,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.with_connection(|connection| {
            let deleted = connection
                .execute(
                    "DELETE FROM grants
                     WHERE kind = ?1 AND key = ?2 AND revision = ?3 AND expires_at_ms > ?4",
                    params![kind.as_str(), key, expected as i64, now_ms],
                )
                .map_err(unavailable)?;
            Ok(deleted == 1)
        })
    }
}

/// What DynamoDB's TTL does for the table: expired grant records are swept as new ones
/// arrive, through the expiry index.
fn sweep_expired_grants(connection: &Connection, now_ms: i64) -> Result<(), StoreError> {
    connection
        .execute(
            "DELETE FROM grants WHERE expires_at_ms <= ?1",
            params![now_ms],
        )
        .map(|_| ())
        .map_err(unavailable)
}

fn stored_revision(connection: &Connection, household_id: &str) -> Result<Option<u64>, StoreError> {
    connection
        .query_row(
            "SELECT revision FROM accounts WHERE household_id = ?1",
            params![household_id],
            |row| row.get::<_, i64>(0),
        )
        .optional()
        .map(|revision| revision.map(|revision| revision as u64))
        .map_err(unavailable)
}

#[async_trait]
impl CounterStore for SqliteStore {
    async fn take(
        &self,
        counters: &[Counter],
        expires_at_ms: i64,
        now_ms: i64,
    ) -> Result<Taken, StoreError> {
        let mut table = self
            .counters
            .lock()
            .map_err(|_| StoreError::Unavailable("counter lock poisoned".into()))?;
        // As DynamoDB counts them: each counted counter below its limit counts the request, a
        // counter at its limit is left alone, a watched one is only read (see
        // `CounterStore::take`).
        let mut opened_a_window = false;
        let mut refused = None;
        for (index, counter) in counters.iter().enumerate() {
            if !counter.counted {
                let hits = table.hits.get(&counter.key).map_or(0, |(hits, _)| *hits);
                if hits >= counter.limit {
                    refused.get_or_insert(index);
                }
                continue;
            }
            let (hits, _) = table
                .hits
                .entry(counter.key.clone())
                .or_insert((0, expires_at_ms));
            if *hits >= counter.limit {
                refused.get_or_insert(index);
            } else {
                *hits += 1;
                opened_a_window |= *hits == 1;
            }
        }
        if opened_a_window {
            // Counters of past windows are never read again; clear them as windows turn. The
            // table holds one entry per active client and subject, so a sweep is cheap.
            table.hits.retain(|_, (_, expires)| *expires > now_ms);
        }
        Ok(match refused {
            Some(index) => Taken::Refused { index },
            None => Taken::Granted,
        })
    }
}

/// Compare-and-swap's compare: the live row's revision (`sql` selects it) must be `expected`
/// (`None`: no live row), or the write is a [`StoreError::Conflict`].
fn expect_revision(
    transaction: &rusqlite::Transaction<'_>,
    sql: &str,
    params: impl rusqlite::Params,
    expected: Option<u64>,
) -> Result<(), StoreError> {
    let stored: Option<u64> = transaction
        .query_row(sql, params, |row| row.get::<_, i64>(0))
        .optional()
        .map_err(unavailable)?
        .map(|revision| revision as u64);
    if stored == expected {
        Ok(())
    } else {
        Err(StoreError::Conflict)
    }
}

#[async_trait]
impl CosignedStore for SqliteStore {
    async fn cosigned(&self, key: &ChainKey, now_ms: i64) -> Result<Vec<Cosigned>, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection
                .prepare_cached(
                    "SELECT witness, origin, size, line, expires_at_ms FROM cosigned
                     WHERE scope = ?1 AND name = ?2
                       AND (expires_at_ms IS NULL OR expires_at_ms > ?3)
                     ORDER BY witness",
                )
                .map_err(unavailable)?;
            let rows = statement
                .query_map(params![key.scope, key.name, now_ms], |row| {
                    Ok(Cosigned {
                        witness: row.get(0)?,
                        origin: row.get(1)?,
                        size: row.get::<_, i64>(2)? as u64,
                        line: row.get(3)?,
                        expires_at_ms: row.get(4)?,
                    })
                })
                .map_err(unavailable)?;
            rows.collect::<Result<_, _>>().map_err(unavailable)
        })
    }

    async fn keep_cosigned(&self, key: &ChainKey, cosigned: &Cosigned) -> Result<(), StoreError> {
        self.with_connection(|connection| {
            connection
                .execute(
                    "INSERT INTO cosigned (scope, name, witness, origin, size, line, expires_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (scope, name, witness) DO UPDATE SET
                       origin = excluded.origin, size = excluded.size, line = excluded.line,
                       expires_at_ms = excluded.expires_at_ms
                     WHERE NOT (cosigned.origin = excluded.origin AND cosigned.size > excluded.size)",
                    params![
                        key.scope,
                        key.name,
                        cosigned.witness,
                        cosigned.origin,
                        cosigned.size as i64,
                        cosigned.line,
                        cosigned.expires_at_ms
                    ],
                )
                .map_err(unavailable)?;
            Ok(())
        })
    }
}

/// Applies one append inside `transaction`: checks the heads it expects and the scope's caps,
/// then writes its head, record, eviction and log growth.
fn apply_append(
    transaction: &rusqlite::Transaction<'_>,
    key: &ChainKey,
    append: &Append,
    now_ms: i64,
) -> Result<(), StoreError> {
    let current = read_head(transaction, key)?.filter(|h| h.is_live(now_ms));
    if current != append.expected {
        return Err(StoreError::Conflict);
    }
    if let Some(log) = &append.log {
        let stored = read_log(transaction, key, now_ms)?;
        let same = |a: &LogHead, b: &LogHead| {
            a.log_id == b.log_id && a.epoch == b.epoch && a.size == b.size
        };
        let as_read = match (&stored, &log.expected) {
            (None, None) => true,
            (Some(stored), Some(expected)) => same(stored, expected),
            _ => false,
        };
        if !as_read {
            return Err(StoreError::Conflict);
        }
        write_log(transaction, key, &log.head)?;
        transaction
            .execute(
                "INSERT OR REPLACE INTO log_hashes (scope, name, leaf, hashes, expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    key.scope,
                    key.name,
                    log.head.size as i64 - 1,
                    log.hashes.concat(),
                    log.head.expires_at_ms
                ],
            )
            .map_err(unavailable)?;
    }
    if append.expected.is_none() {
        let live_others: i64 = transaction
            .query_row(
                "SELECT COUNT(*) FROM chain_heads
                 WHERE scope = ?1 AND name <> ?2 AND expires_at_ms > ?3",
                params![key.scope, key.name, now_ms],
                |row| row.get(0),
            )
            .map_err(unavailable)?;
        if live_others as usize >= append.max_live_chains {
            return Err(StoreError::ScopeFull {
                limit: append.max_live_chains,
            });
        }
        // What DynamoDB's TTL does for the table: retired logs go, with their hashes,
        // as windows open.
        transaction
            .execute_batch(&format!(
                "DELETE FROM log_hashes WHERE expires_at_ms <= {now_ms};
                 DELETE FROM chain_logs WHERE expires_at_ms <= {now_ms};
                 DELETE FROM cosigned WHERE expires_at_ms <= {now_ms};"
            ))
            .map_err(unavailable)?;
        // A removed chain's placeholder (size 0: only its id and next epoch) holds no
        // history and takes no place, as on DynamoDB, where removal unregisters it.
        let kept_others: i64 = transaction
            .query_row(
                "SELECT COUNT(*) FROM chain_logs
                 WHERE scope = ?1 AND name <> ?2 AND size > 0",
                params![key.scope, key.name],
                |row| row.get(0),
            )
            .map_err(unavailable)?;
        if append.log.is_some() && kept_others as usize >= append.max_logs {
            return Err(StoreError::LogsFull {
                limit: append.max_logs,
            });
        }
        // A new window replaces whatever an expired one left behind.
        transaction
            .execute(
                "DELETE FROM chain_records WHERE scope = ?1 AND name = ?2",
                params![key.scope, key.name],
            )
            .map_err(unavailable)?;
    }
    let head = &append.head;
    transaction
        .execute(
            "INSERT INTO chain_heads
               (scope, name, window_started_ms, expires_at_ms, last_seq, last_hash, anchor,
                log_id, log_base_size, log_base)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (scope, name) DO UPDATE SET
               window_started_ms = excluded.window_started_ms,
               expires_at_ms = excluded.expires_at_ms,
               last_seq = excluded.last_seq,
               last_hash = excluded.last_hash,
               anchor = excluded.anchor,
               log_id = excluded.log_id,
               log_base_size = excluded.log_base_size,
               log_base = excluded.log_base",
            params![
                key.scope,
                key.name,
                head.window_started_ms,
                head.expires_at_ms,
                head.last_seq as i64,
                head.last_hash,
                head.anchor,
                head.log_id,
                head.log_base.as_ref().map(|base| base.size as i64),
                head.log_base.as_ref().map(|base| base.frontier.concat())
            ],
        )
        .map_err(unavailable)?;
    transaction
        .execute(
            "INSERT INTO chain_records (scope, name, seq, hash, body)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                key.scope,
                key.name,
                append.record.seq as i64,
                append.record.hash,
                append.record.body
            ],
        )
        .map_err(unavailable)?;
    transaction
        .execute(
            "DELETE FROM chain_records WHERE scope = ?1 AND name = ?2 AND seq < ?3",
            params![key.scope, key.name, append.evict_below_seq as i64],
        )
        .map_err(unavailable)?;
    Ok(())
}
