//! Runs the store contract against every backend: the embedded SQLite store (on a file, and in
//! memory), and the DynamoDB store against `moto_server` on loopback (a fresh table per test).

mod contract;

use std::sync::Arc;

use contract::Backend;
use hearth_core::store::dynamodb::DynamoStore;
use hearth_core::store::sqlite::SqliteStore;
use hearth_testkit::moto::{Moto, unique_name};

async fn sqlite() -> Backend {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(&dir.path().join("contract.db")).expect("open SQLite store");
    let store = Arc::new(store);
    Backend {
        store: store.clone(),
        counters: store.clone(),
        accounts: store.clone(),
        grants: store.clone(),
        clients: store.clone(),
        cosigned: store,
        names_winners: false,
        _guard: Box::new(dir),
    }
}

/// SQLite in memory: one connection's private database, which its reads must share.
async fn sqlite_in_memory() -> Backend {
    let store = SqliteStore::open(std::path::Path::new(":memory:")).expect("open SQLite store");
    let store = Arc::new(store);
    Backend {
        store: store.clone(),
        counters: store.clone(),
        accounts: store.clone(),
        grants: store.clone(),
        clients: store.clone(),
        cosigned: store,
        names_winners: false,
        _guard: Box::new(()),
    }
}

async fn dynamodb() -> Backend {
    let store = DynamoStore::new(
        Moto::shared().dynamodb_client(),
        unique_name("hearth-contract"),
    );
    store
        .ensure_table()
        .await
        .expect("create the table in moto");
    let store = Arc::new(store);
    Backend {
        store: store.clone(),
        counters: store.clone(),
        accounts: store.clone(),
        grants: store.clone(),
        clients: store.clone(),
        cosigned: store,
        names_winners: true,
        _guard: Box::new(()),
    }
}

contract_tests!(sqlite, sqlite());
contract_tests!(sqlite_in_memory, sqlite_in_memory());
contract_tests!(dynamodb, dynamodb());
