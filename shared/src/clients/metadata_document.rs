//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, as the MCP
//! authorization spec profiles it): a host names itself by an https URL, and the JSON document
//! at that URL gives its name and redirect URIs. Such a client is public: PKCE is its proof.
//!
//! Fetching a URL that anyone may type into an authorization request is a server-side request
//! forgery waiting to happen, so every fetch:
//! - goes to public addresses only. Every address the host name resolves to is checked, and
//!   the connection is made to exactly those addresses: [`PublicOnly`] is the HTTP client's
//!   only resolver, and no proxy is ever used. An IP-literal host is checked before anything
//!   is sent, since the HTTP client does not resolve those;
//! - follows no redirect, reads at most [`MAX_DOCUMENT_BYTES`], and gives up after
//!   [`FETCH_TIMEOUT`].
//!
//! A document is kept (in the client store, shared by every instance) for as long as its
//! `Cache-Control`/`Expires` headers allow, within [`MIN_CACHE_MS`]..[`MAX_CACHE_MS`];
//! `no-store`, `no-cache` and `max-age=0` keep it for no time at all.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::{HeaderMap, StatusCode, header};
use serde_json::Value;

use super::{MAX_CLIENT_NAME_CHARS, MAX_REDIRECT_URIS, Registrant, usable_redirect_uris};

/// The largest document read.
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// The whole fetch, connection to last byte.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest client id URL accepted (it becomes a store key).
pub const MAX_DOCUMENT_URL_BYTES: usize = 1024;
/// How long a document is kept when its answer says nothing about caching.
pub const DEFAULT_CACHE_MS: i64 = 5 * 60_000;
/// The shortest and longest a cacheable document is kept.
pub const MIN_CACHE_MS: i64 = 60_000;
pub const MAX_CACHE_MS: i64 = 24 * 60 * 60_000;

/// Whether a client id is meant as a document's URL (and so is fetched, never looked up).
pub fn names_a_document(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// The largest key set read from a `jwks_uri`.
pub const MAX_JWKS_BYTES: usize = 16 * 1024;

/// What a document says about its client, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    /// How long before it should be fetched again; `None`: at once, whenever it is needed
    /// (a copy is kept all the same, for when a fetch fails).
    pub cache_for_ms: Option<i64>,
    pub auth: DocumentAuth,
}

/// How a document's client proves itself at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentAuth {
    /// `none`: a public client; PKCE is its proof.
    None,
    /// `private_key_jwt` (RFC 7523): a JWT signed with one of its keys, on every token
    /// request. The keys are at `jwks_uri` (https, on the document's own host) or inline.
    PrivateKeyJwt {
        jwks_uri: Option<String>,
        /// The inline `jwks`, as JSON text.
        jwks: Option<String>,
        /// `token_endpoint_auth_signing_alg`, when given.
        algorithm: Option<String>,
    },
}

/// Why a document cannot be used; the text is shown on the authorization error page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    #[error("its URL is not usable: {0}")]
    BadUrl(String),
    #[error("its URL must use https")]
    NotHttps,
    #[error("its address is not a public internet address")]
    PrivateAddress,
    #[error("its host name could not be resolved")]
    Unresolved,
    #[error("the server answered with a redirect, which is not followed")]
    Redirected,
    #[error("the server answered {0}")]
    Status(u16),
    #[error("it is larger than {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge,
    #[error("it could not be fetched in time")]
    TimedOut,
    #[error("it could not be fetched")]
    Unreachable,
    #[error("it is not valid: {0}")]
    Invalid(String),
    /// Its key set (`jwks_uri`) could not be used.
    #[error("its keys could not be used: {0}")]
    Keys(String),
    /// The same URL failed a moment ago; it is not fetched again for a minute.
    #[error("it could not be fetched a moment ago ({0})")]
    FailedLately(String),
    /// `HEARTH_CIMD=off`: clients are not named by URL here.
    #[error(
        "this server does not accept clients named by a metadata document's URL (HEARTH_CIMD=off); register the app instead"
    )]
    Disabled,
    /// The operator deleted this client (`hearth admin client delete`).
    #[error("the operator removed this app; it can link again only once they allow it")]
    Removed,
}

/// Looks a host name up. The system resolver in a deployment; tests give names their own
/// addresses to check the address rules without a DNS server.
#[async_trait]
pub trait HostResolver: Send + Sync + 'static {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

/// A resolver for which only `localhost` resolves (to its loopback addresses): what tests and
/// the fuzzer give Hearth, so that no host name a request carries is looked up beyond this
/// machine (their stand-ins are on loopback).
pub struct LocalhostOnly;

#[async_trait]
impl HostResolver for LocalhostOnly {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        if host.eq_ignore_ascii_case("localhost") {
            return Ok(vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ]);
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{host} does not resolve here"),
        ))
    }
}

/// The operating system's resolver (`getaddrinfo`, through tokio).
pub struct SystemResolver;

#[async_trait]
impl HostResolver for SystemResolver {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((host, 0))
            .await?
            .map(|address| address.ip())
            .collect())
    }
}

/// Fetches and checks documents.
pub struct MetadataFetcher {
    resolver: Arc<dyn HostResolver>,
    allow_loopback: bool,
    /// Built on the first fetch: most processes (and every cold start) never fetch one.
    http: std::sync::OnceLock<reqwest::Client>,
}

impl MetadataFetcher {
    /// `allow_loopback` (`HEARTH_CIMD_ALLOW_HTTP_LOOPBACK`, local only) also accepts
    /// `http://` URLs on loopback hosts, and loopback addresses.
    pub fn new(allow_loopback: bool) -> Self {
        Self::with_resolver(Arc::new(SystemResolver), allow_loopback)
    }

    pub fn with_resolver(resolver: Arc<dyn HostResolver>, allow_loopback: bool) -> Self {
        Self {
            resolver,
            allow_loopback,
            http: std::sync::OnceLock::new(),
        }
    }

    /// Whether `http://` loopback URLs are accepted (`HEARTH_CIMD_ALLOW_HTTP_LOOPBACK`).
    pub fn allows_loopback(&self) -> bool {
        self.allow_loopback
    }

    fn http(&self) -> &reqwest::Client {
        self.http.get_or_init(|| {
            client_over(
                self.resolver.clone(),
                self.allow_loopback,
                FETCH_TIMEOUT,
                "client metadata",
            )
        })
    }

    /// Fetches the document `url` names and checks it against `url`.
    pub async fn fetch(&self, url: &str) -> Result<Document, DocumentError> {
        let parsed = check_url(url, self.allow_loopback)?;
        let response = self
            .http()
            .get(parsed)
            .header(header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(fetch_error)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(DocumentError::Redirected);
        }
        if status != StatusCode::OK {
            return Err(DocumentError::Status(status.as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64)
        {
            return Err(DocumentError::TooLarge);
        }
        let cache_for_ms = cache_lifetime_ms(response.headers());
        let body = read_limited(response, MAX_DOCUMENT_BYTES).await?;
        let mut document = parse_document(url, &body, self.allow_loopback)?;
        document.cache_for_ms = cache_for_ms;
        Ok(document)
    }

    /// Fetches the key set a document's `jwks_uri` names, by the same rules as documents: a
    /// public address, no redirect, at most [`MAX_JWKS_BYTES`], within [`FETCH_TIMEOUT`]. The
    /// JWK set's JSON text, once it reads as one.
    pub async fn fetch_keys(&self, jwks_uri: &str) -> Result<String, DocumentError> {
        let keys_error = |error: DocumentError| DocumentError::Keys(error.to_string());
        let parsed = check_url(jwks_uri, self.allow_loopback).map_err(keys_error)?;
        let response = self
            .http()
            .get(parsed)
            .header(header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| keys_error(fetch_error(error)))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(keys_error(DocumentError::Redirected));
        }
        if status != StatusCode::OK {
            return Err(keys_error(DocumentError::Status(status.as_u16())));
        }
        let body = read_limited(response, MAX_JWKS_BYTES)
            .await
            .map_err(|error| match error {
                DocumentError::TooLarge => {
                    DocumentError::Keys(format!("they are larger than {MAX_JWKS_BYTES} bytes"))
                }
                other => keys_error(other),
            })?;
        let text = String::from_utf8(body)
            .map_err(|_| DocumentError::Keys("they are not UTF-8 JSON".into()))?;
        serde_json::from_str::<jsonwebtoken::jwk::JwkSet>(&text)
            .map_err(|_| DocumentError::Keys("they are not a JWK set".into()))?;
        Ok(text)
    }
}

/// Reads the body, refusing it as soon as it passes `limit` (a missing or false
/// `Content-Length` does not get around it).
async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, DocumentError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(fetch_error)? {
        if body.len() + chunk.len() > limit {
            return Err(DocumentError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn fetch_error(error: reqwest::Error) -> DocumentError {
    // The resolver's refusal comes back wrapped in the connector's errors.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<DocumentError>() {
            return refused.clone();
        }
        source = cause.source();
    }
    if error.is_timeout() {
        DocumentError::TimedOut
    } else {
        DocumentError::Unreachable
    }
}

/// The URL rules (draft §3): https, a path, no fragment, no credentials, no dot segments, and
/// written as the URL parser writes it, so that the exact comparison with the document's
/// `client_id` means what it says.
pub fn check_url(url: &str, allow_loopback: bool) -> Result<url::Url, DocumentError> {
    if url.len() > MAX_DOCUMENT_URL_BYTES {
        return Err(DocumentError::BadUrl(format!(
            "it is longer than {MAX_DOCUMENT_URL_BYTES} bytes"
        )));
    }
    let parsed =
        url::Url::parse(url).map_err(|_| DocumentError::BadUrl("it is not a URL".into()))?;
    let loopback_http = allow_loopback && super::is_loopback_http(&parsed);
    if parsed.scheme() != "https" && !loopback_http {
        return Err(DocumentError::NotHttps);
    }
    if parsed.path() == "/" || parsed.path().is_empty() {
        return Err(DocumentError::BadUrl("it has no path".into()));
    }
    if parsed.fragment().is_some() {
        return Err(DocumentError::BadUrl("it has a fragment".into()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(DocumentError::BadUrl("it carries credentials".into()));
    }
    if parsed.as_str() != url {
        return Err(DocumentError::BadUrl(
            "it is not in canonical form (dot segments, case, default port or escaping)".into(),
        ));
    }
    let literal = match parsed.host() {
        Some(url::Host::Ipv4(address)) => Some(IpAddr::V4(address)),
        Some(url::Host::Ipv6(address)) => Some(IpAddr::V6(address)),
        Some(url::Host::Domain(_)) => None,
        None => return Err(DocumentError::BadUrl("it has no host".into())),
    };
    if let Some(address) = literal
        && !address_allowed(address, allow_loopback)
    {
        return Err(DocumentError::PrivateAddress);
    }
    Ok(parsed)
}

/// An HTTP client for URLs someone else chose (a client's metadata document, a phone's push
/// endpoint): only public addresses (loopback too when allowed), no proxy, no redirects.
pub fn public_client(allow_loopback: bool, timeout: Duration, purpose: &str) -> reqwest::Client {
    client_over(Arc::new(SystemResolver), allow_loopback, timeout, purpose)
}

fn client_over(
    resolver: Arc<dyn HostResolver>,
    allow_loopback: bool,
    timeout: Duration,
    purpose: &str,
) -> reqwest::Client {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(PublicOnly {
            resolver,
            allow_loopback,
        }))
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .user_agent(format!("Hearth/{} ({purpose})", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a TLS backend is compiled in")
}

/// The HTTP client's resolver: every address must be allowed, or none is used.
struct PublicOnly {
    resolver: Arc<dyn HostResolver>,
    allow_loopback: bool,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let resolver = self.resolver.clone();
        let allow_loopback = self.allow_loopback;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let refuse = |error: DocumentError| -> Box<dyn std::error::Error + Send + Sync> {
                Box::new(error)
            };
            let addresses = resolver
                .lookup(&host)
                .await
                .map_err(|_| refuse(DocumentError::Unresolved))?;
            if addresses.is_empty() {
                return Err(refuse(DocumentError::Unresolved));
            }
            if addresses
                .iter()
                .any(|address| !address_allowed(*address, allow_loopback))
            {
                return Err(refuse(DocumentError::PrivateAddress));
            }
            // The port is the URL's; the connector sets it.
            let addresses: Vec<SocketAddr> = addresses
                .into_iter()
                .map(|address| SocketAddr::new(address, 0))
                .collect();
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Whether `address` may be connected to: a public unicast address, or loopback when
/// allowed. Written out by hand because std's `is_global` is still unstable.
pub fn address_allowed(address: IpAddr, allow_loopback: bool) -> bool {
    if allow_loopback && address.is_loopback() {
        return true;
    }
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(address: Ipv4Addr) -> bool {
    let [a, b, c, _] = address.octets();
    !(address.is_unspecified()
        || address.is_loopback()
        || address.is_private()
        || address.is_link_local()
        || address.is_broadcast()
        || address.is_multicast()
        || address.is_documentation()
        || a == 0
        // Shared address space (carrier-grade NAT), RFC 6598.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments, RFC 6890.
        || (a == 192 && b == 0 && c == 0)
        // Benchmarking, RFC 2544.
        || (a == 198 && (18..20).contains(&b))
        // Reserved for future use, and the rest of class E.
        || a >= 240)
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    // Addresses that carry an IPv4 address are judged by it.
    if let Some(v4) = address.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = address.segments();
    // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., high, low] = segments;
        return is_public_v4(Ipv4Addr::from((u32::from(high) << 16) | u32::from(low)));
    }
    // 6to4 (2002::/16) carries one in bits 16..48.
    if segments[0] == 0x2002 {
        return is_public_v4(Ipv4Addr::from(
            (u32::from(segments[1]) << 16) | u32::from(segments[2]),
        ));
    }
    // Global unicast is 2000::/3; within it, Teredo (2001::/32), ORCHID and benchmarking
    // (2001:2::/48, 2001:10::/28 and 2001:20::/28) and documentation (2001:db8::/32) are
    // not reachable public hosts.
    let global_unicast = segments[0] & 0xe000 == 0x2000;
    let special = segments[0] == 0x2001
        && (segments[1] == 0
            || segments[1] == 0xdb8
            || segments[1] == 2
            || (0x10..0x30).contains(&segments[1]));
    global_unicast && !special
}

/// How long an answer may be kept, from its `Cache-Control` (`no-store`, `no-cache`,
/// `max-age`, less `Age`) or else its `Expires` (against its `Date`); within bounds.
pub fn cache_lifetime_ms(headers: &HeaderMap) -> Option<i64> {
    let directives: Vec<String> = headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|directive| directive.trim().to_ascii_lowercase())
        .collect();
    if directives
        .iter()
        .any(|directive| directive == "no-store" || directive == "no-cache")
    {
        return None;
    }
    let max_age_secs = directives.iter().find_map(|directive| {
        directive
            .strip_prefix("max-age=")
            .and_then(|seconds| seconds.trim_matches('"').parse::<i64>().ok())
    });
    let fresh_secs = match max_age_secs {
        Some(max_age) => {
            let age = headers
                .get(header::AGE)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<i64>().ok())
                .unwrap_or(0);
            Some(max_age.saturating_sub(age))
        }
        None => expires_in_secs(headers),
    };
    match fresh_secs {
        None => Some(DEFAULT_CACHE_MS),
        Some(seconds) if seconds <= 0 => None,
        Some(seconds) => Some(
            seconds
                .saturating_mul(1000)
                .clamp(MIN_CACHE_MS, MAX_CACHE_MS),
        ),
    }
}

/// `Expires` less `Date` (both HTTP dates); an `Expires` that cannot be read means already
/// expired (RFC 9111 §5.3).
fn expires_in_secs(headers: &HeaderMap) -> Option<i64> {
    let expires = headers.get(header::EXPIRES)?;
    let parse = |value: &http::HeaderValue| {
        value
            .to_str()
            .ok()
            .and_then(|text| jiff::fmt::rfc2822::parse(text).ok())
            .map(|zoned| zoned.timestamp())
    };
    let Some(expires) = parse(expires) else {
        return Some(0);
    };
    let date = headers
        .get(header::DATE)
        .and_then(parse)
        .unwrap_or_else(jiff::Timestamp::now);
    Some(expires.as_second() - date.as_second())
}

/// The host of a document's URL: how a client is shown when its own name cannot be.
pub fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Checks a document's JSON against the URL it came from; `allow_loopback` as for the
/// document itself, for its `jwks_uri`.
pub fn parse_document(
    url: &str,
    body: &[u8],
    allow_loopback: bool,
) -> Result<Document, DocumentError> {
    let invalid = |text: &str| DocumentError::Invalid(text.to_owned());
    let value: Value =
        serde_json::from_slice(body).map_err(|_| invalid("it is not a JSON document"))?;
    let object = value
        .as_object()
        .ok_or_else(|| invalid("it is not a JSON object"))?;
    match object.get("client_id").and_then(Value::as_str) {
        Some(client_id) if client_id == url => {}
        Some(_) => return Err(invalid("its client_id is not the URL it was fetched from")),
        None => return Err(invalid("it has no client_id")),
    }
    if object.contains_key("client_secret") || object.contains_key("client_secret_expires_at") {
        return Err(invalid(
            "it carries a client secret, which a public client may not",
        ));
    }
    let auth = document_auth(url, object, allow_loopback)?;
    let listed = object
        .get("redirect_uris")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("it has no redirect_uris list"))?;
    // A host may list redirect URIs Hearth never sends codes to (a scheme any app may claim);
    // those are set aside rather than failing the whole document.
    let listed: Vec<String> = listed
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let (redirect_uris, _) = usable_redirect_uris(&listed, Registrant::PublicClient);
    if redirect_uris.is_empty() {
        return Err(invalid(
            "none of its redirect_uris is https, http on a loopback address, or a private-use scheme (com.example.app:/…)",
        ));
    }
    if redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(DocumentError::Invalid(format!(
            "it lists more than {MAX_REDIRECT_URIS} redirect URIs"
        )));
    }
    // A name with invisible formatting characters is not shown at all: the host is.
    let client_name = object
        .get("client_name")
        .and_then(Value::as_str)
        .filter(|name| !name.chars().any(super::is_format_character))
        .map(|name| {
            name.chars()
                .filter(|c| !c.is_control())
                .take(MAX_CLIENT_NAME_CHARS)
                .collect::<String>()
        })
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| host_of(url));
    Ok(Document {
        client_name: client_name.trim().to_owned(),
        redirect_uris,
        cache_for_ms: None,
        auth,
    })
}

/// How the document's client authenticates: `none`, or `private_key_jwt` with its keys. The
/// singular `token_endpoint_auth_method` decides; without it, a client that offers
/// `private_key_jwt` among `token_endpoint_auth_methods_supported` and declares keys uses it
/// (ChatGPT's stable document has been seen with the plural alone, and ChatGPT signs whatever
/// the server advertises first). A client that chose `private_key_jwt` must always sign: it is
/// never taken as `none`. Shared-secret methods are refused: a URL names a public client.
fn document_auth(
    url: &str,
    object: &serde_json::Map<String, Value>,
    allow_loopback: bool,
) -> Result<DocumentAuth, DocumentError> {
    let invalid = |text: &str| DocumentError::Invalid(text.to_owned());
    let declares_keys = object.contains_key("jwks_uri") || object.contains_key("jwks");
    let signs = match object.get("token_endpoint_auth_method") {
        None => {
            declares_keys
                && object
                    .get("token_endpoint_auth_methods_supported")
                    .and_then(Value::as_array)
                    .is_some_and(|methods| methods.iter().any(|method| method == "private_key_jwt"))
        }
        Some(Value::String(method)) if method == "none" => false,
        Some(Value::String(method)) if method == "private_key_jwt" => true,
        Some(_) => {
            return Err(invalid(
                "its token_endpoint_auth_method must be none or private_key_jwt: a client named by URL has no shared secret",
            ));
        }
    };
    if !signs {
        return Ok(DocumentAuth::None);
    }
    let algorithm = match object.get("token_endpoint_auth_signing_alg") {
        None => None,
        Some(Value::String(algorithm))
            if super::assertion::ALGORITHMS.contains(&algorithm.as_str()) =>
        {
            Some(algorithm.clone())
        }
        Some(_) => {
            return Err(invalid(
                "its token_endpoint_auth_signing_alg must be RS256, PS256, ES256 or EdDSA",
            ));
        }
    };
    let jwks_uri = match object.get("jwks_uri") {
        None => None,
        Some(Value::String(jwks_uri)) => {
            let keys = check_url(jwks_uri, allow_loopback).map_err(|error| {
                DocumentError::Invalid(format!("its jwks_uri is not usable: {error}"))
            })?;
            let document = url::Url::parse(url).map_err(|_| invalid("it is not a URL"))?;
            if keys.host_str() != document.host_str()
                || keys.port_or_known_default() != document.port_or_known_default()
            {
                return Err(invalid("its jwks_uri is not on the document's own host"));
            }
            Some(jwks_uri.clone())
        }
        Some(_) => return Err(invalid("its jwks_uri is not a string")),
    };
    let jwks = match object.get("jwks") {
        None => None,
        Some(keys) => {
            serde_json::from_value::<jsonwebtoken::jwk::JwkSet>(keys.clone())
                .map_err(|_| invalid("its jwks is not a JWK set"))?;
            Some(keys.to_string())
        }
    };
    if jwks_uri.is_some() == jwks.is_some() {
        return Err(invalid(
            "a private_key_jwt client declares exactly one of jwks_uri and jwks",
        ));
    }
    Ok(DocumentAuth::PrivateKeyJwt {
        jwks_uri,
        jwks,
        algorithm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn only_public_unicast_addresses_are_allowed() {
        for public in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            let address: IpAddr = public.parse().unwrap();
            assert!(address_allowed(address, false), "{public}");
        }
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "2002:a00:1::1",
            "2001:db8::1",
            "2001::1",
        ] {
            let address: IpAddr = private.parse().unwrap();
            assert!(!address_allowed(address, false), "{private}");
        }
        assert!(address_allowed("127.0.0.1".parse().unwrap(), true));
        assert!(address_allowed("::1".parse().unwrap(), true));
        assert!(!address_allowed("10.0.0.1".parse().unwrap(), true));
    }

    #[test]
    fn document_urls_follow_the_drafts_rules() {
        assert!(check_url("https://claude.ai/oauth/mcp-oauth-client-metadata", false).is_ok());
        assert!(check_url("https://vscode.dev/oauth/client-metadata.json", false).is_ok());
        let refused = |url: &str| check_url(url, false).unwrap_err();
        assert_eq!(
            refused("http://example.com/client"),
            DocumentError::NotHttps
        );
        assert!(matches!(
            refused("https://example.com/"),
            DocumentError::BadUrl(_)
        ));
        assert!(matches!(
            refused("https://example.com"),
            DocumentError::BadUrl(_)
        ));
        assert!(matches!(
            refused("https://example.com/a#b"),
            DocumentError::BadUrl(_)
        ));
        assert!(matches!(
            refused("https://u:p@example.com/a"),
            DocumentError::BadUrl(_)
        ));
        assert!(matches!(
            refused("https://example.com/a/../b"),
            DocumentError::BadUrl(_)
        ));
        assert!(matches!(
            refused("https://Example.com/a"),
            DocumentError::BadUrl(_)
        ));
        assert_eq!(
            refused("https://10.0.0.1/client"),
            DocumentError::PrivateAddress
        );
        assert_eq!(
            refused("https://[::1]/client"),
            DocumentError::PrivateAddress
        );
        assert_eq!(
            refused("http://127.0.0.1:8080/client"),
            DocumentError::NotHttps
        );
        assert!(check_url("http://127.0.0.1:8080/client", true).is_ok());
        assert!(check_url("http://localhost:8080/client", true).is_ok());
        assert_eq!(
            check_url("http://example.com/client", true).unwrap_err(),
            DocumentError::NotHttps
        );
        let at_limit = format!(
            "https://example.com/{}",
            "a".repeat(MAX_DOCUMENT_URL_BYTES - "https://example.com/".len())
        );
        assert!(check_url(&at_limit, false).is_ok());
        assert!(matches!(
            refused(&format!("{at_limit}a")),
            DocumentError::BadUrl(_)
        ));
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn a_document_is_kept_as_its_cache_headers_say_within_bounds() {
        assert_eq!(cache_lifetime_ms(&headers(&[])), Some(DEFAULT_CACHE_MS));
        assert_eq!(
            cache_lifetime_ms(&headers(&[("cache-control", "public, max-age=3600")])),
            Some(3_600_000)
        );
        assert_eq!(
            cache_lifetime_ms(&headers(&[
                ("cache-control", "max-age=3600"),
                ("age", "600")
            ])),
            Some(3_000_000)
        );
        assert_eq!(
            cache_lifetime_ms(&headers(&[("cache-control", "max-age=5")])),
            Some(MIN_CACHE_MS)
        );
        assert_eq!(
            cache_lifetime_ms(&headers(&[("cache-control", "max-age=31536000")])),
            Some(MAX_CACHE_MS)
        );
        for uncacheable in ["no-store", "no-cache", "max-age=0", "private, no-store"] {
            assert_eq!(
                cache_lifetime_ms(&headers(&[("cache-control", uncacheable)])),
                None,
                "{uncacheable}"
            );
        }
        assert_eq!(
            cache_lifetime_ms(&headers(&[
                ("date", "Tue, 01 Dec 2026 10:00:00 GMT"),
                ("expires", "Tue, 01 Dec 2026 12:00:00 GMT"),
            ])),
            Some(2 * 3_600_000)
        );
        assert_eq!(
            cache_lifetime_ms(&headers(&[("expires", "0")])),
            None,
            "an unreadable Expires is already expired"
        );
    }

    /// Names with addresses of the test's choosing.
    struct Names(Vec<(&'static str, Vec<IpAddr>)>);

    #[async_trait]
    impl HostResolver for Names {
        async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
            self.0
                .iter()
                .find(|(name, _)| *name == host)
                .map(|(_, addresses)| addresses.clone())
                .ok_or_else(|| std::io::Error::other("no such name"))
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_any_private_address_is_not_connected_to() {
        let public: IpAddr = "93.184.216.34".parse().unwrap();
        let fetcher = MetadataFetcher::with_resolver(
            Arc::new(Names(vec![
                ("inside.example", vec!["10.0.0.7".parse().unwrap()]),
                ("metadata.example", vec!["169.254.169.254".parse().unwrap()]),
                // One public and one private address: the private one could be chosen.
                ("both.example", vec![public, "192.168.0.2".parse().unwrap()]),
                ("mapped.example", vec!["::ffff:127.0.0.1".parse().unwrap()]),
                ("nothing.example", vec![]),
            ])),
            false,
        );
        for host in [
            "inside.example",
            "metadata.example",
            "both.example",
            "mapped.example",
        ] {
            let url = format!("https://{host}/client.json");
            assert_eq!(
                fetcher.fetch(&url).await,
                Err(DocumentError::PrivateAddress),
                "{host}"
            );
        }
        for host in ["nothing.example", "unknown.example"] {
            let url = format!("https://{host}/client.json");
            assert_eq!(
                fetcher.fetch(&url).await,
                Err(DocumentError::Unresolved),
                "{host}"
            );
        }
    }

    const URL: &str = "https://app.example/oauth/client.json";

    #[test]
    fn a_document_must_name_itself_and_list_usable_redirects() {
        let good = serde_json::json!({
            "client_id": URL,
            "client_name": "Example App",
            "redirect_uris": ["https://app.example/callback", "example-app://callback"],
            "token_endpoint_auth_method": "none",
        });
        let document = parse_document(URL, good.to_string().as_bytes(), false).unwrap();
        assert_eq!(document.client_name, "Example App");
        assert_eq!(document.redirect_uris, ["https://app.example/callback"]);

        let refused = |value: serde_json::Value| {
            parse_document(URL, value.to_string().as_bytes(), false).unwrap_err()
        };
        let mut other = good.clone();
        other["client_id"] = "https://app.example/other.json".into();
        assert!(refused(other).to_string().contains("client_id"));
        let mut secret = good.clone();
        secret["client_secret"] = "shh".into();
        assert!(refused(secret).to_string().contains("secret"));
        let mut confidential = good.clone();
        confidential["token_endpoint_auth_method"] = "client_secret_basic".into();
        assert!(refused(confidential).to_string().contains("none"));
        let mut unusable = good.clone();
        unusable["redirect_uris"] = serde_json::json!(["http://app.example/cb"]);
        assert!(refused(unusable).to_string().contains("redirect_uris"));
        let mut ten = good.clone();
        ten["redirect_uris"] = (0..MAX_REDIRECT_URIS)
            .map(|n| format!("https://app.example/cb{n}"))
            .collect();
        assert!(parse_document(URL, ten.to_string().as_bytes(), false).is_ok());
        let mut eleven = good.clone();
        eleven["redirect_uris"] = (0..=MAX_REDIRECT_URIS)
            .map(|n| format!("https://app.example/cb{n}"))
            .collect();
        assert!(refused(eleven).to_string().contains("more than"));
        assert!(parse_document(URL, b"[1]", false).is_err());
        assert!(parse_document(URL, b"not json", false).is_err());
        let mut unnamed = good;
        unnamed.as_object_mut().unwrap().remove("client_name");
        let document = parse_document(URL, unnamed.to_string().as_bytes(), false).unwrap();
        assert_eq!(document.client_name, "app.example");
    }

    #[test]
    fn a_document_that_signs_declares_its_keys_on_its_own_host() {
        let signing = serde_json::json!({
            "client_id": URL,
            "client_name": "ChatGPT",
            "redirect_uris": ["https://app.example/callback"],
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "RS256",
            "jwks_uri": "https://app.example/jwks.json",
        });
        let parse = |value: &serde_json::Value| {
            parse_document(URL, value.to_string().as_bytes(), false).map(|doc| doc.auth)
        };
        assert_eq!(
            parse(&signing),
            Ok(DocumentAuth::PrivateKeyJwt {
                jwks_uri: Some("https://app.example/jwks.json".into()),
                jwks: None,
                algorithm: Some("RS256".into()),
            })
        );
        // The plural alone, with keys: it signs, and is never taken as none.
        let mut plural = signing.clone();
        plural
            .as_object_mut()
            .unwrap()
            .remove("token_endpoint_auth_method");
        plural["token_endpoint_auth_methods_supported"] =
            serde_json::json!(["none", "private_key_jwt"]);
        assert!(matches!(
            parse(&plural),
            Ok(DocumentAuth::PrivateKeyJwt { .. })
        ));
        // The plural without keys is a public client.
        let mut keyless = plural.clone();
        keyless.as_object_mut().unwrap().remove("jwks_uri");
        assert_eq!(parse(&keyless), Ok(DocumentAuth::None));
        for (field, value, why) in [
            (
                "jwks_uri",
                serde_json::json!("https://keys.example/jwks.json"),
                "own host",
            ),
            (
                "jwks_uri",
                serde_json::json!("http://app.example/jwks.json"),
                "jwks_uri",
            ),
            (
                "jwks_uri",
                serde_json::json!("https://10.0.0.1/jwks.json"),
                "jwks_uri",
            ),
            (
                "token_endpoint_auth_signing_alg",
                serde_json::json!("HS256"),
                "RS256",
            ),
            (
                "token_endpoint_auth_signing_alg",
                serde_json::json!("none"),
                "RS256",
            ),
            ("jwks", serde_json::json!({"keys": []}), "exactly one"),
        ] {
            let mut bad = signing.clone();
            bad[field] = value;
            let refused = parse(&bad).unwrap_err().to_string();
            assert!(refused.contains(why), "{field}: {refused}");
        }
        let mut no_keys = signing;
        no_keys.as_object_mut().unwrap().remove("jwks_uri");
        assert!(
            parse(&no_keys)
                .unwrap_err()
                .to_string()
                .contains("exactly one")
        );
    }
}
