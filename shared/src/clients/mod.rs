//! The OAuth clients that may link a household, without HTTP.
//!
//! - The **configured client** (`MCP_CLIENT_ID`, `MCP_CLIENT_SECRET`, `MCP_REDIRECT_URIS`):
//!   the Alexa+ console's, set by hand, confidential.
//! - **Operator clients** (`hearth admin client add`): confidential or public, stored.
//! - **Registered clients** (RFC 7591, `POST /oauth/register`): stored, unverified, and
//!   expiring if never used within [`REGISTRATION_UNUSED_MS`].
//! - **Metadata clients**: the client id is the https URL of a Client ID Metadata Document
//!   (see [`metadata_document`]), unverified, public or proving itself with signed assertions
//!   ([`assertion`]), fetched when first named and kept in the store (see [`documents`]: kept
//!   copies, pinned copies, imports and removals).
//!
//! Only the configured client and operator clients may use `client_credentials` (Tier 1): a
//! Tier-1 token reaches `ask_aion`, which spends the operator's backend key, so no client
//! that registered itself may mint one. Every client reads from the store on each use, so
//! adding or deleting one takes effect at once on every running instance.

pub mod assertion;
mod documents;
pub mod metadata_document;
mod pinned;

pub use documents::{FAILURE_KEPT_MS, KEPT_COPY_MS, KEY_REFETCH_MS};

use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::clock::{Clock, unix_ms};
use crate::random::{RandomFailed, os_bytes};
use crate::store::{ClientItem, ClientOrigin, ClientStore, GrantStore, StoreError};
use metadata_document::{MetadataFetcher, names_a_document};

/// A registration never used to obtain a token is forgotten after this long.
pub const REGISTRATION_UNUSED_MS: i64 = 24 * 60 * 60 * 1000;
/// The most redirect URIs one client may have.
pub const MAX_REDIRECT_URIS: usize = 10;
/// The longest client name kept.
pub const MAX_CLIENT_NAME_CHARS: usize = 100;
/// The longest redirect URI accepted.
pub const MAX_REDIRECT_URI_BYTES: usize = 2000;
pub use crate::store::client::STORED_CLIENT_PREFIX;

/// A client's last use is written at most once a day: `hearth admin client list` shows it to
/// the day, and a token request for a client in use costs no write for it.
pub const USE_NOTED_EVERY_MS: i64 = 24 * 60 * 60 * 1000;

/// A client as the OAuth routes see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownClient {
    pub client_id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// No secret: PKCE is its only proof.
    pub public: bool,
    pub kind: ClientKind,
    /// Proves itself with a signed assertion (`private_key_jwt`) on every token request.
    pub signs_assertions: bool,
    /// When its last use was noted, and when it is forgotten unless used (stored clients).
    pub last_used_at_ms: Option<i64>,
    pub expires_at_ms: Option<i64>,
}

/// Where a client comes from, which decides what it may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    Configured,
    Operator,
    Registration,
    Metadata,
    /// A metadata document the operator imported by hand: shown as the host's own.
    Imported,
}

impl KnownClient {
    /// Whether it may use `client_credentials` (Tier 1).
    pub fn may_use_client_credentials(&self) -> bool {
        !self.public && matches!(self.kind, ClientKind::Configured | ClientKind::Operator)
    }

    /// Whether the consent page must mark its name as unverified: it named itself.
    pub fn is_unverified(&self) -> bool {
        matches!(self.kind, ClientKind::Registration | ClientKind::Metadata)
    }

    /// Whether `redirect_uri` is one of the client's: compared exactly, except that a
    /// loopback redirect URI matches with any port (RFC 8252 §7.3), since a native app
    /// listens on whichever port it was given.
    pub fn allows_redirect(&self, redirect_uri: &str) -> bool {
        self.redirect_uris
            .iter()
            .any(|known| redirect_matches(known, redirect_uri))
    }
}

/// Whether `presented` matches the registered `known` redirect URI.
pub fn redirect_matches(known: &str, presented: &str) -> bool {
    if known == presented {
        return true;
    }
    let (Ok(known), Ok(presented)) = (url::Url::parse(known), url::Url::parse(presented)) else {
        return false;
    };
    is_loopback_http(&known)
        && known.scheme() == presented.scheme()
        && known.host() == presented.host()
        && known.path() == presented.path()
        && known.query() == presented.query()
        && known.fragment().is_none()
        && presented.fragment().is_none()
        && known.username().is_empty()
        && presented.username().is_empty()
}

/// Whether `url` is `http` on a loopback address (`127.0.0.1`, `[::1]` or `localhost`).
pub fn is_loopback_http(url: &url::Url) -> bool {
    url.scheme() == "http"
        && match url.host() {
            Some(url::Host::Ipv4(address)) => address.is_loopback(),
            Some(url::Host::Ipv6(address)) => address.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        }
}

/// Where a redirect URI sends the person, which decides who may register it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `https` with a host: a website.
    Web,
    /// `http` on `127.0.0.1`, `[::1]` or `localhost`, any port: a native app on this device
    /// (RFC 8252 §7.3).
    Loopback,
    /// A private-use scheme in reverse-domain form, with a dot (RFC 8252 §7.1:
    /// `com.example.app:/callback`): a native app on this device, for a public client whose
    /// proof is PKCE.
    PrivateUse,
    /// Any other custom scheme (`cursor://…`): a name any app may claim, registered only by an
    /// operator who chose it (`hearth admin client add --redirect-uri`).
    Claimed,
}

/// Who is registering a redirect URI, and so which kinds are usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registrant {
    /// The operator (`hearth admin client add`): every kind.
    Operator,
    /// A host registering itself, or naming itself by a metadata document, as a public client
    /// (no secret; PKCE is its proof): websites, loopback and private-use schemes.
    PublicClient,
    /// A host registering itself as a confidential client: websites and loopback.
    ConfidentialClient,
}

impl Registrant {
    pub fn may_use(self, kind: RedirectKind) -> bool {
        match self {
            Registrant::Operator => true,
            Registrant::PublicClient => kind != RedirectKind::Claimed,
            Registrant::ConfidentialClient => {
                matches!(kind, RedirectKind::Web | RedirectKind::Loopback)
            }
        }
    }
}

/// Schemes that are never an app's callback: they run code, read files, or are the web's own
/// (`http` elsewhere than loopback is refused because a code must not travel in the clear).
const NEVER_REDIRECT_SCHEMES: &[&str] = &[
    "http",
    "javascript",
    "vbscript",
    "data",
    "file",
    "blob",
    "about",
    "filesystem",
    "ftp",
    "ws",
    "wss",
    "mailto",
    "tel",
    "sms",
];

/// What kind of redirect URI `uri` is, or why it can never be one; the text is safe to return.
pub fn redirect_kind(uri: &str) -> Result<RedirectKind, String> {
    if uri.len() > MAX_REDIRECT_URI_BYTES {
        return Err(format!(
            "a redirect URI is longer than {MAX_REDIRECT_URI_BYTES} bytes"
        ));
    }
    let parsed = url::Url::parse(uri).map_err(|_| format!("{uri:?} is not an absolute URL"))?;
    if parsed.fragment().is_some() {
        return Err(format!("{uri:?} has a fragment"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!("{uri:?} carries credentials"));
    }
    let scheme = parsed.scheme();
    if scheme == "https" && parsed.host().is_some() {
        Ok(RedirectKind::Web)
    } else if is_loopback_http(&parsed) {
        Ok(RedirectKind::Loopback)
    } else if scheme == "https" || NEVER_REDIRECT_SCHEMES.contains(&scheme) {
        Err(format!(
            "{uri:?} is neither https, nor http on a loopback address, nor an app's own scheme"
        ))
    } else if scheme.contains('.') {
        Ok(RedirectKind::PrivateUse)
    } else {
        Ok(RedirectKind::Claimed)
    }
}

/// Why `registrant` may not register `uri`; the text is safe to return.
pub fn check_redirect_uri(uri: &str, registrant: Registrant) -> Result<(), String> {
    let kind = redirect_kind(uri)?;
    if registrant.may_use(kind) {
        return Ok(());
    }
    Err(match kind {
        RedirectKind::Claimed => format!(
            "{uri:?} uses a scheme any app may claim; only an operator can add it (hearth admin client add --redirect-uri)"
        ),
        _ => format!(
            "{uri:?} is an app's own scheme, which only a public client (token_endpoint_auth_method none, with PKCE) may use"
        ),
    })
}

/// A host's redirect URIs split into those `registrant` may use, in order and without
/// repeats, and those set aside, each with why. Hosts list callbacks for every platform
/// they run on, so one that Hearth cannot send codes to does not refuse the others.
pub fn usable_redirect_uris(uris: &[String], registrant: Registrant) -> (Vec<String>, Vec<String>) {
    let mut usable: Vec<String> = Vec::new();
    let mut set_aside = Vec::new();
    for uri in uris {
        match check_redirect_uri(uri, registrant) {
            Ok(()) if !usable.contains(uri) => usable.push(uri.clone()),
            Ok(()) => {}
            Err(why) => set_aside.push(why),
        }
    }
    (usable, set_aside)
}

/// A client as `hearth admin client add` created it: its id and, for a confidential client,
/// its secret, shown once.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AddedClient {
    pub client_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// One client as `hearth admin client list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ListedClient {
    pub client_id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub public: bool,
    pub created_by: ClientOrigin,
    pub created_at_ms: i64,
    pub last_used_at_ms: Option<i64>,
}

/// Why a client operation failed; the text is safe to return.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Invalid(String),
    #[error("no client {0}")]
    NotFound(String),
    /// A client named by a metadata document's URL whose document cannot be used.
    #[error("the client's metadata document cannot be used: {0}")]
    Document(#[from] metadata_document::DocumentError),
    /// A signed client assertion that does not authenticate.
    #[error("{0}")]
    Assertion(assertion::AssertionError),
    /// A client whose document says it signs its requests sent none.
    #[error(
        "this client authenticates with a signed assertion (private_key_jwt): send client_assertion_type and client_assertion"
    )]
    AssertionRequired,
    #[error("storage unavailable: {0}")]
    Unavailable(String),
}

impl From<StoreError> for ClientError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(cause) => ClientError::Unavailable(cause),
            other => ClientError::Unavailable(other.to_string()),
        }
    }
}

impl From<RandomFailed> for ClientError {
    fn from(_: RandomFailed) -> Self {
        ClientError::Unavailable("the OS random source failed".into())
    }
}

/// The configured client, from the environment.
#[derive(Clone)]
pub struct ConfiguredClient {
    pub client_id: String,
    /// SHA-256 of `MCP_CLIENT_SECRET`.
    pub secret_hash: [u8; 32],
    pub redirect_uris: Vec<String>,
}

impl ConfiguredClient {
    /// As the OAuth routes see it: confidential, named by its id.
    fn known(&self) -> KnownClient {
        KnownClient {
            client_id: self.client_id.clone(),
            name: self.client_id.clone(),
            redirect_uris: self.redirect_uris.clone(),
            public: false,
            kind: ClientKind::Configured,
            signs_assertions: false,
            last_used_at_ms: None,
            expires_at_ms: None,
        }
    }
}

pub struct Clients {
    store: Arc<dyn ClientStore>,
    configured: Option<ConfiguredClient>,
    clock: Arc<dyn Clock>,
    /// Fetches Client ID Metadata Documents; `None` (`HEARTH_CIMD=off`): a client id that is
    /// a URL is refused, naming the setting.
    documents: Option<MetadataFetcher>,
    /// Failed fetches and used assertion ids, each kept a while.
    grants: Option<Arc<dyn GrantStore>>,
}

impl Clients {
    pub fn new(
        store: Arc<dyn ClientStore>,
        configured: Option<ConfiguredClient>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            configured,
            clock,
            documents: None,
            grants: None,
        }
    }

    /// The same clients, and hosts that name themselves by a metadata document's URL, their
    /// failed fetches and used assertions kept in `grants`.
    pub fn with_documents(mut self, fetcher: MetadataFetcher, grants: Arc<dyn GrantStore>) -> Self {
        self.documents = Some(fetcher);
        self.grants = Some(grants);
        self
    }

    fn now_ms(&self) -> i64 {
        unix_ms(self.clock.now())
    }

    /// Whether clients may name themselves by a metadata document's URL (`HEARTH_CIMD`).
    pub fn accepts_documents(&self) -> bool {
        self.documents.is_some()
    }

    /// The name the configured client is shown by, which no other client may take.
    fn configured_name(&self) -> Option<&str> {
        self.configured
            .as_ref()
            .map(|configured| configured.client_id.as_str())
    }

    /// The client `client_id` names among the configured and the stored ones.
    pub async fn find(&self, client_id: &str) -> Result<Option<KnownClient>, ClientError> {
        if let Some(configured) = &self.configured
            && configured.client_id == client_id
        {
            return Ok(Some(configured.known()));
        }
        if names_a_document(client_id) {
            return self.document_client(client_id).await;
        }
        Ok(self
            .store
            .client(client_id, self.now_ms())
            .await?
            .map(|item| known(&item)))
    }

    /// Checks a client's credentials: a confidential client's secret (in constant time), or
    /// none for a public one. `None` for anything that does not authenticate, whatever the
    /// reason, so that a caller cannot tell an unknown id from a wrong secret.
    pub async fn authenticate(
        &self,
        client_id: &str,
        secret: Option<&str>,
    ) -> Result<Option<KnownClient>, ClientError> {
        let presented: Option<[u8; 32]> = secret.map(|secret| Sha256::digest(secret).into());
        if let Some(configured) = &self.configured {
            let id_matches = Sha256::digest(client_id.as_bytes())
                .ct_eq(&Sha256::digest(configured.client_id.as_bytes()));
            if bool::from(id_matches) {
                let secret_matches = presented
                    .is_some_and(|presented| bool::from(presented.ct_eq(&configured.secret_hash)));
                return Ok(secret_matches.then(|| configured.known()));
            }
        }
        if names_a_document(client_id) {
            // A client named by URL has no secret: a secret is refused, and a client whose
            // document says it signs must sign (`authenticate_assertion`), never fall back to
            // PKCE alone.
            return match secret {
                None => match self.document_client(client_id).await? {
                    Some(client) if client.signs_assertions => Err(ClientError::AssertionRequired),
                    found => Ok(found),
                },
                Some(_) => Ok(None),
            };
        }
        let Some(item) = self.store.client(client_id, self.now_ms()).await? else {
            return Ok(None);
        };
        let authenticated = match (&item.secret_hash, presented) {
            // A public client presents no secret; one that does is refused, not ignored.
            (None, None) => true,
            (Some(stored), Some(presented)) => {
                let mut stored_bytes = [0u8; 32];
                hex::decode_to_slice(stored, &mut stored_bytes).is_ok()
                    && bool::from(presented.ct_eq(&stored_bytes))
            }
            _ => false,
        };
        Ok(authenticated.then(|| known(&item)))
    }

    /// Notes that `client` obtained a token: a registration is then kept until deleted. A
    /// client whose use was noted within [`USE_NOTED_EVERY_MS`] costs nothing.
    pub async fn note_used(&self, client: &KnownClient) -> Result<(), ClientError> {
        // A metadata client's kept copy lives by its fetches, used or not.
        if matches!(
            client.kind,
            ClientKind::Configured | ClientKind::Metadata | ClientKind::Imported
        ) {
            return Ok(());
        }
        let now_ms = self.now_ms();
        let noted_lately = client
            .last_used_at_ms
            .is_some_and(|noted| now_ms - noted < USE_NOTED_EVERY_MS);
        if client.expires_at_ms.is_none() && noted_lately {
            return Ok(());
        }
        let Some(mut item) = self.store.client(&client.client_id, now_ms).await? else {
            return Ok(());
        };
        let expected = item.revision;
        item.last_used_at_ms = Some(now_ms);
        item.expires_at_ms = None;
        item.revision += 1;
        match self.store.put_client(&item, Some(expected), now_ms).await {
            // Another use noted it first: nothing is lost.
            Ok(()) | Err(StoreError::Conflict) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// `hearth admin client add`: a client an operator vouches for.
    pub async fn add(
        &self,
        name: &str,
        redirect_uris: &[String],
        public: bool,
    ) -> Result<AddedClient, ClientError> {
        let name = checked_name(name, self.configured_name())?;
        checked_redirect_uris(redirect_uris, Registrant::Operator)?;
        let client_id = new_client_id()?;
        let secret = (!public).then(new_client_secret).transpose()?;
        let item = ClientItem {
            client_id: client_id.clone(),
            name,
            redirect_uris: redirect_uris.to_vec(),
            secret_hash: secret.as_deref().map(secret_hash),
            origin: ClientOrigin::Operator,
            created_at_ms: self.now_ms(),
            last_used_at_ms: None,
            expires_at_ms: None,
            revision: 1,
            document: None,
            assertion_keys: None,
        };
        self.store.put_client(&item, None, self.now_ms()).await?;
        Ok(AddedClient {
            client_id,
            client_secret: secret,
        })
    }

    /// A client that registered itself (RFC 7591): stored, and forgotten if never used within
    /// [`REGISTRATION_UNUSED_MS`].
    pub async fn register(
        &self,
        name: &str,
        redirect_uris: &[String],
        public: bool,
    ) -> Result<(ClientItem, Option<String>), ClientError> {
        let name = checked_name(name, self.configured_name())?;
        let registrant = if public {
            Registrant::PublicClient
        } else {
            Registrant::ConfidentialClient
        };
        checked_redirect_uris(redirect_uris, registrant)?;
        let now_ms = self.now_ms();
        let secret = (!public).then(new_client_secret).transpose()?;
        let item = ClientItem {
            client_id: new_client_id()?,
            name,
            redirect_uris: redirect_uris.to_vec(),
            secret_hash: secret.as_deref().map(secret_hash),
            origin: ClientOrigin::Registration,
            created_at_ms: now_ms,
            last_used_at_ms: None,
            expires_at_ms: Some(now_ms + REGISTRATION_UNUSED_MS),
            revision: 1,
            document: None,
            assertion_keys: None,
        };
        self.store.put_client(&item, None, now_ms).await?;
        Ok((item, secret))
    }

    /// `hearth admin client list`: every stored client (the configured one is the
    /// environment's).
    pub async fn list(&self) -> Result<Vec<ListedClient>, ClientError> {
        Ok(self
            .store
            .clients(self.now_ms())
            .await?
            .into_iter()
            .map(|item| ListedClient {
                public: item.secret_hash.is_none(),
                client_id: item.client_id,
                name: item.name,
                redirect_uris: item.redirect_uris,
                created_by: item.origin,
                created_at_ms: item.created_at_ms,
                last_used_at_ms: item.last_used_at_ms,
            })
            .collect())
    }

    /// `hearth admin client delete`: the client is gone at once; its authorization codes and
    /// refresh-token families stop working, since both name it and it no longer exists. A
    /// metadata client's URL is refused from then on, until `allow`.
    pub async fn delete(&self, client_id: &str) -> Result<(), ClientError> {
        if names_a_document(client_id) {
            return self.refuse_document(client_id).await;
        }
        if self.store.delete_client(client_id).await? {
            Ok(())
        } else {
            Err(ClientError::NotFound(client_id.to_owned()))
        }
    }
}

fn known(item: &ClientItem) -> KnownClient {
    let imported = item
        .document
        .as_ref()
        .is_some_and(|document| document.imported);
    KnownClient {
        client_id: item.client_id.clone(),
        name: item.name.clone(),
        redirect_uris: item.redirect_uris.clone(),
        public: item.secret_hash.is_none() && item.assertion_keys.is_none(),
        signs_assertions: item.assertion_keys.is_some(),
        kind: match item.origin {
            ClientOrigin::Operator => ClientKind::Operator,
            ClientOrigin::Registration => ClientKind::Registration,
            ClientOrigin::Metadata if imported => ClientKind::Imported,
            // A removal is never handed out as a client (`document_item` refuses it first).
            ClientOrigin::Metadata | ClientOrigin::Refused => ClientKind::Metadata,
        },
        last_used_at_ms: item.last_used_at_ms,
        expires_at_ms: item.expires_at_ms,
    }
}

/// A client's name as the consent page shows it, in bold: 1 to [`MAX_CLIENT_NAME_CHARS`]
/// characters, none of them a control or a Unicode format character (category Cf: a
/// right-to-left override turns the page's "(unverified …)" backwards, a zero-width space hides
/// a look-alike), and not the configured client's name in any case: a registration must not
/// pass for the client the operator set up.
fn checked_name(name: &str, reserved: Option<&str>) -> Result<String, ClientError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_CLIENT_NAME_CHARS {
        return Err(ClientError::Invalid(format!(
            "a client name is 1 to {MAX_CLIENT_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(ClientError::Invalid(
            "a client name has no control characters".into(),
        ));
    }
    if name.chars().any(is_format_character) {
        return Err(ClientError::Invalid(
            "a client name has no invisible formatting characters (Unicode category Cf)".into(),
        ));
    }
    if reserved.is_some_and(|reserved| reserved.trim().eq_ignore_ascii_case(name)) {
        return Err(ClientError::Invalid(
            "that name is the configured client's; choose the app's own name".into(),
        ));
    }
    Ok(name.to_owned())
}

/// Whether `c` is a Unicode format character (general category Cf).
pub fn is_format_character(c: char) -> bool {
    use unicode_general_category::{GeneralCategory, get_general_category};
    get_general_category(c) == GeneralCategory::Format
}

fn checked_redirect_uris(uris: &[String], registrant: Registrant) -> Result<(), ClientError> {
    check_redirect_uris(uris, registrant).map_err(ClientError::Invalid)
}

/// Why a client's list of redirect URIs cannot be registered: 1 to [`MAX_REDIRECT_URIS`],
/// each one `registrant` may use. The text is safe to return.
pub fn check_redirect_uris(uris: &[String], registrant: Registrant) -> Result<(), String> {
    if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
        return Err(format!(
            "a client has 1 to {MAX_REDIRECT_URIS} redirect URIs"
        ));
    }
    uris.iter()
        .try_for_each(|uri| check_redirect_uri(uri, registrant))
}

fn new_client_id() -> Result<String, RandomFailed> {
    Ok(format!(
        "{STORED_CLIENT_PREFIX}{}",
        hex::encode(os_bytes::<16>()?)
    ))
}

fn new_client_secret() -> Result<String, RandomFailed> {
    use base64::Engine;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(os_bytes::<32>()?))
}

/// A client secret as stored: its SHA-256, hex.
fn secret_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_redirect_matches_with_any_port_and_nothing_else_does() {
        let loopback = "http://127.0.0.1/callback";
        assert!(redirect_matches(
            loopback,
            "http://127.0.0.1:51234/callback"
        ));
        assert!(redirect_matches(
            "http://localhost:3000/cb",
            "http://localhost:4000/cb"
        ));
        assert!(redirect_matches("http://[::1]/cb", "http://[::1]:9/cb"));
        assert!(!redirect_matches(loopback, "http://127.0.0.1:5/other"));
        assert!(!redirect_matches(loopback, "http://127.0.0.2/callback"));
        let https = "https://claude.ai/api/mcp/auth_callback";
        assert!(redirect_matches(https, https));
        assert!(!redirect_matches(
            https,
            "https://claude.ai:8443/api/mcp/auth_callback"
        ));
        assert!(!redirect_matches(
            https,
            "https://claude.ai/api/mcp/auth_callback?x=1"
        ));
    }

    #[test]
    fn redirect_uris_are_websites_loopback_or_an_apps_own_scheme() {
        for (uri, kind) in [
            (
                "https://chatgpt.com/connector_platform_oauth_redirect",
                RedirectKind::Web,
            ),
            ("http://127.0.0.1:33418/", RedirectKind::Loopback),
            ("http://localhost/callback", RedirectKind::Loopback),
            ("http://[::1]:8080/cb", RedirectKind::Loopback),
            ("com.example.app:/oauth2redirect", RedirectKind::PrivateUse),
            ("vscode.dev.app://callback", RedirectKind::PrivateUse),
            (
                "cursor://anysphere.cursor-mcp/oauth/callback",
                RedirectKind::Claimed,
            ),
        ] {
            assert_eq!(redirect_kind(uri), Ok(kind), "{uri}");
        }
        for bad in [
            "http://example.com/cb",
            "http://192.168.1.5/cb",
            "ftp://example.com/cb",
            "javascript:alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "https://example.com/cb#fragment",
            "https://user:pass@example.com/cb",
            "com.example.app:/cb#fragment",
            "not a url",
        ] {
            assert!(redirect_kind(bad).is_err(), "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_REDIRECT_URI_BYTES));
        assert!(redirect_kind(&long).is_err());
        let at_limit = format!(
            "https://example.com/{}",
            "a".repeat(MAX_REDIRECT_URI_BYTES - "https://example.com/".len())
        );
        assert_eq!(redirect_kind(&at_limit), Ok(RedirectKind::Web));
    }

    #[test]
    fn who_registers_decides_which_kinds_are_usable() {
        let cursor = [
            "cursor://anysphere.cursor-mcp/oauth/callback".to_owned(),
            "https://cursor.com/oauth/callback".to_owned(),
            "http://localhost:8787/callback".to_owned(),
            "http://localhost:8787/callback".to_owned(),
        ];
        let (usable, set_aside) = usable_redirect_uris(&cursor, Registrant::PublicClient);
        assert_eq!(usable, cursor[1..3]);
        assert_eq!(set_aside.len(), 1, "{set_aside:?}");
        assert!(set_aside[0].contains("only an operator"), "{set_aside:?}");
        let (usable, _) = usable_redirect_uris(&cursor, Registrant::Operator);
        assert_eq!(usable, cursor[..3]);
        let app = ["com.example.app:/cb".to_owned()];
        assert!(check_redirect_uris(&app, Registrant::PublicClient).is_ok());
        assert!(check_redirect_uris(&app, Registrant::ConfidentialClient).is_err());
    }
}
