//! The household's own page, `/household`: members sign in with their passkeys and see what
//! the assistant did and why; guardians see how the household is run.
//!
//! - [`sessions`]: who is signed in, for how long, and what ends it.
//! - [`HouseholdPage`]: the session checked against the household's account on every
//!   request, and the views, each read through the services that own the data (the decision
//!   memory, the purchase ledger, the passkeys), as a reader of this household alone.
//! - [`evidence`]: each log's records and proofs, which the page's script checks on the phone.
//! - [`pages`] renders; [`http`] serves, behind the same gate as every page.
//! - [`signup`]: a person with no household makes one and becomes its first guardian
//!   (`HEARTH_SIGNUP`); [`signup_http`] serves its page and the form the consent page shows.
//!
//! A session can read. It never approves or manages on its own: each such action is a fresh
//! passkey signature over a statement shown first.

pub mod actions;
pub mod evidence;
pub mod http;
pub mod pages;
pub mod sessions;
pub mod signup;
pub mod signup_http;

use std::sync::Arc;

use serde_json::Value;

use crate::accounts::{AccountError, Standing};
use crate::auth::Caller;
use crate::clients::{ClientKind, Clients};
use crate::countersign::CountersignService;
use crate::countersign::household::Household;
use crate::countersign::ledger::{Event, Request, Status};
use crate::countersign::service::{ActivityOutput, CountersignError, may_decide};
use crate::linking::Linking;
use crate::passkeys::sign_in::{Purpose, SignInRefusal, SignedIn};
use crate::passkeys::{Member, PasskeyError, Passkeys, is_live};
use crate::store::{AccountItem, StoreError};
use crate::why::WhyService;
use sessions::{Found, Session, Sessions};

/// How every warning about the household's records begins, whether Hearth's own check or the
/// phone's found the fault; never shown where the checks pass.
pub const UNTRUSTED: &str = "This history cannot be trusted: ";

/// How many decisions the Today view shows.
pub const NEWEST_DECISIONS: usize = 5;
/// The longest search a Why view takes, in characters.
pub const SEARCH_MAX: usize = 200;

/// A signed-in member, as checked on this request.
#[derive(Debug, Clone)]
pub struct Visitor {
    pub found: Found,
    pub account: AccountItem,
    pub member: Member,
}

impl Visitor {
    pub fn session(&self) -> &Session {
        &self.found.session
    }

    /// A caller that reads this household's records and nothing else.
    fn caller(&self) -> Caller {
        let mut caller = Caller::of_household(&self.account.household_id, Standing::Current)
            .reading_without_device(true);
        if let Some(household) = &mut caller.household {
            household.account = Some(Arc::new(self.account.clone()));
        }
        caller
    }
}

/// Why a page could not be shown: what the person is told.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Unavailable(String),
    /// The household's records fail their check: shown, never hidden.
    #[error("{0}")]
    Broken(String),
}

impl From<StoreError> for PageError {
    fn from(_: StoreError) -> Self {
        PageError::Unavailable(
            "Hearth cannot reach its storage right now. Try again in a minute.".into(),
        )
    }
}

impl From<PasskeyError> for PageError {
    fn from(error: PasskeyError) -> Self {
        match error {
            PasskeyError::Unavailable(reason) => PageError::Unavailable(reason),
            other => PageError::Invalid(other.to_string()),
        }
    }
}

impl From<CountersignError> for PageError {
    fn from(error: CountersignError) -> Self {
        match &error {
            CountersignError::Ledger(crate::countersign::ledger::LedgerError::Tampered {
                ..
            }) => PageError::Broken(format!("{UNTRUSTED}{}", error.say())),
            CountersignError::Ledger(_) => PageError::Unavailable(error.say()),
            CountersignError::Refused(_) => PageError::Invalid(error.say()),
        }
    }
}

/// What Today shows.
pub struct Today {
    pub activity: ActivityOutput,
    pub decisions: Vec<Decision>,
}

/// One decision of the memory, as the page shows it: the caller's words, unverified.
#[derive(Debug, Clone)]
pub struct Decision {
    pub recorded_at: String,
    pub action: String,
    pub reason: String,
    pub approver: String,
    pub trace_id: String,
}

/// One linked assistant, as the Assistants view lists it.
#[derive(Debug, Clone)]
pub struct Assistant {
    pub client_id: String,
    /// As the client named itself (unverified unless the operator added it).
    pub name: String,
    /// How it came to be known.
    pub registered: &'static str,
    pub linked_at_ms: i64,
    pub last_used_at_ms: i64,
}

/// One order of the ledger, with what proves it.
pub struct Order {
    pub request: Request,
    /// The signed statements that decided it, verbatim, with who signed each.
    pub approvals: Vec<(String, String)>,
}

pub struct HouseholdPage {
    passkeys: Arc<Passkeys>,
    sessions: Sessions,
    countersign: Arc<CountersignService>,
    why: Arc<WhyService>,
    /// Which assistants are linked, and unlinking one.
    linking: Linking,
    /// The linked assistants' names.
    clients: Clients,
}

impl HouseholdPage {
    pub fn new(
        passkeys: Arc<Passkeys>,
        sessions: Sessions,
        countersign: Arc<CountersignService>,
        why: Arc<WhyService>,
        linking: Linking,
        clients: Clients,
    ) -> Self {
        Self {
            passkeys,
            sessions,
            countersign,
            why,
            linking,
            clients,
        }
    }

    /// The assistants linked to the household, newest first, each with its name and how it
    /// registered.
    pub async fn assistants(&self, visitor: &Visitor) -> Result<Vec<Assistant>, PageError> {
        let linked = self
            .linking
            .linked(&visitor.account.household_id)
            .await
            .map_err(|_| {
                PageError::Unavailable(
                    "Hearth cannot read the linked assistants right now. Try again in a minute."
                        .into(),
                )
            })?;
        let mut assistants: Vec<Assistant> = Vec::new();
        for link in linked {
            if let Some(known) = assistants
                .iter_mut()
                .find(|known| known.client_id == link.client_id)
            {
                known.last_used_at_ms = known.last_used_at_ms.max(link.last_used_at_ms);
                continue;
            }
            let client = self.clients.find(&link.client_id).await.ok().flatten();
            assistants.push(Assistant {
                name: client.as_ref().map_or_else(
                    || "An assistant no longer registered".to_owned(),
                    |c| c.name.clone(),
                ),
                registered: client.map_or("no longer registered", |client| match client.kind {
                    ClientKind::Configured => "configured by whoever runs Hearth",
                    ClientKind::Operator => "added by whoever runs Hearth",
                    ClientKind::Registration => "registered itself",
                    ClientKind::Metadata => "named by its own metadata document",
                    ClientKind::Imported => "imported",
                }),
                client_id: link.client_id,
                linked_at_ms: link.linked_at_ms,
                last_used_at_ms: link.last_used_at_ms,
            });
        }
        Ok(assistants)
    }

    pub fn passkeys(&self) -> &Arc<Passkeys> {
        &self.passkeys
    }

    pub fn countersign(&self) -> &Arc<CountersignService> {
        &self.countersign
    }

    /// Refuses, in words for the page, a decision `visitor` may not make on `request_id`:
    /// it does not wait for a phone, or someone already approved and a guardian must decide.
    pub async fn may_decide(
        &self,
        visitor: &Visitor,
        request_id: &str,
    ) -> Result<(), PasskeyError> {
        let waiting = self.waiting(visitor).await.map_err(|error| match error {
            PageError::Unavailable(reason) => PasskeyError::Unavailable(reason),
            other => PasskeyError::Refused(other.to_string()),
        })?;
        let request = waiting
            .iter()
            .find(|request| request.request_id == request_id && waits_for_a_passkey(request))
            .ok_or_else(|| {
                PasskeyError::Gone(
                    "This order no longer waits for a decision here. Reload the page to see where it stands."
                        .into(),
                )
            })?;
        if may_decide(request, &visitor.member.id, visitor.member.guardian) {
            Ok(())
        } else {
            Err(PasskeyError::Refused(
                "A guardian decides this order now, on their own page.".into(),
            ))
        }
    }

    /// Signs in with a passkey's assertion: a new session, and its cookie's value.
    pub async fn sign_in(&self, credential: &Value) -> Result<(String, Session), SignInRefusal> {
        let signed_in: SignedIn = self
            .passkeys
            .sign_in(credential, Purpose::HouseholdPage)
            .await?;
        self.sessions.start(&signed_in).await.map_err(|_| {
            SignInRefusal::Failed(PasskeyError::Unavailable(
                "Hearth cannot reach its storage right now. Try again in a minute.".into(),
            ))
        })
    }

    /// The member signed in with cookie `id`, if the session still stands: live, its passkey
    /// live and approved, the household not unlinked since, the member's role unchanged.
    /// A session that no longer stands is ended here.
    pub async fn visitor(&self, id: &str) -> Result<Option<Visitor>, PageError> {
        let Some(found) = self.sessions.find(id).await? else {
            return Ok(None);
        };
        let session = &found.session;
        let account = match self.passkeys.accounts().get(&session.household_id).await {
            Ok(account) => account,
            Err(AccountError::NotFound(_)) => {
                self.sessions.end(&found).await?;
                return Ok(None);
            }
            Err(error) => return Err(PasskeyError::from(error).into()),
        };
        let passkey_stands = account.passkeys.iter().any(|passkey| {
            passkey.credential_id == session.credential_id
                && passkey.member_id == session.member_id
                && is_live(passkey)
                && passkey.pending.is_none()
        });
        let member = self
            .passkeys
            .roster(&account)
            .ok()
            .and_then(|members| {
                members
                    .into_iter()
                    .find(|member| member.id == session.member_id)
            })
            .filter(|member| member.role == session.role);
        let member = match member {
            Some(member) if passkey_stands && account.generation == session.generation => member,
            _ => {
                self.sessions.end(&found).await?;
                return Ok(None);
            }
        };
        let found = self.sessions.touch(found).await?;
        Ok(Some(Visitor {
            found,
            account,
            member,
        }))
    }

    pub async fn sign_out(&self, visitor: &Visitor) -> Result<(), PageError> {
        Ok(self.sessions.end(&visitor.found).await?)
    }

    /// Orders waiting, the newest decisions, and this week's spending against the budget.
    pub async fn today(&self, visitor: &Visitor) -> Result<Today, PageError> {
        let caller = visitor.caller();
        let (activity, decisions) = tokio::join!(
            self.countersign.activity(&caller),
            self.decisions(visitor, None)
        );
        let mut decisions = decisions?;
        decisions.truncate(NEWEST_DECISIONS);
        Ok(Today {
            activity: activity?,
            decisions,
        })
    }

    /// The retained decisions, newest first; with `words`, those whose action, reason or
    /// approver holds every one of them (case aside).
    pub async fn decisions(
        &self,
        visitor: &Visitor,
        words: Option<&str>,
    ) -> Result<Vec<Decision>, PageError> {
        if let Some(words) = words
            && words.chars().count() > SEARCH_MAX
        {
            return Err(PageError::Invalid(format!(
                "A search is at most {SEARCH_MAX} characters. Use fewer words."
            )));
        }
        let caller = visitor.caller();
        let records = self
            .why
            .changes_since(&caller, &visitor.account.household_id, "1970-01-01T00:00:00Z")
            .await
            .map_err(|error| match error {
                crate::why::WhyError::Integrity(problem) => PageError::Broken(format!(
                    "{UNTRUSTED}the decision memory fails Hearth's own check ({problem}). Ask whoever runs Hearth to look at it; nothing here can be relied on until then."
                )),
                crate::why::WhyError::NotFound(_) => PageError::Invalid(String::new()),
                _ => PageError::Unavailable(
                    "Hearth cannot read the decision memory right now. Try again in a minute."
                        .into(),
                ),
            });
        let records = match records {
            Ok(records) => records,
            // A household with no decisions yet has no chain.
            Err(PageError::Invalid(_)) => Vec::new(),
            Err(error) => return Err(error),
        };
        let wanted: Vec<String> = words
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        let text = |record: &Value, field: &str| {
            record
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Ok(records
            .iter()
            .rev()
            .map(|record| Decision {
                recorded_at: text(record, "recorded_at"),
                action: text(record, "action"),
                reason: text(record, "reason"),
                approver: text(record, "approver"),
                trace_id: text(record, crate::why::record::HASH_FIELD),
            })
            .filter(|decision| {
                let haystack = format!(
                    "{}\n{}\n{}",
                    decision.action, decision.reason, decision.approver
                )
                .to_lowercase();
                wanted.iter().all(|word| haystack.contains(word.as_str()))
            })
            .collect())
    }

    /// Every retained order, newest first, with its receipt and the statements that decided
    /// it.
    pub async fn orders(&self, visitor: &Visitor) -> Result<Vec<Order>, PageError> {
        let (view, requests) = self.countersign.ledger_requests(&visitor.caller()).await?;
        Ok(requests
            .into_iter()
            .rev()
            .map(|request| {
                let approvals = view
                    .entries
                    .iter()
                    .filter(|entry| entry.request_id == request.request_id)
                    .filter_map(|entry| match &entry.event {
                        Event::PasskeyDecision(decision) => {
                            Some((entry.member_id.clone(), decision.approval.statement.clone()))
                        }
                        _ => None,
                    })
                    .collect();
                Order { request, approvals }
            })
            .collect())
    }

    /// The requests that still wait, oldest first.
    pub async fn waiting(&self, visitor: &Visitor) -> Result<Vec<Request>, PageError> {
        let (_, requests) = self.countersign.ledger_requests(&visitor.caller()).await?;
        Ok(requests
            .into_iter()
            .filter(|request| request.status.is_waiting())
            .collect())
    }

    /// The household's rules, read-only.
    pub async fn rules(&self, visitor: &Visitor) -> Result<Household, PageError> {
        Ok(self.countersign.rules(&visitor.caller()).await?)
    }

    /// The household's members, for the names on the page.
    pub fn members(&self, visitor: &Visitor) -> Vec<Member> {
        self.passkeys.roster(&visitor.account).unwrap_or_default()
    }
}

/// Whether `request` waits for a passkey on a page (proposed by a host that signs nothing).
pub fn waits_for_a_passkey(request: &Request) -> bool {
    request.status == Status::WaitingForApproval
}
