//! `hearth`: the whole product on one local address with an embedded SQLite store.
//!
//! `hearth` (or `hearth serve`) serves every router with the same paths as API Gateway. With no
//! credentials configured it creates private development credentials in the data directory
//! (a judge token, an OAuth client and a signing key) and prints how to use them, so
//! authentication stays on.

use std::process::ExitCode;

use anyhow::bail;
use hearth_core::auth::dev_credentials::{self, DevCredentials};
use hearth_core::config::{Config, CredentialSource, Runtime};

const USAGE: &str = "usage: hearth [serve]";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match words.as_slice() {
        [] | ["serve"] => serve().await,
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(anyhow::anyhow!("unknown arguments {args:?}; {USAGE}")),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One readable line with its causes, never a backtrace, for a person at a terminal.
            eprintln!("hearth: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve() -> anyhow::Result<()> {
    let _logs = hearth_core::telemetry::init();
    let mut config = Config::from_env()?;
    if config.runtime == Runtime::Lambda {
        bail!("the local server does not run under Lambda; deploy functions/mcp instead");
    }
    if config.allow_no_auth {
        tracing::warn!(
            "MCP_ALLOW_NO_AUTH=true: every request is accepted without a token (local development only)"
        );
    } else if config.credential_source == CredentialSource::None {
        let dev = dev_credentials::ensure(&config.data_dir)?;
        let aion_api_key = config.credentials.aion_api_key.take();
        config.credentials = dev.credentials();
        config.credentials.aion_api_key = aion_api_key;
        print_dev_banner(&config, &dev);
    }
    hearth_core::app::load_credentials(&mut config).await;
    let router = hearth_core::app::local_router(&config).await?;
    hearth_core::app::serve(router, &config).await
}

/// Printed to the terminal (never to the log) so a newcomer can call the server at once.
fn print_dev_banner(config: &Config, dev: &DevCredentials) {
    let path = dev_credentials::path(&config.data_dir);
    let resource = config
        .urls
        .as_ref()
        .map(|urls| urls.resource().to_owned())
        .unwrap_or_else(|| format!("http://{}/mcp", config.addr));
    let base = resource.trim_end_matches("/mcp");
    println!(
        "Hearth development credentials (kept in {path}, mode 0600):\n  \
         judge token:   {judge}\n  \
         client id:     {id}\n  \
         client secret: {secret}\n\n\
         Get an access token as Alexa+ does:\n  \
         curl -s -u '{id}:{secret}' {base}/oauth/token \\\n    \
         -d grant_type=client_credentials -d resource={resource}\n\n\
         Or call /mcp with the judge token:\n  \
         curl -s {resource} \\\n    -H 'Authorization: Bearer {judge}' \\\n    \
         -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    \
         -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}'\n",
        path = path.display(),
        judge = dev.judge_token,
        id = dev.client_id,
        secret = dev.client_secret,
    );
}
