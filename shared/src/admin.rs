//! What `hearth admin` does, over the configured store: household accounts, their policies,
//! device keys, household tokens, link codes and unlinking, and adopting a credential's household data
//! into an account. The CLI in the local binary parses arguments and prints these results;
//! this module owns the operations, so a test can drive them without a process.
//!
//! It sits at the top beside `app`: it composes `accounts` with the toolsets' chain keys, so
//! deleting or adopting a household reaches every chain it owns.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::accounts::{AccountError, Accounts, Standing, new_household_id};
use crate::auth::{Caller, JwtKeys, Scopes, household_scope};
use crate::clock::{Clock, timestamp, unix_ms};
use crate::countersign::household::{HouseholdData, account_policy};
use crate::countersign::ledger::{self, Ledger};
use crate::linking::Linking;
use crate::passkeys::owners::PasskeyOwners;
use crate::store::{AccountItem, AccountSummary, ChainKey, ChainStore, GrantStore, StoreError};
use crate::transparency::{self, LogKeys, LogKind, ProofError, Resigned};
use crate::why;
use crate::why::service::WhyService;

/// The longest a household token minted by `hearth admin token` may live, in days.
pub const TOKEN_DAYS_MAX: u32 = 90;
/// How long it lives when `--days` is not given.
pub const TOKEN_DAYS_DEFAULT: u32 = 30;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error(transparent)]
    Account(#[from] AccountError),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotConfigured(String),
}

impl From<StoreError> for AdminError {
    fn from(error: StoreError) -> Self {
        AdminError::Account(error.into())
    }
}

#[derive(Debug, Serialize)]
pub struct Created {
    pub household_id: String,
    pub name: String,
}

#[derive(Debug, Serialize)]
pub struct Listing {
    pub households: Vec<AccountSummary>,
}

#[derive(Debug, Serialize)]
pub struct KeyInfo {
    pub key_id: String,
    /// RFC 3339.
    pub created_at: String,
}

#[derive(Debug, Serialize)]
pub struct Shown {
    pub household_id: String,
    pub name: String,
    pub policy: Option<Value>,
    pub linked: bool,
    pub device_keys: Vec<KeyInfo>,
}

#[derive(Debug, Serialize)]
pub struct PolicySet {
    pub household_id: String,
    pub policy: Value,
}

#[derive(Debug, Serialize)]
pub struct Removed {
    pub household_id: String,
    /// How many of each kind of item went: `accounts`, `device_keys`, `decision_records`,
    /// `ledger_entries`.
    pub removed: BTreeMap<&'static str, u64>,
}

#[derive(Debug, Serialize)]
pub struct Adopted {
    pub household_id: String,
    /// How many records moved: `decision_records`, `ledger_entries`.
    pub moved: BTreeMap<&'static str, u64>,
}

#[derive(Debug, Serialize)]
pub struct KeyAdded {
    pub key_id: String,
    /// The key itself: shown this once, never again.
    pub key: String,
}

#[derive(Debug, Serialize)]
pub struct KeyList {
    pub device_keys: Vec<KeyInfo>,
}

#[derive(Debug, Serialize)]
pub struct KeyRevoked {
    pub revoked: String,
}

#[derive(Debug, Serialize)]
pub struct Minted {
    pub access_token: String,
    pub expires_in: u64,
}

#[derive(Debug, Serialize)]
pub struct LinkCode {
    /// The code itself: shown this once, never again.
    pub code: String,
    /// RFC 3339.
    pub expires_at: String,
}

#[derive(Debug, Serialize)]
pub struct LogKey {
    /// The current key's signed-note verifier key.
    pub vkey: String,
    /// Its Ed25519 public key, base64.
    pub public_key: String,
}

#[derive(Debug, Serialize)]
pub struct LedgerExport {
    /// The retained ledger entries as stored, oldest first, each with its `entry_hash`.
    pub entries: Vec<Value>,
}

#[derive(Debug, Serialize)]
pub struct LogsReset {
    pub household_id: String,
    pub reset: Vec<LogReset>,
}

/// One log started anew: which, and the new log's first entry (a decision's `trace_id`, a
/// ledger entry's `entry_hash`), which names what it replaced.
#[derive(Debug, Serialize)]
pub struct LogReset {
    pub log: &'static str,
    pub entry: String,
    /// For the decision log, the first entry's `inputs`: the replaced log's id, origin and size.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub replaced: Value,
}

#[derive(Debug, Serialize)]
pub struct ResignedLogs {
    pub households: Vec<ResignedHousehold>,
}

/// What re-signing did to one household's two logs.
#[derive(Debug, Serialize)]
pub struct ResignedHousehold {
    pub household_id: String,
    pub decisions: Resigned,
    pub ledger: Resigned,
}

#[derive(Debug, Serialize)]
pub struct Unlinked {
    pub household_id: String,
    /// What stopped working: `access_tokens`, those issued since the last unlink.
    pub revoked: BTreeMap<&'static str, u64>,
}

pub struct Admin {
    accounts: Arc<Accounts>,
    linking: Linking,
    chains: Arc<dyn ChainStore>,
    /// Which household each passkey's credential id belongs to: a deleted household's
    /// entries go with it.
    owners: PasskeyOwners,
    /// The configured household (for adoption) and the catalogue policies are checked against.
    data: Arc<HouseholdData>,
    /// The access-token keys, when the signing key and the public URL are configured.
    jwt: Option<JwtKeys>,
    /// The transparency logs' keys, when configured.
    log_keys: Option<Arc<LogKeys>>,
    clock: Arc<dyn Clock>,
}

impl Admin {
    pub fn new(
        accounts: Accounts,
        chains: Arc<dyn ChainStore>,
        grants: Arc<dyn GrantStore>,
        data: Arc<HouseholdData>,
        jwt: Option<JwtKeys>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let accounts = Arc::new(accounts);
        Self {
            owners: PasskeyOwners::new(grants.clone()),
            linking: Linking::new(grants, accounts.clone(), clock.clone()),
            accounts,
            chains,
            data,
            jwt,
            clock,
            log_keys: None,
        }
    }

    /// The same operations knowing the logs' keys (for `log-key`).
    pub fn with_log_keys(mut self, keys: Option<Arc<LogKeys>>) -> Self {
        self.log_keys = keys;
        self
    }

    /// `log-key`: the verifier key anyone checks this deployment's checkpoints with.
    pub fn log_key(&self) -> Result<LogKey, AdminError> {
        let keys = self.log_keys.as_ref().ok_or_else(|| {
            AdminError::NotConfigured(
                "the log key needs HEARTH_LOG_KEY (generated locally on the server's first start) and MCP_RESOURCE_URL"
                    .into(),
            )
        })?;
        let current = keys
            .published()
            .into_iter()
            .next()
            .expect("log keys hold at least one key");
        Ok(LogKey {
            vkey: current.vkey,
            public_key: current.public_key,
        })
    }

    /// `log-key re-sign [--all | HOUSEHOLD]`: signs every household's log heads (or one
    /// household's) again with the current log key under the current host, where an earlier
    /// key or host signed them. An idle household's head is otherwise re-signed only on its
    /// next append, and must be before the earlier key's identity is dropped.
    pub async fn resign_logs(&self, household: Option<&str>) -> Result<ResignedLogs, AdminError> {
        let keys = self.log_keys.as_ref().ok_or_else(|| {
            AdminError::NotConfigured("re-signing needs HEARTH_LOG_KEY and MCP_RESOURCE_URL".into())
        })?;
        let households: Vec<String> = match household {
            Some(id) => {
                self.accounts.get(id).await?;
                vec![id.to_owned()]
            }
            None => self
                .accounts
                .list()
                .await?
                .into_iter()
                .map(|summary| summary.household_id)
                .collect(),
        };
        let mut report = Vec::with_capacity(households.len());
        for id in households {
            let scope = household_scope(&id);
            let mut logs = [Resigned::NoLog; 2];
            for (slot, (kind, key)) in [
                (LogKind::Decisions, why::service::chain_key_in(&scope, &id)),
                (LogKind::Ledger, ledger::chain_key_in(&scope, &id)),
            ]
            .into_iter()
            .enumerate()
            {
                let now_ms = unix_ms(self.clock.now());
                logs[slot] = transparency::resign(self.chains.as_ref(), keys, kind, &key, now_ms)
                    .await
                    .map_err(|error| match error {
                        ProofError::Store(error) => AdminError::from(error),
                        error => AdminError::Invalid(format!(
                            "household {id}'s {} log: {error}",
                            kind.as_str()
                        )),
                    })?;
            }
            report.push(ResignedHousehold {
                household_id: id,
                decisions: logs[0],
                ledger: logs[1],
            });
        }
        Ok(ResignedLogs { households: report })
    }

    /// `log reset HOUSEHOLD --yes [--log decisions|ledger]`: starts the household's logs (or
    /// one of them) anew. This is the only way a chain that has a log gets another: a log head
    /// that was removed or replaced is otherwise refused as tampering. Each new log's first
    /// entry names the log it replaces, and proofs kept from the old one then check as "the
    /// log was replaced".
    pub async fn reset_log(
        &self,
        household_id: &str,
        only: Option<LogKind>,
    ) -> Result<LogsReset, AdminError> {
        let account = self.accounts.get(household_id).await?;
        let caller = Caller::of_household(household_id, Standing::Current);
        let weeks = account
            .policy
            .as_ref()
            .and_then(|policy| {
                HouseholdData::for_account(policy, household_id, &self.data.catalogue).ok()
            })
            .map_or_else(|| self.data.weeks.clone(), |home| home.weeks);
        let reset = self.reset_in(&caller, household_id, only, &weeks).await?;
        Ok(LogsReset {
            household_id: household_id.to_owned(),
            reset,
        })
    }

    /// Starts each of `chains`' logs anew, as `log reset` does, whoever's they are: a household
    /// account's, or a credential's (a judge token's, or a client's household label). What the
    /// local server does with `serve --new-log-key` for every log its key does not verify.
    /// Returns how many logs were started anew.
    pub async fn start_logs_anew(&self, chains: &[ChainKey]) -> Result<usize, AdminError> {
        for chain in chains {
            let (scope, kind) = if let Some(scope) = chain.scope.strip_suffix("/why") {
                (scope, LogKind::Decisions)
            } else if let Some(scope) = chain.scope.strip_suffix("/countersign") {
                (scope, LogKind::Ledger)
            } else {
                return Err(AdminError::Invalid(format!(
                    "a log of an unknown kind is stored under {}",
                    chain.scope
                )));
            };
            let household_id = chain.name.as_str();
            if scope == household_scope(household_id)
                && self.accounts.get(household_id).await.is_ok()
            {
                self.reset_log(household_id, Some(kind)).await?;
            } else {
                // A credential's chain: the caller is its data scope, acting for the household
                // label the chain is kept under, with the catalogue's weeks.
                let caller = Caller::unattested(scope);
                self.reset_in(&caller, household_id, Some(kind), &self.data.weeks)
                    .await?;
            }
        }
        Ok(chains.len())
    }

    async fn reset_in(
        &self,
        caller: &Caller,
        household_id: &str,
        only: Option<LogKind>,
        weeks: &crate::countersign::household::Weeks,
    ) -> Result<Vec<LogReset>, AdminError> {
        let keys = self.log_keys.clone().ok_or_else(|| {
            AdminError::NotConfigured(
                "a log reset needs HEARTH_LOG_KEY and MCP_RESOURCE_URL".into(),
            )
        })?;
        let ledger =
            Ledger::new(self.chains.clone(), self.clock.clone()).with_log_keys(Some(keys.clone()));
        // The ledger first: a decision log reset is then recorded in the new ledger log, where
        // a phone can prove it.
        let ledger_reset = if only.is_none_or(|kind| kind == LogKind::Ledger) {
            let appended = ledger
                .reset_log(caller, household_id, weeks)
                .await
                .map_err(|error| AdminError::Invalid(format!("the ledger log: {error}")))?;
            Some(LogReset {
                log: LogKind::Ledger.as_str(),
                entry: appended.receipt.entry_hash,
                replaced: Value::Null,
            })
        } else {
            None
        };
        let mut reset = Vec::new();
        if only.is_none_or(|kind| kind == LogKind::Decisions) {
            let record = WhyService::new(self.chains.clone(), self.clock.clone())
                .with_log_keys(Some(keys.clone()))
                .reset_log(caller, household_id)
                .await
                .map_err(|error| AdminError::Invalid(format!("the decision log: {error}")))?;
            let inputs = &record["inputs"];
            let text = |field: &str| inputs[field].as_str().map(str::to_owned);
            let replaced = crate::transparency::Replaced {
                log_id: text("previous_log_id"),
                origin: text("previous_origin"),
                size: inputs["previous_size"].as_u64(),
            };
            let origin = record["tlog_proof"]
                .as_str()
                .and_then(|proof| crate::tlog::checkpoint::parse_proof(proof).ok())
                .and_then(|proof| proof.checkpoint.lines().next().map(str::to_owned))
                .unwrap_or_default();
            // A household account's page checks its logs on the phone; a credential's chains
            // have no page, and may have no ledger to record it in.
            if caller.household.is_some() {
                ledger
                    .record_decision_log_reset(caller, household_id, weeks, &replaced, origin)
                    .await
                    .map_err(|error| {
                        AdminError::Invalid(format!(
                            "the decision log was started anew, but the ledger could not record it: {error}"
                        ))
                    })?;
            }
            reset.push(LogReset {
                log: LogKind::Decisions.as_str(),
                entry: record["trace_id"].as_str().unwrap_or_default().to_owned(),
                replaced: record["inputs"].clone(),
            });
        }
        reset.extend(ledger_reset);
        Ok(reset)
    }

    /// `ledger export HOUSEHOLD`: the household's retained ledger entries exactly as stored
    /// (each with its hash), for backups and audits. Approvals in them check offline with
    /// `scripts/verify_approvals.py` against `passkey list`.
    pub async fn export_ledger(&self, household_id: &str) -> Result<LedgerExport, AdminError> {
        self.accounts.get(household_id).await?;
        let caller = Caller::of_household(household_id, Standing::Current);
        let (snapshot, _) = Ledger::new(self.chains.clone(), self.clock.clone())
            .inspect(&caller, household_id)
            .await
            .map_err(|error| AdminError::Invalid(format!("the ledger: {error}")))?;
        let entries = snapshot
            .map(|snapshot| snapshot.records)
            .unwrap_or_default()
            .iter()
            .map(|record| record.to_json(ledger::HASH_FIELD))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| AdminError::Invalid("a stored ledger entry is unreadable".into()))?;
        Ok(LedgerExport { entries })
    }

    /// `household create NAME [--policy FILE]`: a new household; a given policy must not name
    /// another household or another name.
    pub async fn create(&self, name: &str, policy: Option<Value>) -> Result<Created, AdminError> {
        let household_id = new_household_id();
        let policy = match policy {
            None => None,
            Some(policy) => {
                if let Some(named) = policy.get("name").and_then(Value::as_str)
                    && named != name.trim()
                {
                    return Err(AdminError::Invalid(format!(
                        "the policy names the household {named:?}, not {:?}; leave its name out or make it match",
                        name.trim()
                    )));
                }
                Some(self.checked_policy(&policy, &household_id, name.trim())?)
            }
        };
        let item = self.accounts.create(&household_id, name, policy).await?;
        Ok(Created {
            household_id: item.household_id,
            name: item.name,
        })
    }

    pub async fn list(&self) -> Result<Listing, AdminError> {
        Ok(Listing {
            households: self.accounts.list().await?,
        })
    }

    pub async fn show(&self, household_id: &str) -> Result<Shown, AdminError> {
        let item = self.accounts.get(household_id).await?;
        Ok(Shown {
            linked: item.is_linked(),
            device_keys: key_infos(&item),
            household_id: item.household_id,
            name: item.name,
            policy: item.policy,
        })
    }

    /// `household set-policy HOUSEHOLD FILE`: the policy's `name`, if any, becomes the display
    /// name.
    pub async fn set_policy(
        &self,
        household_id: &str,
        policy: &Value,
    ) -> Result<PolicySet, AdminError> {
        let current = self.accounts.get(household_id).await?;
        let policy = self.checked_policy(policy, household_id, &current.name)?;
        let name = policy["name"].as_str().unwrap_or(&current.name).to_owned();
        let item = self
            .accounts
            .set_policy(household_id, &name, policy)
            .await?;
        Ok(PolicySet {
            household_id: item.household_id,
            policy: item.policy.unwrap_or(Value::Null),
        })
    }

    /// `household delete HOUSEHOLD`: the account, its device keys, its decisions, its ledger,
    /// and the sign-in index's entries of its passkeys (whose ids may then be enrolled
    /// elsewhere). The account goes last, so a deletion cut short can be run again. A
    /// household made by sign-up that expired unlinked is deleted too, while the store holds
    /// it.
    pub async fn delete(&self, household_id: &str) -> Result<Removed, AdminError> {
        let item = self.accounts.stored(household_id).await?;
        let scope = household_scope(household_id);
        let decisions = self
            .chains
            .remove(&why::service::chain_key_in(&scope, household_id))
            .await?;
        let entries = self
            .chains
            .remove(&ledger::chain_key_in(&scope, household_id))
            .await?;
        let now = unix_ms(self.clock.now());
        for passkey in &item.passkeys {
            self.owners
                .forget(&passkey.credential_id, household_id, now)
                .await
                .map_err(|_| {
                    AdminError::Account(AccountError::Unavailable(
                        "the passkeys' sign-in index could not be updated".into(),
                    ))
                })?;
        }
        self.accounts.delete(household_id).await?;
        Ok(Removed {
            household_id: household_id.to_owned(),
            removed: BTreeMap::from([
                ("accounts", 1),
                ("device_keys", item.device_keys.len() as u64),
                ("decision_records", decisions as u64),
                ("ledger_entries", entries as u64),
            ]),
        })
    }

    /// `household adopt --subject-scope HASH --household-id OLD [--name NAME]`: moves what a
    /// credential's token kept under household label `OLD` (its decisions and its ledger,
    /// records and hashes unchanged) into a new account. `HASH` is the credential's data scope,
    /// the SHA-256 of its subject, as the server's logs name it. Adopting the configured
    /// household also carries its policy over.
    pub async fn adopt(
        &self,
        subject_scope: &str,
        old_id: &str,
        name: Option<&str>,
    ) -> Result<Adopted, AdminError> {
        let is_scope = subject_scope.len() == 64
            && subject_scope
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !is_scope {
            return Err(AdminError::Invalid(
                "--subject-scope is 64 lowercase hex digits: the SHA-256 of the credential's subject"
                    .into(),
            ));
        }
        let now_ms = unix_ms(self.clock.now());
        let from_decisions = why::service::chain_key_in(subject_scope, old_id);
        let from_ledger = ledger::chain_key_in(subject_scope, old_id);
        let mut found = false;
        for key in [&from_decisions, &from_ledger] {
            found |= self.chains.load(key, now_ms).await?.is_some();
        }
        if !found {
            return Err(AdminError::Invalid(format!(
                "that subject scope keeps no live decisions or ledger for household {old_id:?}"
            )));
        }
        let household_id = new_household_id();
        let name = name.unwrap_or(old_id);
        let policy = if old_id == self.data.id() {
            let policy = self.data.policy_for(&household_id, name.trim());
            Some(policy.map_err(|e| AdminError::Invalid(e.to_string()))?)
        } else {
            None
        };
        self.accounts.create(&household_id, name, policy).await?;
        let scope = household_scope(&household_id);
        let moves: [(&'static str, &ChainKey, ChainKey); 2] = [
            (
                "decision_records",
                &from_decisions,
                why::service::chain_key_in(&scope, &household_id),
            ),
            (
                "ledger_entries",
                &from_ledger,
                ledger::chain_key_in(&scope, &household_id),
            ),
        ];
        let mut moved = BTreeMap::new();
        for (kind, from, to) in moves {
            let count = self.chains.relocate(from, &to, now_ms).await?;
            moved.insert(kind, count as u64);
        }
        Ok(Adopted {
            household_id,
            moved,
        })
    }

    pub async fn add_device_key(&self, household_id: &str) -> Result<KeyAdded, AdminError> {
        let (key_id, key) = self.accounts.add_device_key(household_id).await?;
        Ok(KeyAdded {
            key_id,
            key: key.expose().to_owned(),
        })
    }

    pub async fn device_keys(&self, household_id: &str) -> Result<KeyList, AdminError> {
        let item = self.accounts.get(household_id).await?;
        Ok(KeyList {
            device_keys: key_infos(&item),
        })
    }

    pub async fn revoke_device_key(
        &self,
        household_id: &str,
        key_id: &str,
    ) -> Result<KeyRevoked, AdminError> {
        self.accounts
            .revoke_device_key(household_id, key_id)
            .await?;
        Ok(KeyRevoked {
            revoked: key_id.to_owned(),
        })
    }

    /// `token HOUSEHOLD [--days N]`: a household access token for a self-hosted host, living
    /// `days` (1 to [`TOKEN_DAYS_MAX`]) unless the household is unlinked first.
    pub async fn token(&self, household_id: &str, days: u32) -> Result<Minted, AdminError> {
        if !(1..=TOKEN_DAYS_MAX).contains(&days) {
            return Err(AdminError::Invalid(format!(
                "--days is 1 to {TOKEN_DAYS_MAX}"
            )));
        }
        let jwt = self.jwt.as_ref().ok_or_else(|| {
            AdminError::NotConfigured(
                "minting a token needs the server's signing key (MCP_JWT_SECRET) and public URL (MCP_RESOURCE_URL)"
                    .into(),
            )
        })?;
        let generation = self.accounts.note_token_issued(household_id).await?;
        let issued = jwt.issue_household(
            household_id,
            generation,
            Scopes::HOUSEHOLD_DEFAULT,
            u64::from(days) * 86_400,
            self.clock.now().unix_timestamp().max(0) as u64,
        );
        Ok(Minted {
            access_token: issued.access_token,
            expires_in: issued.expires_in,
        })
    }

    /// `link-code HOUSEHOLD`: a one-time code the household enters on the consent page when
    /// Alexa+ (or another host) links its account; valid for 15 minutes.
    pub async fn link_code(&self, household_id: &str) -> Result<LinkCode, AdminError> {
        let (code, expires_at_ms) = self.linking.new_link_code(household_id).await?;
        Ok(LinkCode {
            code,
            expires_at: timestamp_ms(expires_at_ms),
        })
    }

    /// `unlink HOUSEHOLD`: every token of the household stops working (within the servers'
    /// 60-second generation cache), every refresh-token family and unused link code with it.
    pub async fn unlink(&self, household_id: &str) -> Result<Unlinked, AdminError> {
        let revoked = self.accounts.unlink(household_id).await?;
        Ok(Unlinked {
            household_id: household_id.to_owned(),
            revoked: BTreeMap::from([("access_tokens", revoked)]),
        })
    }

    /// A policy for `household_id`, checked against the catalogue, as it will be stored.
    fn checked_policy(
        &self,
        policy: &Value,
        household_id: &str,
        name_if_absent: &str,
    ) -> Result<Value, AdminError> {
        let household = account_policy(policy, household_id, name_if_absent, &self.data.catalogue)
            .map_err(|reason| AdminError::Invalid(format!("the policy is not valid: {reason}")))?;
        serde_json::to_value(household).map_err(|error| AdminError::Invalid(error.to_string()))
    }
}

fn key_infos(item: &AccountItem) -> Vec<KeyInfo> {
    item.device_keys
        .iter()
        .map(|key| KeyInfo {
            key_id: key.key_id.clone(),
            created_at: timestamp_ms(key.created_at_ms),
        })
        .collect()
}

/// RFC 3339 for Unix milliseconds.
fn timestamp_ms(ms: i64) -> String {
    timestamp(
        time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH),
    )
}
