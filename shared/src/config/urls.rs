//! The public URLs that follow from `MCP_RESOURCE_URL`.
//!
//! The resource is the URL of `/mcp` exactly as configured: it is the JWT audience and the
//! only accepted `resource` at the token endpoint. The issuer is the same URL without the
//! trailing `/mcp`, and the token and metadata endpoints hang off it, so a deployment with a
//! path prefix (an API Gateway stage) keeps every URL under that prefix.

use std::net::{IpAddr, SocketAddr};

use url::{Host, Url};

/// Where the passkey pages are served: the WebAuthn relying party id, the one origin the
/// pages (and so every assertion) come from, and the URL prefix of every printed link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyPlace {
    pub rp_id: String,
    pub origin: String,
    pub base_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrls {
    resource: String,
    issuer: String,
    host: String,
}

impl PublicUrls {
    /// Validates `resource`: an absolute `https` URL (plain `http` only for a loopback host),
    /// with no credentials, query or fragment, whose path ends in `/mcp`.
    pub fn from_resource(resource: &str) -> Result<Self, String> {
        if !resource.is_ascii() {
            return Err("must be ASCII (write an international host name in punycode)".into());
        }
        let url = Url::parse(resource).map_err(|error| format!("not an absolute URL ({error})"))?;
        let host = url.host().ok_or("the URL has no host")?;
        let loopback = match &host {
            Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
            Host::Ipv4(ip) => ip.is_loopback(),
            Host::Ipv6(ip) => ip.is_loopback(),
        };
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            _ => return Err("must be https (plain http only for a loopback host)".into()),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry credentials".into());
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err("must not have a query or fragment".into());
        }
        if !url.path().ends_with("/mcp") {
            return Err("the path must end in /mcp".into());
        }
        // Kept, advertised and put in tokens in the form hosts' spellings are compared in.
        let resource = canonical_resource(resource).ok_or("not an absolute URL")?;
        let issuer = resource
            .strip_suffix("/mcp")
            .ok_or("the path must end in /mcp")?;
        let host = match host {
            Host::Domain(name) => name.to_ascii_lowercase(),
            Host::Ipv4(ip) => ip.to_string(),
            Host::Ipv6(ip) => ip.to_string(),
        };
        Ok(Self {
            issuer: issuer.to_owned(),
            resource,
            host,
        })
    }

    /// Whether `given` (a `resource` parameter, RFC 8707) names this resource, however a host
    /// spelled it: compared in [`canonical_resource`] form.
    pub fn names_this_resource(&self, given: &str) -> bool {
        canonical_resource(given).is_some_and(|given| given == self.resource)
    }

    /// The path a path-inserted metadata name carries after its well-known prefix (RFC 8414
    /// §3.1, RFC 9728 §3.1): the issuer's path for the authorization server's, the resource's
    /// for the resource's. Empty for an issuer at the host's root.
    pub fn issuer_path(&self) -> &str {
        path_of(&self.issuer)
    }

    pub fn resource_path(&self) -> &str {
        path_of(&self.resource)
    }

    /// The local server's own `/mcp` URL, when it listens on a loopback or unspecified address.
    pub fn local_default(addr: SocketAddr) -> Option<Self> {
        let ip = match addr.ip() {
            ip if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
            ip => ip,
        };
        let authority = match ip {
            IpAddr::V4(v4) => format!("{v4}:{}", addr.port()),
            IpAddr::V6(v6) => format!("[{v6}]:{}", addr.port()),
        };
        Self::from_resource(&format!("http://{authority}/mcp")).ok()
    }

    /// `MCP_RESOURCE_URL` as configured.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The authorization server's issuer identifier (RFC 8414).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The resource's host, lower-cased, without port.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Whether the resource is served on loopback (`localhost`, `127.0.0.0/8`, `::1`): a
    /// developer's own machine, where nobody else reaches the server.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<IpAddr>()
                .is_ok_and(|address| address.is_loopback())
    }

    /// The passkey pages' place for relying party id `rp_id` (`HEARTH_PASSKEY_RP_ID`), by
    /// default the resource's host. WebAuthn refuses IP addresses, so a loopback IP literal
    /// is served, and named, as `localhost`; a relying party id must be the pages' host or a
    /// parent domain of it.
    pub fn passkey_place(&self, rp_id: Option<&str>) -> Result<PasskeyPlace, String> {
        let issuer = Url::parse(&self.issuer).map_err(|error| error.to_string())?;
        let loopback_literal = match issuer.host() {
            Some(Host::Ipv4(ip)) => ip.is_loopback(),
            Some(Host::Ipv6(ip)) => ip.is_loopback(),
            _ => false,
        };
        let page_host = if loopback_literal {
            "localhost".to_owned()
        } else {
            self.host.clone()
        };
        if !loopback_literal && self.host.parse::<IpAddr>().is_ok() {
            return Err(format!(
                "passkeys need a host name, and MCP_RESOURCE_URL's host {} is an IP address: serve Hearth under a name",
                self.host
            ));
        }
        let rp_id = match rp_id.map(str::trim).filter(|id| !id.is_empty()) {
            None => page_host.clone(),
            Some(id) => {
                let id = id.to_ascii_lowercase();
                if id.parse::<IpAddr>().is_ok()
                    || id.trim_matches(['[', ']']).parse::<IpAddr>().is_ok()
                {
                    return Err(
                        "WebAuthn refuses IP addresses as a relying party id; name a domain".into(),
                    );
                }
                if !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
                    || id.starts_with('.')
                    || id.ends_with('.')
                {
                    return Err(format!("{id:?} is not a domain name"));
                }
                if page_host != id && !page_host.ends_with(&format!(".{id}")) {
                    return Err(format!(
                        "the passkey pages are served on {page_host}, which is neither {id} nor under it"
                    ));
                }
                id
            }
        };
        let origin = match issuer.port() {
            Some(port) => format!("{}://{page_host}:{port}", issuer.scheme()),
            None => format!("{}://{page_host}", issuer.scheme()),
        };
        let base_url = format!("{origin}{}", issuer.path().trim_end_matches('/'));
        Ok(PasskeyPlace {
            rp_id,
            origin,
            base_url,
        })
    }

    pub fn token_endpoint(&self) -> String {
        format!("{}/oauth/token", self.issuer)
    }

    pub fn authorization_endpoint(&self) -> String {
        format!("{}/oauth/authorize", self.issuer)
    }

    pub fn revocation_endpoint(&self) -> String {
        format!("{}/oauth/revoke", self.issuer)
    }

    pub fn registration_endpoint(&self) -> String {
        format!("{}/oauth/register", self.issuer)
    }

    /// The path of the authorization endpoint as the browser sees it (under any stage prefix),
    /// which the consent page's cookie is scoped to.
    pub fn authorization_path(&self) -> String {
        let endpoint = self.authorization_endpoint();
        match url::Url::parse(&endpoint) {
            Ok(url) => url.path().to_owned(),
            Err(_) => "/oauth/authorize".to_owned(),
        }
    }

    /// Whether the public URLs are `https` (the consent cookie is then `Secure`).
    pub fn is_https(&self) -> bool {
        self.resource.starts_with("https://")
    }

    /// Where this resource's RFC 9728 metadata is served.
    pub fn resource_metadata(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.issuer)
    }
}

/// The path of a canonical URL (without its scheme and authority); empty for none.
fn path_of(canonical: &str) -> &str {
    let after_scheme = canonical
        .split_once("://")
        .map_or(canonical, |(_, rest)| rest);
    after_scheme
        .find('/')
        .map_or("", |start| &after_scheme[start..])
}

/// A resource URL as Hearth compares it: scheme and host lower-cased and the default port
/// dropped (the URL parser's own normal form), one trailing slash ignored; `None` for what is
/// not an absolute URL, or carries credentials, a query or a fragment (RFC 8707 §2 forbids the
/// last two). Claude Code and Goose send the URL the person typed, and an SDK's URL type adds a
/// slash to a bare host, so an exact string comparison failed hosts that meant this server.
pub fn canonical_resource(text: &str) -> Option<String> {
    let url = Url::parse(text.trim()).ok()?;
    if url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
        || url.cannot_be_a_base()
    {
        return None;
    }
    let written = url.as_str();
    Some(written.strip_suffix('/').unwrap_or(written).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_is_compared_in_one_form() {
        let urls = PublicUrls::from_resource("https://hearth.example/mcp").unwrap();
        for spelling in [
            "https://hearth.example/mcp",
            "https://hearth.example/mcp/",
            "HTTPS://Hearth.EXAMPLE/mcp",
            "https://hearth.example:443/mcp",
            " https://hearth.example/mcp",
        ] {
            assert!(urls.names_this_resource(spelling), "{spelling:?}");
        }
        for other in [
            "https://hearth.example/mcp//",
            "https://hearth.example/MCP",
            "https://hearth.example/other/mcp",
            "https://hearth.example:8443/mcp",
            "http://hearth.example/mcp",
            "https://hearth.example.evil/mcp",
            "https://hearth.example/mcp?x=1",
            "https://hearth.example/mcp#top",
            "https://user@hearth.example/mcp",
            "hearth.example/mcp",
            "",
        ] {
            assert!(!urls.names_this_resource(other), "{other:?}");
        }
        assert_eq!(
            canonical_resource("https://Host.Example").as_deref(),
            Some("https://host.example")
        );
        assert_eq!(
            canonical_resource("https://host.example/").as_deref(),
            Some("https://host.example")
        );
    }

    #[test]
    fn path_inserted_names_carry_the_issuers_and_the_resources_paths() {
        let root = PublicUrls::from_resource("https://hearth.example/mcp").unwrap();
        assert_eq!((root.issuer_path(), root.resource_path()), ("", "/mcp"));
        let staged = PublicUrls::from_resource("https://hearth.example/prod/mcp").unwrap();
        assert_eq!(
            (staged.issuer_path(), staged.resource_path()),
            ("/prod", "/prod/mcp")
        );
    }

    #[test]
    fn the_issuer_and_endpoints_follow_the_resource() {
        let urls = PublicUrls::from_resource("https://hearth.example.com:8443/prod/mcp").unwrap();
        // Kept in canonical form: the host lower-cased.
        assert_eq!(urls.resource(), "https://hearth.example.com:8443/prod/mcp");
        assert_eq!(urls.issuer(), "https://hearth.example.com:8443/prod");
        assert_eq!(urls.host(), "hearth.example.com");
        assert_eq!(
            urls.token_endpoint(),
            "https://hearth.example.com:8443/prod/oauth/token"
        );
        assert_eq!(
            urls.authorization_endpoint(),
            "https://hearth.example.com:8443/prod/oauth/authorize"
        );
        assert_eq!(urls.authorization_path(), "/prod/oauth/authorize");
        assert_eq!(
            urls.revocation_endpoint(),
            "https://hearth.example.com:8443/prod/oauth/revoke"
        );
        assert_eq!(
            urls.resource_metadata(),
            "https://hearth.example.com:8443/prod/.well-known/oauth-protected-resource/mcp"
        );
    }

    #[test]
    fn plain_http_is_only_for_loopback() {
        for ok in [
            "http://127.0.0.1:8790/mcp",
            "http://localhost/mcp",
            "http://[::1]:9/mcp",
        ] {
            assert!(PublicUrls::from_resource(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            PublicUrls::from_resource("http://[::1]:9/mcp")
                .unwrap()
                .host(),
            "::1"
        );
        for bad in [
            "http://hearth.example.com/mcp",
            "ftp://127.0.0.1/mcp",
            "https://hearth.example.com/",
            "https://hearth.example.com/mcpx",
            "https://hearth.example.com/mcp?x=1",
            "https://hearth.example.com/mcp#top",
            "https://user:pw@hearth.example.com/mcp",
            "/mcp",
            "https://hëarth.example/mcp",
        ] {
            assert!(PublicUrls::from_resource(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_local_default_is_the_loopback_address_served() {
        let local = |addr: &str| PublicUrls::local_default(addr.parse().unwrap());
        assert_eq!(
            local("127.0.0.1:8790").unwrap().resource(),
            "http://127.0.0.1:8790/mcp"
        );
        assert_eq!(
            local("0.0.0.0:9000").unwrap().resource(),
            "http://127.0.0.1:9000/mcp"
        );
        assert_eq!(
            local("[::1]:9000").unwrap().resource(),
            "http://[::1]:9000/mcp"
        );
        assert!(local("192.168.1.5:8790").is_none());
    }
}
