//! `hearth`: the whole product on one local address with an embedded SQLite store.
//!
//! `hearth` (or `hearth serve`) serves every router with the same paths as API Gateway. With no
//! token hashes configured it creates a private development token in the data directory and
//! prints it, so authentication stays on.

use std::process::ExitCode;

use anyhow::bail;
use hearth_core::auth::dev_token;
use hearth_core::chain::sha256_hex;
use hearth_core::config::{Config, Runtime};

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
    } else if config.token_hashes.is_empty() {
        let token = dev_token::ensure(&config.data_dir)?;
        let mut hash = [0u8; 32];
        hex::decode_to_slice(sha256_hex(&token), &mut hash)?;
        config.token_hashes.push(hash);
        print_dev_token_banner(&config, &token);
    }
    let router = hearth_core::app::local_router(&config)?;
    hearth_core::app::serve(router, &config).await
}

/// Printed to the terminal (never to the log) so a newcomer can call the server at once.
fn print_dev_token_banner(config: &Config, token: &str) {
    let path = dev_token::path(&config.data_dir);
    println!(
        "Hearth development token (kept in {path}, mode 0600):\n  {token}\n\n\
         Try it:\n  curl -s http://{addr}/mcp \\\n    -H 'Authorization: Bearer {token}' \\\n    \
         -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    \
         -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}'\n",
        path = path.display(),
        addr = config.addr,
    );
}
