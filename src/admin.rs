//! `hearth admin`: the operator's command line over the configured store (the SQLite file
//! locally, or the DynamoDB table `HEARTH_TABLE` names with ordinary AWS credentials).
//!
//! Every command takes `--json` and then prints exactly one JSON object on stdout: the result,
//! or `{"error": …}` (with `"usage"` for a usage error). The exit status is 0 on success, 1 on
//! failure and 2 on a usage error. Nothing secret is printed except what a command exists to
//! show (a device key, a token, a link code), once.

use std::process::ExitCode;

use hearth_core::admin::{AdminError, TOKEN_DAYS_DEFAULT, TOKEN_DAYS_MAX};
use hearth_core::auth::dev_credentials;
use hearth_core::config::{Config, CredentialSource};
use hearth_core::transparency::LogKind;
use serde_json::{Value, json};

pub const USAGE: &str = "\
usage: hearth admin COMMAND [--json]
  household create NAME [--policy FILE]
  household list
  household show HOUSEHOLD
  household set-policy HOUSEHOLD FILE
  household delete HOUSEHOLD
  household adopt --subject-scope HASH --household-id OLD [--name NAME]
  device-key add HOUSEHOLD
  device-key list HOUSEHOLD
  device-key revoke HOUSEHOLD KEY_ID
  token HOUSEHOLD [--days N]        (N from 1 to 90, default 30)
  link-code HOUSEHOLD               (one-time, for the consent page; 15 minutes)
  log-key                           (the verifier key of the households' logs)
  log-key re-sign (--all | HOUSEHOLD)
                                    (sign log heads again with the current key and host)
  log reset HOUSEHOLD --yes [--log decisions|ledger]
                                    (start the household's logs anew; see the manual)
  client add NAME --redirect-uri URI [--redirect-uri URI ...] [--public]
                                    (an OAuth client; its secret is shown once)
  client list
  client delete CLIENT_ID           (its codes and refresh tokens stop at once)
  unlink HOUSEHOLD
HOUSEHOLD is the household id that `household create` printed.";

/// One parsed command.
#[derive(Debug)]
enum Command {
    Create {
        name: String,
        policy: Option<String>,
    },
    List,
    Show(String),
    SetPolicy {
        household: String,
        file: String,
    },
    Delete(String),
    Adopt {
        scope: String,
        old: String,
        name: Option<String>,
    },
    KeyAdd(String),
    KeyList(String),
    KeyRevoke {
        household: String,
        key_id: String,
    },
    Token {
        household: String,
        days: u32,
    },
    LinkCode(String),
    LogKey,
    /// `None`: every household.
    ResignLogs(Option<String>),
    ResetLog {
        household: String,
        /// `None`: both logs.
        only: Option<LogKind>,
    },
    ClientAdd {
        name: String,
        redirect_uris: Vec<String>,
        public: bool,
    },
    ClientList,
    ClientDelete(String),
    Unlink(String),
}

/// Why the command line was not understood.
struct Usage(String);

pub async fn run(args: &[&str]) -> ExitCode {
    let json = args.contains(&"--json");
    let words: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
    let command = match parse(&words) {
        Ok(command) => command,
        Err(Usage(problem)) => {
            if json {
                println!("{}", json!({"error": problem, "usage": USAGE}));
            } else {
                eprintln!("hearth admin: {problem}\n{USAGE}");
            }
            return ExitCode::from(2);
        }
    };
    match execute(command).await {
        Ok(result) => {
            if json {
                println!("{result}");
            } else {
                print_human(&result, 0);
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            let message = format!("{error:#}");
            if json {
                println!("{}", json!({"error": message}));
            } else {
                eprintln!("hearth admin: {message}");
            }
            ExitCode::FAILURE
        }
    }
}

fn parse(words: &[&str]) -> Result<Command, Usage> {
    let usage = |problem: &str| Err(Usage(problem.to_owned()));
    Ok(match words {
        ["household", "create", rest @ ..] => {
            let (positional, flags) = split_flags(rest, &["--policy"])?;
            let [name] = positional.as_slice() else {
                return usage("household create takes one NAME (quote a name with spaces)");
            };
            Command::Create {
                name: name.to_string(),
                policy: flags.get("--policy").cloned(),
            }
        }
        ["household", "list"] => Command::List,
        ["household", "show", household] => Command::Show(household.to_string()),
        ["household", "set-policy", household, file] => Command::SetPolicy {
            household: household.to_string(),
            file: file.to_string(),
        },
        ["household", "delete", household] => Command::Delete(household.to_string()),
        ["household", "adopt", rest @ ..] => {
            let (positional, flags) =
                split_flags(rest, &["--subject-scope", "--household-id", "--name"])?;
            if !positional.is_empty() {
                return usage("household adopt takes only its flags");
            }
            let (Some(scope), Some(old)) =
                (flags.get("--subject-scope"), flags.get("--household-id"))
            else {
                return usage("household adopt needs --subject-scope HASH and --household-id OLD");
            };
            Command::Adopt {
                scope: scope.clone(),
                old: old.clone(),
                name: flags.get("--name").cloned(),
            }
        }
        ["device-key", "add", household] => Command::KeyAdd(household.to_string()),
        ["device-key", "list", household] => Command::KeyList(household.to_string()),
        ["device-key", "revoke", household, key_id] => Command::KeyRevoke {
            household: household.to_string(),
            key_id: key_id.to_string(),
        },
        ["token", rest @ ..] => {
            let (positional, flags) = split_flags(rest, &["--days"])?;
            let [household] = positional.as_slice() else {
                return usage("token takes one HOUSEHOLD");
            };
            let days = match flags.get("--days") {
                None => TOKEN_DAYS_DEFAULT,
                Some(days) => match days.parse::<u32>() {
                    Ok(days) if (1..=TOKEN_DAYS_MAX).contains(&days) => days,
                    _ => {
                        return usage(&format!(
                            "--days is a whole number from 1 to {TOKEN_DAYS_MAX}"
                        ));
                    }
                },
            };
            Command::Token {
                household: household.to_string(),
                days,
            }
        }
        ["link-code", household] => Command::LinkCode(household.to_string()),
        ["log-key"] => Command::LogKey,
        ["log-key", "re-sign", "--all"] => Command::ResignLogs(None),
        ["log-key", "re-sign", household] if !household.starts_with("--") => {
            Command::ResignLogs(Some(household.to_string()))
        }
        ["log-key", "re-sign", ..] => {
            return usage("log-key re-sign takes --all or one HOUSEHOLD");
        }
        ["client", "add", rest @ ..] => parse_client_add(rest)?,
        ["client", "list"] => Command::ClientList,
        ["client", "delete", client_id] => Command::ClientDelete(client_id.to_string()),
        ["log", "reset", rest @ ..] => {
            let confirmed = rest.contains(&"--yes");
            let rest: Vec<&str> = rest.iter().copied().filter(|w| *w != "--yes").collect();
            let (positional, flags) = split_flags(&rest, &["--log"])?;
            let [household] = positional.as_slice() else {
                return usage("log reset takes one HOUSEHOLD");
            };
            let only = match flags.get("--log").map(String::as_str) {
                None => None,
                Some(name) => match LogKind::parse(name) {
                    Some(kind) => Some(kind),
                    None => return usage("--log is decisions or ledger"),
                },
            };
            if !confirmed {
                return usage(&format!(
                    "log reset starts {} of household {household} anew: kept proofs of the old log will check as \"the log was replaced\". Run it again with --yes to do it",
                    match only {
                        None => "both logs".to_owned(),
                        Some(kind) => format!("the {} log", kind.as_str()),
                    }
                ));
            }
            Command::ResetLog {
                household: household.to_string(),
                only,
            }
        }
        ["unlink", household] => Command::Unlink(household.to_string()),
        [] => return usage("no command given"),
        _ => {
            return usage(&format!(
                "unknown or incomplete command {:?}",
                words.join(" ")
            ));
        }
    })
}

/// `client add NAME --redirect-uri URI [--redirect-uri URI ...] [--public]`: the one flag that
/// repeats, and the one that takes no value, in any order.
fn parse_client_add(words: &[&str]) -> Result<Command, Usage> {
    let usage = |problem: &str| Err(Usage(problem.to_owned()));
    let mut name = None;
    let mut redirect_uris = Vec::new();
    let mut public = false;
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        match *word {
            "--redirect-uri" => match rest.next() {
                Some(uri) if !uri.starts_with("--") => redirect_uris.push(uri.to_string()),
                _ => return usage("--redirect-uri needs a URI"),
            },
            "--public" => public = true,
            flag if flag.starts_with("--") => return usage(&format!("unknown flag {flag}")),
            positional if name.is_none() => name = Some(positional.to_string()),
            _ => return usage("client add takes one NAME (quote a name with spaces)"),
        }
    }
    let Some(name) = name else {
        return usage("client add needs a NAME");
    };
    if redirect_uris.is_empty() {
        return usage("client add needs at least one --redirect-uri");
    }
    Ok(Command::ClientAdd {
        name,
        redirect_uris,
        public,
    })
}

/// Splits `words` into positional arguments and the values of the `known` flags (each given at
/// most once, each with a value).
fn split_flags<'a>(
    words: &[&'a str],
    known: &[&str],
) -> Result<(Vec<&'a str>, std::collections::HashMap<String, String>), Usage> {
    let mut positional = Vec::new();
    let mut flags = std::collections::HashMap::new();
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        if word.starts_with("--") {
            if !known.contains(word) {
                return Err(Usage(format!("unknown flag {word}")));
            }
            let value = rest
                .next()
                .ok_or_else(|| Usage(format!("{word} needs a value")))?;
            if flags.insert(word.to_string(), value.to_string()).is_some() {
                return Err(Usage(format!("{word} is given twice")));
            }
        } else {
            positional.push(*word);
        }
    }
    Ok((positional, flags))
}

async fn execute(command: Command) -> anyhow::Result<Value> {
    let mut config = Config::from_env()?;
    if matches!(command, Command::Token { .. }) {
        credentials_for_tokens(&mut config).await?;
    }
    if matches!(
        command,
        Command::LogKey | Command::ResignLogs(_) | Command::ResetLog { .. }
    ) {
        hearth_core::app::load_credentials(&mut config).await;
    }
    if let Some(value) = client_command(&config, &command).await? {
        return Ok(value);
    }
    let admin = hearth_core::app::admin(&config).await?;
    let value = match command {
        Command::Create { name, policy } => {
            let policy = policy.map(|file| read_policy(&file)).transpose()?;
            serde_json::to_value(admin.create(&name, policy).await?)
        }
        Command::List => serde_json::to_value(admin.list().await?),
        Command::Show(household) => serde_json::to_value(admin.show(&household).await?),
        Command::SetPolicy { household, file } => {
            let policy = read_policy(&file)?;
            serde_json::to_value(admin.set_policy(&household, &policy).await?)
        }
        Command::Delete(household) => serde_json::to_value(admin.delete(&household).await?),
        Command::Adopt { scope, old, name } => {
            serde_json::to_value(admin.adopt(&scope, &old, name.as_deref()).await?)
        }
        Command::KeyAdd(household) => serde_json::to_value(admin.add_device_key(&household).await?),
        Command::KeyList(household) => serde_json::to_value(admin.device_keys(&household).await?),
        Command::KeyRevoke { household, key_id } => {
            serde_json::to_value(admin.revoke_device_key(&household, &key_id).await?)
        }
        Command::Token { household, days } => {
            serde_json::to_value(admin.token(&household, days).await?)
        }
        Command::LinkCode(household) => serde_json::to_value(admin.link_code(&household).await?),
        Command::LogKey => serde_json::to_value(admin.log_key()?),
        Command::ResignLogs(household) => {
            serde_json::to_value(admin.resign_logs(household.as_deref()).await?)
        }
        Command::ResetLog { household, only } => {
            serde_json::to_value(admin.reset_log(&household, only).await?)
        }
        Command::ClientAdd { .. } | Command::ClientList | Command::ClientDelete(_) => {
            unreachable!("client commands are answered by client_command")
        }
        Command::Unlink(household) => serde_json::to_value(admin.unlink(&household).await?),
    };
    Ok(value?)
}

/// The `client` commands, over the store's clients; `None` for any other command.
async fn client_command(config: &Config, command: &Command) -> anyhow::Result<Option<Value>> {
    let value = match command {
        Command::ClientAdd {
            name,
            redirect_uris,
            public,
        } => {
            let clients = hearth_core::app::admin_clients(config).await?;
            serde_json::to_value(clients.add(name, redirect_uris, *public).await?)?
        }
        Command::ClientList => {
            let clients = hearth_core::app::admin_clients(config).await?;
            json!({"clients": clients.list().await?})
        }
        Command::ClientDelete(client_id) => {
            let clients = hearth_core::app::admin_clients(config).await?;
            clients.delete(client_id).await?;
            json!({"deleted": client_id})
        }
        _ => return Ok(None),
    };
    Ok(Some(value))
}

/// The signing key a token needs, from where the server takes it: the environment, the
/// Secrets Manager secrets, or (locally, with nothing configured) the development credentials
/// the local server uses.
async fn credentials_for_tokens(config: &mut Config) -> anyhow::Result<()> {
    if config.credential_source == CredentialSource::None {
        let dev = dev_credentials::ensure(&config.data_dir)?;
        config.credentials.jwt_secret = dev.credentials().jwt_secret;
    }
    hearth_core::app::load_credentials(config).await;
    Ok(())
}

fn read_policy(file: &str) -> Result<Value, AdminError> {
    let text = std::fs::read_to_string(file)
        .map_err(|error| AdminError::Invalid(format!("{file} could not be read: {error}")))?;
    serde_json::from_str(&text)
        .map_err(|error| AdminError::Invalid(format!("{file} is not JSON: {error}")))
}

/// A result for a person: one `key: value` line per field, nested values indented.
fn print_human(value: &Value, indent: usize) {
    let pad = "  ".repeat(indent);
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                match field {
                    Value::Object(_) | Value::Array(_) => {
                        println!("{pad}{key}:");
                        print_human(field, indent + 1);
                    }
                    other => println!("{pad}{key}: {}", scalar(other)),
                }
            }
        }
        Value::Array(items) if items.is_empty() => println!("{pad}(none)"),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Object(fields) => println!(
                        "{pad}- {}",
                        fields
                            .iter()
                            .map(|(key, field)| format!("{key}: {}", scalar(field)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    other => println!("{pad}- {}", scalar(other)),
                }
            }
        }
        other => println!("{pad}{}", scalar(other)),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
