//! Lambda entry point for `POST /oauth/token`, `POST /oauth/judge` and the authorization-server
//! metadata. Off Lambda it serves on `HEARTH_ADDR`.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _logs = hearth_core::telemetry::init(&hearth_core::config::LogSettings::from_env());
    let mut config = hearth_core::config::Config::from_env()?;
    hearth_core::app::load_credentials(&mut config).await;
    hearth_core::log_key_start::settle(&mut config, false).await?;
    let router = hearth_core::app::oauth_router(&config).await?;
    hearth_core::app::serve(router, &config).await
}
