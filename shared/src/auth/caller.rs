//! Who is calling, as the HTTP layer established it: the data scope a verified bearer names,
//! the household a household token names, and what the device attested about the person
//! speaking. Toolsets receive it and key all their data by it.

use std::sync::Arc;

use super::attestation::{AttestationRefusal, HostClaim};
use crate::accounts::Standing;
use crate::chain::sha256_hex;
use crate::store::{
    AccountItem, AppendStart, ChainKey, ChainRead, LeafHashes, LogHead, Snapshot, StoreError,
};

/// Who is calling, as far as a toolset needs to know: the data scope (the SHA-256 of the
/// verified subject, or of the household a household token names), which toolsets key all
/// data by (so no argument can reach another credential's or household's data), the household
/// itself for a household token, and what the device attested about the person speaking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub scope: String,
    /// `Some` when the token names a household: the call acts on that household only.
    pub household: Option<HouseholdCaller>,
    pub host: HostClaim,
    /// The chain window the HTTP layer read for this call beside its admission, if the tool
    /// called said which it reads first (see `Toolset::read_ahead`).
    pub read_ahead: Option<Arc<ChainRead>>,
}

/// The household a household token names, and whether its standing could be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HouseholdCaller {
    pub id: String,
    /// [`Standing::Current`], or [`Standing::Unknown`] while the store is out of reach (a
    /// revoked token never becomes a caller).
    pub standing: Standing,
    /// The account as this request's attestation check read it, so that a toolset needing
    /// the household's policy does not read it a second time.
    pub account: Option<Arc<AccountItem>>,
    /// Whether the token holds `countersign:read`: it may read its household's purchase
    /// records without a device's attestation.
    pub reads_without_device: bool,
}

/// Why a call cannot act on a household. The text is a sentence safe to return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HouseholdRefusal {
    #[error("`household_id` is required with this credential.")]
    Missing,
    #[error(
        "This token belongs to household {token}; `household_id` {argument} names another household."
    )]
    Mismatch { token: String, argument: String },
    #[error("storage unavailable: the household account could not be checked; try again later.")]
    Unavailable,
}

impl Caller {
    /// The window the HTTP layer read ahead under `key` for this call, if it read that chain:
    /// a toolset reads it here instead of asking the store again.
    pub fn read_ahead_of(
        &self,
        key: &ChainKey,
    ) -> Option<Result<Option<Arc<Snapshot>>, StoreError>> {
        self.read_ahead
            .as_ref()
            .filter(|read| read.key == *key)
            .map(|read| read.window.clone())
    }

    /// `key`'s window and log head, if the HTTP layer read them ahead for this call
    /// ([`ChainRead::read_with_log`]): an append starts its first attempt from them, and a
    /// trace its proofs, instead of asking the store again. They serve once.
    pub fn read_ahead_with_log_of(&self, key: &ChainKey) -> Option<AppendStart> {
        self.read_ahead
            .as_ref()
            .filter(|read| read.key == *key)
            .and_then(|read| read.with_log())
    }

    /// `key`'s live window, log head and the log hashes read with them, if the HTTP layer read
    /// them ahead for this call ([`ChainRead::read_for_history`]): a history proof builds from
    /// them instead of asking the store again. They serve once.
    pub fn read_ahead_for_history_of(
        &self,
        key: &ChainKey,
    ) -> Option<(Arc<Snapshot>, Option<LogHead>, LeafHashes)> {
        self.read_ahead
            .as_ref()
            .filter(|read| read.key == *key)
            .and_then(|read| read.for_history())
    }

    /// A caller whose request carried no device attestation.
    pub fn unattested(scope: impl Into<String>) -> Self {
        Self {
            scope: scope.into(),
            household: None,
            host: HostClaim::Refused(AttestationRefusal::Missing),
            read_ahead: None,
        }
    }

    /// The caller of a household token, without a device attestation yet.
    pub fn of_household(household_id: &str, standing: Standing) -> Self {
        Self {
            scope: household_scope(household_id),
            household: Some(HouseholdCaller {
                id: household_id.to_owned(),
                standing,
                account: None,
                reads_without_device: false,
            }),
            host: HostClaim::Refused(AttestationRefusal::Missing),
            read_ahead: None,
        }
    }

    /// The same caller, reading its household's purchase records without a device when
    /// `granted` (a household token holding `countersign:read`).
    pub fn reading_without_device(mut self, granted: bool) -> Self {
        if let Some(household) = &mut self.household {
            household.reads_without_device = granted;
        }
        self
    }

    /// The household a call would act on once the token's standing is confirmed: what the
    /// HTTP layer may read ahead while admission confirms it. The call itself asks
    /// [`Self::household_for`], which also requires the standing.
    pub fn household_to_confirm<'a>(&'a self, argument: Option<&'a str>) -> Option<&'a str> {
        match (&self.household, argument) {
            (Some(household), Some(argument)) if argument != household.id => None,
            (Some(household), _) => Some(&household.id),
            (None, argument) => argument,
        }
    }

    /// The household this call acts on. A household token names it, and an `argument` may
    /// only repeat it; a credential's caller must name one (its own label, within its scope).
    pub fn household_for<'a>(
        &'a self,
        argument: Option<&'a str>,
    ) -> Result<&'a str, HouseholdRefusal> {
        match (&self.household, argument) {
            (Some(household), _) if household.standing != Standing::Current => {
                Err(HouseholdRefusal::Unavailable)
            }
            (Some(household), Some(argument)) if argument != household.id => {
                Err(HouseholdRefusal::Mismatch {
                    token: household.id.clone(),
                    argument: argument.to_owned(),
                })
            }
            (Some(household), _) => Ok(&household.id),
            (None, Some(argument)) => Ok(argument),
            (None, None) => Err(HouseholdRefusal::Missing),
        }
    }
}

/// The data scope of a household account: domain-separated from the scopes of credentials
/// (the SHA-256 of a subject), so no client id can be chosen to land on a household's data.
pub fn household_scope(household_id: &str) -> String {
    sha256_hex(format!("household\n{household_id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_household_token_decides_the_household_and_an_argument_may_only_repeat_it() {
        let caller = Caller::of_household("hh-a", Standing::Current);
        assert_eq!(caller.household_for(None), Ok("hh-a"));
        assert_eq!(caller.household_for(Some("hh-a")), Ok("hh-a"));
        assert_eq!(
            caller.household_for(Some("hh-b")),
            Err(HouseholdRefusal::Mismatch {
                token: "hh-a".into(),
                argument: "hh-b".into()
            })
        );
        let unchecked = Caller::of_household("hh-a", Standing::Unknown);
        assert_eq!(
            unchecked.household_for(None),
            Err(HouseholdRefusal::Unavailable)
        );
        let credential = Caller::unattested("scope");
        assert_eq!(credential.household_for(Some("kitchen")), Ok("kitchen"));
        assert_eq!(
            credential.household_for(None),
            Err(HouseholdRefusal::Missing)
        );
        assert_ne!(household_scope("hh-a"), sha256_hex("hh-a"));
    }

    #[test]
    fn a_read_ahead_names_the_household_the_call_would_act_on_and_serves_only_its_key() {
        let unconfirmed = Caller::of_household("hh-a", Standing::Unknown);
        assert_eq!(unconfirmed.household_to_confirm(None), Some("hh-a"));
        assert_eq!(unconfirmed.household_to_confirm(Some("hh-a")), Some("hh-a"));
        assert_eq!(unconfirmed.household_to_confirm(Some("hh-b")), None);
        let credential = Caller::unattested("scope");
        assert_eq!(
            credential.household_to_confirm(Some("kitchen")),
            Some("kitchen")
        );
        assert_eq!(credential.household_to_confirm(None), None);

        let key = |name: &str| ChainKey {
            scope: "scope".into(),
            name: name.into(),
        };
        let mut reading = credential;
        reading.read_ahead = Some(Arc::new(ChainRead {
            key: key("kitchen"),
            window: Ok(None),
            log: None,
            spent: Default::default(),
            hashes: None,
        }));
        assert_eq!(reading.read_ahead_of(&key("kitchen")), Some(Ok(None)));
        assert_eq!(
            reading.read_ahead_of(&key("garage")),
            None,
            "another chain reads its own"
        );
        assert_eq!(
            reading.read_ahead_with_log_of(&key("kitchen")),
            None,
            "a read-only call's read has no log head to append from"
        );
        reading.read_ahead = Some(Arc::new(ChainRead {
            key: key("kitchen"),
            window: Ok(None),
            log: Some(None),
            spent: Default::default(),
            hashes: None,
        }));
        assert_eq!(
            reading.read_ahead_with_log_of(&key("kitchen")),
            Some((None, None))
        );
        assert_eq!(
            reading.clone().read_ahead_with_log_of(&key("kitchen")),
            None,
            "one append starts from it, whichever clone of the caller asks"
        );
        assert_eq!(reading.read_ahead_with_log_of(&key("garage")), None);
        reading.read_ahead = Some(Arc::new(ChainRead {
            key: key("kitchen"),
            window: Err(StoreError::Unavailable("timed out".into())),
            log: Some(None),
            spent: Default::default(),
            hashes: None,
        }));
        assert_eq!(
            reading.read_ahead_with_log_of(&key("kitchen")),
            None,
            "a read that failed serves nothing: the call reads again"
        );
    }
}
