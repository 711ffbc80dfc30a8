//! Composition: builds each entry point's router from a [`Config`] and serves it, under the
//! Lambda runtime or as a plain local server. Entry points stay a few lines long.

use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;

use crate::clock::{Clock, SystemClock};
use crate::config::{Config, Runtime, StoreChoice};
use crate::mcp::{HearthServer, McpEndpoint};
use crate::store::ChainStore;
use crate::store::sqlite::SqliteStore;
use crate::store::unconfigured::Unconfigured;
use crate::toolset::Toolset;
use crate::why::{WhyService, WhyToolset};

/// Opens the configured chain store.
pub fn open_store(config: &Config) -> anyhow::Result<Arc<dyn ChainStore>> {
    Ok(match &config.store {
        StoreChoice::Sqlite(path) => Arc::new(
            SqliteStore::open(path)
                .with_context(|| format!("opening the SQLite store at {}", path.display()))?,
        ),
        StoreChoice::Unconfigured => {
            tracing::warn!(
                "no chain store configured; decision tools will report storage unavailable"
            );
            Arc::new(Unconfigured)
        }
    })
}

/// The enabled toolsets over one store and clock.
pub fn toolsets(
    config: &Config,
    store: Arc<dyn ChainStore>,
    clock: Arc<dyn Clock>,
) -> Vec<Arc<dyn Toolset>> {
    let mut toolsets: Vec<Arc<dyn Toolset>> = Vec::new();
    if config.toolsets.iter().any(|name| name == "why") {
        let service = Arc::new(WhyService::new(store, clock));
        toolsets.push(Arc::new(WhyToolset::new(service)));
    }
    toolsets
}

/// The MCP function's router (`/mcp`, `/healthz`) over the given store and clock.
pub fn mcp_router_with(
    config: &Config,
    store: Arc<dyn ChainStore>,
    clock: Arc<dyn Clock>,
) -> Router {
    let server = HearthServer::new(toolsets(config, store, clock));
    let endpoint = McpEndpoint::new(
        server,
        config.bearer_auth(),
        config.allowed_origins.clone(),
        config.allowed_hosts(),
    );
    crate::mcp::router(Arc::new(endpoint))
}

/// The MCP function's router over the configured store and the system clock.
pub fn mcp_router(config: &Config) -> anyhow::Result<Router> {
    Ok(mcp_router_with(
        config,
        open_store(config)?,
        Arc::new(SystemClock),
    ))
}

/// Everything the local server serves on one address, with the same paths as API Gateway.
pub fn local_router(config: &Config) -> anyhow::Result<Router> {
    mcp_router(config)
}

/// Serves `router` under the Lambda runtime, or on `config.addr` until Ctrl-C or SIGTERM.
pub async fn serve(router: Router, config: &Config) -> anyhow::Result<()> {
    match config.runtime {
        Runtime::Lambda => lambda_http::run(router)
            .await
            .map_err(|error| anyhow::anyhow!("Lambda runtime stopped: {error}")),
        Runtime::Local => {
            let listener = tokio::net::TcpListener::bind(config.addr)
                .await
                .with_context(|| format!("binding {}", config.addr))?;
            tracing::info!(address = %listener.local_addr()?, "serving");
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown_signal())
                .await
                .context("serving HTTP")
        }
    }
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
