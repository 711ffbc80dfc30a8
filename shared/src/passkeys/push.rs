//! Web Push to members' phones: the link, never anyone's words.
//!
//! A phone subscribes on its enrolment page (`Notify this phone`): the page's service worker
//! asks the browser's push service for a subscription under Hearth's VAPID key (RFC 8292), and
//! posts it, with the short-lived push token the enrolment answered, to
//! `POST /passkeys/push/{token}`. The subscription is kept on the passkey. When something
//! waits for a member (an order to approve; for guardians, a new passkey), Hearth encrypts
//! `{"title", "body", "url"}` for each subscribed phone (RFC 8291, `aes128gcm`, through
//! `web-push-native`) and posts it to the push service, signed with a VAPID token.
//!
//! The VAPID key is derived from the current log key's seed (SHA-256 of a fixed label and the
//! seed: the seed is already 32 uniform bytes, so one hash is a sound derivation): no new
//! secret to provision, and rotating the log key rotates it, after which phones must press
//! `Notify this phone` again. Without a log key there is no push.
//!
//! A push endpoint comes from a browser, so Hearth only posts to `https` URLs whose host
//! resolves to public addresses (the same resolver as client metadata documents); loopback
//! `http` only with `HEARTH_PUSH_ALLOW_HTTP_LOOPBACK` (local tests).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::EncodePrivateKey;
use serde::Serialize;
use sha2::{Digest, Sha256};
use web_push_native::{Auth, WebPushBuilder};

use super::PasskeyError;
use crate::store::PushSubscriptionItem;

/// How long a push service keeps a message for an offline phone (`TTL`): an approval link
/// lives 30 minutes.
pub const PUSH_TTL: Duration = Duration::from_secs(30 * 60);
/// How long one push may take; all of one event's pushes run together within it, the same
/// budget as a webhook notice sent before an answer.
pub const PUSH_BUDGET: Duration = crate::countersign::notify::DELIVER_BUDGET;
/// How long an enrolment page may subscribe its phone after the passkey is made.
pub const PUSH_GRANT_MS: i64 = 15 * 60 * 1000;
/// The longest push endpoint kept.
pub const ENDPOINT_MAX_BYTES: usize = 1024;

/// What a phone is shown.
#[derive(Debug, Clone, Serialize)]
pub struct PushMessage {
    pub title: String,
    pub body: String,
    pub url: String,
}

/// The VAPID key pair as pushes use it.
struct Vapid {
    key: jsonwebtoken::EncodingKey,
    /// The public key, uncompressed SEC1, base64url: the page's applicationServerKey.
    public_key: String,
}

pub struct Pusher {
    /// Built on the first push: most processes (and every cold start) never send one.
    http: std::sync::OnceLock<reqwest::Client>,
    secret: p256::SecretKey,
    /// Derived from `secret` on first use: two P-256 scalar multiplications, most of a
    /// millisecond that a server's start need not wait for. `None` if the key would not encode.
    vapid: std::sync::OnceLock<Option<Vapid>>,
    /// Who push services may contact about these messages (VAPID `sub`).
    contact: String,
    allow_http_loopback: bool,
}

/// Why a push was not delivered; `Gone` means the subscription is dead and is dropped.
#[derive(Debug, PartialEq, Eq)]
pub enum PushFailure {
    Gone,
    Failed(String),
}

impl Pusher {
    /// The pusher whose VAPID key derives from `seed` (the current log key's), posting as
    /// `contact` (the pages' origin).
    pub fn from_seed(seed: &[u8; 32], contact: &str, allow_http_loopback: bool) -> Option<Self> {
        let secret = (0u8..16).find_map(|attempt| {
            let mut hash = Sha256::new();
            hash.update(b"hearth-vapid/v1\n");
            hash.update(seed);
            hash.update([attempt]);
            // A hash at or past the curve order (odds about 2^-32) takes the next attempt.
            p256::SecretKey::from_slice(&hash.finalize()).ok()
        })?;
        Some(Self {
            http: std::sync::OnceLock::new(),
            secret,
            vapid: std::sync::OnceLock::new(),
            contact: contact.to_owned(),
            allow_http_loopback,
        })
    }

    /// The VAPID public key (uncompressed SEC1, base64url), `None` if the key would not encode.
    pub fn public_key(&self) -> Option<&str> {
        self.vapid().map(|vapid| vapid.public_key.as_str())
    }

    fn vapid(&self) -> Option<&Vapid> {
        self.vapid
            .get_or_init(|| {
                let pkcs8 = self.secret.to_pkcs8_der().ok()?;
                Some(Vapid {
                    key: jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_bytes()),
                    public_key: URL_SAFE_NO_PAD
                        .encode(self.secret.public_key().to_encoded_point(false).as_bytes()),
                })
            })
            .as_ref()
    }

    /// A subscription as the browser's `PushSubscription.toJSON()` gives it, checked.
    pub fn subscription(
        &self,
        body: &serde_json::Value,
        now_ms: i64,
    ) -> Result<PushSubscriptionItem, PasskeyError> {
        let invalid = |why: &str| PasskeyError::Invalid(format!("the subscription {why}"));
        let endpoint = body["endpoint"]
            .as_str()
            .ok_or_else(|| invalid("has no endpoint"))?;
        if endpoint.len() > ENDPOINT_MAX_BYTES {
            return Err(invalid("endpoint is too long"));
        }
        crate::clients::metadata_document::check_url(endpoint, self.allow_http_loopback)
            .map_err(|error| invalid(&format!("endpoint is refused: {error}")))?;
        let p256dh = body["keys"]["p256dh"]
            .as_str()
            .ok_or_else(|| invalid("has no p256dh key"))?;
        let auth = body["keys"]["auth"]
            .as_str()
            .ok_or_else(|| invalid("has no auth secret"))?;
        let point = URL_SAFE_NO_PAD
            .decode(p256dh.trim_end_matches('='))
            .map_err(|_| invalid("p256dh is not base64url"))?;
        p256::PublicKey::from_sec1_bytes(&point)
            .map_err(|_| invalid("p256dh is not a P-256 key"))?;
        let secret = URL_SAFE_NO_PAD
            .decode(auth.trim_end_matches('='))
            .map_err(|_| invalid("auth is not base64url"))?;
        if secret.len() != 16 {
            return Err(invalid("auth is not 16 bytes"));
        }
        Ok(PushSubscriptionItem {
            endpoint: endpoint.to_owned(),
            p256dh: URL_SAFE_NO_PAD.encode(point),
            auth: URL_SAFE_NO_PAD.encode(secret),
            created_at_ms: now_ms,
            opens_household: false,
        })
    }

    /// Encrypts `message` for `subscription` and posts it to its push service.
    pub async fn send(
        &self,
        subscription: &PushSubscriptionItem,
        message: &PushMessage,
    ) -> Result<(), PushFailure> {
        let failed = |why: &str| PushFailure::Failed(why.to_owned());
        let endpoint: http::Uri = subscription
            .endpoint
            .parse()
            .map_err(|_| failed("the endpoint is not a URI"))?;
        let point = URL_SAFE_NO_PAD
            .decode(&subscription.p256dh)
            .map_err(|_| failed("the stored key is unreadable"))?;
        let ua_public = p256::PublicKey::from_sec1_bytes(&point)
            .map_err(|_| failed("the stored key is unreadable"))?;
        let secret = URL_SAFE_NO_PAD
            .decode(&subscription.auth)
            .map_err(|_| failed("the stored secret is unreadable"))?;
        if secret.len() != 16 {
            return Err(failed("the stored secret is unreadable"));
        }
        let body = serde_json::to_vec(message).map_err(|_| failed("the message did not encode"))?;
        let request =
            WebPushBuilder::new(endpoint.clone(), ua_public, Auth::clone_from_slice(&secret))
                .with_valid_duration(PUSH_TTL)
                .build(body)
                .map_err(|_| failed("the message could not be encrypted"))?;
        let audience = match (endpoint.scheme_str(), endpoint.authority()) {
            (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
            _ => return Err(failed("the endpoint has no origin")),
        };
        let Some(Vapid { key, public_key }) = self.vapid() else {
            return Err(failed("the VAPID key could not be encoded"));
        };
        let vapid = self.vapid_token(key, &audience)?;
        let (parts, payload) = request.into_parts();
        let http = self.http.get_or_init(|| {
            crate::clients::metadata_document::public_client(
                self.allow_http_loopback,
                Duration::from_secs(3),
                "web push",
            )
        });
        let response = http
            .post(&subscription.endpoint)
            .headers(parts.headers)
            .header(
                http::header::AUTHORIZATION,
                format!("vapid t={vapid}, k={public_key}"),
            )
            .header("Urgency", "high")
            .body(payload)
            .send()
            .await
            .map_err(|error| {
                if error.is_timeout() {
                    failed("the push service did not answer in time")
                } else {
                    failed("the push service could not be reached")
                }
            })?;
        match response.status().as_u16() {
            200..=299 => Ok(()),
            404 | 410 => Err(PushFailure::Gone),
            status => Err(PushFailure::Failed(format!(
                "the push service answered {status}"
            ))),
        }
    }

    /// The VAPID JWT (RFC 8292 §2): ES256, the push service's origin as audience, twelve
    /// hours at most.
    fn vapid_token(
        &self,
        key: &jsonwebtoken::EncodingKey,
        audience: &str,
    ) -> Result<String, PushFailure> {
        #[derive(Serialize)]
        struct Claims<'a> {
            aud: &'a str,
            exp: u64,
            sub: &'a str,
        }
        let exp = crate::auth::jwt::now_secs() + 12 * 60 * 60;
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
            &Claims {
                aud: audience,
                exp,
                sub: &self.contact,
            },
            key,
        )
        .map_err(|_| PushFailure::Failed("the VAPID token could not be signed".into()))
    }
}

/// Sends `message` to every subscription, together, within [`PUSH_BUDGET`]; the endpoints the
/// push services said are gone.
pub async fn send_all(
    pusher: &Arc<Pusher>,
    subscriptions: Vec<PushSubscriptionItem>,
    message: PushMessage,
) -> Vec<String> {
    let sends = subscriptions.into_iter().map(|subscription| {
        let pusher = pusher.clone();
        let message = message.clone();
        async move {
            let sent = tokio::time::timeout(PUSH_BUDGET, pusher.send(&subscription, &message)).await;
            match sent {
                Ok(Ok(())) => None,
                Ok(Err(PushFailure::Gone)) => Some(subscription.endpoint),
                Ok(Err(PushFailure::Failed(failure))) => {
                    tracing::warn!(target: "hearth::passkeys", %failure, "a push was not delivered");
                    None
                }
                Err(_) => {
                    tracing::warn!(target: "hearth::passkeys", "a push was not delivered in time");
                    None
                }
            }
        }
    });
    futures_util::future::join_all(sends)
        .await
        .into_iter()
        .flatten()
        .collect()
}
