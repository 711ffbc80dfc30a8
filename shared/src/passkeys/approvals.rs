//! The approval pages of requests proposed without a device, kept in the household's
//! account: one link per waiting request, open until the request is settled or
//! [`APPROVAL_WAIT`](crate::countersign::ledger::APPROVAL_WAIT) passes, with the single-use
//! nonce its page was last given. The purchase guard opens them through
//! [`ApprovalLinks`]; deciding is `http`'s, which checks the passkey and hands the purchase
//! guard the signed decision.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::push::PushMessage;
use super::{
    PasskeyError, Passkeys, SigningRequest, add_token, ceremony, holds, is_live, no_longer_waiting,
    random_token, settle_use, split_token, statement, unavailable_randomness,
};
use crate::countersign::service::{ApprovalLinks, LinkRefusal};
use crate::random::os_bytes;
use crate::store::{AccountItem, ApprovalLinkItem, NonceItem, token_hash};

/// Links one household keeps at once: the requests that may wait, and no more.
const MAX_LINKS: usize = crate::countersign::service::MAX_WAITING_APPROVALS;

/// Which approval link: by a token of its page (the link a phone was sent), or by its
/// request (the household's page, whose session says which household).
#[derive(Debug, Clone, Copy)]
pub enum LinkTo<'a> {
    Token(&'a str),
    Request {
        household_id: &'a str,
        request_id: &'a str,
    },
}

impl<'a> LinkTo<'a> {
    pub fn household_id(self) -> Result<&'a str, PasskeyError> {
        match self {
            LinkTo::Token(token) => split_token(token).map(|(household_id, _)| household_id),
            LinkTo::Request { household_id, .. } => Ok(household_id),
        }
    }

    /// Whether `link` is this one, and still open at `now_ms` under `generation`: until its
    /// time (inclusive: the request waits exactly that long) and only under the generation
    /// it was opened in.
    fn finds(self, link: &ApprovalLinkItem, generation: u64, now_ms: i64) -> bool {
        let named = match self {
            LinkTo::Token(token) => holds(&link.token_hashes, &token_hash(token)),
            LinkTo::Request { request_id, .. } => link.request_id == request_id,
        };
        named && link.expires_at_ms >= now_ms && link.generation == generation
    }
}

impl Passkeys {
    pub fn approval_url(&self, token: &str) -> String {
        format!("{}/passkeys/approve/{token}", self.site.base_url)
    }

    /// The account and the open link `to`.
    pub async fn approval_link(
        &self,
        to: LinkTo<'_>,
    ) -> Result<(AccountItem, ApprovalLinkItem), PasskeyError> {
        let account = self.accounts.get(to.household_id()?).await?;
        let link = open_link(&account, to, self.now_ms())?.clone();
        Ok((account, link))
    }

    /// A statement deciding the link's request, with a fresh nonce kept on the link, signed
    /// through request options for the household's passkeys that `may_sign`.
    pub async fn approval_request(
        &self,
        to: LinkTo<'_>,
        decision: &str,
        proposal_hash: &str,
        may_sign: impl Fn(&crate::store::PasskeyItem) -> bool,
    ) -> Result<SigningRequest, PasskeyError> {
        let household_id = to.household_id()?;
        let nonce = URL_SAFE_NO_PAD.encode(os_bytes::<16>().map_err(|_| unavailable_randomness())?);
        let now = self.now_ms();
        let (request, _) = self
            .accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let allow = super::signers(account, &may_sign);
                if allow.is_empty() {
                    return Err(PasskeyError::Refused(
                        "Nobody who may still decide this has a passkey here.".into(),
                    ));
                }
                let household = account.household_id.clone();
                let link = open_link_mut(account, to, now)?;
                super::count_challenge(&mut link.challenged_at_ms, now)?;
                link.nonce = Some(NonceItem {
                    nonce: nonce.clone(),
                    decision: decision.to_owned(),
                    created_at_ms: now,
                });
                let statement = statement::approval(
                    &household,
                    &link.request_id,
                    proposal_hash,
                    decision,
                    &nonce,
                );
                Ok(self.signing_request(statement, &allow))
            })
            .await?;
        Ok(request)
    }

    /// Uses the link's nonce up (it must still be `nonce`) and records the passkey's use,
    /// checking again, in the same write, that the passkey is live and its counter moved on.
    pub async fn consume_approval(
        &self,
        to: LinkTo<'_>,
        nonce: &str,
        assertion: &ceremony::Assertion,
    ) -> Result<(), PasskeyError> {
        let now = self.now_ms();
        let (used, _) = self
            .accounts
            .update_with::<_, PasskeyError>(to.household_id()?, |account| {
                let link = open_link_mut(account, to, now)?;
                if link.nonce.as_ref().map(|stored| stored.nonce.as_str()) != Some(nonce) {
                    return Err(PasskeyError::Gone(
                        "This approval was already used. Start again if it is still needed.".into(),
                    ));
                }
                link.nonce = None;
                settle_use(account, assertion, now)
            })
            .await?;
        used
    }

    /// Closes the link of a settled request, whatever its time.
    pub async fn close_link(&self, to: LinkTo<'_>) -> Result<(), PasskeyError> {
        self.accounts
            .update_with::<_, PasskeyError>(to.household_id()?, |account| {
                let generation = account.generation;
                account
                    .approval_links
                    .retain(|link| !to.finds(link, generation, i64::MIN));
                Ok(())
            })
            .await?;
        Ok(())
    }
}

#[async_trait]
impl ApprovalLinks for Passkeys {
    async fn ready(&self, household_id: &str) -> Result<(), LinkRefusal> {
        let account = self
            .accounts
            .get(household_id)
            .await
            .map_err(|_| LinkRefusal::Unavailable)?;
        let live = account
            .passkeys
            .iter()
            .any(|passkey| is_live(passkey) && passkey.pending.is_none());
        if live {
            Ok(())
        } else {
            Err(LinkRefusal::NoPasskeys)
        }
    }

    async fn open(
        &self,
        household_id: &str,
        request_id: &str,
        expires_at_ms: i64,
    ) -> Result<String, LinkRefusal> {
        let token = format!(
            "{household_id}.{}",
            random_token().map_err(|_| LinkRefusal::Unavailable)?
        );
        let now = self.now_ms();
        self.accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                account
                    .approval_links
                    .retain(|link| link.expires_at_ms > now);
                // The ledger holds at most MAX_LINKS waiting requests; a link past that is
                // one whose request was settled elsewhere and not closed: the oldest goes.
                while account.approval_links.len() >= MAX_LINKS {
                    account.approval_links.remove(0);
                }
                account.approval_links.push(ApprovalLinkItem {
                    challenged_at_ms: Vec::new(),
                    token_hashes: vec![token_hash(&token)],
                    request_id: request_id.to_owned(),
                    expires_at_ms,
                    generation: account.generation,
                    nonce: None,
                });
                Ok(())
            })
            .await
            .map_err(|_| LinkRefusal::Unavailable)?;
        Ok(self.approval_url(&token))
    }

    async fn announce(
        &self,
        household_id: &str,
        request_id: &str,
        url: &str,
        guardians_only: bool,
    ) {
        self.push_to(
            household_id,
            |member| !guardians_only || member.guardian,
            PushMessage {
                title: "Hearth".into(),
                body: "An order waits for your approval.".into(),
                url: url.to_owned(),
            },
            Some(self.household_waiting_url(request_id)),
        )
        .await;
    }

    async fn reopen(&self, household_id: &str, request_id: &str) -> Option<String> {
        let token = format!("{household_id}.{}", random_token().ok()?);
        let now = self.now_ms();
        let (reopened, _) = self
            .accounts
            .update_with::<_, PasskeyError>(household_id, |account| {
                let generation = account.generation;
                let link = account.approval_links.iter_mut().find(|link| {
                    link.request_id == request_id
                        && link.expires_at_ms >= now
                        && link.generation == generation
                });
                Ok(link.map(|link| add_token(&mut link.token_hashes, token_hash(&token))))
            })
            .await
            .ok()?;
        reopened.map(|()| self.approval_url(&token))
    }
}

fn open_link<'a>(
    account: &'a AccountItem,
    to: LinkTo<'_>,
    now_ms: i64,
) -> Result<&'a ApprovalLinkItem, PasskeyError> {
    let generation = account.generation;
    account
        .approval_links
        .iter()
        .find(|link| to.finds(link, generation, now_ms))
        .ok_or_else(no_longer_waiting)
}

fn open_link_mut<'a>(
    account: &'a mut AccountItem,
    to: LinkTo<'_>,
    now_ms: i64,
) -> Result<&'a mut ApprovalLinkItem, PasskeyError> {
    let generation = account.generation;
    account
        .approval_links
        .iter_mut()
        .find(|link| to.finds(link, generation, now_ms))
        .ok_or_else(no_longer_waiting)
}
