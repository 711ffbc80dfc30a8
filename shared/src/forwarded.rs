//! Who the client is behind a reverse proxy: `HEARTH_TRUSTED_PROXIES` names the proxies
//! (CIDRs) whose forwarding headers are believed. From any other peer the headers are
//! ignored, since a client can write them.
//!
//! From a trusted peer, the client is the right-most entry of `X-Forwarded-For` (or, without
//! one, of `Forwarded`'s `for=` parameters) that is not itself a trusted proxy: each proxy
//! appends the address it saw, so entries right of the first untrusted one were written by
//! proxies the operator runs, and entries left of it by whoever connected. When every entry
//! is trusted, the request began inside the operator's own network, and the left-most entry
//! is its origin. A malformed header, or one past [`MAX_HEADER_BYTES`] or [`MAX_ENTRIES`],
//! means the peer's own address: a proxy that writes such a header is not one to believe.

use std::net::IpAddr;

use http::HeaderMap;
use ipnet::IpNet;

/// The longest forwarding header read, all its lines together.
pub const MAX_HEADER_BYTES: usize = 2048;
/// The most hops a forwarding header may list.
pub const MAX_ENTRIES: usize = 32;

/// The proxies whose forwarding headers are believed; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses a comma-separated list of CIDRs (`10.0.0.0/8`, `fd00::/8`) or single addresses.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut networks = Vec::new();
        for entry in list
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
        {
            let network = match entry.parse::<IpNet>() {
                Ok(network) => network.trunc(),
                Err(_) => match entry.parse::<IpAddr>() {
                    Ok(address) => IpNet::from(address),
                    Err(_) => {
                        return Err(format!(
                            "{entry:?} is not an address or a CIDR like 10.0.0.0/8"
                        ));
                    }
                },
            };
            networks.push(network);
        }
        Ok(Self(networks))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, address: IpAddr) -> bool {
        let address = canonical(address);
        self.0.iter().any(|network| network.contains(&address))
    }

    /// The client address of a request that reached this server from `peer` with `headers`.
    pub fn client_of(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let entries = match forwarded_for(headers) {
            Some(Ok(entries)) if !entries.is_empty() => entries,
            // No header: the proxy is the client (a health check, say).
            None | Some(Ok(_)) => return peer,
            Some(Err(Malformed)) => return peer,
        };
        entries
            .iter()
            .rev()
            .copied()
            .find(|entry| !self.trusts(*entry))
            .unwrap_or(entries[0])
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries, so that one CIDR list covers
/// a dual-stack socket's view of an IPv4 peer.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

struct Malformed;

/// The hops `X-Forwarded-For` lists, or else `Forwarded`'s; `None` without either header.
fn forwarded_for(headers: &HeaderMap) -> Option<Result<Vec<IpAddr>, Malformed>> {
    if headers.contains_key("x-forwarded-for") {
        return Some(
            joined(headers, "x-forwarded-for")
                .and_then(|text| entries(&text, |entry| entry.parse::<IpAddr>().ok())),
        );
    }
    if headers.contains_key(http::header::FORWARDED) {
        return Some(
            joined(headers, "forwarded").and_then(|text| entries(&text, forwarded_element)),
        );
    }
    None
}

/// Every line of header `name` joined by commas (RFC 9110 §5.3), within the size limit.
fn joined(headers: &HeaderMap, name: &str) -> Result<String, Malformed> {
    let mut text = String::new();
    for value in headers.get_all(name) {
        let value = value.to_str().map_err(|_| Malformed)?;
        if !text.is_empty() {
            text.push(',');
        }
        text.push_str(value);
        if text.len() > MAX_HEADER_BYTES {
            return Err(Malformed);
        }
    }
    Ok(text)
}

fn entries(text: &str, parse: impl Fn(&str) -> Option<IpAddr>) -> Result<Vec<IpAddr>, Malformed> {
    let mut addresses = Vec::new();
    for entry in text.split(',') {
        if addresses.len() == MAX_ENTRIES {
            return Err(Malformed);
        }
        let address = parse(entry.trim()).ok_or(Malformed)?;
        addresses.push(canonical(address));
    }
    Ok(addresses)
}

/// The address of one `Forwarded` element's `for=` parameter (RFC 7239 §4): a bare IPv4
/// address, or a quoted string holding an IPv4 address with a port, or `[IPv6]` with or without
/// one. An element without `for=`, or naming an obfuscated or unknown node, is malformed here:
/// it tells nothing to count.
fn forwarded_element(element: &str) -> Option<IpAddr> {
    let value = element.split(';').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("for")
            .then(|| value.trim())
    })?;
    let value = match value.strip_prefix('"') {
        Some(quoted) => quoted.strip_suffix('"')?,
        None => value,
    };
    if let Some(bracketed) = value.strip_prefix('[') {
        let (address, rest) = bracketed.split_once(']')?;
        if !(rest.is_empty() || is_port(rest.strip_prefix(':')?)) {
            return None;
        }
        return address.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let address = match value.split_once(':') {
        Some((address, port)) if is_port(port) => address,
        Some(_) => return None,
        None => value,
    };
    address.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.bytes().all(|byte| byte.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    const PROXY: &str = "10.0.0.5";

    fn proxies() -> TrustedProxies {
        TrustedProxies::parse("10.0.0.0/8, fd00::/8, 192.0.2.1").unwrap()
    }

    #[test]
    fn a_list_of_cidrs_and_addresses_parses_and_nothing_else_does() {
        assert!(TrustedProxies::parse("").unwrap().is_empty());
        assert_eq!(proxies().0.len(), 3);
        assert!(proxies().trusts(ip("192.0.2.1")));
        assert!(!proxies().trusts(ip("192.0.2.2")));
        assert!(proxies().trusts(ip("::ffff:10.1.2.3")), "mapped IPv4");
        for bad in ["10.0.0.0/33", "proxy.example", "10.0.0", "*"] {
            assert!(TrustedProxies::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_untrusted_peers_header_is_ignored() {
        let forwarded = headers(&[("x-forwarded-for", "198.51.100.7")]);
        assert_eq!(
            proxies().client_of(ip("203.0.113.9"), &forwarded),
            ip("203.0.113.9")
        );
        assert_eq!(
            TrustedProxies::default().client_of(ip(PROXY), &forwarded),
            ip(PROXY)
        );
    }

    #[test]
    fn the_right_most_untrusted_entry_is_the_client() {
        // A client that wrote its own entry first cannot choose its address.
        let chain = headers(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7, 10.0.0.9")]);
        assert_eq!(proxies().client_of(ip(PROXY), &chain), ip("198.51.100.7"));
        // Two header lines are one list.
        let split = headers(&[
            ("x-forwarded-for", "1.2.3.4"),
            ("x-forwarded-for", "198.51.100.7"),
        ]);
        assert_eq!(proxies().client_of(ip(PROXY), &split), ip("198.51.100.7"));
        // Every entry trusted: the request began inside, at the left-most.
        let inside = headers(&[("x-forwarded-for", "10.9.9.9, 10.0.0.9")]);
        assert_eq!(proxies().client_of(ip(PROXY), &inside), ip("10.9.9.9"));
        // No header: the proxy itself.
        assert_eq!(proxies().client_of(ip(PROXY), &HeaderMap::new()), ip(PROXY));
    }

    #[test]
    fn forwarded_is_read_when_x_forwarded_for_is_absent() {
        let forwarded = headers(&[(
            "forwarded",
            r#"for=192.0.2.60;proto=https, For="[2001:db8:cafe::17]:4711", for=10.0.0.7"#,
        )]);
        assert_eq!(
            proxies().client_of(ip(PROXY), &forwarded),
            ip("2001:db8:cafe::17")
        );
        let with_port = headers(&[("forwarded", r#"for="198.51.100.3:8443""#)]);
        assert_eq!(
            proxies().client_of(ip(PROXY), &with_port),
            ip("198.51.100.3")
        );
        let both = headers(&[
            ("forwarded", "for=198.51.100.3"),
            ("x-forwarded-for", "198.51.100.4"),
        ]);
        assert_eq!(proxies().client_of(ip(PROXY), &both), ip("198.51.100.4"));
    }

    #[test]
    fn a_malformed_or_oversized_header_means_the_peer() {
        for bad in [
            "198.51.100.7, not-an-address",
            "",
            "198.51.100.7,,",
            "unknown",
        ] {
            let forwarded = headers(&[("x-forwarded-for", bad)]);
            assert_eq!(
                proxies().client_of(ip(PROXY), &forwarded),
                ip(PROXY),
                "{bad:?}"
            );
        }
        for bad in [
            "for=unknown",
            "for=_hidden",
            "proto=https",
            r#"for="[::1"#,
            "for=1.2.3.4:x",
        ] {
            let forwarded = headers(&[("forwarded", bad)]);
            assert_eq!(
                proxies().client_of(ip(PROXY), &forwarded),
                ip(PROXY),
                "{bad:?}"
            );
        }
        // At the limits and one past them.
        let hops = |count: usize| vec!["198.51.100.7"; count].join(",");
        let at = headers(&[("x-forwarded-for", &hops(MAX_ENTRIES))]);
        assert_eq!(proxies().client_of(ip(PROXY), &at), ip("198.51.100.7"));
        let past = headers(&[("x-forwarded-for", &hops(MAX_ENTRIES + 1))]);
        assert_eq!(proxies().client_of(ip(PROXY), &past), ip(PROXY));
        let long = |bytes: usize| {
            let entry = "198.51.100.7";
            let padding = bytes - entry.len();
            format!("{}{entry}", " ".repeat(padding))
        };
        let at = headers(&[("x-forwarded-for", &long(MAX_HEADER_BYTES))]);
        assert_eq!(proxies().client_of(ip(PROXY), &at), ip("198.51.100.7"));
        let past = headers(&[("x-forwarded-for", &long(MAX_HEADER_BYTES + 1))]);
        assert_eq!(proxies().client_of(ip(PROXY), &past), ip(PROXY));
    }
}
