//! Sign-up: a person with no household makes one, without the operator.
//!
//! With `HEARTH_SIGNUP=open` anyone may; with `invite`, only someone holding an operator's
//! sign-up link, which makes one household ([`SignupLinks`], `hearth admin signup-link`).
//! The person names the household and themselves; Hearth creates the household with
//! [`starting_policy`] (the person its only member and guardian, no merchant and no budget, so
//! nothing can be bought until a guardian sets the rules) and an enrolment invite for that
//! first guardian, whose page (`/passkeys/enrol/{token}`) makes the passkey as any invite's
//! does. The person then links an assistant with that passkey on the consent page.
//!
//! A household made this way is deleted after [`UNLINKED_SIGNUP_MS`] unless a token is issued
//! to it first (see `AccountItem::signup_expires_at_ms`). Sign-ups are counted per client
//! address ([`SIGNUPS_PER_ADDRESS`] a day) and for the whole deployment
//! (`HEARTH_SIGNUP_PER_DAY`), in the shared counters, refusing while those cannot be read:
//! an outage must not open the door wider. Names are never logged.

use std::net::IpAddr;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::accounts::{AccountError, Accounts, check_name, new_household_id};
use crate::clock::{Clock, unix_ms};
use crate::config::{SignupMode, SignupSettings};
use crate::countersign::household::{Catalogue, account_policy};
use crate::passkeys::{Passkeys, random_token, timestamp};
use crate::ratelimit::{Admission, AttemptLimiter};
use crate::store::{CounterStore, GrantItem, GrantKind, GrantStore, StoreError, token_hash};

/// Sign-ups one client address (an IPv6 client by its /64) may make per UTC day.
pub const SIGNUPS_PER_ADDRESS: u32 = 3;
/// The window both sign-up limits count in: a UTC day.
pub const SIGNUP_WINDOW_MS: i64 = 24 * 60 * 60_000;
/// How long a household made by sign-up stands without being linked.
pub const UNLINKED_SIGNUP_MS: i64 = 24 * 60 * 60_000;
/// How long an operator's sign-up link works.
pub const SIGNUP_LINK_MS: i64 = 7 * 24 * 60 * 60_000;
/// The member id a name yields nothing usable for (a name in a script other than Latin).
const FALLBACK_MEMBER_ID: &str = "guardian";
/// The longest member id made from a name (the policy allows 40).
const MEMBER_ID_MAX: usize = 32;

/// What a person asks for.
#[derive(Debug, Clone, Default)]
pub struct SignupRequest {
    pub household_name: String,
    pub member_name: String,
    /// The browser's IANA time zone, for the budget weeks; UTC when absent or unknown.
    pub time_zone: Option<String>,
    /// The token of an operator's sign-up link.
    pub invite: Option<String>,
}

/// A household made by sign-up: what the page goes on with.
#[derive(Debug, Clone)]
pub struct SignedUp {
    /// The first guardian's enrolment page (a passkey invite's link, 15 minutes).
    pub enrolment_url: String,
    /// When the household is deleted unless an assistant is linked first.
    pub expires_at: String,
}

/// An operator's sign-up link, shown once.
#[derive(Debug, Clone, Serialize)]
pub struct SignupLink {
    pub url: String,
    pub expires_at: String,
}

/// Why a sign-up was refused. Each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum SignupRefusal {
    #[error(
        "This Hearth does not take new households. Ask whoever runs it for a sign-up link, or for a link code if your household is already here."
    )]
    Closed,
    #[error(
        "This Hearth takes new households only through a sign-up link from whoever runs it. Open the link they sent you."
    )]
    NeedsInvite,
    #[error(
        "This sign-up link does not work: it made its household already, or is older than 7 days. Ask whoever runs this Hearth for a new one."
    )]
    InviteUnusable,
    #[error("{0}")]
    Invalid(String),
    #[error(
        "Too many households were made from your network today. Try again tomorrow, or ask whoever runs this Hearth."
    )]
    TooManyFromHere { retry_after_secs: u64 },
    #[error(
        "This Hearth has made all the new households it takes today. Try again tomorrow, or ask whoever runs it."
    )]
    DayFull { retry_after_secs: u64 },
    #[error("Hearth cannot make a household right now. Try again in a minute.")]
    Unavailable,
}

impl From<StoreError> for SignupRefusal {
    fn from(error: StoreError) -> Self {
        tracing::warn!(target: "hearth::signup", %error, "sign-up could not reach the store");
        SignupRefusal::Unavailable
    }
}

/// The operator's sign-up links: made by `hearth admin signup-link`, each makes one
/// household. Only each token's hash is kept; a used one names the household it made, and
/// makes nothing else.
pub struct SignupLinks {
    grants: Arc<dyn GrantStore>,
    clock: Arc<dyn Clock>,
    /// The pages' base URL (the origin, and the stage prefix under API Gateway).
    base_url: String,
}

impl SignupLinks {
    pub fn new(grants: Arc<dyn GrantStore>, clock: Arc<dyn Clock>, base_url: String) -> Self {
        Self {
            grants,
            clock,
            base_url,
        }
    }

    fn now_ms(&self) -> i64 {
        unix_ms(self.clock.now())
    }

    /// A new link. The token rides in the URL's fragment, which browsers never send: no
    /// server or proxy log sees it; the sign-up page's script posts it.
    pub async fn create(&self) -> Result<SignupLink, SignupRefusal> {
        let token = random_token().map_err(|_| SignupRefusal::Unavailable)?;
        let now_ms = self.now_ms();
        let expires_at_ms = now_ms + SIGNUP_LINK_MS;
        let item = GrantItem {
            kind: GrantKind::SignupLink,
            key: token_hash(&token),
            body: "{}".into(),
            expires_at_ms,
            revision: 1,
        };
        self.grants.put_grant(&item, None, now_ms).await?;
        Ok(SignupLink {
            url: format!("{}/household/signup#invite={token}", self.base_url),
            expires_at: timestamp(expires_at_ms),
        })
    }

    /// The live link `token` names.
    async fn find(&self, token: &str) -> Result<GrantItem, SignupRefusal> {
        self.grants
            .grant(GrantKind::SignupLink, &token_hash(token), self.now_ms())
            .await?
            .ok_or(SignupRefusal::InviteUnusable)
    }

    /// Marks `link` used for `household_id`: false when another sign-up used it first. The
    /// link stays until it expires, naming the household, so that the same person can make
    /// the household's first passkey again if the first attempt failed (see
    /// [`Signup::sign_up`]).
    async fn spend(&self, link: &GrantItem, household_id: &str) -> Result<bool, SignupRefusal> {
        let used = GrantItem {
            body: json!({"household_id": household_id}).to_string(),
            revision: link.revision + 1,
            ..link.clone()
        };
        match self
            .grants
            .put_grant(&used, Some(link.revision), self.now_ms())
            .await
        {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Makes a link unused again after its sign-up failed.
    async fn restore(&self, link: &GrantItem) {
        // Over what `spend` wrote (the next revision), the link as it was.
        let restored = GrantItem {
            revision: link.revision + 2,
            ..link.clone()
        };
        if self
            .grants
            .put_grant(&restored, Some(link.revision + 1), self.now_ms())
            .await
            .is_err()
        {
            tracing::warn!(target: "hearth::signup", "a sign-up link spent by a failed sign-up could not be put back");
        }
    }
}

/// The household a used link made, if it was used.
fn made_by(link: &GrantItem) -> Option<String> {
    serde_json::from_str::<Value>(&link.body)
        .ok()?
        .get("household_id")?
        .as_str()
        .map(str::to_owned)
}

/// Sign-up, as the sign-up page and the consent page ask for it.
pub struct Signup {
    mode: SignupMode,
    passkeys: Arc<Passkeys>,
    links: SignupLinks,
    per_address: AttemptLimiter,
    per_day: AttemptLimiter,
    catalogue: Catalogue,
}

impl Signup {
    pub fn new(
        settings: SignupSettings,
        passkeys: Arc<Passkeys>,
        grants: Arc<dyn GrantStore>,
        counters: Arc<dyn CounterStore>,
        catalogue: Catalogue,
    ) -> Self {
        let clock = passkeys.clock().clone();
        let base_url = passkeys.site().base_url.clone();
        Self {
            mode: settings.mode,
            links: SignupLinks::new(grants, clock.clone(), base_url),
            per_address: AttemptLimiter::new(
                counters.clone(),
                clock.clone(),
                "signup",
                SIGNUPS_PER_ADDRESS,
                SIGNUP_WINDOW_MS,
            ),
            per_day: AttemptLimiter::new(
                counters,
                clock,
                "signup",
                settings.per_day,
                SIGNUP_WINDOW_MS,
            ),
            passkeys,
            catalogue,
        }
    }

    pub fn mode(&self) -> SignupMode {
        self.mode
    }

    /// The passkeys the first guardian enrols with (whose site the pages' origin is).
    pub fn passkeys(&self) -> &Passkeys {
        &self.passkeys
    }

    fn accounts(&self) -> &Arc<Accounts> {
        self.passkeys.accounts()
    }

    fn now_ms(&self) -> i64 {
        unix_ms(self.passkeys.clock().now())
    }

    /// Makes the household `request` asks for, from client address `ip`, with its first
    /// guardian's enrolment invite. Nothing is counted for a request that is refused before
    /// the limits (closed, a bad name, an unusable link), and nothing is kept for one refused
    /// by them.
    pub async fn sign_up(
        &self,
        ip: Option<IpAddr>,
        request: &SignupRequest,
    ) -> Result<SignedUp, SignupRefusal> {
        let invite = request.invite.as_deref().filter(|token| !token.is_empty());
        let mut link = match (self.mode, invite) {
            (SignupMode::Off, _) => return Err(SignupRefusal::Closed),
            (SignupMode::Invite, None) => return Err(SignupRefusal::NeedsInvite),
            (SignupMode::Invite, Some(token)) => Some(self.links.find(token).await?),
            // Where anyone may sign up, a link that no longer works is no reason to refuse.
            (SignupMode::Open, Some(token)) => match self.links.find(token).await {
                Err(SignupRefusal::InviteUnusable) => None,
                found => Some(found?),
            },
            (SignupMode::Open, None) => None,
        };
        // The link was used: the household it made, while nobody has a passkey in it yet,
        // gets its first guardian's invite again (the first attempt at the passkey failed or
        // was abandoned). Nothing new is made, so nothing is counted.
        if let Some(household_id) = link.as_ref().and_then(made_by) {
            match self.again(&household_id).await {
                // Spent for good: where anyone may sign up, it is as if there were none.
                Err(SignupRefusal::InviteUnusable) if self.mode == SignupMode::Open => link = None,
                answered => return answered,
            }
        }
        let household_id = new_household_id();
        let household_name = request.household_name.trim();
        let member_name = request.member_name.trim();
        check_name(household_name).map_err(|_| {
            SignupRefusal::Invalid(format!(
                "Give your household a name of 1 to {} characters.",
                crate::accounts::NAME_MAX_CHARS
            ))
        })?;
        check_name(member_name).map_err(|_| {
            SignupRefusal::Invalid(format!(
                "Give your own name, 1 to {} characters, as the household will see it.",
                crate::accounts::NAME_MAX_CHARS
            ))
        })?;
        let member_id = member_id_of(member_name);
        let policy = self.policy(
            &household_id,
            household_name,
            &member_id,
            member_name,
            request,
        )?;
        admitted(self.per_address.attempt(ip).await, |retry_after_secs| {
            SignupRefusal::TooManyFromHere { retry_after_secs }
        })?;
        admitted(self.per_day.attempt_by_anyone().await, |retry_after_secs| {
            SignupRefusal::DayFull { retry_after_secs }
        })?;
        if let Some(link) = &link
            && !self.links.spend(link, &household_id).await?
        {
            return Err(SignupRefusal::InviteUnusable);
        }
        let made = self
            .make(&household_id, household_name, policy, &member_id)
            .await;
        if made.is_err()
            && let Some(link) = &link
        {
            self.links.restore(link).await;
        }
        if made.is_ok() {
            tracing::info!(target: "hearth::signup", invited = link.is_some(), "a household was made by sign-up");
        }
        made
    }

    /// The first guardian's invite again, for a household a link made that nobody has a
    /// passkey in yet; refused once one does, or once it expired.
    async fn again(&self, household_id: &str) -> Result<SignedUp, SignupRefusal> {
        let account = match self.accounts().get(household_id).await {
            Ok(account) => account,
            Err(AccountError::NotFound(_)) => return Err(SignupRefusal::InviteUnusable),
            Err(_) => return Err(SignupRefusal::Unavailable),
        };
        let guardian = account
            .policy
            .as_ref()
            .and_then(|policy| policy.get("guardians")?.get(0)?.as_str().map(str::to_owned));
        let (Some(expires_at_ms), Some(guardian), true) = (
            account.signup_expires_at_ms,
            guardian,
            account.passkeys.is_empty(),
        ) else {
            return Err(SignupRefusal::InviteUnusable);
        };
        let invite = self
            .passkeys
            .invite(household_id, &guardian)
            .await
            .map_err(|_| SignupRefusal::Unavailable)?;
        tracing::info!(target: "hearth::signup", "a sign-up link asked again for its household's first passkey");
        Ok(SignedUp {
            enrolment_url: invite.url,
            expires_at: timestamp(expires_at_ms),
        })
    }

    /// The starting policy, checked as an operator's would be; the browser's time zone when
    /// Hearth knows it, else UTC (the person never typed it).
    fn policy(
        &self,
        household_id: &str,
        household_name: &str,
        member_id: &str,
        member_name: &str,
        request: &SignupRequest,
    ) -> Result<Value, SignupRefusal> {
        let checked = |time_zone: &str| {
            let policy = starting_policy(member_id, member_name, time_zone);
            account_policy(&policy, household_id, household_name, &self.catalogue)
                .ok()
                .and_then(|household| serde_json::to_value(household).ok())
        };
        request
            .time_zone
            .as_deref()
            .and_then(checked)
            .or_else(|| checked("UTC"))
            .ok_or_else(|| {
                SignupRefusal::Invalid("Those names cannot make a household's rules.".into())
            })
    }

    /// The household and its first guardian's invite; the household is deleted again if the
    /// invite cannot be made (a household nobody can enrol in is no use to anyone).
    async fn make(
        &self,
        household_id: &str,
        household_name: &str,
        policy: Value,
        member_id: &str,
    ) -> Result<SignedUp, SignupRefusal> {
        let expires_at_ms = self.now_ms() + UNLINKED_SIGNUP_MS;
        self.accounts()
            .create_unlinked(household_id, household_name, policy, expires_at_ms)
            .await
            .map_err(|error| match error {
                AccountError::Invalid(reason) => SignupRefusal::Invalid(reason),
                _ => SignupRefusal::Unavailable,
            })?;
        match self.passkeys.invite(household_id, member_id).await {
            Ok(invite) => Ok(SignedUp {
                enrolment_url: invite.url,
                expires_at: timestamp(expires_at_ms),
            }),
            Err(_) => {
                // The error's words may name the member, whose id comes from a typed name.
                tracing::warn!(target: "hearth::signup", "a new household's first invite could not be made");
                let _ = self.accounts().delete(household_id).await;
                Err(SignupRefusal::Unavailable)
            }
        }
    }
}

/// `admission` as a sign-up's answer: `limited` says which limit, and an unreadable counter
/// refuses.
fn admitted(
    admission: Admission,
    limited: impl FnOnce(u64) -> SignupRefusal,
) -> Result<(), SignupRefusal> {
    match admission {
        Admission::Admitted => Ok(()),
        Admission::Limited { retry_after_secs } => Err(limited(retry_after_secs)),
        Admission::Unavailable => Err(SignupRefusal::Unavailable),
    }
}

/// A new household's rules: the person its only member, a parent and its guardian; no
/// merchant known, a per-order limit and a weekly budget of nothing. Every order is blocked
/// until a guardian sets real rules.
pub fn starting_policy(member_id: &str, member_name: &str, time_zone: &str) -> Value {
    json!({
        "currency": "USD",
        "time_zone": time_zone,
        "week_starts": "monday",
        "members": [{"id": member_id, "name": member_name, "role": "parent"}],
        "guardians": [member_id],
        "roles": {"parent": {"per_order_limit_cents": 0, "needs_guardian": false}},
        "weekly_budget_cents": 0,
        "gift_cards_need_guardian_for": [],
        "known_merchants": [],
    })
}

/// A member id from a person's name: its ASCII letters and digits, lower-cased, words joined
/// by `-`, at most [`MEMBER_ID_MAX`] characters; `guardian` when nothing is left.
pub fn member_id_of(name: &str) -> String {
    let mut id = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if id.len() == MEMBER_ID_MAX {
                break;
            }
            id.push(c.to_ascii_lowercase());
        } else if !id.is_empty() && !id.ends_with('-') && id.len() < MEMBER_ID_MAX {
            id.push('-');
        }
    }
    let id = id.trim_end_matches('-');
    if id.is_empty() {
        FALLBACK_MEMBER_ID.to_owned()
    } else {
        id.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_id_is_the_names_plain_letters() {
        assert_eq!(member_id_of("Dana"), "dana");
        assert_eq!(member_id_of("  Mary-Jo  O'Neil "), "mary-jo-o-neil");
        assert_eq!(member_id_of("Zoë"), "zo");
        assert_eq!(member_id_of("李小龙"), "guardian");
        assert_eq!(member_id_of("!!!"), "guardian");
        let long = member_id_of(&"a".repeat(100));
        assert_eq!(long.len(), MEMBER_ID_MAX);
        assert_eq!(
            member_id_of(&format!("{} b", "a".repeat(31))),
            format!("{}", "a".repeat(31))
        );
    }

    #[test]
    fn the_starting_rules_block_every_order() {
        let data = crate::countersign::household::HouseholdData::built_in().unwrap();
        let policy = starting_policy("dana", "Dana", "Europe/Paris");
        let household = account_policy(
            &policy,
            "hh-00000000000000000000000000000000",
            "Home",
            &data.catalogue,
        )
        .unwrap();
        assert!(household.known_merchants.is_empty());
        assert_eq!(household.weekly_budget_cents, 0);
        assert_eq!(household.guardians, ["dana"]);
        assert!(
            household
                .roles
                .values()
                .all(|rules| rules.per_order_limit_cents == 0)
        );
    }
}
