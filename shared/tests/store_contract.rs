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

/// Where each backend deletes a sign-up that expired unlinked: SQLite when the next account
/// is created, DynamoDB by its TTL, which the account and its index item both carry until the
/// first link writes them without it.
mod unlinked_sign_ups {
    use hearth_core::store::{AccountItem, AccountStore};

    use super::*;

    const NOW: i64 = 1_764_500_000_000;

    fn signed_up(
        household_id: &str,
        expires_at_ms: Option<i64>,
        created_at_ms: i64,
    ) -> AccountItem {
        AccountItem::from_stored(
            &serde_json::json!({
                "household_id": household_id,
                "name": "Signed up",
                "policy": null,
                "generation": 0,
                "tokens_issued": 0,
                "device_keys": [],
                "signup_expires_at_ms": expires_at_ms,
                "created_at_ms": created_at_ms,
                "revision": 1,
            })
            .to_string(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn sqlite_deletes_an_expired_sign_up_at_the_next_creation() {
        let store = SqliteStore::open(std::path::Path::new(":memory:")).unwrap();
        store
            .put_account(&signed_up("hh-old", Some(NOW + 10), NOW), None)
            .await
            .unwrap();
        store
            .put_account(&signed_up("hh-live", Some(NOW + 1_000), NOW), None)
            .await
            .unwrap();
        store
            .put_account(&signed_up("hh-kept", None, NOW), None)
            .await
            .unwrap();
        // One millisecond before its expiry it stays; at its expiry it goes.
        store
            .put_account(&signed_up("hh-a", None, NOW + 9), None)
            .await
            .unwrap();
        assert!(store.account("hh-old").await.unwrap().is_some());
        store
            .put_account(&signed_up("hh-b", None, NOW + 10), None)
            .await
            .unwrap();
        assert!(store.account("hh-old").await.unwrap().is_none());
        for kept in ["hh-live", "hh-kept", "hh-a", "hh-b"] {
            assert!(store.account(kept).await.unwrap().is_some(), "{kept}");
        }
    }

    #[tokio::test]
    async fn dynamodb_gives_an_unlinked_sign_up_a_ttl_until_its_first_link() {
        let client = Moto::shared().dynamodb_client();
        let table = unique_name("hearth-signup-ttl");
        let store = DynamoStore::new(client.clone(), table.clone());
        store.ensure_table().await.unwrap();
        let item = signed_up("hh-s", Some(NOW + 1_500), NOW);
        store.put_account(&item, None).await.unwrap();
        let ttl_of = |pk: &str, sk: &str| {
            let client = client.clone();
            let table = table.clone();
            let (pk, sk) = (pk.to_owned(), sk.to_owned());
            async move {
                let read = client
                    .get_item()
                    .table_name(table)
                    .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk))
                    .key("sk", aws_sdk_dynamodb::types::AttributeValue::S(sk))
                    .send()
                    .await
                    .unwrap();
                read.item()
                    .and_then(|item| item.get("expires_at"))
                    .map(|ttl| ttl.as_n().unwrap().to_owned())
            }
        };
        // The TTL is in seconds, rounded up: never before the account reads as expired.
        let expected = Some(((NOW + 1_500 + 999) / 1000).to_string());
        assert_eq!(ttl_of("account#hh-s", "account").await, expected);
        assert_eq!(ttl_of("accounts", "hh-s").await, expected);
        let mut linked = item.clone();
        linked.signup_expires_at_ms = None;
        linked.tokens_issued = 1;
        linked.revision = 2;
        store.put_account(&linked, Some(1)).await.unwrap();
        assert_eq!(ttl_of("account#hh-s", "account").await, None);
        assert_eq!(ttl_of("accounts", "hh-s").await, None);
    }
}
