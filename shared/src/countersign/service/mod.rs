//! The purchase guard's behaviour, independent of MCP: search, propose, confirm, decide, read
//! what is waiting, report, verify and check receipts, for one household and one caller.
//!
//! One file per concern: [`output`] holds the results, `search` the catalogue search,
//! `purchase` the flow from proposal to placed order (with what one attestation authorises),
//! `reports` what the ledger tells (activity, verification, receipts). This file holds the
//! service itself and what they share: who is speaking, the acting-call limit, listings.
//!
//! Who is speaking comes only from the device's verified attestation ([`HostClaim`]). Every
//! operation that acts or reveals household data refuses without one.

mod approval;
mod output;
mod purchase;
mod reports;
mod search;

pub use approval::{ApprovalLinks, ApprovalView, LinkRefusal, PasskeyOutcome, may_decide};
pub use output::*;

use std::sync::Arc;

use super::household::{Household, HouseholdData, Member, Product, Variant};
use super::judge::Judge;
use super::ledger::{Ledger, LedgerError};
use super::notify::Notifier;
use super::refusal::Refusal;
use super::say;
use crate::accounts::{AccountError, Accounts};
use crate::auth::Caller;
use crate::auth::attestation::{Attestation, HostClaim, MAX_AGE_SECS, MAX_CLOCK_AHEAD_SECS};
use crate::chain::{sha256_hex, short_hash};
use crate::clock::unix_ms;
use crate::store::{ChainRead, CounterStore, GrantItem, GrantKind, GrantStore, Taken, Window};

/// The most units of one product in one order.
pub const MAX_QUANTITY: u32 = 99;
pub const MAX_SEARCH_RESULTS: usize = 10;
pub const QUERY_MAX_CHARS: usize = 200;
/// Request ids are `REQ-` and ten hex digits; order ids `SIM-` and ten.
pub const REQUEST_ID_MAX_CHARS: usize = 64;
/// Calls that write to the ledger (propose, confirm, decide, list_waiting) one member may
/// make per window. With at most [`MAX_MEMBERS`](super::household::MAX_MEMBERS) members and
/// fixed windows (a burst can straddle two), the ledger takes at most 16 × 20 × 2 = 640
/// entries in any ten minutes, well inside the 1,000 it keeps: a flood can never evict the
/// entries that say what a live attestation already did or which question was last read.
pub const ACTING_CALLS_PER_MEMBER: u32 = 20;
pub const ACTING_WINDOW_MS: i64 = 10 * 60 * 1000;
/// Proposals a household token may make without a device per [`ACTING_WINDOW_MS`]: nobody
/// is known to count them against, so the household is. With the members' own limit the
/// ledger's bound below still holds.
pub const UNATTESTED_CALLS_PER_HOUSEHOLD: u32 = 20;
/// Requests that may wait for a passkey approval in one household at once.
pub const MAX_WAITING_APPROVALS: usize = 20;
/// How long a host-key turn's binding to its ledger outlives the attestation's acceptance.
const TURN_BINDING_MARGIN_MS: i64 = 10 * 60 * 1000;
// The bound above, checked when the crate builds: raising a limit past it fails the build.
// Proposals without a device add at most 20 entries per window, and their passkey
// decisions at most two each (a child's, then a guardian's) for those and for the 20 that
// may already wait: (320 + 20 + 80) × 2 = 840.
const _: () = assert!(
    (super::household::MAX_MEMBERS * ACTING_CALLS_PER_MEMBER as usize
        + UNATTESTED_CALLS_PER_HOUSEHOLD as usize
        + 2 * (UNATTESTED_CALLS_PER_HOUSEHOLD as usize + MAX_WAITING_APPROVALS))
        * 2
        < super::ledger::CAPACITY
);

#[derive(Debug, thiserror::Error)]
pub enum CountersignError {
    /// Not allowed or not possible. `Display` is what a voice may read; the refusal itself
    /// also gives the technical reason and a code.
    #[error("{}", .0.say())]
    Refused(Refusal),
    /// `Display` is technical; [`LedgerError::say`] is what a voice may read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl From<Refusal> for CountersignError {
    fn from(refusal: Refusal) -> Self {
        CountersignError::Refused(refusal)
    }
}

impl CountersignError {
    /// The sentence a voice may read.
    pub fn say(&self) -> String {
        match self {
            CountersignError::Refused(refusal) => refusal.say(),
            CountersignError::Ledger(error) => error.say().to_owned(),
        }
    }

    /// The technical cause, for developers.
    pub fn reason(&self) -> String {
        match self {
            CountersignError::Refused(refusal) => refusal.reason(),
            CountersignError::Ledger(error) => error.to_string(),
        }
    }

    /// A fixed name for the request's log line.
    pub fn code(&self) -> &'static str {
        match self {
            CountersignError::Refused(refusal) => refusal.code(),
            CountersignError::Ledger(error) => error.code(),
        }
    }
}

// ---- the service ---------------------------------------------------------------------------

pub struct CountersignService {
    /// The configured household (the demo household by default), for credentials' tokens,
    /// and the catalogue every household shops from.
    data: Arc<HouseholdData>,
    /// Where a household token's policy is read; without it such tokens buy nothing.
    accounts: Option<Arc<Accounts>>,
    ledger: Ledger,
    judge: Arc<dyn Judge>,
    /// Per-member counters of acting calls ([`ACTING_CALLS_PER_MEMBER`]).
    counters: Arc<dyn CounterStore>,
    /// Where each host-key attestation's turn is bound to the first ledger it acts for.
    turns: Arc<dyn GrantStore>,
    /// Where requests that wait for a guardian are announced, if anywhere.
    notifier: Option<Arc<Notifier>>,
    /// Where requests proposed without a device get their approval page; without it such
    /// proposals refuse, as before passkeys.
    approval_links: Option<Arc<dyn ApprovalLinks>>,
}

/// The attested speaker of a request, and the household in force for it.
struct Speaker<'a> {
    attestation: &'a Attestation,
    member: &'a Member,
    home: &'a HouseholdData,
}

impl CountersignService {
    pub fn new(
        data: Arc<HouseholdData>,
        ledger: Ledger,
        judge: Arc<dyn Judge>,
        counters: Arc<dyn CounterStore>,
        turns: Arc<dyn GrantStore>,
    ) -> Self {
        Self {
            ledger,
            data,
            accounts: None,
            judge,
            counters,
            turns,
            notifier: None,
            approval_links: None,
        }
    }

    /// The same service letting a household token without a device propose: the request
    /// waits for a member's passkey on the page `links` opens.
    pub fn with_approval_links(mut self, links: Arc<dyn ApprovalLinks>) -> Self {
        self.approval_links = Some(links);
        self
    }

    /// The same service serving household tokens from their accounts' policies.
    pub fn with_accounts(mut self, accounts: Arc<Accounts>) -> Self {
        self.accounts = Some(accounts);
        self
    }

    /// The same service announcing every request that starts waiting for a guardian.
    pub fn with_notifier(mut self, notifier: Arc<Notifier>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// The household a call acts on: a household token's account, with its own policy, or
    /// the configured household for a credential's token.
    async fn home(&self, caller: &Caller) -> Result<Arc<HouseholdData>, CountersignError> {
        let Some(household) = &caller.household else {
            return Ok(self.data.clone());
        };
        let household_id = caller.household_for(None).map_err(Refusal::Household)?;
        // The attestation check read the account in this request; otherwise read it now.
        let account = match &household.account {
            Some(account) => account.clone(),
            None => {
                let accounts = self.accounts.as_ref().ok_or(LedgerError::Unavailable)?;
                let account = accounts
                    .get(household_id)
                    .await
                    .map_err(|error| match error {
                        AccountError::NotFound(_) => CountersignError::from(Refusal::AccountGone),
                        error => {
                            tracing::warn!(%error, "household account unavailable");
                            LedgerError::Unavailable.into()
                        }
                    })?;
                Arc::new(account)
            }
        };
        let policy = account.policy.as_ref().ok_or(Refusal::NoRules)?;
        let data = HouseholdData::for_account(policy, household_id, &self.data.catalogue).map_err(
            |error| {
                tracing::error!(%error, "a stored household policy does not load");
                Refusal::RulesUnreadable
            },
        )?;
        Ok(Arc::new(data))
    }

    /// Reads, beside the request's admission, the ledger a tool that reads it and nothing
    /// else will read: the household's the token names, or the configured one (as
    /// [`Self::home`] decides). A call that is refused reads nothing of it.
    pub async fn read_ahead(&self, caller: &Caller) -> Option<ChainRead> {
        let household_id = self.household_to_read_ahead(caller)?;
        Some(self.ledger.read_ahead(caller, household_id).await)
    }

    /// The same for a tool that appends to the ledger after reading it: the ledger and its
    /// log head, what the append starts from.
    pub async fn read_ahead_for_append(&self, caller: &Caller) -> Option<ChainRead> {
        let household_id = self.household_to_read_ahead(caller)?;
        Some(
            self.ledger
                .read_ahead_for_append(caller, household_id)
                .await,
        )
    }

    /// Whose ledger a call would read: the token's household, its standing still being
    /// confirmed, or the configured one.
    fn household_to_read_ahead<'a>(&'a self, caller: &'a Caller) -> Option<&'a str> {
        match &caller.household {
            Some(_) => caller.household_to_confirm(None),
            None => Some(self.data.id()),
        }
    }

    fn speaker<'a>(
        &self,
        caller: &'a Caller,
        home: &'a HouseholdData,
    ) -> Result<Speaker<'a>, CountersignError> {
        let attestation = match &caller.host {
            HostClaim::Verified(attestation) => attestation,
            HostClaim::Refused(refusal) => {
                return Err(Refusal::NoSpeaker(refusal.clone()).into());
            }
        };
        let member = home
            .member(&attestation.member_id)
            .ok_or(Refusal::NotAMember)?;
        Ok(Speaker {
            attestation,
            member,
            home,
        })
    }

    /// Who may read the household's purchase records: a signed speaker of the household, or
    /// a household token holding `countersign:read` (its household is `home`, since the
    /// token chose it). Judge and client tokens still need a speaker.
    fn reader(&self, caller: &Caller, home: &HouseholdData) -> Result<(), CountersignError> {
        let granted = caller
            .household
            .as_ref()
            .is_some_and(|household| household.reads_without_device && household.id == home.id());
        if granted {
            return Ok(());
        }
        self.speaker(caller, home).map(|_| ())
    }

    /// The household's rules, for a signed speaker of this household or a token that may
    /// read it without one.
    pub async fn rules(&self, caller: &Caller) -> Result<Household, CountersignError> {
        let home = self.home(caller).await?;
        self.reader(caller, &home)?;
        Ok(home.household.clone())
    }

    /// Admits one acting call by the speaker: the turn must be this ledger's (see
    /// [`Self::bind_turn`]), and the speaker may make at most [`ACTING_CALLS_PER_MEMBER`] per
    /// [`ACTING_WINDOW_MS`]. The counter is kept in the store, so every instance shares it.
    async fn count_acting(
        &self,
        caller: &Caller,
        speaker: &Speaker<'_>,
    ) -> Result<(), CountersignError> {
        // Two independent conditional writes, sent together: one round trip.
        let (bound, counted) = tokio::join!(
            self.bind_turn(caller, speaker),
            self.take_acting_counter(caller, speaker)
        );
        bound?;
        counted
    }

    /// Counts the call against the speaker's acting-call counter.
    async fn take_acting_counter(
        &self,
        caller: &Caller,
        speaker: &Speaker<'_>,
    ) -> Result<(), CountersignError> {
        let now_ms = unix_ms(self.ledger.now());
        let window = Window::containing(now_ms, ACTING_WINDOW_MS);
        let member = short_hash(format!(
            "{}\n{}\n{}",
            caller.scope,
            speaker.home.id(),
            speaker.member.id
        ));
        let counter = window.counter(&format!("acting/{member}"), ACTING_CALLS_PER_MEMBER);
        match self.counters.take(&[counter], window.end_ms, now_ms).await {
            Ok(Taken::Granted) => Ok(()),
            Ok(Taken::Refused { .. }) => {
                let minutes = (window.end_ms - now_ms).div_euclid(60_000) + 1;
                Err(Refusal::TooManyRequests {
                    name: say::member_name(speaker.home, &speaker.member.id),
                    minutes,
                }
                .into())
            }
            Err(error) => {
                tracing::warn!(%error, "acting-call counters unavailable");
                Err(LedgerError::Unavailable.into())
            }
        }
    }

    /// A host-key attestation names no household or credential: the deployment's one key
    /// signs for every ledger. So the first ledger an attested turn acts for is the only one
    /// it may act for, recorded deployment-wide under (member, turn) for as long as the
    /// attestation can be accepted. Replayed under another credential's token, or for another
    /// household of the same credential, it acts nowhere else. A household token's device
    /// keys are its household's alone, so its turns need no record.
    async fn bind_turn(
        &self,
        caller: &Caller,
        speaker: &Speaker<'_>,
    ) -> Result<(), CountersignError> {
        if caller.household.is_some() {
            return Ok(());
        }
        let attestation = speaker.attestation;
        let key = sha256_hex(format!(
            "{}\n{}",
            attestation.member_id, attestation.turn_id
        ));
        let ledger = sha256_hex(format!("{}\n{}", caller.scope, speaker.home.id()));
        let now_ms = unix_ms(self.ledger.now());
        // The attestation is accepted until `issued_at` + five minutes (plus a device clock
        // up to 30 s ahead); every call of the turn writes the claim again, so ten minutes
        // more covers a device that signs the turn's later calls afresh, and instance clocks
        // that differ.
        let accepted_until_ms = attestation
            .issued_at
            .saturating_add(MAX_AGE_SECS + MAX_CLOCK_AHEAD_SECS)
            .saturating_mul(1000);
        let claim = GrantItem {
            kind: GrantKind::TurnBinding,
            key,
            body: ledger,
            expires_at_ms: accepted_until_ms
                .max(now_ms)
                .saturating_add(TURN_BINDING_MARGIN_MS),
            revision: 1,
        };
        match self.turns.claim_grant(&claim, now_ms).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Refusal::TurnUsedElsewhere.into()),
            Err(error) => {
                tracing::warn!(%error, "turn bindings unavailable");
                Err(LedgerError::Unavailable.into())
            }
        }
    }

    fn listing(
        &self,
        product_id: &str,
        variant_id: &str,
    ) -> Result<(&Product, &Variant), CountersignError> {
        let product = self
            .data
            .catalogue
            .product(product_id)
            .ok_or(Refusal::UnknownProduct)?;
        let variant = product
            .variant(variant_id)
            .ok_or_else(|| Refusal::UnknownVariant {
                title: product.title.clone(),
                variants: product.variants.iter().map(|v| v.id.clone()).collect(),
            })?;
        Ok((product, variant))
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
