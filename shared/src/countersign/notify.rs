//! Telling guardians that a request waits for them. Without this a child's request waits
//! until a guardian happens to ask what is waiting.
//!
//! With `COUNTERSIGN_NOTIFY_URL` and `COUNTERSIGN_NOTIFY_KEY` set, every request that starts
//! waiting for a guardian is POSTed there as JSON:
//! `{"household_id", "request_id", "requester_role", "title", "total_cents", "sent_at"}`
//! (`sent_at` in Unix seconds, for the receiver's replay window), with the header
//! `X-Countersign-Notification-Signature`: lowercase hex HMAC-SHA256 of the body exactly as
//! sent, keyed with `COUNTERSIGN_NOTIFY_KEY`. Never the person's words, their name, or the
//! listing text: a household can wire it to a phone without the words leaving Hearth.
//!
//! A passkey enrolment that waits for a guardian is announced the same way, as
//! `{"kind": "passkey_enrolment", "household_id", "requester_role", "approval_url",
//! "sent_at"}`: the role of the member whose passkey waits, and the page a guardian approves
//! it on. Request notices carry `"kind": "request"`. It is sent before the enrolment is
//! answered, within [`DELIVER_BUDGET`] ([`Notifier::deliver`]), so a frozen Lambda environment cannot lose
//! it.
//!
//! A request notification is sent after the request is in the ledger and never holds up or changes
//! the answer: the POST runs on its own task, and every failure (unreachable, timeout, a
//! non-2xx status) is one log line that names the failure, never the URL or the key. Under
//! Lambda that task may be frozen with the environment once the response is sent, so a
//! notification can be late or lost there; the local server sends it at once.

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use super::household::Role;
use crate::secret::Secret;

pub const SIGNATURE_HEADER: &str = "x-countersign-notification-signature";

/// How long one POST may take.
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an answer waits for a notification sent before it ([`Notifier::deliver`]).
pub const DELIVER_BUDGET: Duration = Duration::from_millis(1500);

/// What a guardian's phone is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitingNotice {
    /// Always `request`.
    pub kind: &'static str,
    pub household_id: String,
    pub request_id: String,
    /// The requester's role; null where nobody is known yet (a proposal without a device).
    pub requester_role: Option<Role>,
    /// The catalogue's title of the product, not the listing text.
    pub title: String,
    pub total_cents: u64,
    /// The page a member approves it on with a passkey, for a request proposed without a
    /// device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_url: Option<String>,
    /// Unix seconds.
    pub sent_at: i64,
}

/// A passkey waiting for a guardian's approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnrolmentNotice {
    /// Always `passkey_enrolment`.
    pub kind: &'static str,
    pub household_id: String,
    /// The role of the member whose passkey waits (`parent`, `child`, `older_relative`).
    pub requester_role: Option<String>,
    /// The guardians' approval page.
    pub approval_url: String,
    /// Unix seconds.
    pub sent_at: i64,
}

pub struct Notifier {
    client: reqwest::Client,
    url: String,
    key: Secret,
}

impl Notifier {
    /// `timeout` is [`NOTIFY_TIMEOUT`] in production; tests shorten it.
    pub fn new(url: String, key: Secret, timeout: Duration) -> Self {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client with only a timeout and no redirects");
        Self { client, url, key }
    }

    /// Sends `notice` on its own task; the caller never waits for it.
    pub fn send(self: &Arc<Self>, notice: WaitingNotice) {
        let notifier = self.clone();
        tokio::spawn(async move {
            if let Err(failure) = notifier.post(&notice).await {
                tracing::warn!(%failure, "guardian notification not delivered");
            }
        });
    }

    /// Posts `notice` before the caller answers, within [`DELIVER_BUDGET`]: under Lambda a
    /// task left running after the answer may be frozen, and the notice with it. A slower or
    /// failing receiver is one warning line, never an error for the caller.
    pub async fn deliver(&self, notice: &impl Serialize) {
        match tokio::time::timeout(DELIVER_BUDGET, self.post(notice)).await {
            Ok(Ok(())) => {}
            Ok(Err(failure)) => tracing::warn!(%failure, "notification not delivered"),
            Err(_) => tracing::warn!("notification not delivered in time"),
        }
    }

    /// Posts `notice` and waits for the answer.
    pub async fn post(&self, notice: &impl Serialize) -> Result<(), String> {
        let body = serde_json::to_vec(notice).map_err(|_| "the notice did not encode")?;
        let response = self
            .client
            .post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, sign(self.key.expose(), &body))
            .body(body)
            .send()
            .await
            .map_err(|error| {
                if error.is_timeout() {
                    "the receiver did not answer in time".to_owned()
                } else {
                    "the receiver could not be reached".to_owned()
                }
            })?;
        if !response.status().is_success() {
            return Err(format!(
                "the receiver answered {}",
                response.status().as_u16()
            ));
        }
        Ok(())
    }
}

/// The signature header value for a notification body: what a receiver recomputes.
pub fn sign(key: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("any key length");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}
