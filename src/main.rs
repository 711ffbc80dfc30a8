//! `hearth`: the whole product on one local address with an embedded SQLite store.
//!
//! `hearth admin` manages household accounts (see `admin.rs`). `hearth assistant` runs one
//! turn of the model-driven assistant, playing the device (see `assistant.rs`). `hearth witness`
//! runs a witness that cosigns Hearth's log checkpoints, apart from the server (see
//! `witness.rs`).
//!
//! `hearth` (or `hearth serve`) serves every router with the same paths as API Gateway. With no
//! credentials configured it creates private development credentials in the data directory
//! (a judge token, an OAuth client and a signing key) and prints how to use them, so
//! authentication stays on.

mod admin;
mod assistant;
mod cli;
mod package_files;
mod witness;

use std::process::ExitCode;

use anyhow::bail;
use cli::{Command, EvalArgs, JudgeName, ServeArgs, SplitName};
use hearth_core::auth::dev_credentials::{self, DevCredentials};
use hearth_core::config::{Config, CredentialSource, LogSettings, Runtime};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = cli::parse(std::env::args_os());
    let log_format = cli.log_format;
    let outcome = match cli.command {
        None => serve(ServeArgs::default(), log_format).await,
        Some(Command::Serve(args)) => serve(args, log_format).await,
        Some(Command::Admin(args)) => return admin::run(args).await,
        Some(Command::Assistant(args)) => return assistant::run(args).await,
        Some(Command::Witness(args)) => return witness::run(args, log_format).await,
        Some(Command::Doctor(args)) => return doctor(args).await,
        Some(Command::Eval(args)) => {
            let json = args.json;
            let outcome = eval(args).await;
            if json && let Err(error) = &outcome {
                // Every `--json` answer is one JSON object, failures included.
                println!("{}", serde_json::json!({"error": format!("{error:#}")}));
                return ExitCode::FAILURE;
            }
            outcome
        }
        Some(Command::Routes) => {
            // Every route and the function serving it, as JSON: what the template must route.
            println!(
                "{}",
                serde_json::to_string_pretty(hearth_core::app::ROUTES).unwrap_or_default()
            );
            Ok(())
        }
        Some(Command::Reference { page, update }) => reference(page, update),
        Some(Command::Healthcheck { url }) => return healthcheck(url).await,
        Some(Command::PackageFiles { dir }) => package_files::write(&dir),
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

/// `hearth reference`: prints a generated reference page or table, or with `--update` writes
/// them all into the manual (whole pages, or the tables between their markers).
fn reference(page: Option<cli::ReferencePage>, update: bool) -> anyhow::Result<()> {
    use cli::{Generated, ReferencePage};
    if !update {
        let (Generated::Page(text) | Generated::Table(_, text)) = page
            .expect("clap requires a page without --update")
            .generate()?;
        print!("{text}");
        return Ok(());
    }
    for page in ReferencePage::ALL {
        let path = page.path();
        let text = match page.generate()? {
            Generated::Page(text) => text,
            Generated::Table(name, table) => {
                let current = std::fs::read_to_string(path)
                    .map_err(|error| anyhow::anyhow!("reading {path}: {error}"))?;
                hearth_core::config::reference::splice(&current, name, &table).ok_or_else(|| {
                    anyhow::anyhow!("{path} has no <!-- generated:{name}:begin/end --> markers")
                })?
            }
        };
        std::fs::write(path, text).map_err(|error| anyhow::anyhow!("writing {path}: {error}"))?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

/// Whether log lines are JSON: when asked, and by default whenever stderr is not a terminal
/// (a service manager, a file, CloudWatch).
fn json_logs(format: Option<cli::LogFormat>) -> bool {
    use std::io::IsTerminal;
    match format {
        Some(cli::LogFormat::Json) => true,
        Some(cli::LogFormat::Text) => false,
        None => !std::io::stderr().is_terminal(),
    }
}

async fn serve(args: ServeArgs, log_format: Option<cli::LogFormat>) -> anyhow::Result<()> {
    let _logs = hearth_core::telemetry::init_with(json_logs(log_format), &LogSettings::from_env());
    let mut config = Config::from_env_with(&args.settings())?;
    if config.runtime == Runtime::Lambda {
        bail!("the local server does not run under Lambda; deploy functions/mcp instead");
    }
    if config.allow_no_auth {
        tracing::warn!(
            "MCP_ALLOW_NO_AUTH=true: every request is accepted without a token (local development only)"
        );
    }
    let mut dev = None;
    if !config.allow_no_auth && config.credential_source == CredentialSource::None {
        let generated = dev_credentials::existing_or_new(&config.data_dir)?;
        // The development credentials stand in for the OAuth client, the judge token and the
        // JWT secret only: every other key the environment sets is used as a deployment uses
        // it, the log keys included (a log key given for a rotation must not be silently
        // replaced by the generated one).
        let credentials = generated.0.credentials();
        config.credentials.client_id = credentials.client_id;
        config.credentials.client_secret = credentials.client_secret;
        config.credentials.jwt_secret = credentials.jwt_secret;
        config.credentials.judge_token_hashes = credentials.judge_token_hashes;
        dev = Some(generated);
    }
    if config.demo_device {
        tracing::warn!(
            "HEARTH_DEMO_DEVICE=1: POST /demo/device signs speaker attestations for any token holder (local development only)"
        );
    }
    hearth_core::app::load_credentials(&mut config).await;
    hearth_core::log_key_start::settle(&mut config, args.new_log_key).await?;
    let router = hearth_core::app::local_router(&config).await?;
    // Written once the server is sure to start (its settings and store are good), and before
    // it accepts a connection, so that whoever reaches it can read them.
    if let Some((dev, true)) = &dev {
        dev_credentials::save_new(&config.data_dir, dev)?;
    }
    let listener = hearth_core::app::bind(&config).await?;
    // Printed once the address is bound, so a server that cannot start shows no credentials.
    if let Some((dev, _)) = &dev {
        print_dev_banner(&config, dev);
    }
    hearth_core::app::serve_on(listener, router, &config).await
}

/// `hearth healthcheck [URL]`: 0 when the server's /healthz answers 200 within 5 s. Without
/// a URL it asks the address `hearth serve` listens on (`HEARTH_ADDR`), over loopback when
/// that is every address.
async fn healthcheck(url: Option<String>) -> ExitCode {
    let url = url.unwrap_or_else(|| {
        let addr: std::net::SocketAddr = std::env::var("HEARTH_ADDR")
            .ok()
            .and_then(|addr| addr.parse().ok())
            .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 8790)));
        let ip = match addr.ip() {
            std::net::IpAddr::V4(ip) if ip.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::IpAddr::V6(ip) if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
            ip => ip,
        };
        format!(
            "http://{}/healthz",
            std::net::SocketAddr::new(ip, addr.port())
        )
    });
    // No proxy: an engine may pass HTTP_PROXY into a container, and reqwest would send even a
    // loopback request through it.
    let answer = reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .map_err(|error| error.to_string())
        .map(|client| client.get(&url));
    let status = match answer {
        Ok(request) => request
            .send()
            .await
            .map(|answer| answer.status())
            .map_err(|error| {
                if error.is_timeout() {
                    "timed out".to_owned()
                } else {
                    "no answer".to_owned()
                }
            }),
        Err(error) => Err(error),
    };
    match status {
        Ok(status) if status == reqwest::StatusCode::OK => {
            println!("{url}: healthy");
            ExitCode::SUCCESS
        }
        Ok(status) => {
            eprintln!("hearth healthcheck: {url} answered {status}");
            ExitCode::FAILURE
        }
        Err(reason) => {
            eprintln!("hearth healthcheck: {url}: {reason}");
            ExitCode::FAILURE
        }
    }
}

/// `hearth doctor`: every check, as lines for a person or one JSON object; exit 1 when one
/// failed.
async fn doctor(args: cli::DoctorArgs) -> ExitCode {
    use hearth_core::doctor::Status;
    let report = hearth_core::doctor::examine(&args.settings.settings(), args.aws).await;
    if args.json {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else {
        for check in &report.checks {
            let status = match check.status {
                Status::Ok => "ok",
                Status::Warn => "warn",
                Status::Fail => "FAIL",
                Status::Skip => "skip",
            };
            println!("{status:<5} {:<13} {}", check.name, check.detail);
            if let Some(fix) = &check.fix {
                println!("{:19} fix: {fix}", "");
            }
        }
    }
    if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
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
         Or open the simulated device at {base}/demo and paste the judge token\n  \
         (purchases need HEARTH_DEMO_DEVICE=1 and COUNTERSIGN_HOST_KEY; see the manual, The demo).\n\n\
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

/// `hearth eval`: runs a judge over a cases file (`eval/cases.jsonl` by default, from the
/// project root), or one split of it, and prints the table, or JSON with `--json`; `--save DIR`
/// also writes the JSON report (the cases' and prompt's hashes and every verdict) there. At a
/// terminal it shows its progress on stderr.
async fn eval(args: EvalArgs) -> anyhow::Result<()> {
    use hearth_core::chain::sha256_hex;
    use hearth_core::countersign::eval::{Split, parse_cases, run_with_progress, select, table};
    use hearth_core::countersign::judge::Judge;
    use hearth_core::countersign::judge::model::prompt_sha256;
    use std::io::IsTerminal;

    let split = args.split.map(|split| match split {
        SplitName::Dev => Split::Dev,
        SplitName::Test => Split::Test,
    });
    // The judge is built as the server builds the one COUNTERSIGN_JUDGE names, from the same
    // settings, so that what is measured is what runs.
    let config = Config::from_lookup(|name| match name {
        "COUNTERSIGN_JUDGE" => Some(args.judge.setting().to_owned()),
        _ => std::env::var(name).ok(),
    })?;
    let judge: std::sync::Arc<dyn Judge> = hearth_core::app::judge(&config);
    let prompt = (args.judge != JudgeName::Rules).then(prompt_sha256);
    // What ran: the model's name, and what an OpenAI-compatible server says it serves (or
    // why it did not say).
    let (model, models) = match hearth_core::app::openai_judge(&config) {
        Some(openai) => (
            Some(openai.model().to_owned()),
            Some(
                openai
                    .models()
                    .await
                    .unwrap_or_else(|reason| serde_json::json!({ "error": reason })),
            ),
        ),
        None if args.judge == JudgeName::Bedrock => (Some(config.judge.model.clone()), None),
        None => (None, None),
    };
    let cases_path = args.cases.display().to_string();
    let text = std::fs::read_to_string(&args.cases)
        .map_err(|error| anyhow::anyhow!("reading {cases_path}: {error}"))?;
    let cases = parse_cases(&text).map_err(|error| anyhow::anyhow!("{cases_path}: {error}"))?;
    let cases = select(cases, split);
    if cases.is_empty() {
        bail!("{cases_path} has no cases in that split");
    }
    let terminal = std::io::stderr().is_terminal();
    let progress = |done: usize, total: usize| {
        if terminal {
            eprint!("\rjudging case {done} of {total}");
            if done == total {
                eprintln!();
            }
        }
    };
    let mut report = run_with_progress(
        judge.as_ref(),
        &cases,
        split,
        sha256_hex(&text),
        prompt,
        &progress,
    )
    .await;
    report.model = model;
    report.models = models;
    let report_json = serde_json::to_string_pretty(&report)?;
    if let Some(dir) = args.save {
        std::fs::create_dir_all(&dir)?;
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs();
        let part = match split {
            Some(Split::Dev) => "dev",
            Some(Split::Test) => "test",
            None => "all",
        };
        let name = format!("{}-{part}-{seconds}.json", report.judge);
        let path = dir.join(name);
        std::fs::write(&path, &report_json)?;
        eprintln!("saved {}", path.display());
    }
    if args.json {
        println!("{report_json}");
    } else {
        print!("{}", table(&report));
    }
    Ok(())
}
