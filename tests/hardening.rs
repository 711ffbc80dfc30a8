//! What a stranger can do with nothing but HTTP, on the SQLite store and on DynamoDB (moto):
//! - every route but `/healthz` counts against the caller's address, in one budget, and is
//!   refused with 429 once that budget is spent, passkey pages before any store read;
//! - an IPv6 client is counted by its /64, and an IPv4-mapped address as the IPv4 address it
//!   carries, by every per-address counter (requests, registrations, link-code attempts).
//!
//! Each limit is tried at the limit and one past it.

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use common::{Backend, Harness, Reply, request_from};
use hearth_core::app::{Limit, ROUTES};
use hearth_core::clock::Clock;
use hearth_core::oauth::{LINK_CODE_ATTEMPTS, LINK_CODE_WINDOW_MS, REGISTRATIONS_PER_WINDOW};
use hearth_core::ratelimit::{Admission, AttemptLimiter};
use hearth_testkit::moto::Moto;
use http::StatusCode;
use serde_json::json;

/// Requests one address may send in a minute, in these tests.
const PER_ADDRESS: u32 = 3;
/// The passkey pages' own origin on the local default address.
const PAGES_ORIGIN: &str = "http://localhost:8790";

fn limited() -> hearth_core::config::Config {
    common::config_with(&[("HEARTH_RATE_LIMIT_PER_IP", "3")])
}

async fn harness(backend: Backend, config: &hearth_core::config::Config) -> Harness {
    common::operated(
        config,
        backend,
        Moto::shared().dynamodb_client(),
        "hearth-hardening",
    )
    .await
    .0
}

fn peer(ip: impl Into<IpAddr>) -> SocketAddr {
    SocketAddr::new(ip.into(), 40_000)
}

/// A concrete path for a route path: `{asset}` names a real asset, and `{token}` a link token
/// of the right form for a household that does not exist.
fn sample(path: &str) -> String {
    path.replace("{asset}", "app.js")
        .replace("{*path}", "mcp")
        .replace(
            "{token}",
            "hh-0123456789abcdef0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        )
}

/// The consent page without its parameters: a cheap request that every budget counts.
async fn authorize(h: &Harness, from: SocketAddr) -> Reply {
    request_from(&h.router, from, "GET", "/oauth/authorize", &[], "").await
}

/// Spends `from`'s whole budget at the consent page, each request answered (the last one at
/// the limit).
async fn spend_the_minute(h: &Harness, from: SocketAddr) {
    for n in 1..=PER_ADDRESS {
        let reply = authorize(h, from).await;
        assert_ne!(
            reply.status,
            StatusCode::TOO_MANY_REQUESTS,
            "request {n} of {PER_ADDRESS} is within the limit"
        );
    }
}

async fn every_route_but_healthz_is_cut_off_with_its_address(backend: Backend) {
    let unlimited: Vec<&str> = ROUTES
        .iter()
        .filter(|route| route.limited_by == Limit::Nothing)
        .map(|route| route.path)
        .collect();
    assert_eq!(unlimited, ["/healthz"]);
    let h = harness(backend, &limited()).await;
    for (index, route) in ROUTES.iter().enumerate() {
        let from = peer(Ipv4Addr::new(198, 51, 100, index as u8 + 1));
        spend_the_minute(&h, from).await;
        let method = match route.method {
            "ANY" => "POST",
            method => method,
        };
        let path = sample(route.path);
        let reply = request_from(&h.router, from, method, &path, &[], "").await;
        if route.limited_by == Limit::Nothing {
            assert_eq!(
                reply.status,
                StatusCode::OK,
                "{} is never limited",
                route.path
            );
        } else {
            assert_eq!(
                reply.status,
                StatusCode::TOO_MANY_REQUESTS,
                "{method} {} after the address's budget is spent: {}",
                route.path,
                reply.raw
            );
            assert!(
                reply.header("retry-after").parse::<u64>().is_ok(),
                "{method} {} says when to retry",
                route.path
            );
        }
    }
}

async fn passkey_pages_spend_the_same_budget_as_the_consent_page(backend: Backend) {
    let h = harness(backend, &limited()).await;
    let from = peer(Ipv4Addr::new(203, 0, 113, 7));
    let approve = sample("/passkeys/approve/{token}");
    for n in 1..=PER_ADDRESS {
        let reply = request_from(&h.router, from, "GET", &approve, &[], "").await;
        assert_eq!(reply.status, StatusCode::GONE, "page {n}: {}", reply.raw);
    }
    assert_eq!(
        authorize(&h, from).await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "three approval pages spent the address's minute"
    );
}

async fn an_ipv6_64_shares_one_budget(backend: Backend) {
    let h = harness(backend, &limited()).await;
    for host in 1..=u16::try_from(PER_ADDRESS).unwrap() {
        let reply = authorize(&h, peer(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 0, 0, 0, host))).await;
        assert_ne!(
            reply.status,
            StatusCode::TOO_MANY_REQUESTS,
            "address {host}"
        );
    }
    let same_network = peer(Ipv6Addr::new(
        0x2001, 0xdb8, 1, 2, 0xffff, 0xffff, 0xffff, 0xffff,
    ));
    assert_eq!(
        authorize(&h, same_network).await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "a fourth address in the same /64 is one past the limit"
    );
    let next_network = peer(Ipv6Addr::new(0x2001, 0xdb8, 1, 3, 0, 0, 0, 1));
    assert_ne!(
        authorize(&h, next_network).await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "the next /64 has a budget of its own"
    );
}

async fn an_ipv4_mapped_address_counts_as_its_ipv4_address(backend: Backend) {
    let h = harness(backend, &limited()).await;
    let ipv4 = Ipv4Addr::new(192, 0, 2, 9);
    for _ in 0..PER_ADDRESS {
        let reply = authorize(&h, peer(ipv4.to_ipv6_mapped())).await;
        assert_ne!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    }
    assert_eq!(
        authorize(&h, peer(ipv4)).await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "::ffff:192.0.2.9 and 192.0.2.9 are one client"
    );
}

async fn registrations_are_counted_by_network(backend: Backend) {
    let config = common::config_with(&[]);
    let h = harness(backend, &config).await;
    let register = |host: u16| {
        let router = h.router.clone();
        async move {
            let body = json!({
                "client_name": "Inspector",
                "redirect_uris": ["https://inspector.example/cb"],
                "token_endpoint_auth_method": "none",
            });
            request_from(
                &router,
                peer(Ipv6Addr::new(0x2001, 0xdb8, 5, 6, 0, 0, 0, host)),
                "POST",
                "/oauth/register",
                &[("content-type", "application/json")],
                &body.to_string(),
            )
            .await
        }
    };
    for host in 1..=u16::try_from(REGISTRATIONS_PER_WINDOW).unwrap() {
        let reply = register(host).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{host}: {}", reply.raw);
    }
    let past = register(0x4000).await;
    assert_eq!(
        past.status,
        StatusCode::TOO_MANY_REQUESTS,
        "registration {} from the same /64: {}",
        REGISTRATIONS_PER_WINDOW + 1,
        past.raw
    );
}

async fn link_code_attempts_are_counted_by_network(backend: Backend) {
    let config = common::config_with(&[]);
    let (h, _, stores) = common::operated_with_stores(
        &config,
        backend,
        Moto::shared().dynamodb_client(),
        "hearth-hardening",
    )
    .await;
    let clock: Arc<dyn Clock> = h.clock.clone();
    let attempts = AttemptLimiter::new(
        stores.counters.clone(),
        clock,
        "link",
        LINK_CODE_ATTEMPTS,
        LINK_CODE_WINDOW_MS,
    );
    for host in 1..=u16::try_from(LINK_CODE_ATTEMPTS).unwrap() {
        let from = IpAddr::from(Ipv6Addr::new(0x2001, 0xdb8, 7, 8, host, 0, 0, 1));
        assert_eq!(attempts.attempt(Some(from)).await, Admission::Admitted);
    }
    let past = IpAddr::from(Ipv6Addr::new(0x2001, 0xdb8, 7, 8, 0xabcd, 0, 0, 9));
    assert!(
        matches!(
            attempts.attempt(Some(past)).await,
            Admission::Limited { .. }
        ),
        "attempt {} from the same /64",
        LINK_CODE_ATTEMPTS + 1
    );
}

/// Behind a proxy in `HEARTH_TRUSTED_PROXIES`, each forwarded client has its own budget; a
/// client that writes the header itself, from anywhere else, is counted by its own address.
async fn a_trusted_proxy_names_the_client_and_nobody_else_does(backend: Backend) {
    let proxy = peer(Ipv4Addr::new(10, 0, 0, 2));
    let behind_a_proxy = common::config_with(&[
        ("HEARTH_RATE_LIMIT_PER_IP", "3"),
        ("HEARTH_TRUSTED_PROXIES", "10.0.0.0/24"),
    ]);
    let h = harness(backend, &behind_a_proxy).await;
    let through = |client: &'static str| {
        let router = h.router.clone();
        async move {
            let forwarded = [("x-forwarded-for", client)];
            request_from(&router, proxy, "GET", "/oauth/authorize", &forwarded, "").await
        }
    };
    for _ in 0..PER_ADDRESS {
        assert_ne!(
            through("198.51.100.1").await.status,
            StatusCode::TOO_MANY_REQUESTS
        );
    }
    assert_eq!(
        through("198.51.100.1").await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_ne!(
        through("198.51.100.2").await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "another client behind the same proxy has its own budget"
    );
    // A client cannot choose its address by writing an entry of its own to the left.
    assert_eq!(
        through("203.0.113.50, 198.51.100.1").await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    // From anyone else, the header is ignored.
    let stranger = peer(Ipv4Addr::new(203, 0, 113, 5));
    for n in 0..=PER_ADDRESS {
        let client = format!("198.51.100.{}", 100 + n);
        let forwarded = [("x-forwarded-for", client.as_str())];
        let reply = request_from(
            &h.router,
            stranger,
            "GET",
            "/oauth/authorize",
            &forwarded,
            "",
        )
        .await;
        assert_eq!(
            reply.status == StatusCode::TOO_MANY_REQUESTS,
            n == PER_ADDRESS,
            "request {} from one address writing a new header each time",
            n + 1
        );
    }
}

on_both_stores!(
    every_route_but_healthz_is_cut_off_with_its_address,
    passkey_pages_spend_the_same_budget_as_the_consent_page,
    an_ipv6_64_shares_one_budget,
    an_ipv4_mapped_address_counts_as_its_ipv4_address,
    registrations_are_counted_by_network,
    link_code_attempts_are_counted_by_network,
    a_trusted_proxy_names_the_client_and_nobody_else_does,
);

/// On DynamoDB, where every store call is a request that can be counted: a cut-off address
/// costs the counters' one call on a passkey route, and its account is never read.
#[tokio::test]
async fn a_cut_off_address_reads_no_account_on_a_passkey_route() {
    let (client, calls) = Moto::shared().counted_dynamodb_client();
    let (h, _) = common::operated(&limited(), Backend::Dynamo, client, "hearth-hardening").await;
    let from = peer(Ipv4Addr::new(203, 0, 113, 99));
    spend_the_minute(&h, from).await;
    calls.take();
    let origin = [
        ("origin", PAGES_ORIGIN),
        ("content-type", "application/json"),
    ];
    for (method, route) in [
        ("GET", "/passkeys/approve/{token}"),
        ("POST", "/passkeys/approve/{token}/challenge"),
        ("POST", "/passkeys/approve/{token}"),
        ("GET", "/passkeys/enrol/{token}"),
        ("POST", "/passkeys/enrol/{token}/options"),
        ("GET", "/passkeys/confirm/{token}"),
        ("POST", "/passkeys/confirm/{token}/challenge"),
        ("POST", "/passkeys/push/{token}"),
    ] {
        let path = sample(route);
        let reply = request_from(&h.router, from, method, &path, &origin, "{}").await;
        assert_eq!(
            reply.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{method} {route}: {}",
            reply.raw
        );
        assert_eq!(
            calls.take(),
            1,
            "{method} {route} asked the counters and nothing else"
        );
    }
}
