//! `hearth assistant --member ID [--household H] [--json] WORDS...`: one turn of the
//! model-driven assistant, with this process playing the device (see
//! `hearth_core::assistant`).
//!
//! The device's configuration:
//! - Hearth's `/mcp` is `MCP_RESOURCE_URL` (locally `http://127.0.0.1:8790/mcp` by default);
//! - the bearer token is `HEARTH_TOKEN`, or else the local server's development judge token;
//! - without `--household` the device signs with `COUNTERSIGN_HOST_KEY` and speaks for the
//!   built-in household; with `--household H` it signs with the household device key
//!   `HEARTH_DEVICE_KEY` (`KEY_ID:KEY`, from `hearth admin device-key add H`) and needs
//!   `HEARTH_TOKEN` to be that household's token (`hearth admin token H`);
//! - the model is `COUNTERSIGN_ASSISTANT_MODEL` on Bedrock, with the usual AWS settings.
//!
//! The device remembers, per person, which request's question it last read aloud, in
//! `<data dir>/assistant-device.json`, so that "yes" in the next invocation answers it.

use std::io::IsTerminal;
use std::process::ExitCode;

use hearth_core::assistant::device::{DeviceKey, DeviceMemory, Heard};
use hearth_core::assistant::{self, Assistant, Connection, TurnOutcome};
use hearth_core::auth::dev_credentials;
use hearth_core::config::Config;
use hearth_core::secret::Secret;
use serde_json::json;

use crate::cli::{AssistantArgs, usage_error};

/// What one turn needs from the command line.
struct Args {
    member: String,
    household: Option<String>,
    json: bool,
    words: String,
}

pub async fn run(args: AssistantArgs) -> ExitCode {
    let words = args.words.join(" ");
    if words.trim().is_empty() {
        return usage_error(
            args.json,
            "say something: the words are the last argument",
            "Usage: hearth assistant --member <ID> [WORDS]...",
        );
    }
    let args = Args {
        member: args.member,
        household: args.household,
        json: args.json,
        words,
    };
    // A turn waits on the model a few seconds: say so at a terminal, never in the output.
    if !args.json && std::io::stderr().is_terminal() {
        eprintln!("asking the assistant model…");
    }
    match turn(&args).await {
        Ok(outcome) => {
            if args.json {
                println!("{}", serde_json::to_string(&outcome).unwrap_or_default());
            } else {
                print_human(&outcome);
            }
            ExitCode::SUCCESS
        }
        Err(problem) => {
            if args.json {
                println!("{}", json!({"error": problem}));
            } else {
                eprintln!("hearth assistant: {problem}");
            }
            ExitCode::FAILURE
        }
    }
}

async fn turn(args: &Args) -> Result<TurnOutcome, String> {
    let config = Config::from_env().map_err(|error| error.to_string())?;
    let url = config
        .urls
        .as_ref()
        .map(|urls| urls.resource().to_owned())
        .ok_or("MCP_RESOURCE_URL is not set: the device does not know where Hearth is")?;
    let (token, key, household) = match &args.household {
        Some(household) => {
            let token = config.device.token.as_ref().ok_or(format!(
                "set HEARTH_TOKEN to the household's token (hearth admin token {household})"
            ))?;
            let key = config.device.key.as_ref().ok_or(format!(
                "set HEARTH_DEVICE_KEY to a device key of the household (hearth admin device-key add {household})"
            ))?;
            (
                token.expose().to_owned(),
                DeviceKey::parse_household(key.expose())?,
                household.clone(),
            )
        }
        None => {
            let token = match &config.device.token {
                Some(token) => token.expose().to_owned(),
                None => development_token(&config)?,
            };
            let key = config.host_key().ok_or(
                "COUNTERSIGN_HOST_KEY is not set: the device has no key to sign attestations with",
            )?;
            let household = hearth_core::app::household_data(&config)
                .map_err(|error| format!("{error:#}"))?
                .household
                .household_id
                .clone();
            (token, DeviceKey::host(key), household)
        }
    };
    let memory_path = DeviceMemory::path(&config.data_dir);
    let mut memory = DeviceMemory::load(&memory_path)?;
    let turn_id = hearth_core::random::os_bytes::<8>()
        .map(|bytes| format!("cli-{}", hex::encode(bytes)))
        .map_err(|_| "the OS random source failed")?;
    let heard = Heard {
        member_id: args.member.clone(),
        turn_id,
        words: args.words.clone(),
        answering: memory.questions.get(&args.member).cloned(),
    };
    let assistant = Assistant::new(
        assistant::bedrock_model(&config).await,
        Connection {
            url,
            token: Secret::new(token),
            key,
        },
    );
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let outcome = assistant.turn(&heard, Some(&household), now).await?;
    memory.remember(&args.member, &outcome.question);
    memory.save(&memory_path)?;
    Ok(outcome)
}

/// The judge token of the local server's development credentials, if it made some.
fn development_token(config: &Config) -> Result<String, String> {
    let path = dev_credentials::path(&config.data_dir);
    let bytes = std::fs::read(&path).map_err(|_| {
        format!(
            "set HEARTH_TOKEN, or start the local server first (cargo run), which writes {}",
            path.display()
        )
    })?;
    serde_json::from_slice::<dev_credentials::DevCredentials>(&bytes)
        .map(|credentials| credentials.judge_token)
        .map_err(|_| format!("{} is not a Hearth credentials file", path.display()))
}

fn print_human(outcome: &TurnOutcome) {
    for call in &outcome.tool_calls {
        let marker = if call.is_error { " (error)" } else { "" };
        println!("  tool {} {}{marker}", call.name, call.arguments);
    }
    match &outcome.say {
        // Countersign's words are what the person hears; the model's reply is shown beside.
        Some(say) => {
            println!("device says: {say}");
            println!("(assistant's reply: {})", outcome.reply);
        }
        None => println!("device says: {}", outcome.reply),
    }
}
