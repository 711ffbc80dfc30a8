//! Signing in with a passkey, and no name typed: a discoverable-credential assertion over a
//! single-use challenge of the server's making. The browser names the credential; the owner
//! index says which household to read; the household's account alone says whether that
//! passkey may sign in, and the ceremony checks the origin, the relying party id, user
//! verification, the signature and the counter, as for every signature
//! ([`Passkeys::check_signer_over`]).
//!
//! A challenge is kept as a short-lived store record under its SHA-256, for the ceremony's
//! five minutes, and deleted by the sign-in that answers it (one conditional delete), so an
//! assertion signs in once. A sign-in is for one [`Purpose`]: the household page's, whose
//! challenge is random, or linking one authorization request, whose challenge is the SHA-256
//! of a `hearth-link/v1` statement naming the request's client, redirect URI and PKCE
//! challenge, so that the signature itself says which link it allowed. An answer for one
//! purpose never signs in for another.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;

use super::{
    CeremonyError, PasskeyError, Passkeys, ceremony, settle_use, stored_key, unavailable_randomness,
};
use crate::chain::sha256_hex;
use crate::random::os_bytes;
use crate::store::{GrantItem, GrantKind};

/// Who signed in: a member of a household, with the passkey they used and what the
/// household's account said of them at that moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    pub household_id: String,
    pub member_id: String,
    pub credential_id: String,
    /// The member's role when they signed in (the policy's name for it).
    pub role: String,
    pub guardian: bool,
    /// The account's generation: an unlink raises it.
    pub generation: u64,
}

/// Why a sign-in was refused, each with its own page.
#[derive(Debug, thiserror::Error)]
pub enum SignInRefusal {
    /// No household knows this passkey (never enrolled here, or its household is gone).
    #[error(
        "Hearth does not know this passkey. Use the passkey you made from your household's invite, or ask a guardian for a new invite."
    )]
    Unknown,
    #[error(
        "This passkey was revoked, so it cannot sign in. Ask a guardian for a new invite to make another."
    )]
    Revoked,
    #[error(
        "This passkey still waits for a guardian's approval. Ask a guardian to approve it, then sign in again."
    )]
    Pending,
    #[error(
        "This passkey may have been copied, so it signs nothing more. Ask a guardian to revoke it and send you a new invite."
    )]
    Suspect,
    /// The challenge was used, never issued, or its five minutes passed.
    #[error("That sign-in took too long or was already used. Press Sign in with a passkey again.")]
    Stale,
    /// The challenge was made for another purpose: another link request, or the household
    /// page.
    #[error(
        "That passkey answered another request. Start again from the page that asked, and press Sign in with a passkey there."
    )]
    OtherRequest,
    #[error("{0}")]
    Failed(PasskeyError),
}

impl From<PasskeyError> for SignInRefusal {
    fn from(error: PasskeyError) -> Self {
        SignInRefusal::Failed(error)
    }
}

/// What a sign-in is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose<'a> {
    /// The household page: a session follows.
    HouseholdPage,
    /// Linking a household to the assistant of one authorization request, at once.
    Link {
        client_id: &'a str,
        redirect_uri: &'a str,
        code_challenge: &'a str,
    },
}

/// The first line of a link's statement.
pub const LINK_STATEMENT: &str = "hearth-link/v1";

impl Purpose<'_> {
    /// The statement a challenge for this purpose is made from, with `nonce`; none for the
    /// household page, whose challenge is the nonce itself.
    fn statement(&self, nonce: &str) -> Option<String> {
        match self {
            Purpose::HouseholdPage => None,
            Purpose::Link {
                client_id,
                redirect_uri,
                code_challenge,
            } => Some(format!(
                "{LINK_STATEMENT}\n{client_id}\n{redirect_uri}\n{code_challenge}\n{nonce}\n"
            )),
        }
    }

    /// Whether `kept` (a challenge record's body) was made for this purpose.
    fn made(&self, kept: &str) -> bool {
        match kept
            .rsplit_once('\n')
            .and_then(|(head, _)| head.rsplit_once('\n'))
        {
            Some((_, nonce)) => self.statement(nonce).as_deref() == Some(kept),
            None => *self == Purpose::HouseholdPage && kept.is_empty(),
        }
    }
}

impl Passkeys {
    /// Request options for a sign-in for `purpose`: a fresh challenge, kept for the
    /// ceremony's five minutes; no credentials listed, so any of this relying party's
    /// passkeys may answer.
    pub async fn sign_in_options(&self, purpose: Purpose<'_>) -> Result<Value, PasskeyError> {
        let nonce = os_bytes::<32>().map_err(|_| unavailable_randomness())?;
        let statement = purpose.statement(&URL_SAFE_NO_PAD.encode(nonce));
        let challenge: Vec<u8> = match &statement {
            Some(statement) => ceremony::challenge_of(statement).to_vec(),
            None => nonce.to_vec(),
        };
        let now = self.now_ms();
        let record = GrantItem {
            kind: GrantKind::SignInChallenge,
            key: sha256_hex(&challenge),
            body: statement.unwrap_or_default(),
            expires_at_ms: now + ceremony::CEREMONY_TIMEOUT_MS,
            revision: 1,
        };
        self.grants
            .put_grant(&record, None, now)
            .await
            .map_err(|_| store_unavailable())?;
        Ok(self.site.site.request_options(&challenge, &[]))
    }

    /// Checks a sign-in assertion for `purpose` and answers who signed in. The challenge is
    /// used up first, whatever follows; the passkey's counter and last use are written as for
    /// a signature.
    pub async fn sign_in(
        &self,
        credential: &Value,
        purpose: Purpose<'_>,
    ) -> Result<SignedIn, SignInRefusal> {
        let now = self.now_ms();
        let challenge = challenge_answered(credential)?;
        let key = sha256_hex(&challenge);
        let record = self
            .grants
            .grant(GrantKind::SignInChallenge, &key, now)
            .await
            .map_err(|_| store_unavailable())?
            .ok_or(SignInRefusal::Stale)?;
        let claimed = self
            .grants
            .delete_grant(GrantKind::SignInChallenge, &key, record.revision, now)
            .await
            .map_err(|_| store_unavailable())?;
        if !claimed {
            return Err(SignInRefusal::Stale);
        }
        if !purpose.made(&record.body) {
            return Err(SignInRefusal::OtherRequest);
        }
        let credential_id =
            ceremony::assertion_credential_id(credential).map_err(PasskeyError::from)?;
        let owner = self
            .owners
            .owner(&credential_id, now)
            .await?
            .ok_or(SignInRefusal::Unknown)?;
        let account = match self.accounts.get(&owner.household_id).await {
            Ok(account) => account,
            Err(crate::accounts::AccountError::NotFound(_)) => return Err(SignInRefusal::Unknown),
            Err(error) => return Err(PasskeyError::from(error).into()),
        };
        let passkey = account
            .passkeys
            .iter()
            .find(|passkey| passkey.credential_id == credential_id)
            .ok_or(SignInRefusal::Unknown)?;
        // The signature first: what state a passkey is in is told only to its holder. A
        // counter that went backwards is left to the full check below, which marks it.
        match self
            .site
            .site
            .verify_assertion(&challenge, &stored_key(passkey), credential)
        {
            Ok(_) | Err(CeremonyError::CounterWentBack { .. }) => {}
            Err(error) => return Err(PasskeyError::from(error).into()),
        }
        if passkey.revoked_at_ms.is_some() {
            return Err(SignInRefusal::Revoked);
        }
        if passkey.suspect_at_ms.is_some() {
            return Err(SignInRefusal::Suspect);
        }
        if passkey.pending.is_some() {
            return Err(SignInRefusal::Pending);
        }
        let members = self.members(&account)?;
        let member = members
            .iter()
            .find(|member| member.id == passkey.member_id)
            .ok_or(SignInRefusal::Unknown)?
            .clone();
        let assertion = self
            .check_signer_over(&account, credential, &challenge, |_| true)
            .await
            .map_err(|error| match error {
                PasskeyError::Refused(reason) if reason.contains("copied") => {
                    SignInRefusal::Suspect
                }
                other => SignInRefusal::Failed(other),
            })?;
        let (settled, account) = self
            .accounts
            .update_with::<_, PasskeyError>(&owner.household_id, |account| {
                settle_use(account, &assertion, now)
            })
            .await?;
        settled.map_err(|_| SignInRefusal::Suspect)?;
        Ok(SignedIn {
            household_id: account.household_id.clone(),
            member_id: member.id,
            credential_id,
            role: member.role,
            guardian: member.guardian,
            generation: account.generation,
        })
    }
}

/// The challenge an assertion's client data names. Read before the signature is checked, only
/// to find the challenge record; the ceremony then checks the client data against it.
fn challenge_answered(credential: &Value) -> Result<Vec<u8>, SignInRefusal> {
    #[derive(Deserialize)]
    struct ClientData {
        challenge: String,
    }
    let malformed = || {
        SignInRefusal::Failed(PasskeyError::from(CeremonyError::Malformed(
            "not a passkey assertion".into(),
        )))
    };
    let encoded = credential
        .pointer("/response/clientDataJSON")
        .and_then(Value::as_str)
        .ok_or_else(malformed)?;
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded.trim_end_matches('='))
        .map_err(|_| malformed())?;
    let data: ClientData = serde_json::from_slice(&bytes).map_err(|_| malformed())?;
    URL_SAFE_NO_PAD
        .decode(data.challenge.trim_end_matches('='))
        .map_err(|_| malformed())
}

fn store_unavailable() -> PasskeyError {
    PasskeyError::Unavailable(
        "Hearth cannot reach its storage right now. Try again in a minute.".into(),
    )
}
