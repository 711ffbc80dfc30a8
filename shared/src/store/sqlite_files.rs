//! The SQLite store's file as a whole, apart from serving it: an online copy into a new file
//! (`hearth admin backup`), a copy into memory (what `restore` checks before writing and
//! `hearth doctor` reads), and a read-only look at its schema (`hearth doctor`). None of these
//! writes to the store's file.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::StoreError;
use super::sqlite::{ADDED_COLUMNS, SCHEMA, unavailable};

/// Opens the existing database at `path` without the right to change it.
fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|_| {
        StoreError::Unavailable(format!(
            "there is no SQLite store at {}: point --db or --data-dir at the server's store",
            path.display()
        ))
    })?;
    connection
        .busy_timeout(std::time::Duration::from_secs(5))
        .map_err(unavailable)?;
    Ok(connection)
}

/// Copies the database at `source` into `to` with SQLite's online backup in a single step:
/// one read transaction, so the copy is consistent even while a server writes to `source`.
fn copy(source: &Path, to: &mut Connection) -> Result<(), String> {
    let from = open_read_only(source).map_err(|error| error.to_string())?;
    let step = rusqlite::backup::Backup::new(&from, to)
        .and_then(|backup| backup.step(-1))
        .map_err(|error| error.to_string())?;
    if step != rusqlite::backup::StepResult::Done {
        return Err("the store was busy; run it again".to_owned());
    }
    Ok(())
}

/// Copies the database at `source` into `to` (an in-memory connection).
pub(super) fn copy_into(source: &Path, to: &mut Connection) -> Result<(), StoreError> {
    copy(source, to).map_err(|reason| {
        StoreError::Unavailable(format!("reading {}: {reason}", source.display()))
    })
}

/// Copies the database at `source`, which must exist, into the new file `destination` (mode
/// 0600; an existing file is an error), consistently (see [`copy`]). The copy is left as one
/// file (a rollback journal, not WAL), open for the caller to add to.
pub fn snapshot_into(source: &Path, destination: &Path) -> Result<Connection, StoreError> {
    // The source is checked first, so a wrong path creates nothing.
    drop(open_read_only(source)?);
    crate::private_files::create_new(destination).map_err(|error| {
        StoreError::Unavailable(format!("creating {}: {error}", destination.display()))
    })?;
    let copied = Connection::open(destination)
        .map_err(|error| error.to_string())
        .and_then(|mut to| {
            copy(source, &mut to)?;
            to.execute_batch("PRAGMA journal_mode=DELETE;")
                .map_err(|error| error.to_string())?;
            Ok(to)
        });
    copied.map_err(|reason| {
        // Nothing half-copied is left to be mistaken for a backup.
        let _ = std::fs::remove_file(destination);
        StoreError::Unavailable(format!("copying {}: {reason}", source.display()))
    })
}

/// What a read-only look at a store's schema found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Schema {
    /// Tables this release makes that the file lacks.
    pub missing_tables: Vec<String>,
    /// Columns added by later releases that the file lacks (`table.column`): the server adds
    /// them when it next opens the store.
    pub missing_columns: Vec<String>,
    /// Tables this release does not know: a store from a newer release, or not Hearth's.
    pub unknown_tables: Vec<String>,
    /// The newest time a stored decision or ledger entry carries (RFC 3339, UTC).
    pub newest_record: Option<String>,
}

/// The tables the schema creates.
fn known_tables() -> Vec<&'static str> {
    SCHEMA
        .split("CREATE TABLE IF NOT EXISTS ")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next())
        .collect()
}

/// Looks at the schema of the store at `path`, read-only.
pub fn inspect(path: &Path) -> Result<Schema, StoreError> {
    let connection = open_read_only(path)?;
    let present: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()
        })
        .map_err(|error| {
            StoreError::Unavailable(format!(
                "{} is not a SQLite database: {error}",
                path.display()
            ))
        })?;
    let known = known_tables();
    let mut schema = Schema {
        missing_tables: known
            .iter()
            .filter(|table| !present.iter().any(|name| name == *table))
            .map(|table| (*table).to_owned())
            .collect(),
        unknown_tables: present
            .iter()
            .filter(|name| !known.contains(&name.as_str()))
            .cloned()
            .collect(),
        ..Schema::default()
    };
    for (table, column, _) in ADDED_COLUMNS {
        if !present.iter().any(|name| name == table) {
            continue;
        }
        let found: i64 = connection
            .query_row(
                &format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
                [column],
                |row| row.get(0),
            )
            .map_err(unavailable)?;
        if found == 0 {
            schema.missing_columns.push(format!("{table}.{column}"));
        }
    }
    if present.iter().any(|name| name == "chain_records") {
        schema.newest_record = connection
            .query_row(
                "SELECT MAX(COALESCE(json_extract(body, '$.recorded_at'), json_extract(body, '$.at')))
                 FROM chain_records",
                [],
                |row| row.get(0),
            )
            .map_err(unavailable)?;
    }
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_every_table_the_store_makes() {
        assert_eq!(
            known_tables(),
            [
                "chain_heads",
                "chain_records",
                "accounts",
                "chain_logs",
                "log_hashes",
                "grants",
                "clients",
                "cosigned"
            ]
        );
    }

    #[test]
    fn a_store_made_by_this_release_has_its_whole_schema_and_an_old_one_lacks_its_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        drop(super::super::sqlite::SqliteStore::open(&path).unwrap());
        assert_eq!(inspect(&path).unwrap(), Schema::default());

        let old = dir.path().join("old.db");
        let connection = Connection::open(&old).unwrap();
        connection
            .execute_batch(
                "CREATE TABLE chain_logs (scope TEXT, name TEXT);
                 CREATE TABLE somebody_elses (x);",
            )
            .unwrap();
        drop(connection);
        let schema = inspect(&old).unwrap();
        assert_eq!(schema.missing_columns, ["chain_logs.expires_at_ms"]);
        assert_eq!(schema.unknown_tables, ["somebody_elses"]);
        assert_eq!(schema.missing_tables.len(), 7);
    }
}
