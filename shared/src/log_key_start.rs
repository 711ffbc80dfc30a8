//! The local server's log key, settled against what the store holds before anything is
//! served, so that a server never starts silently wrong.
//!
//! A store restored without its `log-key` file used to start with a new key, report healthy,
//! and then refuse every write ("The decision history cannot be trusted"), because each
//! chain's log head is signed by the key that is gone. Now the server reads the heads first:
//! - with no key configured and none in the data folder, a key is made only for a store that
//!   holds no signed log head;
//! - it refuses to start when more than half of the signed heads verify under no configured
//!   key or identity (every head, when the key is missing), and says what to do;
//! - `serve --new-log-key` is the explicit way to begin a new identity: every log the key does
//!   not verify is started anew with a recorded reset, as `hearth admin log reset` does.
//!
//! A store out of reach at start (a DynamoDB table during an outage) cannot be checked: the
//! server starts as before (making a key if it has none), logs that the check was not made, and
//! the next start or `hearth doctor` makes it.

use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::auth::dev_credentials;
use crate::clock::{Clock, SystemClock, unix_ms};
use crate::config::{Config, Runtime, StoreChoice};
use crate::store::{ChainKey, ChainStore, LogHead};
use crate::tlog::note;
use crate::transparency::LogKeys;

/// The signed log heads a store holds, and those no configured key or identity verifies.
#[derive(Debug, Default)]
pub struct HeadsChecked {
    pub signed: usize,
    pub unverified: Vec<ChainKey>,
}

impl HeadsChecked {
    /// Whether more than half the signed heads verify under no configured key: more than a
    /// rotation left half-done can explain.
    pub fn mostly_unverified(&self) -> bool {
        self.unverified.len() * 2 > self.signed
    }
}

/// Checks every signed log head `store` keeps against `keys` (every head is unverified when
/// there are none).
pub async fn check_heads(
    store: &dyn ChainStore,
    keys: Option<&LogKeys>,
    now_ms: i64,
) -> anyhow::Result<HeadsChecked> {
    let heads = store
        .signed_log_heads(now_ms)
        .await
        .context("reading the stored log heads")?;
    let verifies = |head: &LogHead| {
        keys.is_some_and(|keys| note::verify(&head.checkpoint, keys.verifiers()).is_ok())
    };
    Ok(HeadsChecked {
        signed: heads.len(),
        unverified: heads
            .into_iter()
            .filter(|(_, head)| !verifies(head))
            .map(|(key, _)| key)
            .collect(),
    })
}

/// The store as a sentence names it.
pub fn store_name(config: &Config) -> String {
    match &config.store {
        StoreChoice::Sqlite(path) => format!("the SQLite store {}", path.display()),
        StoreChoice::DynamoDb(table) => format!("the DynamoDB table {table}"),
        StoreChoice::Unconfigured => "the store".to_owned(),
    }
}

/// Settles the local server's log key: the one configured (`HEARTH_LOG_KEY`), the one in
/// `<data dir>/log-key`, or a new one, checked against the heads the store holds as the
/// module comment says. Fails with what to do when the server must not start. Under Lambda it
/// does nothing: `hearth doctor --aws` reports the same findings there.
pub async fn settle(config: &mut Config, new_log_key: bool) -> anyhow::Result<()> {
    if config.runtime != Runtime::Local || matches!(config.store, StoreChoice::Unconfigured) {
        return Ok(());
    }
    let key_file = dev_credentials::log_key_path(&config.data_dir);
    let from_environment = config.credentials.log_key.is_some();
    if !from_environment {
        config.credentials.log_key = dev_credentials::read_log_key(&config.data_dir)?;
    }
    let stores = crate::app::open_stores(config).await?;
    let now_ms = unix_ms(SystemClock.now());
    // A store out of reach at start (a DynamoDB table during an outage) is an outage, not a
    // misconfiguration: the server starts, and what needs the store says it is unavailable.
    // The check is then left to the next start, and to `hearth doctor`.
    let unchecked = |error: anyhow::Error| {
        tracing::error!(
            error = %format!("{error:#}"),
            "the log key could not be checked against the store, which is out of reach; restart once it is back, or run hearth doctor"
        );
    };
    let missing_key = config.credentials.log_key.is_none();
    if missing_key {
        let heads = match check_heads(stores.chains.as_ref(), None, now_ms).await {
            Ok(heads) => heads,
            Err(error) => {
                unchecked(error);
                HeadsChecked::default()
            }
        };
        if heads.signed > 0 && !new_log_key {
            bail!(
                "{store} holds {n} signed log heads, but the key that signed them is missing: {file} does not exist and HEARTH_LOG_KEY is not set. Restore {file} from the backup the store came from (`hearth admin restore` brings both back), or start with `hearth serve --new-log-key` to start every log anew under a new key (receipts kept from the old logs will then check as replaced)",
                store = store_name(config),
                n = heads.signed,
                file = key_file.display(),
            );
        }
        config.credentials.log_key = Some(
            dev_credentials::create_log_key(&config.data_dir)
                .with_context(|| format!("creating the log key {}", key_file.display()))?,
        );
        tracing::info!(file = %key_file.display(), "made a new log key");
    }
    let keys = crate::app::log_keys(config);
    let heads = match check_heads(stores.chains.as_ref(), keys.as_deref(), now_ms).await {
        Ok(heads) => heads,
        Err(error) => {
            unchecked(error);
            return Ok(());
        }
    };
    drop(stores);
    if heads.unverified.is_empty() {
        return Ok(());
    }
    if new_log_key {
        let admin = crate::app::admin(config).await?;
        let started = admin
            .start_logs_anew(&heads.unverified)
            .await
            .context("starting the logs anew")?;
        tracing::warn!(
            logs = started,
            "--new-log-key: logs the log key does not verify were started anew, each with a recorded reset; receipts kept from the old logs now check as replaced"
        );
        return Ok(());
    }
    let source = if from_environment {
        "HEARTH_LOG_KEY".to_owned()
    } else {
        key_file.display().to_string()
    };
    let unverified = heads.unverified.len();
    if heads.mostly_unverified() {
        let counted = if unverified == heads.signed {
            format!("None of the {} signed log heads", heads.signed)
        } else {
            format!("{unverified} of the {} signed log heads", heads.signed)
        };
        bail!(
            "{counted} in {store} verify under the log key in {source} or an identity in HEARTH_LOG_KEY_NAMES_PREVIOUS. If the key or the server's address changed, configure the earlier key or identity (HEARTH_LOG_KEY_PREVIOUS, HEARTH_LOG_KEY_NAMES_PREVIOUS; see Rotating the log key); if this is the wrong key, restore the one that signed them; or start with `hearth serve --new-log-key` to start those logs anew under this key",
            store = store_name(config),
        );
    }
    tracing::warn!(
        unverified,
        signed = heads.signed,
        "some signed log heads verify under no configured log key or identity; their chains refuse appends until they are re-signed or started anew (hearth admin log reset)"
    );
    Ok(())
}

/// The local log key for `hearth admin`, which never makes one: `HEARTH_LOG_KEY`, or the
/// server's `<data dir>/log-key`, which must exist.
pub fn read_for_admin(config: &mut Config) -> anyhow::Result<()> {
    if config.runtime != Runtime::Local || config.credentials.log_key.is_some() {
        return Ok(());
    }
    let path: PathBuf = dev_credentials::log_key_path(&config.data_dir);
    config.credentials.log_key = Some(dev_credentials::read_log_key(&config.data_dir)?.ok_or_else(|| {
        anyhow::anyhow!(
            "there is no log key at {}: point --data-dir (HEARTH_DATA_DIR) at the server's data folder, or set HEARTH_LOG_KEY",
            path.display()
        )
    })?);
    Ok(())
}
