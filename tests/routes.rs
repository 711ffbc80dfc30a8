//! Every route in `app::ROUTES` is served by its own function's router and by the local
//! server, and by no other function; `tests/infra` checks the SAM template against the same
//! table.

mod common;

use axum::Router;
use hearth_core::app::{self, ROUTES};
use hearth_core::store::Stores;
use http::StatusCode;

/// Each function's router and the local one, with the directory holding their store.
fn routers() -> (Vec<(&'static str, Router)>, tempfile::TempDir) {
    // A resource with a path prefix, so that the path-inserted metadata names answer.
    // Sign-up open (which needs linking), since its routes answer 404 while it is off.
    let vars = common::settings(&[
        ("MCP_RESOURCE_URL", "http://127.0.0.1:8790/prod/mcp"),
        ("HEARTH_SIGNUP", "open"),
        (
            "MCP_REDIRECT_URIS",
            "https://alexa.example/api/skill/link/M2TEST",
        ),
    ]);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let config = common::config(&vars);
    let (backing, dir, _) = common::backing_with(&config, Stores::shared, None);
    let routers = vec![
        ("mcp", app::mcp_router_with(&config, &backing)),
        ("oauth", app::oauth_router_with(&config, &backing)),
        ("tts", app::tts_router_with(&config, &backing)),
        ("local", app::local_router_with(&config, &backing)),
    ];
    (routers, dir)
}

async fn status(router: &Router, method: &str, path: &str) -> StatusCode {
    common::request(router, method, path, &[], "").await.status
}

#[tokio::test]
async fn each_route_is_served_by_its_function_and_the_local_server_only() {
    let (routers, _store) = routers();
    for route in ROUTES {
        let method = if route.method == "ANY" {
            "POST"
        } else {
            route.method
        };
        let path = sample(route.path);
        for (name, router) in &routers {
            let served = status(router, method, &path).await != StatusCode::NOT_FOUND;
            let expected = (*name == route.function && route.lambda) || *name == "local";
            assert_eq!(
                served, expected,
                "{} {} on the {name} router",
                method, route.path
            );
        }
    }
}

#[tokio::test]
async fn any_routes_answer_other_methods_themselves_and_get_routes_only_get() {
    let (routers, _store) = routers();
    let local = &routers.last().unwrap().1;
    for route in ROUTES {
        let delete = status(local, "DELETE", &sample(route.path)).await;
        assert_eq!(
            delete,
            StatusCode::METHOD_NOT_ALLOWED,
            "DELETE {}",
            route.path
        );
    }
    assert_eq!(
        status(local, "GET", "/nowhere").await,
        StatusCode::NOT_FOUND
    );
}

/// A concrete path for a route path: `{asset}` names a real asset, `{token}` is a link token
/// of the right form (for no household: its page answers 410, not 404), and a path-inserted
/// metadata name carries the issuer's or the resource's path.
fn sample(path: &str) -> String {
    let inserted = if path.starts_with("/.well-known/oauth-authorization-server/") {
        "prod"
    } else {
        "prod/mcp"
    };
    path.replace("{asset}", "app.js")
        .replace("{*path}", inserted)
        .replace(
            "{token}",
            "hh-0123456789abcdef0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        )
}
