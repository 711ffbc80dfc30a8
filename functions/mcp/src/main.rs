//! Lambda entry point for `POST /mcp`, `GET /healthz`. Off Lambda it serves on `HEARTH_ADDR`.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _logs = hearth_core::telemetry::init();
    let config = hearth_core::config::Config::from_env()?;
    let router = hearth_core::app::mcp_router(&config)?;
    hearth_core::app::serve(router, &config).await
}
