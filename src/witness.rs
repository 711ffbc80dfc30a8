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
use hearth_core::witness::{DEFAULT_MAX_LOGS, Trust, Witness, WitnessState, http};
use serde_json::json;

pub const USAGE: &str = "\
usage: hearth witness COMMAND
  serve                             (POST /add-checkpoint, GET /<sha256 of origin>/checkpoint,
                                     GET /events, on HEARTH_WITNESS_ADDR)
  key [--json]                      (this witness's name and verifier key, for a policy)
  trust LOG_VKEY --origin-prefix PREFIX [--max-logs N] [--json]
                                    (cosign that log key's checkpoints under PREFIX; N logs
                                     at most under it, default 4096)
  list [--json]                     (what it trusts, and the latest size of each log)
Settings: HEARTH_WITNESS_ADDR (default 127.0.0.1:8788), HEARTH_WITNESS_DIR (default
./.hearth-witness: its key and state), HEARTH_WITNESS_NAME (default: derived from its key).";

enum Command {
    Serve,
    Key,
    Trust(Trust),
    List,
}

fn parse(args: &[&str]) -> Result<(Command, bool), String> {
    let json = args.contains(&"--json");
    let words: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
    let command = match words.as_slice() {
        ["serve"] if !json => Command::Serve,
        ["key"] => Command::Key,
        ["list"] => Command::List,
        ["trust", vkey, rest @ ..] => {
            let mut prefix = None;
            let mut max_logs = DEFAULT_MAX_LOGS;
            let mut rest = rest.iter();
            while let Some(flag) = rest.next() {
                match *flag {
                    "--origin-prefix" => prefix = rest.next().map(|p| (*p).to_owned()),
                    "--max-logs" => {
                        max_logs = rest
                            .next()
                            .and_then(|n| n.parse().ok())
                            .filter(|n| *n >= 1)
                            .ok_or("--max-logs takes a whole number of at least 1")?;
                    }
                    other => return Err(format!("unknown argument {other:?}")),
                }
            }
            let origin_prefix = prefix
                .filter(|p| !p.is_empty())
                .ok_or("trust needs --origin-prefix PREFIX, for example hearth.example/hearth/")?;
            NoteVerifier::parse(vkey).map_err(|error| {
                format!("{vkey:?} is not a log's verifier key (name+id+key, type 0x01): {error}")
            })?;
            Command::Trust(Trust {
                vkey: (*vkey).to_owned(),
                origin_prefix,
                max_logs,
            })
        }
        _ => return Err("unknown or incomplete command".into()),
    };
    Ok((command, json))
}

pub async fn run(args: &[&str]) -> ExitCode {
    if matches!(args, [] | ["-h" | "--help" | "help"]) {
        println!("{USAGE}");
        return if args.is_empty() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    let (command, json) = match parse(args) {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("hearth witness: {error}\n{USAGE}");
            return ExitCode::from(2);
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

async fn execute(command: Command, json: bool) -> anyhow::Result<()> {
    let settings = WitnessSettings::from_env()?;
    let signer = cosigner(&settings.dir, settings.name.as_deref())?;
    let open = || {
        WitnessState::open(&settings.dir.join(STATE_FILE))
            .with_context(|| format!("opening the witness state in {}", settings.dir.display()))
    };
    match command {
        Command::Serve => {
            let _logs = hearth_core::telemetry::init();
            let vkey = signer.vkey();
            let witness = Arc::new(Witness::new(signer, open()?));
            let listener = tokio::net::TcpListener::bind(settings.addr)
                .await
                .with_context(|| format!("binding {}", settings.addr))?;
            let address = listener.local_addr()?;
            tracing::info!(address = %address, vkey = %vkey, "witness serving");
            eprintln!("hearth witness: serving on http://{address} as {vkey}");
            axum::serve(listener, http::router(witness))
                .with_graceful_shutdown(hearth_core::app::shutdown_signal())
                .await
                .context("serving HTTP")
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
