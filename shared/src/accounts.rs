//! Households as accounts: a server-generated opaque id, a display name, a Countersign policy,
//! the device keys its devices sign attestations with, and a revocation generation that every
//! household access token carries.
//!
//! This module keeps the account's own rules (ids, names, the number of device keys, the
//! generation) over the store's [`AccountStore`]; what a policy may say is the purchase
//! guard's business, checked before a policy reaches [`Accounts::set_policy`]. It has no HTTP.
//!
//! Checking a token's generation on every request would cost a read each time, so
//! [`Accounts::standing`] keeps what it read for [`GENERATION_CACHE_MS`] per instance: an
//! unlink takes effect within that bound. Device keys are never cached: a revoked key stops
//! verifying at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::clock::{Clock, unix_ms};
use crate::random::os_bytes;
use crate::secret::Secret;
use crate::store::{
    AccountItem, AccountStore, AccountSummary, DeviceKeyItem, LinkItem, MAX_LINKS_KEPT,
    RevokedFamily, StoreError,
};

/// Household ids are this prefix and 32 lowercase hex digits (128 random bits).
pub const HOUSEHOLD_ID_PREFIX: &str = "hh-";
/// Device key ids are this prefix and 16 lowercase hex digits.
pub const KEY_ID_PREFIX: &str = "dk-";
/// The longest display name.
pub const NAME_MAX_CHARS: usize = 100;
/// The most device keys one household holds at once.
pub const MAX_DEVICE_KEYS: usize = 10;
/// How long a read generation is trusted before it is read again.
pub const GENERATION_CACHE_MS: i64 = 60_000;
/// How many households' generations one instance remembers; beyond that it starts afresh.
const GENERATION_CACHE_ENTRIES: usize = 10_000;
/// Compare-and-swap attempts before an account write reports the account busy.
const WRITE_ATTEMPTS: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("there is no household {0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the household account is busy with other changes; try again")]
    Busy,
    #[error("storage unavailable: {0}")]
    Unavailable(String),
}

impl From<StoreError> for AccountError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Conflict => AccountError::Busy,
            StoreError::ScopeFull { limit } => {
                AccountError::Invalid(format!("at most {limit} chains may be live"))
            }
            StoreError::LogsFull { limit } => {
                AccountError::Invalid(format!("at most {limit} logs may be kept"))
            }
            StoreError::Unavailable(cause) => AccountError::Unavailable(cause),
        }
    }
}

/// Whether a token's household and generation still hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The household exists and the token's generation is current.
    Current,
    /// The household was unlinked since the token was issued, or no longer exists.
    Revoked,
    /// The store could not be read and nothing was remembered: household data is out of reach.
    Unknown,
}

/// What one read of an account says about its tokens: `generation` is `None` when the
/// household was not found.
#[derive(Clone)]
struct Remembered {
    generation: Option<u64>,
    /// The refresh-token families revoked at the time of the read.
    revoked_families: Vec<String>,
    read_at_ms: i64,
}

impl Remembered {
    fn of(item: Option<&AccountItem>, read_at_ms: i64) -> Self {
        Self {
            generation: item.map(|item| item.generation),
            revoked_families: item
                .map(|item| {
                    item.revoked_families
                        .iter()
                        .map(|family| family.family_id.clone())
                        .collect()
                })
                .unwrap_or_default(),
            read_at_ms,
        }
    }

    fn standing(&self, generation: u64, family: Option<&str>) -> Standing {
        match self.generation {
            Some(current) if current != generation => Standing::Revoked,
            None => Standing::Revoked,
            Some(_) => match family {
                Some(family) if self.revoked_families.iter().any(|f| f == family) => {
                    Standing::Revoked
                }
                _ => Standing::Current,
            },
        }
    }
}

/// The most revoked refresh-token families an account remembers at once. One more revokes
/// every token of the household instead (as an unlink does): the safe way to stay bounded.
pub const MAX_REVOKED_FAMILIES: usize = 100;

pub struct Accounts {
    store: Arc<dyn AccountStore>,
    clock: Arc<dyn Clock>,
    generations: Mutex<HashMap<String, Remembered>>,
    /// How many generations are remembered at most ([`GENERATION_CACHE_ENTRIES`]).
    remembered_at_most: usize,
}

impl Accounts {
    pub fn new(store: Arc<dyn AccountStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            generations: Mutex::new(HashMap::new()),
            remembered_at_most: GENERATION_CACHE_ENTRIES,
        }
    }

    fn now_ms(&self) -> i64 {
        unix_ms(self.clock.now())
    }

    /// The clock accounts are kept by.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Creates household `household_id` (from [`new_household_id`]) named `name` with
    /// `policy` (already checked by its owner).
    pub async fn create(
        &self,
        household_id: &str,
        name: &str,
        policy: Option<Value>,
    ) -> Result<AccountItem, AccountError> {
        self.create_until(household_id, name, policy, None).await
    }

    /// Creates household `household_id` as [`Accounts::create`] does, for sign-up: it reads
    /// as absent from `expires_at_ms` on unless a token is issued to it first.
    pub async fn create_unlinked(
        &self,
        household_id: &str,
        name: &str,
        policy: Value,
        expires_at_ms: i64,
    ) -> Result<AccountItem, AccountError> {
        self.create_until(household_id, name, Some(policy), Some(expires_at_ms))
            .await
    }

    async fn create_until(
        &self,
        household_id: &str,
        name: &str,
        policy: Option<Value>,
        signup_expires_at_ms: Option<i64>,
    ) -> Result<AccountItem, AccountError> {
        check_name(name)?;
        if !is_household_id(household_id) {
            return Err(AccountError::Invalid(format!(
                "{household_id:?} is not a household id"
            )));
        }
        let item = AccountItem {
            household_id: household_id.to_owned(),
            name: name.trim().to_owned(),
            policy,
            generation: 0,
            tokens_issued: 0,
            device_keys: Vec::new(),
            revoked_families: Vec::new(),
            passkeys: Vec::new(),
            passkey_invites: Vec::new(),
            approval_links: Vec::new(),
            links: Vec::new(),
            links_complete: true,
            signup_expires_at_ms,
            created_at_ms: self.now_ms(),
            revision: 1,
        };
        self.store.put_account(&item, None).await?;
        Ok(item)
    }

    /// The household, read fresh.
    pub async fn get(&self, household_id: &str) -> Result<AccountItem, AccountError> {
        if !is_household_id(household_id) {
            return Err(AccountError::NotFound(household_id.to_owned()));
        }
        self.read(household_id)
            .await?
            .ok_or_else(|| AccountError::NotFound(household_id.to_owned()))
    }

    /// The account as stored, a sign-up that expired unlinked included: what the operator
    /// deletes, with what it left behind.
    pub async fn stored(&self, household_id: &str) -> Result<AccountItem, AccountError> {
        if !is_household_id(household_id) {
            return Err(AccountError::NotFound(household_id.to_owned()));
        }
        self.store
            .account(household_id)
            .await?
            .ok_or_else(|| AccountError::NotFound(household_id.to_owned()))
    }

    /// The stored account, unless it is a sign-up that expired unlinked (which the store may
    /// not have deleted yet).
    async fn read(&self, household_id: &str) -> Result<Option<AccountItem>, StoreError> {
        let now_ms = self.now_ms();
        Ok(self
            .store
            .account(household_id)
            .await?
            .filter(|item| item.is_live(now_ms)))
    }

    pub async fn list(&self) -> Result<Vec<AccountSummary>, AccountError> {
        let now_ms = self.now_ms();
        let mut households = self.store.accounts().await?;
        households.retain(|household| {
            household
                .signup_expires_at_ms
                .is_none_or(|expires_at_ms| now_ms < expires_at_ms)
        });
        Ok(households)
    }

    /// Reads the household, lets `change` edit it and writes it back on condition that
    /// nothing else wrote in between; on a conflict it reads and changes again.
    /// `change` may refuse, and then nothing is written.
    async fn update<T>(
        &self,
        household_id: &str,
        change: impl FnMut(&mut AccountItem) -> Result<T, AccountError>,
    ) -> Result<(T, AccountItem), AccountError> {
        self.update_with(household_id, change).await
    }

    /// [`Accounts::update`] for the rules of other modules (passkeys), whose `change` refuses
    /// in their own error type.
    pub async fn update_with<T, E: From<AccountError>>(
        &self,
        household_id: &str,
        mut change: impl FnMut(&mut AccountItem) -> Result<T, E>,
    ) -> Result<(T, AccountItem), E> {
        for _ in 0..WRITE_ATTEMPTS {
            let mut item = self.get(household_id).await?;
            let read = item.revision;
            let outcome = change(&mut item)?;
            item.revision = read + 1;
            match self.store.put_account(&item, Some(read)).await {
                Ok(()) => return Ok((outcome, item)),
                Err(StoreError::Conflict) => continue,
                Err(error) => return Err(AccountError::from(error).into()),
            }
        }
        Err(AccountError::Busy.into())
    }

    /// Replaces the policy and the display name (the policy's `name`).
    pub async fn set_policy(
        &self,
        household_id: &str,
        name: &str,
        policy: Value,
    ) -> Result<AccountItem, AccountError> {
        check_name(name)?;
        let (_, item) = self
            .update(household_id, |item| {
                item.name = name.trim().to_owned();
                item.policy = Some(policy.clone());
                Ok(())
            })
            .await?;
        Ok(item)
    }

    /// Deletes the household account (its chains are the caller's to remove).
    pub async fn delete(&self, household_id: &str) -> Result<AccountItem, AccountError> {
        for _ in 0..WRITE_ATTEMPTS {
            let item = self.stored(household_id).await?;
            match self.store.delete_account(household_id, item.revision).await {
                Ok(true) => return Ok(item),
                Ok(false) => return Err(AccountError::NotFound(household_id.to_owned())),
                Err(StoreError::Conflict) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(AccountError::Busy)
    }

    /// Adds a device key and returns its id and the key itself, which is never shown again.
    pub async fn add_device_key(
        &self,
        household_id: &str,
    ) -> Result<(String, Secret), AccountError> {
        let key_id = format!("{KEY_ID_PREFIX}{}", hex::encode(os_random::<8>()?));
        let key = hex::encode(os_random::<32>()?);
        let created_at_ms = self.now_ms();
        self.update(household_id, |item| {
            if item.device_keys.len() >= MAX_DEVICE_KEYS {
                return Err(AccountError::Invalid(format!(
                    "household {household_id} already has {MAX_DEVICE_KEYS} device keys, the most it may; revoke one first"
                )));
            }
            item.device_keys.push(DeviceKeyItem {
                key_id: key_id.clone(),
                key: key.clone(),
                created_at_ms,
            });
            Ok(())
        })
        .await?;
        Ok((key_id, Secret::new(key)))
    }

    /// Revokes a device key: from now on it verifies nothing.
    pub async fn revoke_device_key(
        &self,
        household_id: &str,
        key_id: &str,
    ) -> Result<(), AccountError> {
        self.update(household_id, |item| {
            let before = item.device_keys.len();
            item.device_keys.retain(|key| key.key_id != key_id);
            if item.device_keys.len() == before {
                return Err(AccountError::Invalid(format!(
                    "household {household_id} has no device key {key_id}"
                )));
            }
            Ok(())
        })
        .await?;
        Ok(())
    }

    /// The household's account read fresh, never from a cache: what an attestation is checked
    /// against, so a revoked device key stops verifying at once. `Ok(None)`: no such household.
    pub async fn fresh(&self, household_id: &str) -> Result<Option<AccountItem>, StoreError> {
        if !is_household_id(household_id) {
            return Ok(None);
        }
        self.read(household_id).await
    }

    /// Counts one more access token for the household and returns the generation to put in it.
    pub async fn note_token_issued(&self, household_id: &str) -> Result<u64, AccountError> {
        let (generation, _) = self
            .update(household_id, |item| {
                item.tokens_issued += 1;
                // A household made by sign-up is kept from its first token on.
                item.signup_expires_at_ms = None;
                Ok(item.generation)
            })
            .await?;
        Ok(generation)
    }

    /// Counts one more access token issued through account linking under `generation`, in one
    /// read and one write; [`AccountError::NotFound`] (and nothing written) when the household
    /// was unlinked since, or deleted.
    /// `link` is the refresh-token family the token starts, kept for the household's page
    /// (the newest [`MAX_LINKS_KEPT`]).
    pub async fn note_linked_token(
        &self,
        household_id: &str,
        generation: u64,
        link: LinkItem,
    ) -> Result<(), AccountError> {
        self.update(household_id, |item| {
            if item.generation != generation {
                return Err(AccountError::NotFound(household_id.to_owned()));
            }
            item.tokens_issued += 1;
            item.signup_expires_at_ms = None;
            if item.links.len() >= MAX_LINKS_KEPT {
                item.links.remove(0);
                item.links_complete = false;
            }
            item.links.push(link.clone());
            Ok(())
        })
        .await?;
        Ok(())
    }

    /// Forgets the links `gone` picks (their families were revoked).
    pub async fn forget_links(
        &self,
        household_id: &str,
        gone: impl Fn(&LinkItem) -> bool,
    ) -> Result<(), AccountError> {
        self.update(household_id, |item| {
            item.links.retain(|link| !gone(link));
            Ok(())
        })
        .await?;
        Ok(())
    }

    /// Revokes every token of the household by raising its generation; returns how many tokens
    /// had been issued since the last unlink.
    pub async fn unlink(&self, household_id: &str) -> Result<u64, AccountError> {
        let (revoked, _) = self
            .update(household_id, |item| {
                let revoked = item.tokens_issued;
                item.generation += 1;
                item.tokens_issued = 0;
                // The new generation revokes every family's tokens at once.
                item.revoked_families.clear();
                item.links.clear();
                item.links_complete = true;
                Ok(revoked)
            })
            .await?;
        Ok(revoked)
    }

    /// Revokes refresh-token family `family_id` of the household for access tokens: until
    /// `until_ms` (when the last access token it issued expires) a token naming it is refused,
    /// within the same [`GENERATION_CACHE_MS`] as an unlink. Past [`MAX_REVOKED_FAMILIES`] the
    /// whole household is unlinked instead.
    pub async fn revoke_family(
        &self,
        household_id: &str,
        family_id: &str,
        until_ms: i64,
    ) -> Result<(), AccountError> {
        let now_ms = self.now_ms();
        self.update(household_id, |item| {
            item.revoked_families
                .retain(|family| family.until_ms > now_ms);
            if item
                .revoked_families
                .iter()
                .any(|f| f.family_id == family_id)
            {
                return Ok(());
            }
            if item.revoked_families.len() >= MAX_REVOKED_FAMILIES {
                item.generation += 1;
                item.tokens_issued = 0;
                item.revoked_families.clear();
                item.links.clear();
                item.links_complete = true;
                return Ok(());
            }
            item.revoked_families.push(RevokedFamily {
                family_id: family_id.to_owned(),
                until_ms,
            });
            Ok(())
        })
        .await?;
        Ok(())
    }

    /// Whether a token of `household_id` issued under `generation` (and, through linking, in
    /// refresh-token `family`) still stands. Uses what this instance read in the last
    /// [`GENERATION_CACHE_MS`]; while the store cannot be read, whatever it read last, however
    /// old.
    pub async fn standing(
        &self,
        household_id: &str,
        generation: u64,
        family: Option<&str>,
    ) -> Standing {
        let now_ms = self.now_ms();
        // Decided under the lock from what is remembered, so nothing is cloned per request.
        let remembered_standing = |fresh_only: bool| {
            let cache = self.generations.lock().ok()?;
            let remembered = cache.get(household_id)?;
            if fresh_only && now_ms - remembered.read_at_ms >= GENERATION_CACHE_MS {
                return None;
            }
            Some(remembered.standing(generation, family))
        };
        if let Some(standing) = remembered_standing(true) {
            return standing;
        }
        match self.read(household_id).await {
            Ok(item) => {
                let read = Remembered::of(item.as_ref(), now_ms);
                let standing = read.standing(generation, family);
                self.remember(household_id, read);
                standing
            }
            Err(error) => {
                tracing::warn!(%error, "household generation could not be read");
                remembered_standing(false).unwrap_or(Standing::Unknown)
            }
        }
    }

    fn remember(&self, household_id: &str, read: Remembered) {
        if let Ok(mut cache) = self.generations.lock() {
            if cache.len() >= self.remembered_at_most && !cache.contains_key(household_id) {
                cache.clear();
            }
            cache.insert(household_id.to_owned(), read);
        }
    }
}

/// A fresh household id from the operating system's random source.
pub fn new_household_id() -> String {
    // 16 bytes from the OS cannot fail on any supported platform; if it ever did, a panic is
    // better than an id from a weaker source.
    let bytes = os_random::<16>().expect("the OS random source");
    format!("{HOUSEHOLD_ID_PREFIX}{}", hex::encode(bytes))
}

/// Whether `id` has the form of a household id (it may still name no household).
pub fn is_household_id(id: &str) -> bool {
    id.strip_prefix(HOUSEHOLD_ID_PREFIX).is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Bytes from the operating system's random source, for ids and keys.
fn os_random<const N: usize>() -> Result<[u8; N], AccountError> {
    os_bytes().map_err(|failed| AccountError::Unavailable(failed.to_string()))
}

/// Checks a display name: 1 to [`NAME_MAX_CHARS`] characters once trimmed, none a control
/// character.
pub fn check_name(name: &str) -> Result<(), AccountError> {
    let length = name.trim().chars().count();
    if length == 0 || length > NAME_MAX_CHARS || name.chars().any(char::is_control) {
        return Err(AccountError::Invalid(format!(
            "a household name is 1 to {NAME_MAX_CHARS} characters without control characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn household_ids_are_the_prefix_and_32_hex_digits() {
        let id = new_household_id();
        assert!(is_household_id(&id), "{id}");
        assert_ne!(id, new_household_id());
        for bad in [
            "demo",
            "hh-",
            "hh-0123456789abcdef0123456789abcde",
            "hh-0123456789abcdef0123456789abcdef0",
            "hh-0123456789ABCDEF0123456789abcdef",
            "xx-0123456789abcdef0123456789abcdef",
        ] {
            assert!(!is_household_id(bad), "{bad}");
        }
        assert!(is_household_id("hh-0123456789abcdef0123456789abcdef"));
    }

    #[test]
    fn the_generation_cache_holds_its_limit_and_starts_afresh_one_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Arc::new(crate::store::sqlite::SqliteStore::open(&dir.path().join("a.db")).unwrap());
        let mut accounts = Accounts::new(store, Arc::new(crate::clock::SystemClock));
        accounts.remembered_at_most = 2;
        let remembered = |accounts: &Accounts| accounts.generations.lock().unwrap().len();
        let read = |generation, read_at_ms| Remembered {
            generation: Some(generation),
            revoked_families: Vec::new(),
            read_at_ms,
        };
        accounts.remember("hh-a", read(0, 0));
        accounts.remember("hh-b", read(0, 0));
        assert_eq!(remembered(&accounts), 2, "at the limit");
        accounts.remember("hh-b", read(1, 1));
        assert_eq!(
            remembered(&accounts),
            2,
            "a known household is updated in place"
        );
        accounts.remember("hh-c", read(0, 2));
        assert_eq!(
            remembered(&accounts),
            1,
            "one past it, the cache starts afresh"
        );
    }

    #[tokio::test]
    async fn an_account_remembers_100_revoked_families_and_unlinks_on_the_101st() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Arc::new(crate::store::sqlite::SqliteStore::open(&dir.path().join("a.db")).unwrap());
        let accounts = Accounts::new(store, Arc::new(crate::clock::SystemClock));
        let id = new_household_id();
        accounts.create(&id, "Families", None).await.unwrap();
        let far = i64::MAX;
        for n in 0..MAX_REVOKED_FAMILIES {
            accounts
                .revoke_family(&id, &format!("f{n}"), far)
                .await
                .unwrap();
        }
        let item = accounts.get(&id).await.unwrap();
        assert_eq!(
            item.revoked_families.len(),
            MAX_REVOKED_FAMILIES,
            "at the limit"
        );
        assert_eq!(item.generation, 0);
        assert_eq!(
            accounts.standing(&id, 0, Some("f7")).await,
            Standing::Revoked
        );
        assert_eq!(
            accounts.standing(&id, 0, Some("other")).await,
            Standing::Current
        );
        accounts.revoke_family(&id, "one-more", far).await.unwrap();
        let item = accounts.get(&id).await.unwrap();
        assert_eq!(
            item.generation, 1,
            "one past it, the household is unlinked instead"
        );
        assert!(item.revoked_families.is_empty());
    }

    #[test]
    fn names_hold_100_characters_and_not_101() {
        assert!(check_name(&"n".repeat(NAME_MAX_CHARS)).is_ok());
        assert!(check_name(&"n".repeat(NAME_MAX_CHARS + 1)).is_err());
        assert!(check_name("  ").is_err());
        assert!(check_name("a\nb").is_err());
    }
}
