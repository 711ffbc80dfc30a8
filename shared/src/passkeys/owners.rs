//! The index from a passkey's credential id to its household and member. A household page
//! sign-in is a discoverable assertion: the browser names only the credential (its user
//! handle is a hash), so the server looks the household up here, then checks everything
//! against the household's account, which alone says whether the passkey is live.
//!
//! An entry is claimed before its passkey is stored, with one conditional write: a credential
//! id another household claimed first is refused, so nobody can point a victim's credential id
//! at their own household and lock the victim out of signing in. An entry whose account write
//! then failed points at a household without that passkey, and a sign-in through it is refused
//! like any unknown passkey. Passkeys enrolled before the index existed are added by
//! `hearth admin passkey index` (once, after the upgrade), or when `hearth admin passkey list`
//! lists their household.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::PasskeyError;
use crate::store::{GrantItem, GrantKind, GrantStore, KEPT_UNTIL_REMOVED_MS, StoreError};

/// What indexing a household's passkeys did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Indexed {
    /// Entries written (the passkey had none).
    pub added: usize,
    /// Passkeys whose credential id another household's entry holds: they cannot sign in to
    /// the household's page until that entry goes.
    pub held_elsewhere: usize,
}

impl Indexed {
    pub fn add(&mut self, other: Indexed) {
        self.added += other.added;
        self.held_elsewhere += other.held_elsewhere;
    }
}

/// Where a credential belongs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub household_id: String,
    pub member_id: String,
}

#[derive(Clone)]
pub struct PasskeyOwners {
    grants: Arc<dyn GrantStore>,
}

impl PasskeyOwners {
    pub fn new(grants: Arc<dyn GrantStore>) -> Self {
        Self { grants }
    }

    /// Records that `credential_id` belongs to `owner`, unless it already belongs to someone
    /// else (refused). Repeating a claim changes nothing.
    pub async fn claim(
        &self,
        credential_id: &str,
        owner: &Owner,
        now_ms: i64,
    ) -> Result<(), PasskeyError> {
        let item = GrantItem {
            kind: GrantKind::PasskeyOwner,
            key: credential_id.to_owned(),
            body: serde_json::to_string(owner).expect("an owner serializes"),
            expires_at_ms: KEPT_UNTIL_REMOVED_MS,
            revision: 1,
        };
        match self.grants.claim_grant(&item, now_ms).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(PasskeyError::Invalid(
                "This passkey is already enrolled elsewhere. Create a new one.".into(),
            )),
            Err(error) => Err(unavailable(error)),
        }
    }

    /// Who `credential_id` belongs to, if anyone.
    pub async fn owner(
        &self,
        credential_id: &str,
        now_ms: i64,
    ) -> Result<Option<Owner>, PasskeyError> {
        let item = self
            .grants
            .grant(GrantKind::PasskeyOwner, credential_id, now_ms)
            .await
            .map_err(unavailable)?;
        Ok(item.and_then(|item| serde_json::from_str(&item.body).ok()))
    }

    /// Removes the entry of `credential_id` if it still names `household_id` (a household
    /// deleted): the credential may then be enrolled elsewhere.
    pub async fn forget(
        &self,
        credential_id: &str,
        household_id: &str,
        now_ms: i64,
    ) -> Result<(), PasskeyError> {
        let Some(item) = self
            .grants
            .grant(GrantKind::PasskeyOwner, credential_id, now_ms)
            .await
            .map_err(unavailable)?
        else {
            return Ok(());
        };
        let names_household = serde_json::from_str::<Owner>(&item.body)
            .is_ok_and(|owner| owner.household_id == household_id);
        if names_household {
            self.grants
                .delete_grant(
                    GrantKind::PasskeyOwner,
                    credential_id,
                    item.revision,
                    now_ms,
                )
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }
}

fn unavailable(_: StoreError) -> PasskeyError {
    PasskeyError::Unavailable(
        "Hearth cannot reach its storage right now. Try again in a minute.".into(),
    )
}
