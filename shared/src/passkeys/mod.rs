//! Passkeys: the household members' WebAuthn credentials, on their phones or security keys.
//! A passkey signs a statement the person reads on Hearth's own page, so what it approves is
//! the real thing and not a model's paraphrase of it.
//!
//! - **Enrolment.** The operator makes an invite for one member (`hearth admin passkey
//!   invite`): a link that works once, for [`INVITE_TTL_MS`], under the household's current
//!   generation (an unlink voids it at once: the account is read fresh, never through the
//!   generation cache). The page creates a passkey (ES256 or Ed25519, user verification
//!   required) and it is stored under the member, in the household's account.
//! - **Guardians first.** A household's first passkey must be a guardian's. Every later one
//!   waits, `pending`, until a guardian approves it with their own passkey on its approval
//!   page: a leaked invite must not grant a parent's authority.
//! - **Limits.** [`MAX_PASSKEYS_PER_MEMBER`] live (pending included) per member;
//!   [`MAX_KEPT_PASSKEYS`] kept per household, revoked ones included (they stay, so older
//!   approvals still check); [`MAX_OPEN_INVITES`] invites at once.
//! - **Counters.** A passkey whose sign counter goes backwards is marked suspect and signs
//!   nothing more; a counter of 0 is an authenticator that keeps none (synced passkeys).
//!
//! Passkeys are read fresh on every check and never cached. This module knows accounts and
//! the WebAuthn ceremonies; who the members are and who is a guardian comes from the
//! household's policy, through the [`RosterOf`] the composition hands it, so that the purchase
//! guard can use passkeys without passkeys depending on the purchase guard.

pub mod approvals;
pub mod ceremony;
pub mod http;
pub mod owners;
pub mod pages;
pub mod push;
pub mod sign_in;
pub mod statement;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::accounts::{AccountError, Accounts, is_household_id};
use crate::clock::unix_ms;
use crate::random::os_bytes;
use crate::store::{
    AccountItem, GrantStore, MAX_TOKENS_PER_LINK, NonceItem, PasskeyInviteItem, PasskeyItem,
    PendingEnrolmentItem, PushGrantItem, token_hash,
};
use ceremony::{Assertion, CEREMONY_TIMEOUT_MS, CeremonyError, Site, StoredKey};
use owners::{Indexed, Owner, PasskeyOwners};
use push::{PushMessage, Pusher};

/// Passkeys one member may hold at once (pending ones included, revoked ones not).
pub const MAX_PASSKEYS_PER_MEMBER: usize = 5;
/// Passkeys one household keeps, revoked ones included.
pub const MAX_KEPT_PASSKEYS: usize = 100;
/// How long an enrolment invite works.
pub const INVITE_TTL_MS: i64 = 15 * 60 * 1000;
/// Invites a household may have open at once.
pub const MAX_OPEN_INVITES: usize = 20;
/// How many challenges one approval link, one pending passkey's page, or one invite answers
/// within [`CHALLENGE_WINDOW_MS`]. Each is a write to the household's account and the link is
/// all it takes, so a copied link cannot turn into unbounded writes; a person needs one or two.
pub const CHALLENGES_PER_LINK: usize = 10;
/// The window [`CHALLENGES_PER_LINK`] counts in: a ceremony's own five minutes.
pub const CHALLENGE_WINDOW_MS: i64 = CEREMONY_TIMEOUT_MS;

/// One member as passkeys need them: who they are, and whether they are a guardian.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    pub name: String,
    /// The policy's name for the member's role (`parent`, `child`, `older_relative`), for
    /// the guardians' notification.
    pub role: String,
    pub guardian: bool,
}

/// The members of a household account, from its policy; an error says why there are none.
pub type RosterOf = Arc<dyn Fn(&AccountItem) -> Result<Vec<Member>, String> + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum PasskeyError {
    /// The household or passkey does not exist (a link's page says only that the link does
    /// not work, 410, whether or not its household exists).
    #[error("{0}")]
    NotFound(String),
    /// The link existed and no longer works: used, expired, or voided by an unlink (410).
    #[error("{0}")]
    Gone(String),
    /// The request itself is wrong (400).
    #[error("{0}")]
    Invalid(String),
    /// Understood and refused: the rules or the passkey's answer say no (403).
    #[error("{0}")]
    Refused(String),
    /// A limit is reached (409).
    #[error("{0}")]
    Full(String),
    /// Too many requests on one link in a short time (429), and the seconds until the next
    /// is taken (`Retry-After`).
    #[error("{0}")]
    TooMany(String, u64),
    /// The store could not be reached, or stayed busy (503).
    #[error("{0}")]
    Unavailable(String),
}

impl From<AccountError> for PasskeyError {
    fn from(error: AccountError) -> Self {
        match error {
            AccountError::NotFound(_) => PasskeyError::NotFound(error.to_string()),
            AccountError::Invalid(reason) => PasskeyError::Invalid(reason),
            AccountError::Busy => PasskeyError::Unavailable(
                "Hearth is busy with other changes to this household. Try again in a moment."
                    .into(),
            ),
            AccountError::Unavailable(_) => PasskeyError::Unavailable(
                "Hearth cannot reach its storage right now. Try again in a minute.".into(),
            ),
        }
    }
}

impl From<CeremonyError> for PasskeyError {
    fn from(error: CeremonyError) -> Self {
        match error {
            CeremonyError::Malformed(reason) => PasskeyError::Invalid(reason),
            other => PasskeyError::Refused(other.to_string()),
        }
    }
}

/// An invite as the operator is shown it, once.
#[derive(Debug, Clone, Serialize)]
pub struct Invite {
    pub url: String,
    pub expires_at: String,
}

/// One passkey as `passkey list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PasskeyView {
    pub credential_id: String,
    pub member_id: String,
    pub algorithm: String,
    pub public_key_spki: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    /// Waiting for a guardian: its page's link is sent to them at enrolment, and
    /// [`Passkeys::confirmation_link`] makes another (links are kept only as hashes).
    pub pending: bool,
    /// Set when its counter went backwards: it signs nothing more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspect_at: Option<String>,
}

/// What an enrolment or confirmation page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrolmentView {
    pub household_name: String,
    pub member_name: String,
    /// Whether a guardian will have to approve this passkey before it counts.
    pub needs_guardian: bool,
}

/// The outcome of an enrolment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Enrolled {
    pub member_id: String,
    pub member_role: String,
    pub pending: bool,
    /// The guardians' approval page, while pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_url: Option<String>,
    /// What the page subscribes this phone to pushes with (for [`push::PUSH_GRANT_MS`]),
    /// when Web Push is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_token: Option<String>,
}

/// What a page is given to sign: the statement, and the request options whose challenge is
/// its hash.
#[derive(Debug, Clone, Serialize)]
pub struct SigningRequest {
    pub statement: String,
    pub options: Value,
}

/// Where pages live: the relying party, and the URL prefix every printed link starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeySite {
    pub site: Site,
    /// The pages' base URL (the origin, and the stage prefix under API Gateway).
    pub base_url: String,
}

impl PasskeySite {
    /// The path part of the base URL: `/prod` under an API Gateway stage, else empty.
    pub fn base_path(&self) -> String {
        let url = self.base_url.as_str();
        let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
        after_scheme
            .find('/')
            .map(|at| after_scheme[at..].trim_end_matches('/').to_owned())
            .unwrap_or_default()
    }
}

pub struct Passkeys {
    accounts: Arc<Accounts>,
    /// Which household each credential id belongs to, for sign-in.
    owners: PasskeyOwners,
    /// Where sign-in challenges are kept.
    grants: Arc<dyn GrantStore>,
    site: PasskeySite,
    roster_of: RosterOf,
    /// Web Push to members' phones, where a log key is configured.
    push: Option<Arc<Pusher>>,
}

impl Passkeys {
    pub fn new(
        accounts: Arc<Accounts>,
        grants: Arc<dyn GrantStore>,
        site: PasskeySite,
        roster_of: RosterOf,
    ) -> Self {
        Self {
            accounts,
            owners: PasskeyOwners::new(grants.clone()),
            grants,
            site,
            roster_of,
            push: None,
        }
    }

    pub fn owners(&self) -> &PasskeyOwners {
        &self.owners
    }

    pub fn accounts(&self) -> &Arc<Accounts> {
        &self.accounts
    }

    /// The household's members, from its policy.
    pub fn roster(&self, account: &AccountItem) -> Result<Vec<Member>, PasskeyError> {
        self.members(account)
    }

    /// Adds the owner entries the index lacks for `passkeys` of `household_id` (those enrolled
    /// before it existed). A refusal (another household claimed the id first) is logged, not fatal:
    /// the passkey then cannot sign in, and every other use of it goes on.
    async fn index_owners(
        &self,
        household_id: &str,
        passkeys: &[PasskeyItem],
    ) -> Result<Indexed, PasskeyError> {
        let now = self.now_ms();
        let mut indexed = Indexed::default();
        for passkey in passkeys {
            let owner = Owner {
                household_id: household_id.to_owned(),
                member_id: passkey.member_id.clone(),
            };
            if self.owners.owner(&passkey.credential_id, now).await? == Some(owner.clone()) {
                continue;
            }
            match self.claim_owner(&passkey.credential_id, &owner, now).await {
                Ok(()) => indexed.added += 1,
                Err(PasskeyError::Invalid(_)) => {
                    indexed.held_elsewhere += 1;
                    tracing::warn!(
                        target: "hearth::passkeys",
                        household = %household_id,
                        "a passkey's owner entry is another household's; it cannot sign in to the household page"
                    );
                }
                Err(other) => return Err(other),
            }
        }
        Ok(indexed)
    }

    /// Claims `credential_id` for `owner` in the sign-in index, taking the entry over from a
    /// household that no longer stands (deleted, or made by sign-up and expired unlinked,
    /// which the store removes without its entries): such an entry would otherwise keep the id
    /// from signing in anywhere, for good. An id a standing household holds stays refused.
    async fn claim_owner(
        &self,
        credential_id: &str,
        owner: &Owner,
        now: i64,
    ) -> Result<(), PasskeyError> {
        let refused = match self.owners.claim(credential_id, owner, now).await {
            Err(PasskeyError::Invalid(reason)) => reason,
            done => return done,
        };
        let Some(held) = self.owners.owner(credential_id, now).await? else {
            // Forgotten since: it is free.
            return self.owners.claim(credential_id, owner, now).await;
        };
        let standing = self
            .accounts
            .fresh(&held.household_id)
            .await
            .map_err(|error| PasskeyError::from(AccountError::from(error)))?;
        if standing.is_some() {
            return Err(PasskeyError::Invalid(refused));
        }
        self.owners
            .forget(credential_id, &held.household_id, now)
            .await?;
        self.owners.claim(credential_id, owner, now).await
    }

    /// Adds the household's passkeys to the sign-in index where they are missing
    /// (`hearth admin passkey index`).
    pub async fn index(&self, household_id: &str) -> Result<Indexed, PasskeyError> {
        let account = self.accounts.get(household_id).await?;
        self.index_owners(&account.household_id, &account.passkeys)
            .await
    }

    /// The same passkeys, pushing what waits to subscribed phones.
    pub fn with_push(mut self, pusher: Option<Arc<Pusher>>) -> Self {
        self.push = pusher;
        self
    }

    /// The VAPID public key phones subscribe under, when Web Push is configured.
    pub fn push_key(&self) -> Option<&str> {
        self.push.as_deref().and_then(Pusher::public_key)
    }

    /// Subscribes the phone that enrolled with the push grant `token` (its enrolment's
    /// answer) to `subscription` (`PushSubscription.toJSON()`).
    pub async fn subscribe(&self, token: &str, body: &Value) -> Result<(), PasskeyError> {
        let pusher = self.push.clone().ok_or_else(|| {
            PasskeyError::Unavailable("This Hearth does not send notifications.".into())
        })?;
        let (household_id, _) = split_token(token)?;
        let now = self.now_ms();
        let subscription = pusher.subscription(body, now)?;
        let hash = token_hash(token);
        self.accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let passkey = account
                    .passkeys
                    .iter_mut()
                    .find(|passkey| {
                        passkey.revoked_at_ms.is_none()
                            && passkey.push_grant.as_ref().is_some_and(|grant| {
                                same_hash(&grant.token_hash, &hash) && grant.expires_at_ms >= now
                            })
                    })
                    .ok_or_else(|| {
                        PasskeyError::Gone(
                            "This page can no longer set up notifications. Ask for a new invite to set them up.".into(),
                        )
                    })?;
                passkey.push = Some(subscription.clone());
                passkey.push_grant = None;
                Ok(())
            })
            .await?;
        Ok(())
    }

    /// Subscribes the phone signed in to the household's page with passkey `credential_id` to
    /// `subscription` (`PushSubscription.toJSON()`): what waits opens on that page.
    pub async fn subscribe_household_page(
        &self,
        household_id: &str,
        credential_id: &str,
        body: &Value,
    ) -> Result<(), PasskeyError> {
        let pusher = self.push.clone().ok_or_else(|| {
            PasskeyError::Unavailable("This Hearth does not send notifications.".into())
        })?;
        let mut subscription = pusher.subscription(body, self.now_ms())?;
        subscription.opens_household = true;
        self.accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let passkey = account
                    .passkeys
                    .iter_mut()
                    .find(|passkey| passkey.credential_id == credential_id && is_live(passkey))
                    .ok_or_else(|| {
                        PasskeyError::Refused("That passkey was revoked. Sign in again.".into())
                    })?;
                passkey.push = Some(subscription.clone());
                Ok(())
            })
            .await?;
        Ok(())
    }

    /// The household page's view of what waits, where a phone that subscribed from it is sent
    /// for `request_id`.
    pub fn household_waiting_url(&self, request_id: &str) -> String {
        format!(
            "{}#request-{request_id}",
            self.household_view_url("waiting")
        )
    }

    /// One view of the household's page.
    pub fn household_view_url(&self, view: &str) -> String {
        format!("{}/household?view={view}", self.site.base_url)
    }

    /// Pushes `message` to the subscribed phones of the household's live passkeys whose
    /// member `who` picks, together, within the push budget; drops subscriptions their push
    /// service says are gone. A phone subscribed from the household's page is sent to
    /// `on_household_page` instead of the message's link, when there is one.
    pub async fn push_to(
        &self,
        household_id: &str,
        who: impl Fn(&Member) -> bool,
        message: PushMessage,
        on_household_page: Option<String>,
    ) {
        let Some(pusher) = &self.push else {
            return;
        };
        let Ok(account) = self.accounts.get(household_id).await else {
            return;
        };
        let Ok(members) = self.members(&account) else {
            return;
        };
        let subscriptions: Vec<_> = account
            .passkeys
            .iter()
            .filter(|passkey| is_live(passkey) && passkey.pending.is_none())
            .filter(|passkey| {
                members
                    .iter()
                    .any(|member| member.id == passkey.member_id && who(member))
            })
            .filter_map(|passkey| passkey.push.clone())
            .collect();
        if subscriptions.is_empty() {
            return;
        }
        let (to_page, to_link): (Vec<_>, Vec<_>) = subscriptions
            .into_iter()
            .partition(|subscription| subscription.opens_household && on_household_page.is_some());
        let on_page = PushMessage {
            url: on_household_page.unwrap_or_default(),
            ..message.clone()
        };
        let (mut gone, on_page_gone) = tokio::join!(
            push::send_all(pusher, to_link, message),
            push::send_all(pusher, to_page, on_page)
        );
        gone.extend(on_page_gone);
        if !gone.is_empty() {
            let dropped = self
                .accounts
                .update_with::<_, PasskeyError>(household_id, |account| {
                    for passkey in &mut account.passkeys {
                        if passkey
                            .push
                            .as_ref()
                            .is_some_and(|push| gone.contains(&push.endpoint))
                        {
                            passkey.push = None;
                        }
                    }
                    Ok(())
                })
                .await;
            if dropped.is_err() {
                tracing::warn!(target: "hearth::passkeys", "dead push subscriptions could not be dropped");
            }
        }
    }

    pub fn site(&self) -> &PasskeySite {
        &self.site
    }

    pub fn clock(&self) -> &Arc<dyn crate::clock::Clock> {
        self.accounts.clock()
    }

    fn now_ms(&self) -> i64 {
        unix_ms(self.accounts.clock().now())
    }

    /// `statement` to sign, with request options for the passkeys `allow` names whose
    /// challenge is its hash.
    fn signing_request(&self, statement: String, allow: &[String]) -> SigningRequest {
        let options = self
            .site
            .site
            .request_options(&ceremony::challenge_of(&statement), allow);
        SigningRequest { statement, options }
    }

    pub fn invite_url(&self, token: &str) -> String {
        format!("{}/passkeys/enrol/{token}", self.site.base_url)
    }

    pub fn confirmation_url(&self, token: &str) -> String {
        format!("{}/passkeys/confirm/{token}", self.site.base_url)
    }

    /// A single-use enrolment invite for `member_id` of `household_id`.
    pub async fn invite(
        &self,
        household_id: &str,
        member_id: &str,
    ) -> Result<Invite, PasskeyError> {
        let secret = random_token()?;
        let token = format!("{household_id}.{secret}");
        let now = self.now_ms();
        let expires_at_ms = now + INVITE_TTL_MS;
        self.accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let members = self.members(account)?;
                let member = find_member(&members, member_id)?;
                enrolment_allowed(account, &members, member)?;
                // Expired invites, and those an unlink voided, free their places.
                let generation = account.generation;
                account.passkey_invites.retain(|invite| {
                    invite.expires_at_ms > now && invite.generation == generation
                });
                if account.passkey_invites.len() >= MAX_OPEN_INVITES {
                    return Err(PasskeyError::Full(format!(
                        "household {household_id} already has {MAX_OPEN_INVITES} open invites; wait for some to be used or to expire (15 minutes)"
                    )));
                }
                account.passkey_invites.push(PasskeyInviteItem {
                    challenged_at_ms: Vec::new(),
                    invite_hash: token_hash(&token),
                    member_id: member.id.clone(),
                    generation: account.generation,
                    expires_at_ms,
                    challenge: None,
                    challenge_at_ms: None,
                });
                Ok(())
            })
            .await?;
        Ok(Invite {
            url: self.invite_url(&token),
            expires_at: timestamp(expires_at_ms),
        })
    }

    /// Every passkey of `household_id`, revoked ones included, oldest first.
    /// Writes the owner entries of passkeys enrolled before the sign-in index existed.
    pub async fn list(&self, household_id: &str) -> Result<Vec<PasskeyView>, PasskeyError> {
        let account = self.accounts.get(household_id).await?;
        // Best effort: a listing does not fail for the index.
        let _ = self
            .index_owners(&account.household_id, &account.passkeys)
            .await;
        Ok(account
            .passkeys
            .iter()
            .map(|passkey| self.view(passkey))
            .collect())
    }

    /// Revokes one passkey: it signs nothing more, and stays listed.
    pub async fn revoke(
        &self,
        household_id: &str,
        credential_id: &str,
    ) -> Result<PasskeyView, PasskeyError> {
        let now = self.now_ms();
        let (view, _) = self
            .accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let passkey = account
                    .passkeys
                    .iter_mut()
                    .find(|passkey| passkey.credential_id == credential_id)
                    .ok_or_else(|| {
                        PasskeyError::NotFound(format!(
                            "household {household_id} has no passkey {credential_id}"
                        ))
                    })?;
                if passkey.revoked_at_ms.is_none() {
                    passkey.revoked_at_ms = Some(now);
                    passkey.pending = None;
                }
                Ok(self.view(passkey))
            })
            .await?;
        Ok(view)
    }

    /// A new link to the approval page of `credential_id`, a passkey waiting for a guardian:
    /// its earlier links are kept only as hashes, so none can be shown again. The earlier
    /// links keep working, the first and the newest [`MAX_TOKENS_PER_LINK`] in all.
    pub async fn confirmation_link(
        &self,
        household_id: &str,
        credential_id: &str,
    ) -> Result<String, PasskeyError> {
        let token = format!("{household_id}.{}", random_token()?);
        self.accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let generation = account.generation;
                let waiting = account
                    .passkeys
                    .iter_mut()
                    .find(|passkey| passkey.credential_id == credential_id)
                    .and_then(|passkey| passkey.pending.as_mut())
                    .filter(|waiting| waiting.generation == generation)
                    .ok_or_else(|| {
                        PasskeyError::Invalid(format!(
                            "household {household_id} has no passkey {credential_id} waiting for a guardian (passkey list shows which are pending)"
                        ))
                    })?;
                add_token(&mut waiting.approval_token_hashes, token_hash(&token));
                Ok(())
            })
            .await?;
        Ok(self.confirmation_url(&token))
    }

    /// Lets the pending passkey `credential_id` in, on a guardian's signed household action
    /// (the household's page) whose statement the caller has checked: what its approval
    /// page's `Approve` does. Answers the member whose passkey it is.
    pub async fn let_in(
        &self,
        household_id: &str,
        credential_id: &str,
    ) -> Result<String, PasskeyError> {
        let (member_id, _) = self
            .accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let generation = account.generation;
                let passkey = account
                    .passkeys
                    .iter_mut()
                    .find(|passkey| {
                        passkey.credential_id == credential_id
                            && is_live(passkey)
                            && passkey
                                .pending
                                .as_ref()
                                .is_some_and(|waiting| waiting.generation == generation)
                    })
                    .ok_or_else(|| {
                        PasskeyError::Gone(
                            "That passkey no longer waits for a guardian: reload the page to see where it stands."
                                .into(),
                        )
                    })?;
                passkey.pending = None;
                Ok(passkey.member_id.clone())
            })
            .await?;
        Ok(member_id)
    }

    /// What the enrolment page for `token` shows, if the invite still works.
    pub async fn enrolment_view(&self, token: &str) -> Result<EnrolmentView, PasskeyError> {
        let (household_id, _) = split_token(token)?;
        let account = self.accounts.get(household_id).await?;
        let invite = open_invite(&account, token, self.now_ms())?;
        let members = self.members(&account)?;
        let member = find_member(&members, &invite.member_id)?;
        Ok(EnrolmentView {
            household_name: account.name.clone(),
            member_name: member.name.clone(),
            needs_guardian: has_guardian_passkey(&account, &members),
        })
    }

    /// The creation options for the invite's page; the challenge is kept with the invite.
    pub async fn creation_options(&self, token: &str) -> Result<Value, PasskeyError> {
        let (household_id, _) = split_token(token)?;
        let challenge = os_bytes::<32>().map_err(|_| unavailable_randomness())?;
        let now = self.now_ms();
        let (options, _) = self
            .accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let members = self.members(account)?;
                let invite = open_invite(account, token, now)?.clone();
                let member = find_member(&members, &invite.member_id)?.clone();
                enrolment_allowed(account, &members, &member)?;
                let exclude: Vec<String> = account
                    .passkeys
                    .iter()
                    .filter(|passkey| passkey.member_id == member.id)
                    .map(|passkey| passkey.credential_id.clone())
                    .collect();
                let hash = token_hash(token);
                if let Some(stored) = account
                    .passkey_invites
                    .iter_mut()
                    .find(|stored| same_hash(&stored.invite_hash, &hash))
                {
                    count_challenge(&mut stored.challenged_at_ms, now)?;
                    stored.challenge = Some(URL_SAFE_NO_PAD.encode(challenge));
                    stored.challenge_at_ms = Some(now);
                }
                Ok(self.site.site.creation_options(
                    &challenge,
                    &user_handle(&account.household_id, &member.id),
                    &member.id,
                    &member.name,
                    &exclude,
                ))
            })
            .await?;
        Ok(options)
    }

    /// Checks the browser's new credential against the invite's challenge and stores it:
    /// enrolled at once if it is the household's first guardian passkey, pending a guardian
    /// otherwise. The invite is used up either way.
    pub async fn enrol(&self, token: &str, credential: &Value) -> Result<Enrolled, PasskeyError> {
        let (household_id, _) = split_token(token)?;
        let now = self.now_ms();
        let account = self.accounts.get(household_id).await?;
        let invite = open_invite(&account, token, now)?.clone();
        let (Some(challenge), Some(issued_at)) = (&invite.challenge, invite.challenge_at_ms) else {
            return Err(PasskeyError::Invalid(
                "Press Create passkey to start.".into(),
            ));
        };
        if now - issued_at > CEREMONY_TIMEOUT_MS {
            return Err(PasskeyError::Refused(
                "That took longer than five minutes. Press Create passkey again.".into(),
            ));
        }
        let challenge_bytes = URL_SAFE_NO_PAD
            .decode(challenge)
            .map_err(|_| PasskeyError::Invalid("the stored challenge is unreadable".into()))?;
        let created = self.site.site.verify_registration(
            &challenge_bytes,
            &user_handle(household_id, &invite.member_id),
            credential,
        )?;
        // Claimed before the passkey is stored: an id another household holds is refused.
        self.claim_owner(
            &created.credential_id,
            &Owner {
                household_id: household_id.to_owned(),
                member_id: invite.member_id.clone(),
            },
            now,
        )
        .await?;
        let approval_token = format!("{household_id}.{}", random_token()?);
        let push_token = match self.push {
            Some(_) => Some(format!("{household_id}.{}", random_token()?)),
            None => None,
        };
        let enrolled = self
            .accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let stored = open_invite(account, token, now)?;
                if stored.challenge.as_deref() != Some(challenge.as_str()) {
                    return Err(PasskeyError::Gone(
                        "This invite was used in another window. Ask for a new one.".into(),
                    ));
                }
                let hash = token_hash(token);
                account
                    .passkey_invites
                    .retain(|invite| !same_hash(&invite.invite_hash, &hash));
                let members = self.members(account)?;
                let member = find_member(&members, &invite.member_id)?.clone();
                enrolment_allowed(account, &members, &member)?;
                if account
                    .passkeys
                    .iter()
                    .any(|passkey| passkey.credential_id == created.credential_id)
                {
                    return Err(PasskeyError::Invalid(
                        "This passkey is already enrolled in this household.".into(),
                    ));
                }
                let pending = has_guardian_passkey(account, &members);
                account.passkeys.push(PasskeyItem {
                    credential_id: created.credential_id.clone(),
                    member_id: member.id.clone(),
                    algorithm: created.algorithm.as_str().to_owned(),
                    public_key_spki: created.public_key_spki.clone(),
                    sign_count: created.sign_count,
                    backup_eligible: created.backup_eligible,
                    created_at_ms: now,
                    last_used_at_ms: None,
                    revoked_at_ms: None,
                    suspect_at_ms: None,
                    pending: pending.then(|| PendingEnrolmentItem {
                        challenged_at_ms: Vec::new(),
                        approval_token_hashes: vec![token_hash(&approval_token)],
                        generation: account.generation,
                        nonce: None,
                    }),
                    push: None,
                    push_grant: push_token.as_ref().map(|token| PushGrantItem {
                        token_hash: token_hash(token),
                        expires_at_ms: now + push::PUSH_GRANT_MS,
                    }),
                });
                Ok(Enrolled {
                    member_role: member.role.clone(),
                    member_id: member.id,
                    pending,
                    approval_url: pending.then(|| self.confirmation_url(&approval_token)),
                    push_token: push_token.clone(),
                })
            })
            .await;
        if enrolled.is_err() {
            // Nothing stored: the claim made for it is not kept either, unless the household
            // already holds that credential (enrolled before, whose entry it is).
            let held = self.accounts.get(household_id).await.map(|account| {
                account
                    .passkeys
                    .iter()
                    .any(|passkey| passkey.credential_id == created.credential_id)
            });
            if let Ok(false) = held {
                let _ = self
                    .owners
                    .forget(&created.credential_id, household_id, now)
                    .await;
            }
        }
        let (enrolled, _) = enrolled?;
        Ok(enrolled)
    }

    /// What a pending passkey's confirmation page shows.
    pub async fn confirmation_view(&self, token: &str) -> Result<EnrolmentView, PasskeyError> {
        let (household_id, _) = split_token(token)?;
        let account = self.accounts.get(household_id).await?;
        let passkey = pending_by_token(&account, token)?;
        let members = self.members(&account)?;
        let member = find_member(&members, &passkey.member_id)?;
        Ok(EnrolmentView {
            household_name: account.name.clone(),
            member_name: member.name.clone(),
            needs_guardian: true,
        })
    }

    /// A statement for a guardian to let the pending passkey in, with a fresh nonce.
    pub async fn confirmation_request(&self, token: &str) -> Result<SigningRequest, PasskeyError> {
        let (household_id, _) = split_token(token)?;
        let nonce = URL_SAFE_NO_PAD.encode(os_bytes::<16>().map_err(|_| unavailable_randomness())?);
        let now = self.now_ms();
        let (request, _) = self
            .accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let members = self.members(account)?;
                let allow = signers(account, |passkey| is_guardian(&members, &passkey.member_id));
                if allow.is_empty() {
                    return Err(PasskeyError::Refused(
                        "No guardian has a passkey that can approve this.".into(),
                    ));
                }
                let household = account.household_id.clone();
                let passkey = pending_by_token_mut(account, token)?;
                let pending = passkey
                    .pending
                    .as_mut()
                    .expect("pending_by_token_mut finds pending passkeys");
                count_challenge(&mut pending.challenged_at_ms, now)?;
                pending.nonce = Some(NonceItem {
                    nonce: nonce.clone(),
                    decision: "approve".into(),
                    created_at_ms: now,
                });
                let statement = statement::enrolment(
                    &household,
                    &passkey.member_id,
                    &passkey.credential_id,
                    &nonce,
                );
                Ok(self.signing_request(statement, &allow))
            })
            .await?;
        Ok(request)
    }

    /// A guardian's signed approval of a pending passkey: checks it and lets the passkey in.
    /// Returns the member whose passkey it is.
    pub async fn confirm(
        &self,
        token: &str,
        statement_text: &str,
        credential: &Value,
    ) -> Result<String, PasskeyError> {
        let (household_id, _) = split_token(token)?;
        let now = self.now_ms();
        let account = self.accounts.get(household_id).await?;
        let members = self.members(&account)?;
        let pending = pending_by_token(&account, token)?;
        let nonce = pending
            .pending
            .as_ref()
            .and_then(|waiting| waiting.nonce.clone())
            .ok_or_else(|| PasskeyError::Invalid("Press Approve to start.".into()))?;
        let expected = statement::enrolment(
            household_id,
            &pending.member_id,
            &pending.credential_id,
            &nonce.nonce,
        );
        check_statement(statement_text, &expected, &nonce, now)?;
        let assertion = self
            .check_signer(&account, credential, statement_text, |passkey| {
                is_guardian(&members, &passkey.member_id)
            })
            .await?;
        let member_id = pending.member_id.clone();
        let (used, _) = self
            .accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                // The signer is still a guardian, as the write reads the household.
                let members = self.members(account)?;
                let signer = account
                    .passkeys
                    .iter()
                    .find(|passkey| passkey.credential_id == assertion.credential_id)
                    .map(|passkey| passkey.member_id.clone())
                    .unwrap_or_default();
                if !is_guardian(&members, &signer) {
                    return Err(PasskeyError::Refused(
                        "That passkey's owner cannot approve this: a guardian must.".into(),
                    ));
                }
                let passkey = pending_by_token_mut(account, token)?;
                let waiting = passkey
                    .pending
                    .as_ref()
                    .and_then(|waiting| waiting.nonce.as_ref());
                if waiting.map(|stored| stored.nonce.as_str()) != Some(nonce.nonce.as_str()) {
                    return Err(PasskeyError::Gone(
                        "This approval was already used. Start again if it is still needed.".into(),
                    ));
                }
                let used = settle_use(account, &assertion, now)?;
                if used.is_ok() {
                    pending_by_token_mut(account, token)?.pending = None;
                }
                Ok(used)
            })
            .await?;
        used?;
        Ok(member_id)
    }

    /// Checks `credential` as an assertion over `statement_text` by one of the household's
    /// live passkeys that `may_sign`. A counter that went backwards marks the passkey suspect
    /// (written at once) and refuses.
    pub async fn check_signer(
        &self,
        account: &AccountItem,
        credential: &Value,
        statement_text: &str,
        may_sign: impl Fn(&PasskeyItem) -> bool,
    ) -> Result<Assertion, PasskeyError> {
        let challenge = ceremony::challenge_of(statement_text);
        self.check_signer_over(account, credential, &challenge, may_sign)
            .await
    }

    /// [`Self::check_signer`] over a challenge given as bytes (a sign-in's random one).
    pub async fn check_signer_over(
        &self,
        account: &AccountItem,
        credential: &Value,
        challenge: &[u8],
        may_sign: impl Fn(&PasskeyItem) -> bool,
    ) -> Result<Assertion, PasskeyError> {
        let credential_id = ceremony::assertion_credential_id(credential)?;
        let passkey = account
            .passkeys
            .iter()
            .find(|passkey| passkey.credential_id == credential_id)
            .ok_or_else(|| {
                PasskeyError::Refused("That passkey is not one of this household's.".into())
            })?;
        if passkey.revoked_at_ms.is_some() {
            return Err(PasskeyError::Refused("That passkey was revoked.".into()));
        }
        if passkey.suspect_at_ms.is_some() {
            return Err(PasskeyError::Refused(
                "That passkey may have been copied, so it signs nothing more. Revoke it and enrol a new one.".into(),
            ));
        }
        if passkey.pending.is_some() {
            return Err(PasskeyError::Refused(
                "That passkey still waits for a guardian's approval.".into(),
            ));
        }
        if !may_sign(passkey) {
            return Err(PasskeyError::Refused(
                "That passkey's owner cannot approve this: a guardian must.".into(),
            ));
        }
        match self
            .site
            .site
            .verify_assertion(challenge, &stored_key(passkey), credential)
        {
            Ok(assertion) => Ok(assertion),
            Err(error @ CeremonyError::CounterWentBack { .. }) => {
                let now = self.now_ms();
                self.accounts
                    .update_with::<_, PasskeyError>(&account.household_id, |account| {
                        if let Some(passkey) = account
                            .passkeys
                            .iter_mut()
                            .find(|passkey| passkey.credential_id == credential_id)
                        {
                            passkey.suspect_at_ms.get_or_insert(now);
                        }
                        Ok::<_, PasskeyError>(())
                    })
                    .await?;
                tracing::warn!(
                    household = %account.household_id,
                    "a passkey's sign counter went backwards; it is marked suspect"
                );
                Err(error.into())
            }
            Err(error) => Err(error.into()),
        }
    }

    fn members(&self, account: &AccountItem) -> Result<Vec<Member>, PasskeyError> {
        (self.roster_of)(account).map_err(|reason| {
            PasskeyError::Invalid(format!(
                "household {} has no members to enrol: {reason}",
                account.household_id
            ))
        })
    }

    /// A passkey as listed.
    fn view(&self, passkey: &PasskeyItem) -> PasskeyView {
        PasskeyView {
            credential_id: passkey.credential_id.clone(),
            member_id: passkey.member_id.clone(),
            algorithm: passkey.algorithm.clone(),
            public_key_spki: passkey.public_key_spki.clone(),
            created_at: timestamp(passkey.created_at_ms),
            last_used_at: passkey.last_used_at_ms.map(timestamp),
            revoked_at: passkey.revoked_at_ms.map(timestamp),
            pending: passkey.pending.is_some(),
            suspect_at: passkey.suspect_at_ms.map(timestamp),
        }
    }
}

/// Inside the write that records a checked assertion: the passkey must still be live, and its
/// counter must have moved on from what the write reads, since a revocation, or a copy of the
/// key answering elsewhere, can land between the check and the write. Records the use; or
/// marks the passkey suspect and answers the refusal as `Ok(Err(..))`, so that the write keeps
/// the mark and the caller refuses after it.
pub fn settle_use(
    account: &mut AccountItem,
    assertion: &Assertion,
    now_ms: i64,
) -> Result<Result<(), PasskeyError>, PasskeyError> {
    let passkey = account
        .passkeys
        .iter_mut()
        .find(|passkey| passkey.credential_id == assertion.credential_id)
        .ok_or_else(|| {
            PasskeyError::Refused("That passkey is not one of this household's.".into())
        })?;
    if passkey.revoked_at_ms.is_some() {
        return Err(PasskeyError::Refused("That passkey was revoked.".into()));
    }
    if passkey.suspect_at_ms.is_some() || passkey.pending.is_some() {
        return Err(PasskeyError::Refused(
            "That passkey cannot sign this any more.".into(),
        ));
    }
    let (stored, received) = (passkey.sign_count, assertion.sign_count);
    if (stored > 0 || received > 0) && received <= stored {
        passkey.suspect_at_ms.get_or_insert(now_ms);
        return Ok(Err(PasskeyError::Refused(
            "That passkey may have been copied, so it signs nothing more. Revoke it and enrol a new one."
                .into(),
        )));
    }
    passkey.sign_count = received;
    passkey.last_used_at_ms = Some(now_ms);
    Ok(Ok(()))
}

/// Checks a signed statement against the one the server expects, with its nonce still in
/// time.
pub fn check_statement(
    statement_text: &str,
    expected: &str,
    nonce: &NonceItem,
    now_ms: i64,
) -> Result<(), PasskeyError> {
    if statement_text != expected {
        return Err(PasskeyError::Refused(
            "That approval was for something else, or was started again elsewhere. Start again."
                .into(),
        ));
    }
    if now_ms - nonce.created_at_ms > CEREMONY_TIMEOUT_MS {
        return Err(PasskeyError::Refused(
            "That took longer than five minutes. Start again.".into(),
        ));
    }
    Ok(())
}

/// The credential ids of the household's live passkeys that `may_sign`.
pub fn signers(account: &AccountItem, may_sign: impl Fn(&PasskeyItem) -> bool) -> Vec<String> {
    account
        .passkeys
        .iter()
        .filter(|passkey| is_live(passkey) && passkey.pending.is_none() && may_sign(passkey))
        .map(|passkey| passkey.credential_id.clone())
        .collect()
}

/// What the ceremony checks an assertion of `passkey` against.
pub(crate) fn stored_key(passkey: &PasskeyItem) -> StoredKey<'_> {
    StoredKey {
        credential_id: &passkey.credential_id,
        algorithm: &passkey.algorithm,
        public_key_spki: &passkey.public_key_spki,
        sign_count: passkey.sign_count,
        backup_eligible: passkey.backup_eligible,
    }
}

pub(crate) fn is_live(passkey: &PasskeyItem) -> bool {
    passkey.revoked_at_ms.is_none() && passkey.suspect_at_ms.is_none()
}

fn is_guardian(members: &[Member], member_id: &str) -> bool {
    members
        .iter()
        .any(|member| member.id == member_id && member.guardian)
}

/// Whether a guardian already holds a live, approved passkey: then every enrolment waits.
fn has_guardian_passkey(account: &AccountItem, members: &[Member]) -> bool {
    !signers(account, |passkey| is_guardian(members, &passkey.member_id)).is_empty()
}

/// The rules an enrolment for `member` must meet now: guardians first, and the limits.
fn enrolment_allowed(
    account: &AccountItem,
    members: &[Member],
    member: &Member,
) -> Result<(), PasskeyError> {
    if !member.guardian && !has_guardian_passkey(account, members) {
        return Err(PasskeyError::Refused(format!(
            "The household's first passkey must be a guardian's: enrol one of {} first.",
            members
                .iter()
                .filter(|member| member.guardian)
                .map(|member| member.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let held = account
        .passkeys
        .iter()
        .filter(|passkey| passkey.member_id == member.id && is_live(passkey))
        .count();
    if held >= MAX_PASSKEYS_PER_MEMBER {
        return Err(PasskeyError::Full(format!(
            "{} already has {MAX_PASSKEYS_PER_MEMBER} passkeys; revoke one first.",
            member.id
        )));
    }
    if account.passkeys.len() >= MAX_KEPT_PASSKEYS {
        return Err(PasskeyError::Full(format!(
            "This household keeps {MAX_KEPT_PASSKEYS} passkeys, revoked ones included, and can enrol no more."
        )));
    }
    Ok(())
}

fn find_member<'a>(members: &'a [Member], member_id: &str) -> Result<&'a Member, PasskeyError> {
    members
        .iter()
        .find(|member| member.id == member_id)
        .ok_or_else(|| {
            PasskeyError::Invalid(format!(
                "{member_id:?} is not a member of this household (members: {})",
                members
                    .iter()
                    .map(|member| member.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

fn open_invite<'a>(
    account: &'a AccountItem,
    token: &str,
    now_ms: i64,
) -> Result<&'a PasskeyInviteItem, PasskeyError> {
    let hash = token_hash(token);
    account
        .passkey_invites
        .iter()
        .find(|invite| {
            same_hash(&invite.invite_hash, &hash)
                && invite.expires_at_ms > now_ms
                && invite.generation == account.generation
        })
        .ok_or_else(|| link_does_not_work("the invite was used, expired or was voided"))
}

/// A pending passkey's approval works only under the generation it was enrolled in: an
/// unlink voids it, as it voids invites.
fn pending_by_token<'a>(
    account: &'a AccountItem,
    token: &str,
) -> Result<&'a PasskeyItem, PasskeyError> {
    let generation = account.generation;
    let hash = token_hash(token);
    account
        .passkeys
        .iter()
        .find(|passkey| awaits(passkey, &hash, generation))
        .ok_or_else(no_longer_pending)
}

fn pending_by_token_mut<'a>(
    account: &'a mut AccountItem,
    token: &str,
) -> Result<&'a mut PasskeyItem, PasskeyError> {
    let generation = account.generation;
    let hash = token_hash(token);
    account
        .passkeys
        .iter_mut()
        .find(|passkey| awaits(passkey, &hash, generation))
        .ok_or_else(no_longer_pending)
}

/// Whether `passkey` waits for a guardian on a page one of whose tokens hashes to `hash`.
fn awaits(passkey: &PasskeyItem, hash: &str, generation: u64) -> bool {
    passkey.pending.as_ref().is_some_and(|waiting| {
        waiting.generation == generation && holds(&waiting.approval_token_hashes, hash)
    })
}

/// Whether `hashes` hold `hash`, each compared in constant time.
pub(crate) fn holds(hashes: &[String], hash: &str) -> bool {
    hashes
        .iter()
        .fold(false, |found, kept| found | same_hash(kept, hash))
}

/// Two token hashes compared in constant time, so that how long a refusal takes tells nothing
/// about how much of a guessed token was right.
pub(crate) fn same_hash(kept: &str, hash: &str) -> bool {
    use subtle::ConstantTimeEq;
    bool::from(kept.as_bytes().ct_eq(hash.as_bytes()))
}

/// Adds `hash` to a link's tokens, keeping the first (the one it was made with) and the
/// newest, [`MAX_TOKENS_PER_LINK`] in all.
pub(crate) fn add_token(hashes: &mut Vec<String>, hash: String) {
    if hashes.len() >= MAX_TOKENS_PER_LINK {
        hashes.remove(1.min(hashes.len() - 1));
    }
    hashes.push(hash);
}

/// Notes one more challenge given at `now_ms` on a page whose recent challenges are
/// `challenged_at_ms`, or refuses it past [`CHALLENGES_PER_LINK`] in [`CHALLENGE_WINDOW_MS`].
pub(crate) fn count_challenge(
    challenged_at_ms: &mut Vec<i64>,
    now_ms: i64,
) -> Result<(), PasskeyError> {
    challenged_at_ms.retain(|&at| at > now_ms - CHALLENGE_WINDOW_MS);
    if challenged_at_ms.len() >= CHALLENGES_PER_LINK {
        // The oldest kept challenge leaves the window first.
        let oldest = challenged_at_ms.iter().min().copied().unwrap_or(now_ms);
        let wait_ms = (oldest + CHALLENGE_WINDOW_MS - now_ms).max(1);
        return Err(PasskeyError::TooMany(
            "This page was started too many times just now. Wait a few minutes, then try again."
                .into(),
            ((wait_ms + 999) / 1000) as u64,
        ));
    }
    challenged_at_ms.push(now_ms);
    Ok(())
}

/// A link that does not work, whatever the reason (`why` is for the code's reader alone):
/// every such link shows one page with one status ([`PasskeyError::NotFound`]), so that a
/// stranger learns neither which households exist nor that a token once worked.
pub(crate) fn link_does_not_work(why: &'static str) -> PasskeyError {
    PasskeyError::NotFound(why.into())
}

/// An approval link whose request was settled, or whose time ran out.
pub(crate) fn no_longer_waiting() -> PasskeyError {
    link_does_not_work("the request was settled or its 30 minutes passed")
}

fn no_longer_pending() -> PasskeyError {
    link_does_not_work("the passkey was approved or revoked")
}

/// A link token is the household id, a dot, and 32 random bytes in base64url.
pub(crate) fn split_token(token: &str) -> Result<(&str, &str), PasskeyError> {
    token
        .split_once('.')
        .filter(|(household, secret)| {
            is_household_id(household)
                && secret.len() == 43
                && secret
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
        })
        .ok_or_else(|| link_does_not_work("the link's token is malformed"))
}

pub(crate) fn random_token() -> Result<String, PasskeyError> {
    Ok(URL_SAFE_NO_PAD.encode(os_bytes::<32>().map_err(|_| unavailable_randomness())?))
}

pub(crate) fn unavailable_randomness() -> PasskeyError {
    PasskeyError::Unavailable("the system's random source failed; try again".into())
}

/// The WebAuthn user handle of a member: stable, and no personal data (a hash of the
/// household and member ids).
fn user_handle(household_id: &str, member_id: &str) -> Vec<u8> {
    Sha256::digest(format!("{household_id}\n{member_id}").as_bytes())[..16].to_vec()
}

pub(crate) fn timestamp(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|at| {
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(base_url: &str) -> PasskeySite {
        PasskeySite {
            site: Site {
                rp_id: "localhost".into(),
                origin: "http://localhost:8790".into(),
            },
            base_url: base_url.into(),
        }
    }

    #[test]
    fn the_base_path_is_the_stage_prefix_or_nothing() {
        assert_eq!(site("http://localhost:8790").base_path(), "");
        assert_eq!(
            site("https://abc.execute-api.us-east-1.amazonaws.com/prod").base_path(),
            "/prod"
        );
        assert_eq!(site("https://hearth.example/prod/").base_path(), "/prod");
    }
}
