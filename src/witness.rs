//! `hearth witness`: a tlog witness for Hearth's logs (see `hearth_core::witness`), run by
//! whoever a household trusts, apart from the Hearth server.
//!
//! Every command but `serve` takes `--json` and then prints one JSON object. The exit status
//! is 0 on success, 1 on failure and 2 on a usage error.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hearth_core::config::WitnessSettings;
use hearth_core::tlog::note::NoteVerifier;
use hearth_core::witness::key::{STATE_FILE, cosigner};
use hearth_core::witness::{Trust, Witness, WitnessState, http};
use serde_json::json;

use crate::cli::{LogFormat, WitnessArgs, WitnessCommand, usage_error};

pub async fn run(args: WitnessArgs, log_format: Option<LogFormat>) -> ExitCode {
    let json = args.json;
    let command = match args.command {
        WitnessCommand::Serve => Command::Serve(log_format),
        WitnessCommand::Key => Command::Key,
        WitnessCommand::List => Command::List,
        WitnessCommand::Trust {
            log_vkey,
            origin_prefix,
            max_logs,
        } => {
            if let Err(error) = NoteVerifier::parse(&log_vkey) {
                return usage_error(
                    json,
                    &format!(
                        "{log_vkey:?} is not a log's verifier key (name+id+key, type 0x01): {error}"
                    ),
                    "Usage: hearth witness trust --origin-prefix <PREFIX> <LOG_VKEY>",
                );
            }
            if origin_prefix.is_empty() {
                return usage_error(
                    json,
                    "--origin-prefix names the origins to trust, for example hearth.example/hearth/",
                    "Usage: hearth witness trust --origin-prefix <PREFIX> <LOG_VKEY>",
                );
            }
            Command::Trust(Trust {
                vkey: log_vkey,
                origin_prefix,
                max_logs,
            })
        }
    };
    match execute(command, json).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if json {
                println!("{}", json!({ "error": format!("{error:#}") }));
            } else {
                eprintln!("hearth witness: {error:#}");
            }
            ExitCode::FAILURE
        }
    }
}

enum Command {
    Serve(Option<LogFormat>),
    Key,
    Trust(Trust),
    List,
}

async fn execute(command: Command, json: bool) -> anyhow::Result<()> {
    let settings = WitnessSettings::from_env()?;
    let signer = cosigner(&settings.dir, settings.name.as_deref())?;
    let open = || {
        WitnessState::open(&settings.dir.join(STATE_FILE))
            .with_context(|| format!("opening the witness state in {}", settings.dir.display()))
    };
    match command {
        Command::Serve(log_format) => {
            let _logs = hearth_core::telemetry::init_with(
                crate::json_logs(log_format),
                &hearth_core::config::LogSettings::from_env(),
            );
            let vkey = signer.vkey();
            let witness = Arc::new(Witness::new(signer, open()?));
            let listener = tokio::net::TcpListener::bind(settings.addr)
                .await
                .with_context(|| format!("binding {}", settings.addr))?;
            let address = listener.local_addr()?;
            tracing::info!(address = %address, vkey = %vkey, "witness serving");
            eprintln!("hearth witness: serving on http://{address} as {vkey}");
            hearth_core::http_server::serve(
                listener,
                http::router(witness),
                settings.max_connections,
                hearth_core::app::shutdown_signal(),
            )
            .await;
            Ok(())
        }
        Command::Key => {
            let output = json!({
                "name": signer.name(),
                "vkey": signer.vkey(),
                "public_key": STANDARD.encode(signer.public_key()),
            });
            if json {
                println!("{output}");
            } else {
                println!("{}", signer.vkey());
            }
            Ok(())
        }
        Command::Trust(trust) => {
            open()?.trust(&trust)?;
            if json {
                println!("{}", json!({ "trusted": trust }));
            } else {
                println!(
                    "trusting {} for origins under {} (at most {} logs)",
                    trust.vkey, trust.origin_prefix, trust.max_logs
                );
            }
            Ok(())
        }
        Command::List => {
            let state = open()?;
            let trusted = state.trusted()?;
            let logs = state.logs()?;
            if json {
                println!(
                    "{}",
                    json!({
                        "name": signer.name(),
                        "vkey": signer.vkey(),
                        "trusted": trusted,
                        "logs": logs,
                    })
                );
            } else {
                println!("witness {}", signer.vkey());
                for trust in &trusted {
                    println!(
                        "trusts {} under {} (at most {} logs)",
                        trust.vkey, trust.origin_prefix, trust.max_logs
                    );
                }
                for log in &logs {
                    println!(
                        "{} epoch {} size {}{}",
                        log.origin,
                        log.epoch,
                        log.size,
                        if log.evidence > 0 {
                            format!(" ({} refused as evidence)", log.evidence)
                        } else {
                            String::new()
                        }
                    );
                }
            }
            Ok(())
        }
    }
}
