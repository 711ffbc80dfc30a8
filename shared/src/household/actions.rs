//! What a guardian does on the household's page, each signed by their passkey:
//!
//! 1. The page asks to do `action` to `target`; the server checks it makes sense now, writes
//!    the `hearth-household-action/v1` statement (action, household, target, the time, a
//!    nonce), keeps it with the session, and answers it with request options whose challenge
//!    is its hash, for the guardian's own passkeys. The page shows it before the phone asks.
//! 2. The page posts the signed statement back. The server takes the kept statement out of
//!    the session (once), checks it is the one signed and still within the ceremony's five
//!    minutes, checks the passkey's signature and counter as for every signature, keeps the
//!    statement in the ledger verbatim (a `household_action` entry, which
//!    `scripts/verify_approvals.py` checks offline), and only then does the action.
//!
//! Kept first and done after: a passkey revoked by the action it signs is still live at the
//! entry's time, as the offline check requires. If the action then fails, the page says so
//! and the ledger shows a signed action that was not done; doing it again is a new statement.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use qrcode::QrCode;
use qrcode::render::svg;
use serde::Serialize;
use serde_json::Value;

use super::sessions::Asked;
use super::{HouseholdPage, Visitor};
use crate::accounts::MAX_DEVICE_KEYS;
use crate::clock::unix_ms;
use crate::countersign::ledger::ApprovalRecord;
use crate::passkeys::ceremony::{CEREMONY_TIMEOUT_MS, challenge_of};
use crate::passkeys::{PasskeyError, SigningRequest, is_live, settle_use, statement};
use crate::random::os_bytes;
use crate::store::StoreError;

/// Who may run the household from its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    InviteMember,
    ApprovePasskey,
    RevokePasskey,
    AddDeviceKey,
    RevokeDeviceKey,
    UnlinkAssistant,
    /// Every assistant at once (a new generation): what the operator's `hearth admin unlink`
    /// does, for when the Assistants list may be incomplete.
    UnlinkAll,
}

/// The target of an action on something not made yet (a device key).
pub const NEW: &str = "new";
/// The target of an action on every assistant.
pub const ALL: &str = "all";

impl Action {
    pub const ALL: [Action; 7] = [
        Action::InviteMember,
        Action::ApprovePasskey,
        Action::RevokePasskey,
        Action::AddDeviceKey,
        Action::RevokeDeviceKey,
        Action::UnlinkAssistant,
        Action::UnlinkAll,
    ];

    /// Its name in statements, the ledger and requests.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::InviteMember => "invite-member",
            Action::ApprovePasskey => "approve-passkey",
            Action::RevokePasskey => "revoke-passkey",
            Action::AddDeviceKey => "add-device-key",
            Action::RevokeDeviceKey => "revoke-device-key",
            Action::UnlinkAssistant => "unlink-assistant",
            Action::UnlinkAll => "unlink-all",
        }
    }

    pub fn parse(name: &str) -> Result<Self, PasskeyError> {
        Self::ALL
            .into_iter()
            .find(|action| action.as_str() == name)
            .ok_or_else(|| {
                PasskeyError::Invalid(format!("{name:?} is not something this page does"))
            })
    }
}

/// What a done action gives the page to show.
#[derive(Debug, Clone, Serialize)]
pub struct Done {
    pub status: &'static str,
    pub message: String,
    /// An invite: its link, its end, and the link as a QR code (SVG).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invite_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qr_svg: Option<String>,
    /// A new device key, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_key_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_key: Option<String>,
}

impl Done {
    fn said(message: String) -> Self {
        Self {
            status: "done",
            message,
            invite_url: None,
            expires_at: None,
            qr_svg: None,
            device_key_id: None,
            device_key: None,
        }
    }
}

fn only_guardians() -> PasskeyError {
    PasskeyError::Refused("Only a guardian of this household can do that. Ask one of them.".into())
}

fn too_late() -> PasskeyError {
    PasskeyError::Refused("That took longer than five minutes. Start again.".into())
}

fn busy(_: StoreError) -> PasskeyError {
    PasskeyError::Unavailable(
        "Hearth is busy with another change to your session. Try again in a moment.".into(),
    )
}

impl HouseholdPage {
    /// Step 1: the statement for `visitor`, a guardian, to sign, kept with their session.
    pub async fn ask(
        &self,
        visitor: &Visitor,
        action: Action,
        target: &str,
    ) -> Result<SigningRequest, PasskeyError> {
        if !visitor.member.guardian {
            return Err(only_guardians());
        }
        self.check_target(visitor, action, target).await?;
        let signers: Vec<String> = visitor
            .account
            .passkeys
            .iter()
            .filter(|passkey| {
                passkey.member_id == visitor.member.id
                    && is_live(passkey)
                    && passkey.pending.is_none()
                    // A passkey does not sign its own revocation: the ledger would hold a
                    // signature by a passkey revoked before its entry.
                    && !(action == Action::RevokePasskey && passkey.credential_id == target)
            })
            .map(|passkey| passkey.credential_id.clone())
            .collect();
        if signers.is_empty() {
            return Err(PasskeyError::Refused(
                "You have no other passkey to sign this with. Ask another guardian.".into(),
            ));
        }
        let nonce = URL_SAFE_NO_PAD
            .encode(os_bytes::<16>().map_err(|_| crate::passkeys::unavailable_randomness())?);
        let now = self.now_ms();
        let statement = statement::household_action(
            action.as_str(),
            &visitor.account.household_id,
            target,
            &crate::clock::timestamp_ms(now),
            &nonce,
        );
        self.sessions
            .ask(
                &visitor.found,
                Asked {
                    action: action.as_str().to_owned(),
                    target: target.to_owned(),
                    statement: statement.clone(),
                    asked_at_ms: now,
                },
            )
            .await
            .map_err(busy)?;
        let options = self
            .passkeys
            .site()
            .site
            .request_options(&challenge_of(&statement), &signers);
        Ok(SigningRequest { statement, options })
    }

    /// Step 2: checks the signed statement and does the action.
    pub async fn act(
        &self,
        visitor: &Visitor,
        statement_text: &str,
        credential: &Value,
    ) -> Result<Done, PasskeyError> {
        if !visitor.member.guardian {
            return Err(only_guardians());
        }
        let asked = self
            .sessions
            .take_asked(&visitor.found)
            .await
            .map_err(|error| match error {
                StoreError::Conflict => PasskeyError::Gone(
                    "That was already done or started again elsewhere. Reload the page.".into(),
                ),
                other => busy(other),
            })?
            .ok_or_else(|| PasskeyError::Invalid("Press the button to start.".into()))?;
        if asked.statement != statement_text {
            return Err(PasskeyError::Refused(
                "That signature was for something else. Start again.".into(),
            ));
        }
        let now = self.now_ms();
        if now - asked.asked_at_ms > CEREMONY_TIMEOUT_MS {
            return Err(too_late());
        }
        let action = Action::parse(&asked.action)?;
        let household_id = visitor.account.household_id.clone();
        let assertion = self
            .passkeys
            .check_signer(&visitor.account, credential, statement_text, |passkey| {
                passkey.member_id == visitor.member.id
                    && !(action == Action::RevokePasskey && passkey.credential_id == asked.target)
            })
            .await?;
        let (used, _) = self
            .passkeys
            .accounts()
            .update_with::<_, PasskeyError>(&household_id, |account| {
                settle_use(account, &assertion, now)
            })
            .await?;
        used?;
        let kept = self
            .countersign
            .record_household_action(
                &household_id,
                &visitor.member.id,
                action.as_str(),
                &asked.target,
                ApprovalRecord {
                    statement: statement_text.to_owned(),
                    credential_id: assertion.credential_id.clone(),
                    authenticator_data: assertion.authenticator_data.clone(),
                    client_data_json: assertion.client_data_json.clone(),
                    signature: assertion.signature.clone(),
                },
                (asked.asked_at_ms, CEREMONY_TIMEOUT_MS),
            )
            .await
            .map_err(|error| PasskeyError::Unavailable(error.say()))?;
        if !kept {
            return Err(too_late());
        }
        tracing::info!(target: "hearth::household", action = action.as_str(), "a guardian acted on the household's page");
        self.carry_out(&household_id, action, &asked.target).await
    }

    /// Refuses an action that makes no sense now, in words for the page.
    async fn check_target(
        &self,
        visitor: &Visitor,
        action: Action,
        target: &str,
    ) -> Result<(), PasskeyError> {
        let account = &visitor.account;
        let gone = |what: &str| {
            PasskeyError::Gone(format!(
                "{what} Reload the page to see the household as it is now."
            ))
        };
        match action {
            Action::InviteMember => {
                let members = self.passkeys.roster(account)?;
                if !members.iter().any(|member| member.id == target) {
                    return Err(gone("That is not a member of this household."));
                }
            }
            Action::ApprovePasskey => {
                // A passkey left pending from before an unlink waits no more.
                let waiting = account.passkeys.iter().any(|passkey| {
                    passkey.credential_id == target
                        && is_live(passkey)
                        && passkey
                            .pending
                            .as_ref()
                            .is_some_and(|waiting| waiting.generation == account.generation)
                });
                if !waiting {
                    return Err(gone("That passkey does not wait for a guardian."));
                }
            }
            Action::RevokePasskey => {
                let live = account.passkeys.iter().any(|passkey| {
                    passkey.credential_id == target && passkey.revoked_at_ms.is_none()
                });
                if !live {
                    return Err(gone(
                        "That passkey is revoked already, or not this household's.",
                    ));
                }
            }
            Action::AddDeviceKey => {
                if target != NEW {
                    return Err(PasskeyError::Invalid(format!(
                        "a new device key's target is {NEW:?}"
                    )));
                }
                if account.device_keys.len() >= MAX_DEVICE_KEYS {
                    return Err(PasskeyError::Full(format!(
                        "This household has {MAX_DEVICE_KEYS} device keys, the most it may. Revoke one first."
                    )));
                }
            }
            Action::RevokeDeviceKey => {
                if !account.device_keys.iter().any(|key| key.key_id == target) {
                    return Err(gone("That device key is revoked already."));
                }
            }
            Action::UnlinkAssistant => {
                if !account.links.iter().any(|link| link.client_id == target) {
                    return Err(gone("That assistant is not linked any more."));
                }
            }
            Action::UnlinkAll => {
                if target != ALL {
                    return Err(PasskeyError::Invalid(format!(
                        "unlinking every assistant names {ALL:?}"
                    )));
                }
            }
        }
        Ok(())
    }

    async fn carry_out(
        &self,
        household_id: &str,
        action: Action,
        target: &str,
    ) -> Result<Done, PasskeyError> {
        let accounts = self.passkeys.accounts();
        match action {
            Action::InviteMember => {
                let invite = self.passkeys.invite(household_id, target).await?;
                let mut done = Done::said(
                    "Invited. Share the link or let them scan the code on the phone that will hold their passkey. It works once, for 15 minutes.".into(),
                );
                done.qr_svg = Some(qr_svg(&invite.url)?);
                done.invite_url = Some(invite.url);
                done.expires_at = Some(invite.expires_at);
                Ok(done)
            }
            Action::ApprovePasskey => {
                self.passkeys.let_in(household_id, target).await?;
                Ok(Done::said(
                    "Approved. The new passkey can now sign in and approve orders.".into(),
                ))
            }
            Action::RevokePasskey => {
                self.passkeys.revoke(household_id, target).await?;
                Ok(Done::said(
                    "Revoked. That passkey signs nothing more, and its sessions have ended.".into(),
                ))
            }
            Action::AddDeviceKey => {
                let (key_id, key) = accounts.add_device_key(household_id).await?;
                let mut done = Done::said(
                    "Added. Copy the key into the device now: it is shown this once.".into(),
                );
                done.device_key_id = Some(key_id);
                done.device_key = Some(key.expose().to_owned());
                Ok(done)
            }
            Action::RevokeDeviceKey => {
                accounts.revoke_device_key(household_id, target).await?;
                Ok(Done::said(
                    "Revoked. What that device signs is refused from now on.".into(),
                ))
            }
            Action::UnlinkAssistant => {
                self.linking
                    .end_client(household_id, target)
                    .await
                    .map_err(|_| {
                        PasskeyError::Unavailable(
                            "Hearth could not unlink it just now. Try again in a minute.".into(),
                        )
                    })?;
                Ok(Done::said(
                    "Unlinked. That assistant must be linked again to act for the household."
                        .into(),
                ))
            }
            Action::UnlinkAll => {
                accounts.unlink(household_id).await?;
                Ok(Done::said(
                    "Every assistant is unlinked, and every session of this page has ended, yours too: sign in again to go on.".into(),
                ))
            }
        }
    }

    fn now_ms(&self) -> i64 {
        unix_ms(self.passkeys.clock().now())
    }
}

/// `url` as a QR code, an SVG element to put in the page (no XML declaration), labelled.
fn qr_svg(url: &str) -> Result<String, PasskeyError> {
    let code = QrCode::new(url.as_bytes())
        .map_err(|_| PasskeyError::Invalid("the invite link is too long for a QR code".into()))?;
    let drawn = code
        .render::<svg::Color>()
        .min_dimensions(240, 240)
        .quiet_zone(true)
        .build();
    let start = drawn.find("<svg").unwrap_or(0);
    Ok(drawn[start..].replacen(
        "<svg",
        r#"<svg role="img" aria-label="QR code of the invite link""#,
        1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_reads_back_by_its_name() {
        for action in Action::ALL {
            assert_eq!(Action::parse(action.as_str()).unwrap(), action);
        }
        assert!(Action::parse("delete-household").is_err());
    }

    #[test]
    fn a_qr_code_is_an_svg_element_with_a_label() {
        let svg = qr_svg("http://localhost:8790/passkeys/enrol/hh-x.y").unwrap();
        assert!(svg.starts_with(r#"<svg role="img" aria-label="QR code of the invite link""#));
        assert!(!svg.contains("<?xml"));
    }
}
