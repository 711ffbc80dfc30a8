//! `hearth admin`: the operator's command line over the configured store (the SQLite file
//! locally, or the DynamoDB table `HEARTH_TABLE` names with ordinary AWS credentials).
//!
//! The commands are declared in `cli.rs`. Every command takes `--json` and then prints exactly
//! one JSON object on stdout: the result, or `{"error": …}` (with `"usage"` for a usage error).
//! The exit status is 0 on success, 1 on failure and 2 on a usage error. Nothing secret is
//! printed except what a command exists to show (a device key, a token, a link code), once.
//! Commands that destroy (`household delete`, `log reset`) do nothing without `--yes`.

use std::process::ExitCode;

use hearth_core::admin::AdminError;
use hearth_core::auth::dev_credentials;
use hearth_core::config::{Config, CredentialSource};
use hearth_core::transparency::LogKind;
use serde_json::{Value, json};

use crate::cli::{
    AdminArgs, AdminCommand, ClientCommand, DeviceKeyCommand, HouseholdCommand, LedgerCommand,
    LogCommand, LogKeyCommand, LogName, PasskeyCommand, usage_error,
};

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
    SignupLink,
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
    ClientImport {
        url: String,
        document: String,
    },
    ClientAllow(String),
    Unlink(String),
    PasskeyInvite {
        household: String,
        member: String,
    },
    PasskeyList(String),
    LedgerExport(String),
    PasskeyRevoke {
        household: String,
        credential_id: String,
    },
    PasskeyApprovalLink {
        household: String,
        credential_id: String,
    },
    PasskeyIndex(Option<String>),
    Backup(std::path::PathBuf),
    Restore(std::path::PathBuf),
}

pub async fn run(args: AdminArgs) -> ExitCode {
    let json = args.json;
    let settings: Vec<(&'static str, String)> =
        [("HEARTH_DATA_DIR", &args.data_dir), ("HEARTH_DB", &args.db)]
            .into_iter()
            .filter_map(|(name, path)| path.as_ref().map(|path| (name, path.display().to_string())))
            .collect();
    let command = match command_of(args.command) {
        Ok(command) => command,
        Err(problem) => return usage_error(json, &problem, &admin_usage()),
    };
    match execute(command, &settings).await {
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

/// `hearth admin`'s usage line, for usage errors found after parsing.
fn admin_usage() -> String {
    use clap::CommandFactory;
    let mut command = crate::cli::Cli::command();
    command.build();
    command
        .find_subcommand_mut("admin")
        .map(|admin| admin.render_usage().to_string())
        .unwrap_or_default()
}

/// The command to execute, or why it needs confirming first (a usage error: nothing done).
fn command_of(command: AdminCommand) -> Result<Command, String> {
    Ok(match command {
        AdminCommand::Household(household) => match household {
            HouseholdCommand::Create { name, policy } => Command::Create { name, policy },
            HouseholdCommand::List => Command::List,
            HouseholdCommand::Show { household } => Command::Show(household),
            HouseholdCommand::SetPolicy { household, file } => {
                Command::SetPolicy { household, file }
            }
            HouseholdCommand::Delete { household, yes } => {
                if !yes {
                    return Err(format!(
                        "household delete removes household {household} for good: its account, device keys and tokens, its decisions, its ledger and its logs. Run it again with --yes to do it"
                    ));
                }
                Command::Delete(household)
            }
            HouseholdCommand::Adopt {
                subject_scope,
                household_id,
                name,
            } => Command::Adopt {
                scope: subject_scope,
                old: household_id,
                name,
            },
        },
        AdminCommand::DeviceKey(key) => match key {
            DeviceKeyCommand::Add { household } => Command::KeyAdd(household),
            DeviceKeyCommand::List { household } => Command::KeyList(household),
            DeviceKeyCommand::Revoke { household, key_id } => {
                Command::KeyRevoke { household, key_id }
            }
        },
        AdminCommand::Token { household, days } => Command::Token { household, days },
        AdminCommand::Backup { path } => Command::Backup(path),
        AdminCommand::Restore { path, yes } => {
            if !yes {
                return Err(format!(
                    "restore writes the store, log key and development credentials of {} into the data folder, which must be empty. Run it again with --yes to do it",
                    path.display()
                ));
            }
            Command::Restore(path)
        }
        AdminCommand::LinkCode { household } => Command::LinkCode(household),
        AdminCommand::SignupLink => Command::SignupLink,
        AdminCommand::LogKey { command: None } => Command::LogKey,
        AdminCommand::LogKey {
            command: Some(LogKeyCommand::Resign { household, .. }),
        } => Command::ResignLogs(household),
        AdminCommand::Log(LogCommand::Reset {
            household,
            yes,
            log,
        }) => {
            let only = log.map(|log| match log {
                LogName::Decisions => LogKind::Decisions,
                LogName::Ledger => LogKind::Ledger,
            });
            if !yes {
                return Err(format!(
                    "log reset starts {} of household {household} anew: kept proofs of the old log will check as \"the log was replaced\". Run it again with --yes to do it",
                    match only {
                        None => "both logs".to_owned(),
                        Some(kind) => format!("the {} log", kind.as_str()),
                    }
                ));
            }
            Command::ResetLog { household, only }
        }
        AdminCommand::Client(client) => match client {
            ClientCommand::Add {
                name,
                redirect_uris,
                public,
            } => Command::ClientAdd {
                name,
                redirect_uris,
                public,
            },
            ClientCommand::List => Command::ClientList,
            ClientCommand::Delete { client_id } => Command::ClientDelete(client_id),
            ClientCommand::Import { url, document } => Command::ClientImport { url, document },
            ClientCommand::Allow { url } => Command::ClientAllow(url),
        },
        AdminCommand::Unlink { household } => Command::Unlink(household),
        AdminCommand::Ledger(LedgerCommand::Export { household }) => {
            Command::LedgerExport(household)
        }
        AdminCommand::Passkey(passkey) => match passkey {
            PasskeyCommand::Invite { household, member } => {
                Command::PasskeyInvite { household, member }
            }
            PasskeyCommand::List { household } => Command::PasskeyList(household),
            PasskeyCommand::Revoke {
                household,
                credential_id,
            } => Command::PasskeyRevoke {
                household,
                credential_id,
            },
            PasskeyCommand::Index { household } => Command::PasskeyIndex(household),
            PasskeyCommand::ApprovalLink {
                household,
                credential_id,
            } => Command::PasskeyApprovalLink {
                household,
                credential_id,
            },
        },
    })
}

async fn execute(command: Command, settings: &[(&'static str, String)]) -> anyhow::Result<Value> {
    let mut config = Config::from_env_with(settings)?;
    if matches!(command, Command::Token { .. }) {
        credentials_for_tokens(&mut config).await?;
    }
    if matches!(
        command,
        Command::LogKey | Command::ResignLogs(_) | Command::ResetLog { .. }
    ) {
        hearth_core::app::load_credentials(&mut config).await;
        hearth_core::log_key_start::read_for_admin(&mut config)?;
    }
    match &command {
        Command::Backup(path) => {
            return Ok(serde_json::to_value(
                hearth_core::backup::backup(&config, path).await?,
            )?);
        }
        Command::Restore(path) => {
            return Ok(serde_json::to_value(
                hearth_core::backup::restore(&config, path).await?,
            )?);
        }
        _ => {}
    }
    if matches!(command, Command::SignupLink) {
        let links = hearth_core::app::admin_signup_links(&config).await?;
        return Ok(serde_json::to_value(links.create().await?)?);
    }
    if let Some(value) = client_command(&config, &command).await? {
        return Ok(value);
    }
    if let Some(value) = passkey_command(&config, &command).await? {
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
        Command::SignupLink => unreachable!("signup-link is answered before the store is opened"),
        Command::LogKey => serde_json::to_value(admin.log_key()?),
        Command::ResignLogs(household) => {
            serde_json::to_value(admin.resign_logs(household.as_deref()).await?)
        }
        Command::ResetLog { household, only } => {
            serde_json::to_value(admin.reset_log(&household, only).await?)
        }
        Command::ClientAdd { .. }
        | Command::ClientList
        | Command::ClientDelete(_)
        | Command::ClientImport { .. }
        | Command::ClientAllow(_) => {
            unreachable!("client commands are answered by client_command")
        }
        Command::PasskeyInvite { .. }
        | Command::PasskeyList(_)
        | Command::PasskeyRevoke { .. }
        | Command::PasskeyApprovalLink { .. }
        | Command::PasskeyIndex(_) => {
            unreachable!("passkey commands are answered by passkey_command")
        }
        Command::Unlink(household) => serde_json::to_value(admin.unlink(&household).await?),
        Command::Backup(_) | Command::Restore(_) => {
            unreachable!("backup and restore are answered before the store is opened")
        }
        Command::LedgerExport(household) => {
            serde_json::to_value(admin.export_ledger(&household).await?)
        }
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
        Command::ClientImport { url, document } => {
            let text = std::fs::read_to_string(document)
                .map_err(|error| anyhow::anyhow!("{document} could not be read: {error}"))?;
            let clients = hearth_core::app::admin_clients(config).await?;
            let imported = clients.import(url, &text).await?;
            json!({
                "imported": imported.client_id,
                "name": imported.name,
                "redirect_uris": imported.redirect_uris,
                "signs_assertions": imported.signs_assertions,
            })
        }
        Command::ClientAllow(url) => {
            let clients = hearth_core::app::admin_clients(config).await?;
            clients.allow(url).await?;
            json!({"allowed": url})
        }
        _ => return Ok(None),
    };
    Ok(Some(value))
}

/// The `passkey` commands, over the store's household accounts; `None` for any other command.
async fn passkey_command(config: &Config, command: &Command) -> anyhow::Result<Option<Value>> {
    let value = match command {
        Command::PasskeyInvite { household, member } => {
            let passkeys = hearth_core::app::admin_passkeys(config).await?;
            serde_json::to_value(passkeys.invite(household, member).await?)?
        }
        Command::PasskeyList(household) => {
            let passkeys = hearth_core::app::admin_passkeys(config).await?;
            json!({"passkeys": passkeys.list(household).await?})
        }
        Command::PasskeyIndex(household) => {
            let passkeys = hearth_core::app::admin_passkeys(config).await?;
            let households = match household {
                Some(household) => vec![household.clone()],
                None => hearth_core::app::admin(config)
                    .await?
                    .list()
                    .await?
                    .households
                    .into_iter()
                    .map(|summary| summary.household_id)
                    .collect(),
            };
            let mut indexed = hearth_core::passkeys::owners::Indexed::default();
            for household in &households {
                indexed.add(passkeys.index(household).await?);
            }
            json!({"households": households.len(), "added": indexed.added, "held_elsewhere": indexed.held_elsewhere})
        }
        Command::PasskeyRevoke {
            household,
            credential_id,
        } => {
            let passkeys = hearth_core::app::admin_passkeys(config).await?;
            json!({"revoked": passkeys.revoke(household, credential_id).await?})
        }
        Command::PasskeyApprovalLink {
            household,
            credential_id,
        } => {
            let passkeys = hearth_core::app::admin_passkeys(config).await?;
            json!({"url": passkeys.confirmation_link(household, credential_id).await?})
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
        let dev = dev_credentials::read(&config.data_dir)?;
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
