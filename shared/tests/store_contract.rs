//! Runs the `ChainStore` contract against every backend available to this crate.

mod contract;

use std::sync::Arc;

use contract::Backend;
use hearth_core::store::sqlite::SqliteStore;

async fn sqlite() -> Backend {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(&dir.path().join("contract.db")).expect("open SQLite store");
    let store = Arc::new(store);
    Backend {
        store: store.clone(),
        counters: store,
        _guard: Box::new(dir),
    }
}

contract_tests!(sqlite, sqlite());
