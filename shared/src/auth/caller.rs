//! Who is calling, as the HTTP layer established it: the data scope a verified bearer names,
//! the household a household token names, and what the device attested about the person
//! speaking. Toolsets receive it and key all their data by it.

use std::sync::Arc;

use super::attestation::{AttestationRefusal, HostClaim};
use crate::accounts::Standing;
use crate::chain::sha256_hex;
use crate::store::AccountItem;

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
    /// A caller whose request carried no device attestation.
    pub fn unattested(scope: impl Into<String>) -> Self {
        Self {
            scope: scope.into(),
            household: None,
            host: HostClaim::Refused(AttestationRefusal::Missing),
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
}
