//! Runs the store contract against every backend: the embedded SQLite store, and the DynamoDB
//! store against `moto_server` on loopback (a fresh table per test).

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
contract_tests!(dynamodb, dynamodb());
