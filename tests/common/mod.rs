//! Builds Hearth routers for tests from a configuration map, over a fresh SQLite file.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use hearth_core::chain::sha256_hex;
use hearth_core::clock::ManualClock;
use hearth_core::config::Config;
use hearth_core::store::ChainStore;
use hearth_core::store::sqlite::SqliteStore;
use tempfile::TempDir;

pub const TOKEN: &str = "hearth-fixture-token";

pub struct Harness {
    pub router: Router,
    pub dir: TempDir,
    pub clock: Arc<ManualClock>,
}

impl Harness {
    pub fn db_path(&self) -> std::path::PathBuf {
        self.dir.path().join("hearth.db")
    }
}

pub fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|name| map.get(name).cloned()).expect("valid test configuration")
}

/// A router that accepts [`TOKEN`] (plus `extra` settings) over a fresh SQLite store.
pub fn harness(extra: &[(&str, &str)]) -> Harness {
    let hash = sha256_hex(TOKEN);
    let mut vars = vec![("MCP_JUDGE_TOKEN_HASHES", hash.as_str())];
    vars.extend_from_slice(extra);
    harness_with(&config(&vars))
}

pub fn harness_with(config: &Config) -> Harness {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store: Arc<dyn ChainStore> =
        Arc::new(SqliteStore::open(&dir.path().join("hearth.db")).expect("store"));
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let router = hearth_core::app::mcp_router_with(config, store, clock.clone());
    Harness { router, dir, clock }
}
