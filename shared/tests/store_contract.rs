//! Runs the store contract against every backend: the embedded SQLite store (on a file, and in
//! memory), and the DynamoDB store against `moto_server` on loopback (a fresh table per test).

mod contract;

use std::sync::Arc;

use contract::Backend;
use hearth_core::store::dynamodb::DynamoStore;
use hearth_core::store::sqlite::SqliteStore;
use hearth_testkit::moto::{Moto, unique_name};

/// One store serving every role, as each backend does.
fn serving_all<S>(store: S, names_winners: bool, guard: Box<dyn std::any::Any + Send>) -> Backend
where
    S: hearth_core::store::ChainStore
        + hearth_core::store::CounterStore
        + hearth_core::store::AccountStore
        + hearth_core::store::GrantStore
        + hearth_core::store::ClientStore
        + hearth_core::store::CosignedStore
        + 'static,
{
    let store = Arc::new(store);
    Backend {
        store: store.clone(),
        counters: store.clone(),
        accounts: store.clone(),
        grants: store.clone(),
        clients: store.clone(),
        cosigned: store,
        names_winners,
        _guard: guard,
    }
}

async fn sqlite() -> Backend {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(&dir.path().join("contract.db")).expect("open SQLite store");
    serving_all(store, false, Box::new(dir))
}

/// SQLite in memory: one connection's private database, which its reads must share.
async fn sqlite_in_memory() -> Backend {
    let store = SqliteStore::open(std::path::Path::new(":memory:")).expect("open SQLite store");
    serving_all(store, false, Box::new(()))
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
    serving_all(store, true, Box::new(()))
}

contract_tests!(sqlite, sqlite());
contract_tests!(sqlite_in_memory, sqlite_in_memory());
contract_tests!(dynamodb, dynamodb());
