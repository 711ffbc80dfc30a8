//! `hearth doctor [--aws]`: reads the configuration `hearth serve` reads and checks the setup
//! it describes, each check answering ok, warn, fail or skip with a line saying what to do.
//! It never writes: the SQLite store is read through a read-only connection and an in-memory
//! copy, the log key is read and never made, and on AWS it only describes and reads.
//!
//! What it checks: every setting parses; the store opens and its schema is this release's;
//! the data folder and its files are private; the log key exists and verifies the stored log
//! heads (under the current key or a `HEARTH_LOG_KEY_NAMES_PREVIOUS` identity); the resource
//! URL is canonical and https off loopback; each configured witness answers; the clock is not
//! behind the newest stored record. With `--aws`: the table (and its point-in-time recovery)
//! and the credentials secrets are reachable, with the read actions the functions use.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::auth::dev_credentials;
use crate::clock::{Clock, SystemClock, unix_ms};
use crate::config::canonical_resource;
use crate::config::{Config, CredentialSource, StoreChoice};
use crate::log_key_start::{check_heads, store_name};
use crate::store::ChainStore;
use crate::store::sqlite::SqliteStore;
use crate::store::sqlite_files::{Schema, inspect};

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
    /// Not checked: what it needs is not configured, or an earlier check failed.
    Skip,
}

/// One check: what it found, and what to do when that is not ok.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn new(name: &'static str, status: Status, detail: impl Into<String>) -> Self {
        Self {
            name,
            status,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// Every check, in order; `ok` when none failed.
#[derive(Debug, Serialize)]
pub struct Report {
    pub ok: bool,
    pub checks: Vec<Check>,
}

/// How long a witness has to answer.
const WITNESS_TIMEOUT: Duration = Duration::from_secs(3);

/// How far the newest stored record may be ahead of the clock before the clock is called
/// wrong: more than two machines' ordinary drift.
const CLOCK_SLACK_MS: i64 = 5 * 60 * 1000;

/// Runs every check over the configuration `settings` (the flags given) and the environment
/// make, as `hearth serve` would read it; `aws` adds the checks of a deployment.
pub async fn examine(settings: &[(&'static str, String)], aws: bool) -> Report {
    let mut checks = Vec::new();
    match Config::from_env_with(settings) {
        Err(error) => {
            checks.push(
                Check::new("settings", Status::Fail, error.to_string()).fix(
                    "correct the setting named; the manual's Configuration page lists them all",
                ),
            );
        }
        Ok(config) => {
            checks.push(Check::new("settings", Status::Ok, "every setting parses"));
            let resource = settings
                .iter()
                .find(|(name, _)| *name == "MCP_RESOURCE_URL")
                .map(|(_, value)| value.clone())
                .or_else(|| std::env::var("MCP_RESOURCE_URL").ok());
            examine_config(config, resource, aws, &mut checks).await;
        }
    }
    Report {
        ok: checks.iter().all(|check| check.status != Status::Fail),
        checks,
    }
}

async fn examine_config(
    mut config: Config,
    resource: Option<String>,
    aws: bool,
    checks: &mut Vec<Check>,
) {
    #[cfg(feature = "aws")]
    if aws {
        aws_checks(&mut config, checks).await;
    }
    #[cfg(not(feature = "aws"))]
    if aws {
        checks.push(Check::new(
            "aws",
            Status::Fail,
            "this build has no AWS services",
        ));
    }
    let store = match &config.store {
        StoreChoice::Sqlite(path) => sqlite_checks(&config, path, checks),
        StoreChoice::DynamoDb(_) => dynamodb_store(&config, aws, checks).await,
        StoreChoice::Unconfigured => {
            checks.push(
                Check::new("store", Status::Fail, "no store is configured")
                    .fix("set HEARTH_TABLE (DynamoDB) or HEARTH_DB (SQLite)"),
            );
            None
        }
    };
    if !aws {
        checks.push(modes(&config));
    }
    // A deployment's log heads are signed under its public URL's host: without the URL the
    // check would compare them with the wrong key name.
    if aws && resource.is_none() {
        checks.push(Check::new(
            "log key",
            Status::Skip,
            "needs MCP_RESOURCE_URL: log heads are signed under its host",
        ));
    } else {
        checks.push(log_key(&mut config, store.as_deref(), aws).await);
    }
    checks.push(resource_url(&config, resource, aws));
    checks.extend(witnesses(&config).await);
}

/// The SQLite store: its schema, read-only, and the clock against its newest record. Returns
/// an in-memory copy of it for the log heads' check.
fn sqlite_checks(
    config: &Config,
    path: &Path,
    checks: &mut Vec<Check>,
) -> Option<Box<dyn ChainStore>> {
    let folder = &config.data_dir;
    let fresh = !folder.join(dev_credentials::LOG_KEY_FILE).exists()
        && !folder.join(dev_credentials::FILE_NAME).exists();
    if !path.is_file() && fresh {
        // A new installation: the server makes the store, and its key, at its first start.
        checks.push(Check::new(
            "store",
            Status::Skip,
            format!(
                "no store yet at {}: the server creates it at its first start",
                path.display()
            ),
        ));
        checks.push(Check::new(
            "clock",
            Status::Skip,
            "no store to compare with",
        ));
        return None;
    }
    if !path.is_file() {
        checks.push(
            Check::new(
                "store",
                Status::Fail,
                format!("there is no SQLite store at {}", path.display()),
            )
            .fix("point --db or --data-dir at the server's store, or start the server once to create it"),
        );
        checks.push(Check::new(
            "clock",
            Status::Skip,
            "no store to compare with",
        ));
        return None;
    }
    let schema = match inspect(path) {
        Ok(schema) => schema,
        Err(error) => {
            checks.push(Check::new("store", Status::Fail, error.to_string()));
            checks.push(Check::new(
                "clock",
                Status::Skip,
                "no store to compare with",
            ));
            return None;
        }
    };
    checks.push(schema_check(config, &schema));
    checks.push(clock(schema.newest_record.as_deref()));
    match SqliteStore::open_copy(path) {
        Ok(store) => Some(Box::new(store)),
        Err(error) => {
            checks.push(Check::new("store", Status::Fail, error.to_string()));
            None
        }
    }
}

fn schema_check(config: &Config, schema: &Schema) -> Check {
    let store = store_name(config);
    if !schema.unknown_tables.is_empty() {
        return Check::new(
            "store",
            Status::Warn,
            format!(
                "{store} has tables this release does not know: {}",
                schema.unknown_tables.join(", ")
            ),
        )
        .fix("a store written by a newer release needs that release; a file that is not Hearth's needs another --db");
    }
    if !schema.missing_tables.is_empty() || !schema.missing_columns.is_empty() {
        let missing: Vec<&str> = schema
            .missing_tables
            .iter()
            .chain(&schema.missing_columns)
            .map(String::as_str)
            .collect();
        return Check::new(
            "store",
            Status::Warn,
            format!(
                "{store} opens, and this release's migrations are not applied yet: {} missing",
                missing.join(", ")
            ),
        )
        .fix("start the server once: it applies them when it opens the store");
    }
    Check::new(
        "store",
        Status::Ok,
        format!("{store} opens, and its schema is this release's"),
    )
}

fn clock(newest: Option<&str>) -> Check {
    let Some(newest) = newest else {
        return Check::new("clock", Status::Ok, "no record stored yet to compare with");
    };
    let Ok(at) =
        time::OffsetDateTime::parse(newest, &time::format_description::well_known::Rfc3339)
    else {
        return Check::new(
            "clock",
            Status::Warn,
            format!("the newest record's time {newest:?} does not parse"),
        );
    };
    let at_ms = (at.unix_timestamp_nanos() / 1_000_000) as i64;
    let now_ms = unix_ms(SystemClock.now());
    if at_ms > now_ms + CLOCK_SLACK_MS {
        return Check::new(
            "clock",
            Status::Fail,
            format!(
                "the clock is {} minutes behind the newest stored record ({newest})",
                (at_ms - now_ms) / 60_000
            ),
        )
        .fix("set the machine's clock (timedatectl, NTP): windows, budgets and token lifetimes follow it");
    }
    Check::new(
        "clock",
        Status::Ok,
        format!("not behind the newest stored record ({newest})"),
    )
}

/// The data folder 0700 and every file Hearth keeps 0600: what the server creates.
fn modes(config: &Config) -> Check {
    #[cfg(unix)]
    {
        use crate::private_files::mode_of;
        let mut wide: Vec<String> = Vec::new();
        let mut fixes: Vec<String> = Vec::new();
        let folder = &config.data_dir;
        if !folder.is_dir() {
            return Check::new(
                "modes",
                Status::Skip,
                format!("{} does not exist", folder.display()),
            );
        }
        if let Ok(mode) = mode_of(folder)
            && mode & 0o077 != 0
        {
            wide.push(format!("{} is {mode:o}", folder.display()));
            fixes.push(format!("chmod 700 {}", folder.display()));
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| path.is_file())
                    .collect()
            })
            .unwrap_or_default();
        if let StoreChoice::Sqlite(db) = &config.store
            && db.parent() != Some(folder.as_path())
        {
            for suffix in ["", "-wal", "-shm"] {
                files.push(PathBuf::from(format!("{}{suffix}", db.display())));
            }
        }
        files.sort();
        for file in files {
            if let Ok(mode) = mode_of(&file)
                && mode & 0o077 != 0
            {
                wide.push(format!("{} is {mode:o}", file.display()));
                fixes.push(format!("chmod 600 {}", file.display()));
            }
        }
        if wide.is_empty() {
            return Check::new(
                "modes",
                Status::Ok,
                format!(
                    "{} and its files are readable by their owner only",
                    folder.display()
                ),
            );
        }
        Check::new(
            "modes",
            Status::Warn,
            format!("others may read what the server keeps: {}", wide.join("; ")),
        )
        .fix(fixes.join(" && "))
    }
    #[cfg(not(unix))]
    Check::new("modes", Status::Skip, "file modes are checked on Unix only")
}

/// The log key, and the stored log heads it verifies.
async fn log_key(config: &mut Config, store: Option<&dyn ChainStore>, aws: bool) -> Check {
    let key_file = dev_credentials::log_key_path(&config.data_dir);
    let source = if config.credentials.log_key.is_some() {
        if aws {
            "the credentials secrets".to_owned()
        } else {
            "HEARTH_LOG_KEY".to_owned()
        }
    } else if aws {
        "nowhere".to_owned()
    } else {
        match dev_credentials::read_log_key(&config.data_dir) {
            Ok(Some(key)) => {
                config.credentials.log_key = Some(key);
                key_file.display().to_string()
            }
            Ok(None) => "nowhere".to_owned(),
            Err(error) => {
                return Check::new("log key", Status::Fail, error.to_string());
            }
        }
    };
    let Some(store) = store else {
        return Check::new(
            "log key",
            Status::Skip,
            "no store to check the log heads of",
        );
    };
    let keys = crate::app::log_keys(config);
    let now_ms = unix_ms(SystemClock.now());
    let heads = match check_heads(store, keys.as_deref(), now_ms).await {
        Ok(heads) => heads,
        Err(error) => return Check::new("log key", Status::Fail, format!("{error:#}")),
    };
    if config.credentials.log_key.is_none() && aws {
        return Check::new(
            "log key",
            if heads.signed == 0 { Status::Warn } else { Status::Fail },
            format!(
                "the secrets hold no HEARTH_LOG_KEY, and the table holds {} signed log heads: logs grow unsigned and no receipt carries a proof",
                heads.signed
            ),
        )
        .fix("put the log key in the log secret (see the manual, Secrets)");
    }
    if config.credentials.log_key.is_none() {
        if heads.signed == 0 {
            return Check::new(
                "log key",
                Status::Ok,
                "no log key yet, and no signed log head: the server makes one at its first start",
            );
        }
        return Check::new(
            "log key",
            Status::Fail,
            format!(
                "the store holds {} signed log heads, but there is no log key ({} does not exist and HEARTH_LOG_KEY is not set): the server refuses to start",
                heads.signed,
                key_file.display()
            ),
        )
        .fix("restore the log key from the backup the store came from, or start once with `hearth serve --new-log-key` to start every log anew");
    }
    let unverified = heads.unverified.len();
    if heads.signed == 0 {
        return Check::new(
            "log key",
            Status::Ok,
            format!("the log key is in {source}; no log head is signed yet"),
        );
    }
    if unverified == 0 {
        return Check::new(
            "log key",
            Status::Ok,
            format!(
                "all {} signed log heads verify under the log key in {source}",
                heads.signed
            ),
        );
    }
    let signing_as = keys
        .as_ref()
        .and_then(|keys| keys.published().into_iter().next())
        .and_then(|key| key.vkey.split('+').next().map(str::to_owned))
        .unwrap_or_default();
    let detail = format!(
        "{unverified} of the {} signed log heads verify under neither the log key in {source} (as {signing_as}, from MCP_RESOURCE_URL's host and HEARTH_LOG_KEY_VERSION) nor an identity in HEARTH_LOG_KEY_NAMES_PREVIOUS",
        heads.signed
    );
    let earlier = if aws {
        "PreviousLogVerifiers (HEARTH_LOG_KEY_NAMES_PREVIOUS) or the log secret's previous key"
    } else {
        "HEARTH_LOG_KEY_PREVIOUS or HEARTH_LOG_KEY_NAMES_PREVIOUS"
    };
    if heads.mostly_unverified() {
        let fix = if aws {
            format!(
                "check MCP_RESOURCE_URL and HEARTH_LOG_KEY_VERSION are the deployment's; configure the earlier key or identity ({earlier}), restore the log secret that signed them, or start the logs anew (hearth admin log reset)"
            )
        } else {
            format!(
                "check MCP_RESOURCE_URL and HEARTH_LOG_KEY_VERSION are the server's; configure the earlier key or identity ({earlier}), restore the key that signed them, or start with `hearth serve --new-log-key`"
            )
        };
        let effect = if aws {
            "every write to those chains is refused"
        } else {
            "the server refuses to start"
        };
        Check::new("log key", Status::Fail, format!("{detail}: {effect}")).fix(fix)
    } else {
        Check::new("log key", Status::Warn, format!("{detail}: their chains refuse appends"))
            .fix(format!("configure the identity that signed them ({earlier}), or start those logs anew (hearth admin log reset)"))
    }
}

/// `MCP_RESOURCE_URL`: written in the form hosts compare, and https off loopback (the
/// configuration already refuses plain http elsewhere).
fn resource_url(config: &Config, written: Option<String>, aws: bool) -> Check {
    if aws && written.is_none() {
        return Check::new(
            "resource url",
            Status::Fail,
            "MCP_RESOURCE_URL is not set: a deployment's tokens, discovery and log keys follow its public URL",
        )
        .fix("set MCP_RESOURCE_URL to the deployment's public URL of /mcp, as its functions have it");
    }
    let Some(urls) = &config.urls else {
        return Check::new("resource url", Status::Fail, "MCP_RESOURCE_URL is not set")
            .fix("set MCP_RESOURCE_URL to the public URL of /mcp, as clients reach it");
    };
    let resource = urls.resource();
    let Some(written) = written.filter(|written| !written.trim().is_empty()) else {
        return Check::new(
            "resource url",
            Status::Ok,
            format!("not set: {resource}, reachable from this machine only"),
        );
    };
    if canonical_resource(&written).as_deref() != Some(written.trim()) {
        return Check::new(
            "resource url",
            Status::Warn,
            format!("MCP_RESOURCE_URL is written {written:?}, and used as {resource}"),
        )
        .fix(format!(
            "set MCP_RESOURCE_URL={resource}, as tokens and discovery carry it"
        ));
    }
    let scheme = if resource.starts_with("https://") {
        "https"
    } else {
        "http on a loopback host"
    };
    Check::new(
        "resource url",
        Status::Ok,
        format!("{resource}: canonical, {scheme}"),
    )
}

/// Each witness of the policy answers an HTTP request at its URL.
async fn witnesses(config: &Config) -> Vec<Check> {
    let Some(submission) = &config.witnesses else {
        return vec![Check::new(
            "witnesses",
            Status::Skip,
            "no witness policy is configured",
        )];
    };
    let client = match reqwest::Client::builder().timeout(WITNESS_TIMEOUT).build() {
        Ok(client) => client,
        Err(error) => return vec![Check::new("witnesses", Status::Fail, error.to_string())],
    };
    let mut checks = Vec::new();
    for witness in &submission.policy.witnesses {
        let Some(url) = &witness.url else {
            checks.push(
                Check::new(
                    "witness",
                    Status::Warn,
                    format!(
                        "the policy gives witness {} no URL, so it is never asked",
                        witness.name
                    ),
                )
                .fix("add the witness's submission URL to its line in the policy"),
            );
            continue;
        };
        checks.push(match client.get(url).send().await {
            Ok(answer) => Check::new(
                "witness",
                Status::Ok,
                format!("{} answers at {url} ({})", witness.name, answer.status()),
            ),
            Err(error) => Check::new(
                "witness",
                Status::Fail,
                format!(
                    "{} did not answer at {url}: {}",
                    witness.name,
                    if error.is_timeout() { "timed out" } else { "unreachable" }
                ),
            )
            .fix("start the witness or correct its URL in the policy: checkpoints it does not cosign miss the quorum"),
        });
    }
    checks
}

/// The DynamoDB table as `hearth serve` (or, with `--aws`, the functions) use it.
#[cfg(feature = "aws")]
async fn dynamodb_store(
    config: &Config,
    aws: bool,
    checks: &mut Vec<Check>,
) -> Option<Box<dyn ChainStore>> {
    use crate::store::dynamodb::DynamoStore;
    use aws_sdk_dynamodb::error::ProvideErrorMetadata;
    let StoreChoice::DynamoDb(table) = &config.store else {
        return None;
    };
    let client = DynamoStore::client_from_environment().await;
    let store = DynamoStore::new(client.clone(), table.clone());
    if let Err(error) = store.require_table().await {
        checks.push(Check::new("table", Status::Fail, error.to_string()));
        return None;
    }
    checks.push(Check::new(
        "table",
        Status::Ok,
        format!("the DynamoDB table {table} exists (dynamodb:DescribeTable)"),
    ));
    if aws {
        checks.push(
            match client
                .describe_continuous_backups()
                .table_name(table)
                .send()
                .await
            {
                Ok(described) => {
                    let enabled = described
                        .continuous_backups_description()
                        .and_then(|backups| backups.point_in_time_recovery_description())
                        .and_then(|recovery| recovery.point_in_time_recovery_status())
                        .is_some_and(|status| {
                            *status == aws_sdk_dynamodb::types::PointInTimeRecoveryStatus::Enabled
                        });
                    if enabled {
                        Check::new("backups", Status::Ok, "point-in-time recovery is on")
                    } else {
                        Check::new("backups", Status::Warn, "point-in-time recovery is off")
                            .fix("turn it on (the template does): it is the table's backup")
                    }
                }
                Err(error) => Check::new(
                    "backups",
                    Status::Fail,
                    format!(
                        "dynamodb:DescribeContinuousBackups was refused: {}",
                        error.code().unwrap_or("no answer")
                    ),
                ),
            },
        );
    }
    checks.push(Check::new(
        "clock",
        Status::Skip,
        "not compared on DynamoDB (it would read every record)",
    ));
    Some(Box::new(store))
}

#[cfg(not(feature = "aws"))]
async fn dynamodb_store(
    _config: &Config,
    _aws: bool,
    checks: &mut Vec<Check>,
) -> Option<Box<dyn ChainStore>> {
    checks.push(Check::new(
        "table",
        Status::Fail,
        "this build has no AWS services",
    ));
    None
}

/// With `--aws`: the credentials secrets are read as the functions read them.
#[cfg(feature = "aws")]
async fn aws_checks(config: &mut Config, checks: &mut Vec<Check>) {
    if !matches!(config.store, StoreChoice::DynamoDb(_)) {
        checks.push(
            Check::new("table", Status::Fail, "HEARTH_TABLE is not set")
                .fix("set HEARTH_TABLE to the deployed table (the stack's TableName output)"),
        );
    }
    let CredentialSource::SecretsManager(secret_ids) = &config.credential_source else {
        checks.push(
            Check::new("secrets", Status::Fail, "HEARTH_SECRET_ARN is not set")
                .fix("set HEARTH_SECRET_ARN to the stack's secrets, comma-separated"),
        );
        return;
    };
    let client = crate::config::secrets::client_from_environment().await;
    match crate::config::secrets::read_credentials(&client, secret_ids).await {
        Ok((credentials, problems)) => {
            let missing = credentials.missing();
            config.credentials = credentials;
            let mut check = Check::new(
                "secrets",
                Status::Ok,
                format!(
                    "read {} secrets (secretsmanager:GetSecretValue)",
                    secret_ids.len()
                ),
            );
            if !problems.is_empty() || !missing.is_empty() {
                check.status = Status::Warn;
                check.detail = format!(
                    "{}; {} left out, {} missing",
                    check.detail,
                    problems.len(),
                    if missing.is_empty() {
                        "none".to_owned()
                    } else {
                        missing.join(", ")
                    }
                );
                check.fix = Some("fill in the secrets the AWS page lists".to_owned());
            }
            checks.push(check);
        }
        Err(error) => checks.push(Check::new("secrets", Status::Fail, error.to_string())),
    }
}
