//! Settings from the environment. Every entry point loads a [`Config`] once at start; nothing
//! else reads the environment. A setting that cannot be honoured is a startup error, never a
//! silent fallback to something weaker.

pub mod reference;
#[cfg(feature = "aws")]
pub mod secrets;
mod urls;
mod witness;
pub use witness::{WitnessSettings, WitnessSubmission};

use std::net::SocketAddr;
use std::path::PathBuf;

pub use urls::{PasskeyPlace, PublicUrls, canonical_resource};

use crate::auth::attestation::DEVELOPMENT_HOST_KEY;
use crate::auth::credentials::{
    AION_KEY_NAME, CREDENTIAL_NAMES, HOST_KEY_NAME, JUDGE_KEY_NAME, LOG_KEY_NAME,
    LOG_KEY_PREVIOUS_NAME, NOTIFY_KEY_NAME, OTHER_SECRET_NAMES,
};
use crate::auth::{Authenticator, Credentials, JwtKeys};
use crate::forwarded::TrustedProxies;
use crate::secret::Secret;

/// Where the process runs. Decided by `AWS_LAMBDA_RUNTIME_API`, which the Lambda runtime sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Lambda,
    Local,
}

/// The toolsets this build can serve.
pub const KNOWN_TOOLSETS: &[&str] = &["why", "aion", "countersign"];

/// The assistant's model unless `COUNTERSIGN_ASSISTANT_MODEL` names another: not the judge's
/// (a model that misread the request should not grade its own reading).
pub const DEFAULT_ASSISTANT_MODEL: &str = "us.amazon.nova-pro-v1:0";

/// Which store runs. `HEARTH_TABLE` selects DynamoDB. Otherwise, locally, the default is a
/// SQLite file in the data directory; under Lambda a SQLite file is used only when `HEARTH_DB`
/// names one explicitly (a function's disk is not durable), and otherwise decision tools report
/// storage unavailable and the rate limiter refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// `HEARTH_TABLE`: the DynamoDB table; region and endpoint come from the AWS environment.
    DynamoDb(String),
    /// `HEARTH_DB`, default `<data dir>/hearth.db` locally.
    Sqlite(PathBuf),
    Unconfigured,
}

/// Where the credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// At least one credential variable is set in the environment (local only).
    Environment,
    /// `HEARTH_SECRET_ARN`: Secrets Manager secrets (comma-separated), read once at start.
    SecretsManager(Vec<String>),
    /// Nothing configured: the local server generates development credentials; under Lambda
    /// every request is denied.
    None,
}

/// Requests per minute allowed by the fixed-window rate limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// `HEARTH_RATE_LIMIT_PER_SUBJECT`, default 60.
    pub per_subject: u32,
    /// `HEARTH_RATE_LIMIT_PER_IP`, default 120.
    pub per_ip: u32,
}

/// Amazon Polly's engines.
pub const POLLY_ENGINES: &[&str] = &["standard", "neural", "long-form", "generative"];

/// The highest accepted rate limit; there is deliberately no "unlimited".
pub const MAX_RATE_LIMIT: u32 = 1_000_000;

#[derive(Debug, Clone)]
pub struct Config {
    pub runtime: Runtime,
    /// `HEARTH_ADDR`, default `127.0.0.1:8790`.
    pub addr: SocketAddr,
    /// `HEARTH_DATA_DIR`, default `./.hearth`: the SQLite file and dev credentials live here.
    pub data_dir: PathBuf,
    /// Where chains and rate counters are kept; see [`StoreChoice`].
    pub store: StoreChoice,
    /// Where [`Config::credentials`] come from.
    pub credential_source: CredentialSource,
    /// The credentials in force. From the environment when that is the source; filled in by
    /// `app::load_credentials` from Secrets Manager or the development file otherwise.
    pub credentials: Credentials,
    /// `MCP_ALLOW_NO_AUTH=true` (exactly, any case): local development without authentication.
    pub allow_no_auth: bool,
    /// `MCP_DISABLED=1` (or `true`): every endpoint answers 503 before authentication.
    pub disabled: bool,
    /// `MCP_ALLOWED_ORIGINS`: comma-separated exact browser origins; any other `Origin` is 403.
    pub allowed_origins: Vec<String>,
    /// `MCP_RESOURCE_URL`: the public URL of `/mcp`, and what follows from it. Locally it
    /// defaults to the loopback address served; under Lambda it has no default.
    pub urls: Option<PublicUrls>,
    /// Where passkey pages are served (`HEARTH_PASSKEY_RP_ID` over `MCP_RESOURCE_URL`); `None`
    /// without a public URL.
    pub passkeys: Option<PasskeyPlace>,
    /// `MCP_REDIRECT_URIS`: comma-separated redirect URIs an authorization request may name,
    /// compared exactly. Empty: account linking is off, and client-credential tokens keep
    /// reaching every tool.
    pub redirect_uris: Vec<String>,
    /// `HEARTH_LOG_KEY_VERSION`: the version in the current log key's name (1 to 9999, default
    /// 1); during a rotation the previous key is the version before.
    pub log_key_version: u32,
    /// `HEARTH_LOG_KEY_NAMES_PREVIOUS`: earlier log key identities that still verify but no
    /// longer sign, comma-separated. Each is a whole verifier key (`name+id+key`, a key
    /// dropped after a rotation) or a key name alone (`<host>/hearth-log/v<N>`, this
    /// deployment's keys under the name of a host it was served from before).
    pub log_key_names_previous: Vec<String>,
    /// `HEARTH_ALLOWED_HOSTS`: extra accepted `Host` values for a local server behind a proxy.
    pub extra_hosts: Vec<String>,
    /// `HEARTH_TRUSTED_PROXIES`: the reverse proxies (CIDRs) whose `X-Forwarded-For` or
    /// `Forwarded` header names the client a local server counts. Empty by default; refused
    /// under Lambda, where API Gateway's source IP is the client.
    pub trusted_proxies: TrustedProxies,
    /// `HEARTH_MAX_CONNECTIONS` (default 512): connections a local server holds open at once;
    /// past it, new ones wait in the kernel's backlog.
    pub max_connections: usize,
    /// `HEARTH_TOOLSETS`, default every known toolset.
    pub toolsets: Vec<String>,
    pub rate_limits: RateLimits,
    /// `AION_BACKEND_URL`: the AionRealm guide endpoint. Unset, a local server answers from
    /// the built-in mock guide, and under Lambda the `aion` toolset is left out unless
    /// `MOCK_AION_BACKEND` asks for the mock.
    pub aion_backend_url: Option<String>,
    /// `MOCK_AION_BACKEND` (1/true): answer `ask_aion` from the mock guide even when a backend
    /// URL is configured.
    pub aion_mock: bool,
    /// `COUNTERSIGN_NOTIFY_URL`: where requests waiting for a guardian are announced.
    pub notify_url: Option<String>,
    /// `POLLY_VOICE`, default `Ruth`.
    pub polly_voice: String,
    /// `POLLY_ENGINE`, default `generative` (retried once with `neural` if Polly refuses it).
    pub polly_engine: String,
    /// `COUNTERSIGN_ASSISTANT_MODEL`: the Bedrock model `hearth assistant` runs on, by default
    /// a different one from the judge's.
    pub assistant_model: String,
    /// The purchase guard's intent judge.
    pub judge: JudgeSettings,
    /// `HEARTH_DEMO_DEVICE=1`: serve `POST /demo/device`, which signs attestations for the
    /// simulated device in the web demo. Local only.
    pub demo_device: bool,
    /// `HEARTH_CIMD_ALLOW_HTTP_LOOPBACK=true`: Client ID Metadata Documents may also be
    /// fetched from `http://127.0.0.1`, `http://[::1]` or `http://localhost`, for local tests
    /// of hosts that name themselves by URL. Local only.
    pub cimd_allow_http_loopback: bool,
    /// `HEARTH_CIMD=on|off` (default `on`): whether hosts may name themselves by a Client ID
    /// Metadata Document's URL. Off, the metadata says nothing of it, a URL client id is
    /// refused naming the setting, and hosts fall back to registration.
    pub cimd: bool,
    /// `HEARTH_SIGNUP` and `HEARTH_SIGNUP_PER_DAY`: whether a person with no household may
    /// create one, and how many a day the deployment takes.
    pub signup: SignupSettings,
    /// `HEARTH_PUSH_ALLOW_HTTP_LOOPBACK=true`: phones' push endpoints may also be `http` on
    /// loopback, for a local push receiver in tests. Local only.
    pub push_allow_http_loopback: bool,
    /// `COUNTERSIGN_DATA`: a directory with `household.json` and `catalogue.json` replacing
    /// the built-in demo household.
    pub countersign_data: Option<PathBuf>,
    /// `HEARTH_WITNESS_POLICY` or `HEARTH_WITNESS_POLICY_FILE`, and
    /// `HEARTH_WITNESS_TIMEOUT_MS`: the witnesses each new checkpoint is submitted to.
    pub witnesses: Option<WitnessSubmission>,
    /// `hearth assistant`'s device: `HEARTH_TOKEN` (its bearer token) and `HEARTH_DEVICE_KEY`
    /// (a household device key, `KEY_ID:KEY`). Read by no server.
    pub device: DeviceSettings,
}

/// `HEARTH_SIGNUP=off|invite|open`: who may create a household without the operator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SignupMode {
    /// Only the operator creates households (`hearth admin household create`).
    #[default]
    Off,
    /// A person holding an operator's sign-up link (`hearth admin signup-link`), each of which
    /// makes one household.
    Invite,
    /// Anyone: the consent page offers `Create a household`.
    Open,
}

impl SignupMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SignupMode::Off => "off",
            SignupMode::Invite => "invite",
            SignupMode::Open => "open",
        }
    }
}

/// The most households `HEARTH_SIGNUP_PER_DAY` may let a deployment take in a day.
pub const MAX_SIGNUPS_PER_DAY: u32 = 100_000;

/// Sign-up's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignupSettings {
    pub mode: SignupMode,
    /// `HEARTH_SIGNUP_PER_DAY` (default 100, 1 to [`MAX_SIGNUPS_PER_DAY`]): households the
    /// whole deployment creates by sign-up per UTC day.
    pub per_day: u32,
}

impl Default for SignupSettings {
    fn default() -> Self {
        Self {
            mode: SignupMode::Off,
            per_day: 100,
        }
    }
}

/// What `hearth assistant`, playing a household's device, authenticates and signs with.
#[derive(Debug, Clone, Default)]
pub struct DeviceSettings {
    pub token: Option<Secret>,
    pub key: Option<Secret>,
}

/// How an entry point logs, read before anything else so that a configuration error is
/// logged too: `RUST_LOG` (the filter), `AWS_LAMBDA_FUNCTION_NAME` (the metrics'
/// `Function` dimension, `local` off Lambda), `HEARTH_DEPLOYMENT` (their `Deployment`
/// dimension: the stack's name, `local` by default) and `HEARTH_METRICS` (which metrics the
/// lines carry). Read leniently, so that logging always starts: an invalid `HEARTH_METRICS` counts
/// as the default here, and [`Config::from_lookup`] refuses it.
#[derive(Debug, Clone, Default)]
pub struct LogSettings {
    pub filter: Option<String>,
    pub function_name: Option<String>,
    pub deployment: Option<String>,
    pub metrics: MetricDetail,
}

/// `HEARTH_METRICS`: which CloudWatch metrics the log lines embed. Each metric a month is
/// billed, so the default keeps only what the alarms and the dashboard read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetricDetail {
    /// `function`: two counts by `Deployment` (the stack), each written only when it is not
    /// zero: `Throttled` (Hearth's own 429s) and `WitnessRefusals`, which alarms read. A tool
    /// error is marked on its line (`ToolErrors: 1`) for the dashboard's log query, no metric.
    /// The rest (calls, errors, durations, per function) comes from AWS's own metrics at no
    /// charge.
    #[default]
    Function,
    /// `tool`: those two, `ToolErrors` by `Deployment`, and `Requests`, `Errors`, `Throttled`,
    /// `ToolErrors` and `Latency` by `Function` and by `Function` and `Tool` on every request
    /// line.
    Tool,
    /// `off`: no metrics; the lines are plain JSON logs.
    Off,
}

impl MetricDetail {
    pub fn parse(value: Option<&str>) -> Result<Self, ConfigError> {
        match value
            .map(|value| value.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("function") => Ok(Self::Function),
            Some("tool") => Ok(Self::Tool),
            Some("off") => Ok(Self::Off),
            Some(_) => Err(ConfigError::Invalid {
                name: "HEARTH_METRICS",
                reason: "expected function, tool or off".into(),
            }),
        }
    }
}

impl LogSettings {
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        Self {
            filter: get("RUST_LOG"),
            function_name: get("AWS_LAMBDA_FUNCTION_NAME"),
            deployment: get("HEARTH_DEPLOYMENT").map(|name| name.trim().to_owned()),
            metrics: MetricDetail::parse(get("HEARTH_METRICS").as_deref()).unwrap_or_default(),
        }
    }
}

/// Which intent judge runs, and the model judge's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeSettings {
    /// `COUNTERSIGN_JUDGE`.
    pub kind: JudgeKind,
    /// `COUNTERSIGN_JUDGE_MODEL`: for Bedrock, default `us.amazon.nova-premier-v1:0`; for an
    /// OpenAI-compatible server, required.
    pub model: String,
    /// `COUNTERSIGN_GUARDRAIL_ID` (and `COUNTERSIGN_GUARDRAIL_VERSION`, default `DRAFT`).
    pub guardrail: Option<(String, String)>,
    /// `COUNTERSIGN_JUDGE_URL`: an OpenAI-compatible API's base URL.
    pub url: Option<String>,
    /// `COUNTERSIGN_JUDGE_TIMEOUT_MS` (default 1,500): how long an OpenAI-compatible server
    /// may take to answer.
    pub timeout_ms: u64,
}

/// `COUNTERSIGN_JUDGE`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgeKind {
    /// `rules`: the rules alone (the default locally without a model, and the offline switch).
    Rules,
    /// `bedrock`: the rules, then a Bedrock model (the default under Lambda).
    Bedrock,
    /// `openai`: an OpenAI-compatible model alone, for measuring it.
    OpenAi,
    /// `rules+openai`: the rules, and the model where they are unclear (the default when
    /// `COUNTERSIGN_JUDGE_URL` is set).
    RulesOpenAi,
}

impl JudgeKind {
    /// The name `COUNTERSIGN_JUDGE` and `hearth eval --judge` take.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim() {
            "rules" => Some(JudgeKind::Rules),
            "bedrock" => Some(JudgeKind::Bedrock),
            "openai" => Some(JudgeKind::OpenAi),
            "rules+openai" => Some(JudgeKind::RulesOpenAi),
            _ => None,
        }
    }

    /// Whether it asks an OpenAI-compatible server.
    pub fn is_openai(self) -> bool {
        matches!(self, JudgeKind::OpenAi | JudgeKind::RulesOpenAi)
    }
}

/// The longest `COUNTERSIGN_JUDGE_TIMEOUT_MS` accepted.
pub const MAX_JUDGE_TIMEOUT_MS: u64 = 60_000;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{name} is not valid: {reason}")]
    Invalid { name: &'static str, reason: String },
    #[error("MCP_ALLOW_NO_AUTH is for local development only and is refused under Lambda")]
    NoAuthUnderLambda,
    #[error(
        "HEARTH_DEMO_DEVICE signs speaker attestations for anyone with a token; it is for local development only and is refused under Lambda"
    )]
    DemoDeviceUnderLambda,
    #[error(
        "HEARTH_CIMD_ALLOW_HTTP_LOOPBACK lets client metadata come from this machine; it is for local tests only and is refused under Lambda"
    )]
    CimdLoopbackUnderLambda,
    #[error(
        "{name} is set in the environment; under Lambda credentials come only from the Secrets Manager secrets named by HEARTH_SECRET_ARN"
    )]
    CredentialInLambdaEnvironment { name: &'static str },
    #[error("{name} and HEARTH_SECRET_ARN are both set; take credentials from one place")]
    TwoCredentialSources { name: &'static str },
}

/// The signing seed of the log key `secret`: the SHA-256 of it, so any secret string will do.
/// The key's version and host only name it.
pub fn log_key_seed(secret: &Secret) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(format!("hearth log key\n{}", secret.expose())).into()
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The configuration with `settings` (by variable name: what `hearth serve`'s flags gave)
    /// read before the environment.
    pub fn from_env_with(settings: &[(&str, String)]) -> Result<Self, ConfigError> {
        Self::from_lookup(|name| {
            settings
                .iter()
                .find(|(given, _)| *given == name)
                .map(|(_, value)| value.clone())
                .or_else(|| std::env::var(name).ok())
        })
    }

    /// Builds the configuration from any variable source; tests pass a map.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let runtime = if get("AWS_LAMBDA_RUNTIME_API").is_some() {
            Runtime::Lambda
        } else {
            Runtime::Local
        };
        let addr = match get("HEARTH_ADDR") {
            Some(value) => value.trim().parse().map_err(|_| ConfigError::Invalid {
                name: "HEARTH_ADDR",
                reason: "expected host:port, e.g. 127.0.0.1:8790".into(),
            })?,
            None => SocketAddr::from(([127, 0, 0, 1], 8790)),
        };
        let data_dir = PathBuf::from(get("HEARTH_DATA_DIR").unwrap_or_else(|| ".hearth".into()));
        let store = match (get("HEARTH_TABLE"), get("HEARTH_DB"), runtime) {
            (Some(_), Some(_), _) => {
                return Err(ConfigError::Invalid {
                    name: "HEARTH_TABLE",
                    reason: "HEARTH_DB is set too; choose one store".into(),
                });
            }
            (Some(table), None, _) => StoreChoice::DynamoDb(table.trim().to_owned()),
            (None, Some(path), _) => StoreChoice::Sqlite(PathBuf::from(path)),
            (None, None, Runtime::Local) => StoreChoice::Sqlite(data_dir.join("hearth.db")),
            (None, None, Runtime::Lambda) => StoreChoice::Unconfigured,
        };
        let (credential_source, credentials) = credentials(&get, runtime)?;
        let allow_no_auth =
            get("MCP_ALLOW_NO_AUTH").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if allow_no_auth && runtime == Runtime::Lambda {
            return Err(ConfigError::NoAuthUnderLambda);
        }
        let switch = |name: &'static str, meaning: &str| match get(name)
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => Ok(false),
            Some(value) if value == "1" || value == "true" => Ok(true),
            Some(value) if value == "0" || value == "false" => Ok(false),
            Some(_) => Err(ConfigError::Invalid {
                name,
                reason: format!("expected 1 or true to {meaning}, 0 or false not to"),
            }),
        };
        let disabled = switch("MCP_DISABLED", "disable the server")?;
        let aion_mock = switch(
            "MOCK_AION_BACKEND",
            "answer ask_aion from the built-in mock guide",
        )?;
        let urls = match get("MCP_RESOURCE_URL") {
            Some(url) => Some(PublicUrls::from_resource(url.trim()).map_err(|reason| {
                ConfigError::Invalid {
                    name: "MCP_RESOURCE_URL",
                    reason,
                }
            })?),
            // Served on an address other machines reach (0.0.0.0 and :: included), a local
            // server must be told the URL clients use: the token audience and every discovery
            // document follow from it, and a guess from the listen address would be wrong.
            None if runtime == Runtime::Local && !addr.ip().is_loopback() => {
                return Err(ConfigError::Invalid {
                    name: "MCP_RESOURCE_URL",
                    reason: format!(
                        "HEARTH_ADDR {addr} is reachable from other machines, so clients need the URL they reach /mcp by; set MCP_RESOURCE_URL (for example https://hearth.example/mcp)"
                    ),
                });
            }
            None if runtime == Runtime::Local => PublicUrls::local_default(addr),
            None => None,
        };
        let passkey_rp_id = get("HEARTH_PASSKEY_RP_ID").filter(|id| !id.trim().is_empty());
        let passkeys = match (&urls, &passkey_rp_id) {
            (Some(urls), rp_id) => {
                Some(urls.passkey_place(rp_id.as_deref()).map_err(|reason| {
                    ConfigError::Invalid {
                        name: "HEARTH_PASSKEY_RP_ID",
                        reason,
                    }
                })?)
            }
            (None, Some(_)) => {
                return Err(ConfigError::Invalid {
                    name: "HEARTH_PASSKEY_RP_ID",
                    reason: "passkey pages need MCP_RESOURCE_URL, the public URL they hang off"
                        .into(),
                });
            }
            (None, None) => None,
        };
        let redirect_uris = split_list(&get("MCP_REDIRECT_URIS").unwrap_or_default());
        for uri in &redirect_uris {
            redirect_uri(uri).map_err(|reason| ConfigError::Invalid {
                name: "MCP_REDIRECT_URIS",
                reason,
            })?;
        }
        let log_key_version = match get("HEARTH_LOG_KEY_VERSION") {
            None => 1,
            Some(value) => value
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|version| (1..=9999).contains(version))
                .ok_or(ConfigError::Invalid {
                    name: "HEARTH_LOG_KEY_VERSION",
                    reason: "expected a whole number from 1 to 9999".into(),
                })?,
        };
        let log_key_names_previous =
            split_list(&get("HEARTH_LOG_KEY_NAMES_PREVIOUS").unwrap_or_default());
        for identity in &log_key_names_previous {
            let valid = if identity.contains('+') {
                crate::tlog::note::NoteVerifier::parse(identity).map(|_| ())
            } else if crate::tlog::note::is_key_name(identity) {
                Ok(())
            } else {
                Err("not a key name (no spaces or +)".to_owned())
            };
            valid.map_err(|reason| ConfigError::Invalid {
                name: "HEARTH_LOG_KEY_NAMES_PREVIOUS",
                reason: format!("{identity:?}: {reason}"),
            })?;
        }
        let toolsets = match get("HEARTH_TOOLSETS") {
            Some(list) => {
                let names = split_list(&list);
                if let Some(unknown) = names.iter().find(|n| !KNOWN_TOOLSETS.contains(&n.as_str()))
                {
                    return Err(ConfigError::Invalid {
                        name: "HEARTH_TOOLSETS",
                        reason: format!(
                            "unknown toolset {unknown:?}; known: {}",
                            KNOWN_TOOLSETS.join(",")
                        ),
                    });
                }
                names
            }
            None => KNOWN_TOOLSETS.iter().map(|s| s.to_string()).collect(),
        };
        let rate_limits = RateLimits {
            per_subject: rate_limit(&get, "HEARTH_RATE_LIMIT_PER_SUBJECT", 60)?,
            per_ip: rate_limit(&get, "HEARTH_RATE_LIMIT_PER_IP", 120)?,
        };
        let outside_url = |name: &'static str| match get(name) {
            None => Ok(None),
            Some(url) => backend_url(url.trim())
                .map(Some)
                .map_err(|reason| ConfigError::Invalid { name, reason }),
        };
        let aion_backend_url = outside_url("AION_BACKEND_URL")?;
        let notify_url = outside_url("COUNTERSIGN_NOTIFY_URL")?;
        let polly_engine = get("POLLY_ENGINE").unwrap_or_else(|| "generative".into());
        if !POLLY_ENGINES.contains(&polly_engine.as_str()) {
            return Err(ConfigError::Invalid {
                name: "POLLY_ENGINE",
                reason: format!("expected one of {}", POLLY_ENGINES.join(", ")),
            });
        }
        let judge = judge_settings(&get, runtime)?;
        if judge.kind.is_openai()
            && credentials.judge_api_key.is_some()
            && let Some(reason) = judge
                .url
                .as_deref()
                .and_then(crate::countersign::judge::openai::key_refusal)
        {
            return Err(ConfigError::Invalid {
                name: "COUNTERSIGN_JUDGE_URL",
                reason: reason.into(),
            });
        }
        let demo_device = match get("HEARTH_DEMO_DEVICE").as_deref().map(str::trim) {
            None | Some("0") => false,
            Some("1") if runtime == Runtime::Local => true,
            Some("1") => return Err(ConfigError::DemoDeviceUnderLambda),
            Some(_) => {
                return Err(ConfigError::Invalid {
                    name: "HEARTH_DEMO_DEVICE",
                    reason: "expected 1 to serve the simulated device, 0 or unset not to".into(),
                });
            }
        };
        let cimd_allow_http_loopback = match get("HEARTH_CIMD_ALLOW_HTTP_LOOPBACK")
            .as_deref()
            .map(str::trim)
        {
            None | Some("false") => false,
            Some("true") if runtime == Runtime::Local => true,
            Some("true") => return Err(ConfigError::CimdLoopbackUnderLambda),
            Some(_) => {
                return Err(ConfigError::Invalid {
                    name: "HEARTH_CIMD_ALLOW_HTTP_LOOPBACK",
                    reason: "expected true or false".into(),
                });
            }
        };
        let push_allow_http_loopback = match get("HEARTH_PUSH_ALLOW_HTTP_LOOPBACK")
            .as_deref()
            .map(str::trim)
        {
            None | Some("false") => false,
            Some("true") if runtime == Runtime::Local => true,
            Some(_) => {
                return Err(ConfigError::Invalid {
                    name: "HEARTH_PUSH_ALLOW_HTTP_LOOPBACK",
                    reason: "expected true or false; true is for local tests and is refused under Lambda".into(),
                });
            }
        };
        let cimd = match get("HEARTH_CIMD").map(|value| value.trim().to_ascii_lowercase()) {
            None => true,
            Some(value) if value == "on" => true,
            Some(value) if value == "off" => false,
            Some(_) => {
                return Err(ConfigError::Invalid {
                    name: "HEARTH_CIMD",
                    reason: "expected on or off".into(),
                });
            }
        };
        let signup = signup_settings(&get, passkeys.is_some(), redirect_uris.is_empty())?;
        let trusted_proxies = match get("HEARTH_TRUSTED_PROXIES") {
            None => TrustedProxies::default(),
            Some(_) if runtime == Runtime::Lambda => {
                return Err(ConfigError::Invalid {
                    name: "HEARTH_TRUSTED_PROXIES",
                    reason: "under Lambda the client is API Gateway's source IP; unset it".into(),
                });
            }
            Some(list) => TrustedProxies::parse(&list).map_err(|reason| ConfigError::Invalid {
                name: "HEARTH_TRUSTED_PROXIES",
                reason,
            })?,
        };
        let max_connections =
            connection_cap(get("HEARTH_MAX_CONNECTIONS"), "HEARTH_MAX_CONNECTIONS")?;
        // Applied by the log subscriber, through LogSettings; checked here so a bad value stops
        // the start.
        MetricDetail::parse(get("HEARTH_METRICS").as_deref())?;
        let witnesses = witness::submission(&get, runtime)?;
        let device = DeviceSettings {
            token: get("HEARTH_TOKEN").map(|token| Secret::new(token.trim())),
            key: get("HEARTH_DEVICE_KEY").map(|key| Secret::new(key.trim())),
        };
        Ok(Self {
            device,
            witnesses,
            cimd_allow_http_loopback,
            cimd,
            signup,
            push_allow_http_loopback,
            assistant_model: get("COUNTERSIGN_ASSISTANT_MODEL")
                .map(|model| model.trim().to_owned())
                .unwrap_or_else(|| DEFAULT_ASSISTANT_MODEL.into()),
            demo_device,
            judge,
            countersign_data: get("COUNTERSIGN_DATA").map(|dir| PathBuf::from(dir.trim())),
            polly_voice: get("POLLY_VOICE").unwrap_or_else(|| "Ruth".into()),
            polly_engine,
            aion_backend_url,
            aion_mock,
            notify_url,
            runtime,
            addr,
            data_dir,
            store,
            credential_source,
            credentials,
            allow_no_auth,
            disabled,
            allowed_origins: split_list(&get("MCP_ALLOWED_ORIGINS").unwrap_or_default()),
            urls,
            passkeys,
            redirect_uris,
            log_key_version,
            log_key_names_previous,
            extra_hosts: split_list(&get("HEARTH_ALLOWED_HOSTS").unwrap_or_default()),
            trusted_proxies,
            max_connections,
            toolsets,
            rate_limits,
        })
    }

    /// Whether account linking is configured: redirect URIs to send authorization codes to.
    pub fn linking_enabled(&self) -> bool {
        !self.redirect_uris.is_empty()
    }

    /// The transparency logs' signing seeds, current first: the current key (`HEARTH_LOG_KEY`,
    /// version `HEARTH_LOG_KEY_VERSION`) and, during a rotation, the previous one (the
    /// version before). Each seed is the SHA-256 of its secret, so any secret string will do.
    /// Empty without a log key.
    pub fn log_key_seeds(&self) -> Vec<(u32, [u8; 32])> {
        let seed = log_key_seed;
        let Some(current) = &self.credentials.log_key else {
            return Vec::new();
        };
        let mut seeds = vec![(self.log_key_version, seed(current))];
        if let Some(previous) = &self.credentials.log_key_previous
            && self.log_key_version > 1
        {
            seeds.push((self.log_key_version - 1, seed(previous)));
        }
        seeds
    }

    /// The access-token keys, when both the signing key and the resource URL are configured.
    pub fn jwt_keys(&self) -> Option<JwtKeys> {
        let secret = self.credentials.jwt_secret.as_ref()?;
        let urls = self.urls.as_ref()?;
        JwtKeys::new(secret, urls.issuer(), urls.resource()).ok()
    }

    /// The key device attestations are checked with. The development key counts only
    /// outside Lambda; without a key every attestation is refused.
    pub fn host_key(&self) -> Option<Secret> {
        let key = self.credentials.host_key.as_ref()?;
        let development = key.expose() == DEVELOPMENT_HOST_KEY;
        (!development || self.runtime == Runtime::Local).then(|| key.clone())
    }

    /// Browser origins allowed to call the API: `MCP_ALLOWED_ORIGINS`, plus the server's own
    /// public origin (from `MCP_RESOURCE_URL`), so the demo page it serves can call it; a page
    /// of the same origin is not a cross-site caller. Locally a loopback origin is also
    /// accepted spelled `localhost`.
    pub fn browser_origins(&self) -> Vec<String> {
        let mut origins = self.allowed_origins.clone();
        let own = self
            .urls
            .as_ref()
            .and_then(|urls| url::Url::parse(urls.resource()).ok());
        if let Some(own) = own {
            origins.push(own.origin().ascii_serialization());
            if self.runtime == Runtime::Local
                && matches!(own.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
                && let Some(port) = own.port_or_known_default()
            {
                origins.push(format!("{}://localhost:{port}", own.scheme()));
            }
        }
        origins
    }

    /// The bearer verifier this configuration asks for.
    pub fn authenticator(&self) -> Authenticator {
        if self.allow_no_auth {
            Authenticator::allow_anonymous()
        } else {
            Authenticator::new(&self.credentials, self.jwt_keys())
        }
    }

    /// `Host` header values `/mcp` accepts (DNS-rebinding protection). Empty means any host,
    /// which is only chosen under Lambda without `MCP_RESOURCE_URL`: API Gateway routes by
    /// host itself, so the function never sees a rebound name.
    pub fn allowed_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        if self.runtime == Runtime::Local {
            hosts.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
            if !self.addr.ip().is_unspecified() {
                hosts.push(self.addr.ip().to_string());
            }
        }
        if let Some(urls) = &self.urls {
            hosts.push(urls.host().to_owned());
        }
        hosts.extend(self.extra_hosts.iter().cloned());
        hosts
    }
}

/// Credentials from the environment (local only), or the names of the secrets to read them
/// from.
fn credentials(
    get: &impl Fn(&str) -> Option<String>,
    runtime: Runtime,
) -> Result<(CredentialSource, Credentials), ConfigError> {
    if runtime == Runtime::Lambda
        && let Some(name) = CREDENTIAL_NAMES
            .iter()
            .chain(&OTHER_SECRET_NAMES)
            .find(|name| get(name).is_some())
    {
        return Err(ConfigError::CredentialInLambdaEnvironment { name });
    }
    let in_environment = CREDENTIAL_NAMES.iter().find(|name| get(name).is_some());
    if let Some(arn) = get("HEARTH_SECRET_ARN") {
        if let Some(name) = in_environment {
            return Err(ConfigError::TwoCredentialSources { name });
        }
        let secrets: Vec<String> = arn
            .split(',')
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
            .collect();
        if secrets.is_empty() {
            return Err(ConfigError::Invalid {
                name: "HEARTH_SECRET_ARN",
                reason: "it names no secret".into(),
            });
        }
        return Ok((
            CredentialSource::SecretsManager(secrets),
            Credentials::default(),
        ));
    }
    if in_environment.is_none() {
        let credentials = Credentials {
            aion_api_key: get(AION_KEY_NAME).map(Secret::new),
            host_key: get(HOST_KEY_NAME).map(Secret::new),
            notify_key: get(NOTIFY_KEY_NAME).map(Secret::new),
            judge_api_key: get(JUDGE_KEY_NAME).map(Secret::new),
            log_key: get(LOG_KEY_NAME).map(Secret::new),
            log_key_previous: get(LOG_KEY_PREVIOUS_NAME).map(Secret::new),
            ..Credentials::default()
        };
        return Ok((CredentialSource::None, credentials));
    }
    let (credentials, problems) = Credentials::from_lookup(get);
    if let Some(problem) = problems.first() {
        // Locally a weak or malformed credential stops the server: a person is there to fix it.
        let name = match problem {
            crate::auth::credentials::CredentialProblem::ShortJwtSecret => "MCP_JWT_SECRET",
            crate::auth::credentials::CredentialProblem::BadJudgeTokenHash { .. } => {
                "MCP_JUDGE_TOKEN_HASHES"
            }
        };
        return Err(ConfigError::Invalid {
            name,
            reason: problem.to_string(),
        });
    }
    Ok((CredentialSource::Environment, credentials))
}

/// An absolute `https` URL (plain `http` only for a loopback host), without credentials.
fn backend_url(url: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|error| format!("not an absolute URL ({error})"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err("the URL has no host".into()),
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => return Err("must be https (plain http only for a loopback host)".into()),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not carry credentials; set AION_BACKEND_API_KEY".into());
    }
    Ok(url.to_owned())
}

/// A redirect URI: an absolute `https` URL (plain `http` only for a loopback host), without
/// credentials or a fragment (RFC 6749 §3.1.2).
fn redirect_uri(uri: &str) -> Result<(), String> {
    backend_url(uri).map_err(|reason| format!("{uri:?}: {reason}"))?;
    if uri.contains('#') {
        return Err(format!("{uri:?}: a redirect URI has no fragment"));
    }
    Ok(())
}

fn rate_limit(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: u32,
) -> Result<u32, ConfigError> {
    let Some(value) = get(name) else {
        return Ok(default);
    };
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|limit| (1..=MAX_RATE_LIMIT).contains(limit))
        .ok_or(ConfigError::Invalid {
            name,
            reason: format!("expected requests per minute from 1 to {MAX_RATE_LIMIT}"),
        })
}

/// `HEARTH_SIGNUP` and `HEARTH_SIGNUP_PER_DAY`. Sign-up makes the person's first passkey
/// and then links their assistant, so it needs the passkey pages (a public URL) and account
/// linking (`MCP_REDIRECT_URIS`); it is refused at start without them rather than offered
/// and broken.
fn signup_settings(
    get: &impl Fn(&str) -> Option<String>,
    has_passkeys: bool,
    no_linking: bool,
) -> Result<SignupSettings, ConfigError> {
    let mode = match get("HEARTH_SIGNUP").map(|value| value.trim().to_ascii_lowercase()) {
        None => SignupMode::Off,
        Some(value) if value == "off" => SignupMode::Off,
        Some(value) if value == "invite" => SignupMode::Invite,
        Some(value) if value == "open" => SignupMode::Open,
        Some(_) => {
            return Err(ConfigError::Invalid {
                name: "HEARTH_SIGNUP",
                reason: "expected off, invite or open".into(),
            });
        }
    };
    let per_day = match get("HEARTH_SIGNUP_PER_DAY") {
        None => SignupSettings::default().per_day,
        Some(value) => value
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|cap| (1..=MAX_SIGNUPS_PER_DAY).contains(cap))
            .ok_or(ConfigError::Invalid {
                name: "HEARTH_SIGNUP_PER_DAY",
                reason: format!("expected households a day from 1 to {MAX_SIGNUPS_PER_DAY}"),
            })?,
    };
    if mode != SignupMode::Off {
        let missing = if !has_passkeys {
            Some("the passkey pages' public URL (MCP_RESOURCE_URL)")
        } else if no_linking {
            Some("account linking (MCP_REDIRECT_URIS)")
        } else {
            None
        };
        if let Some(missing) = missing {
            return Err(ConfigError::Invalid {
                name: "HEARTH_SIGNUP",
                reason: format!(
                    "sign-up makes a passkey and links an assistant, so it needs {missing}; set it, or leave HEARTH_SIGNUP off"
                ),
            });
        }
    }
    Ok(SignupSettings { mode, per_day })
}

/// The intent judge's settings: `COUNTERSIGN_JUDGE` (by default `rules+openai` when
/// `COUNTERSIGN_JUDGE_URL` is set, else `bedrock` under Lambda and `rules` locally), its
/// model, guardrail, URL and time limit.
fn judge_settings(
    get: &impl Fn(&str) -> Option<String>,
    runtime: Runtime,
) -> Result<JudgeSettings, ConfigError> {
    let invalid = |name: &'static str, reason: &str| ConfigError::Invalid {
        name,
        reason: reason.into(),
    };
    let url = get("COUNTERSIGN_JUDGE_URL").map(|url| url.trim().to_owned());
    let kind = match get("COUNTERSIGN_JUDGE") {
        None if url.is_some() => JudgeKind::RulesOpenAi,
        None if runtime == Runtime::Lambda => JudgeKind::Bedrock,
        None => JudgeKind::Rules,
        Some(name) => JudgeKind::parse(&name).ok_or_else(|| {
            invalid(
                "COUNTERSIGN_JUDGE",
                "expected rules, bedrock, openai or rules+openai",
            )
        })?,
    };
    let model = get("COUNTERSIGN_JUDGE_MODEL").map(|model| model.trim().to_owned());
    if kind.is_openai() {
        let Some(url) = &url else {
            return Err(invalid(
                "COUNTERSIGN_JUDGE_URL",
                "openai and rules+openai need the server's base URL, such as http://127.0.0.1:11434/v1",
            ));
        };
        let parsed = url::Url::parse(url)
            .ok()
            .filter(|parsed| matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some())
            .ok_or_else(|| invalid("COUNTERSIGN_JUDGE_URL", "expected an http or https URL"))?;
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(invalid(
                "COUNTERSIGN_JUDGE_URL",
                "a base URL has no query or fragment",
            ));
        }
        if model.is_none() {
            return Err(invalid(
                "COUNTERSIGN_JUDGE_MODEL",
                "openai and rules+openai need the model's name on that server (its default is a Bedrock model)",
            ));
        }
    }
    let timeout_ms = match get("COUNTERSIGN_JUDGE_TIMEOUT_MS") {
        None => crate::countersign::judge::openai::DEFAULT_TIMEOUT.as_millis() as u64,
        Some(value) => value
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|ms| (1..=MAX_JUDGE_TIMEOUT_MS).contains(ms))
            .ok_or_else(|| {
                invalid(
                    "COUNTERSIGN_JUDGE_TIMEOUT_MS",
                    "expected milliseconds from 1 to 60000",
                )
            })?,
    };
    Ok(JudgeSettings {
        kind,
        model: model.unwrap_or_else(|| crate::countersign::judge::DEFAULT_MODEL.into()),
        guardrail: get("COUNTERSIGN_GUARDRAIL_ID").map(|id| {
            (
                id.trim().to_owned(),
                get("COUNTERSIGN_GUARDRAIL_VERSION").unwrap_or_else(|| "DRAFT".into()),
            )
        }),
        url,
        timeout_ms,
    })
}

/// The default cap on connections a server holds open at once (`HEARTH_MAX_CONNECTIONS`,
/// `HEARTH_WITNESS_MAX_CONNECTIONS`): well under the usual 1,024 file descriptors a process
/// may open, leaving room for the store, logs and outgoing calls.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// The largest connection cap accepted.
pub const MAX_CONNECTION_CAP: usize = 65_536;

/// A connection cap from its setting `name`: 1 to [`MAX_CONNECTION_CAP`], default
/// [`DEFAULT_MAX_CONNECTIONS`].
pub(crate) fn connection_cap(
    value: Option<String>,
    name: &'static str,
) -> Result<usize, ConfigError> {
    let Some(value) = value else {
        return Ok(DEFAULT_MAX_CONNECTIONS);
    };
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|cap| (1..=MAX_CONNECTION_CAP).contains(cap))
        .ok_or(ConfigError::Invalid {
            name,
            reason: format!("expected a number of connections from 1 to {MAX_CONNECTION_CAP}"),
        })
}

fn split_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn the_judge_settings() {
        const URL: (&str, &str) = ("COUNTERSIGN_JUDGE_URL", "http://127.0.0.1:11434/v1");
        const MODEL: (&str, &str) = ("COUNTERSIGN_JUDGE_MODEL", "llama3.1:8b");
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        let kind = |vars: &[(&str, &str)]| config(vars).map(|config| config.judge.kind);
        assert_eq!(kind(&[lambda]).unwrap(), JudgeKind::Bedrock);
        // Only the URL (and the model it needs): the rules and the model together.
        assert_eq!(kind(&[URL, MODEL]).unwrap(), JudgeKind::RulesOpenAi);
        for (name, expected) in [
            ("rules", JudgeKind::Rules),
            ("bedrock", JudgeKind::Bedrock),
            ("openai", JudgeKind::OpenAi),
            ("rules+openai", JudgeKind::RulesOpenAi),
        ] {
            assert_eq!(
                kind(&[("COUNTERSIGN_JUDGE", name), URL, MODEL]).unwrap(),
                expected
            );
        }
        let refused = |vars: &[(&str, &str)]| match config(vars) {
            Err(ConfigError::Invalid { name, reason }) => format!("{name}: {reason}"),
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert!(refused(&[("COUNTERSIGN_JUDGE", "oracle")]).contains("rules+openai"));
        assert!(
            refused(&[("COUNTERSIGN_JUDGE", "openai"), MODEL]).starts_with("COUNTERSIGN_JUDGE_URL")
        );
        // The model has no usable default on another server: it is a Bedrock model id.
        assert!(refused(&[URL]).starts_with("COUNTERSIGN_JUDGE_MODEL"));
        for url in ["ftp://127.0.0.1/v1", "not a url", "http://127.0.0.1/v1?x=1"] {
            let refusal = refused(&[("COUNTERSIGN_JUDGE_URL", url), MODEL]);
            assert!(
                refusal.starts_with("COUNTERSIGN_JUDGE_URL"),
                "{url}: {refusal}"
            );
        }
        // The time limit: 1 ms to 60 s, each end and one past it.
        let timeout = |ms: &str| {
            config(&[URL, MODEL, ("COUNTERSIGN_JUDGE_TIMEOUT_MS", ms)])
                .map(|config| config.judge.timeout_ms)
        };
        assert_eq!(config(&[URL, MODEL]).unwrap().judge.timeout_ms, 1500);
        assert_eq!(timeout("1").unwrap(), 1);
        assert_eq!(timeout("60000").unwrap(), 60_000);
        assert!(timeout("0").is_err() && timeout("60001").is_err() && timeout("soon").is_err());
        // The key travels only over https or to loopback.
        let key = ("COUNTERSIGN_JUDGE_API_KEY", "sk-household");
        let with = |url: &'static str| {
            config(&[("COUNTERSIGN_JUDGE_URL", url), MODEL, key]).map(|config| config.judge.url)
        };
        assert!(with("http://127.0.0.1:11434/v1").is_ok());
        assert!(with("http://localhost:8080/v1").is_ok());
        assert!(with("https://models.example/v1").is_ok());
        match with("http://192.168.1.20:11434/v1") {
            Err(ConfigError::Invalid { name, reason }) => {
                assert_eq!(name, "COUNTERSIGN_JUDGE_URL");
                assert!(reason.contains("https"), "{reason}");
            }
            other => panic!("the key would travel in the clear: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_local_and_closed() {
        let config = config(&[]).unwrap();
        assert_eq!(config.runtime, Runtime::Local);
        assert_eq!(config.addr.to_string(), "127.0.0.1:8790");
        assert_eq!(
            config.store,
            StoreChoice::Sqlite(PathBuf::from(".hearth/hearth.db"))
        );
        assert_eq!(config.credential_source, CredentialSource::None);
        assert!(config.credentials.missing().len() == 4 && !config.allow_no_auth);
        assert!(!config.disabled);
        assert_eq!(config.toolsets, vec!["why", "aion", "countersign"]);
        assert_eq!(config.aion_backend_url, None);
        assert_eq!(config.judge.kind, JudgeKind::Rules, "rules locally");
        assert_eq!(config.judge.model, "us.amazon.nova-premier-v1:0");
        assert_eq!(config.assistant_model, "us.amazon.nova-pro-v1:0");
        assert_ne!(config.assistant_model, config.judge.model);
        assert_eq!(config.urls.unwrap().resource(), "http://127.0.0.1:8790/mcp");
        assert_eq!(
            config.rate_limits,
            RateLimits {
                per_subject: 60,
                per_ip: 120
            }
        );
    }

    #[test]
    fn trusted_proxies_and_connection_caps_are_checked_at_start() {
        assert!(config(&[]).unwrap().trusted_proxies.is_empty());
        assert!(
            !config(&[("HEARTH_TRUSTED_PROXIES", "10.0.0.0/8, ::1")])
                .unwrap()
                .trusted_proxies
                .is_empty()
        );
        let bad = config(&[("HEARTH_TRUSTED_PROXIES", "10.0.0.0/40")]);
        assert!(
            matches!(
                bad,
                Err(ConfigError::Invalid {
                    name: "HEARTH_TRUSTED_PROXIES",
                    ..
                })
            ),
            "{bad:?}"
        );
        let lambda = config(&[
            ("HEARTH_TRUSTED_PROXIES", "10.0.0.0/8"),
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("HEARTH_TABLE", "t"),
        ]);
        assert!(
            matches!(
                lambda,
                Err(ConfigError::Invalid {
                    name: "HEARTH_TRUSTED_PROXIES",
                    ..
                })
            ),
            "{lambda:?}"
        );
        assert_eq!(
            config(&[]).unwrap().max_connections,
            DEFAULT_MAX_CONNECTIONS
        );
        for (value, cap) in [
            ("1", Some(1)),
            ("65536", Some(65_536)),
            ("0", None),
            ("65537", None),
            ("many", None),
        ] {
            let read = config(&[("HEARTH_MAX_CONNECTIONS", value)]);
            assert_eq!(
                read.ok().map(|config| config.max_connections),
                cap,
                "{value}"
            );
        }
    }

    #[test]
    fn metrics_are_function_tool_or_off_and_anything_else_stops_the_start() {
        let lookup = |value: &'static str| {
            move |name: &str| (name == "HEARTH_METRICS").then(|| value.to_owned())
        };
        assert_eq!(
            LogSettings::from_lookup(|_| None).metrics,
            MetricDetail::Function
        );
        for (value, detail) in [
            ("function", MetricDetail::Function),
            ("Tool", MetricDetail::Tool),
            (" off ", MetricDetail::Off),
        ] {
            assert_eq!(LogSettings::from_lookup(lookup(value)).metrics, detail);
            assert!(config(&[("HEARTH_METRICS", value)]).is_ok(), "{value}");
        }
        let error = config(&[("HEARTH_METRICS", "tools")]).unwrap_err();
        assert!(error.to_string().contains("HEARTH_METRICS"), "{error}");
        // The log subscriber starts whatever the value, so that the refusal is logged.
        assert_eq!(
            LogSettings::from_lookup(lookup("tools")).metrics,
            MetricDetail::Function
        );
    }

    #[test]
    fn no_auth_needs_exactly_true_and_is_refused_under_lambda() {
        assert!(
            config(&[("MCP_ALLOW_NO_AUTH", "TRUE")])
                .unwrap()
                .allow_no_auth
        );
        assert!(!config(&[("MCP_ALLOW_NO_AUTH", "1")]).unwrap().allow_no_auth);
        assert!(
            !config(&[("MCP_ALLOW_NO_AUTH", "yes")])
                .unwrap()
                .allow_no_auth
        );
        let lambda = config(&[
            ("MCP_ALLOW_NO_AUTH", "true"),
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
        ]);
        assert!(matches!(lambda, Err(ConfigError::NoAuthUnderLambda)));
    }

    #[test]
    fn unknown_toolsets_and_bad_hashes_fail_at_start() {
        assert!(config(&[("HEARTH_TOOLSETS", "why,nope")]).is_err());
        assert!(config(&[("MCP_JUDGE_TOKEN_HASHES", "abc")]).is_err());
        assert!(config(&[("HEARTH_ADDR", "nowhere")]).is_err());
        assert!(config(&[("MCP_DISABLED", "yes")]).is_err());
    }

    #[test]
    fn a_jwt_secret_under_32_bytes_stops_the_local_server() {
        let key = "k".repeat(32);
        assert!(config(&[("MCP_JWT_SECRET", &key)]).is_ok());
        let error = config(&[("MCP_JWT_SECRET", &key[1..])]).unwrap_err();
        assert!(error.to_string().contains("MCP_JWT_SECRET"), "{error}");
        assert!(!error.to_string().contains(&key[1..]));
    }

    #[test]
    fn under_lambda_credentials_come_only_from_secrets_manager() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        for name in CREDENTIAL_NAMES.into_iter().chain(OTHER_SECRET_NAMES) {
            let error = config(&[lambda, (name, "value")]).unwrap_err();
            assert!(
                matches!(error, ConfigError::CredentialInLambdaEnvironment { name: n } if n == name)
            );
        }
        let arn = "arn:aws:secretsmanager:eu-west-1:1:secret:hearth";
        let config_with_arn = config(&[lambda, ("HEARTH_SECRET_ARN", arn)]).unwrap();
        assert_eq!(
            config_with_arn.credential_source,
            CredentialSource::SecretsManager(vec![arn.into()])
        );
        let split =
            config(&[lambda, ("HEARTH_SECRET_ARN", &format!("{arn}-a, {arn}-b,"))]).unwrap();
        assert_eq!(
            split.credential_source,
            CredentialSource::SecretsManager(vec![format!("{arn}-a"), format!("{arn}-b")])
        );
        for empty in [",", " , ", ",,"] {
            assert!(
                matches!(
                    config(&[lambda, ("HEARTH_SECRET_ARN", empty)]),
                    Err(ConfigError::Invalid {
                        name: "HEARTH_SECRET_ARN",
                        ..
                    })
                ),
                "{empty:?}"
            );
        }
        assert!(
            config_with_arn.urls.is_none(),
            "no default URL under Lambda"
        );
        assert!(matches!(
            config(&[("HEARTH_SECRET_ARN", arn), ("MCP_CLIENT_ID", "x")]),
            Err(ConfigError::TwoCredentialSources { .. })
        ));
    }

    #[test]
    fn the_servers_own_origin_is_a_browser_origin() {
        let local = config(&[("MCP_ALLOWED_ORIGINS", "https://demo.example")]).unwrap();
        assert_eq!(
            local.browser_origins(),
            [
                "https://demo.example",
                "http://127.0.0.1:8790",
                "http://localhost:8790"
            ]
        );
        let deployed = config(&[
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            (
                "HEARTH_SECRET_ARN",
                "arn:aws:secretsmanager:us-east-1:1:secret:h",
            ),
            ("MCP_RESOURCE_URL", "https://api.example/mcp"),
        ])
        .unwrap();
        assert_eq!(deployed.browser_origins(), ["https://api.example"]);
    }

    #[test]
    fn the_demo_device_is_local_only() {
        assert!(!config(&[]).unwrap().demo_device);
        assert!(config(&[("HEARTH_DEMO_DEVICE", "1")]).unwrap().demo_device);
        assert!(config(&[("HEARTH_DEMO_DEVICE", "yes")]).is_err());
        assert!(matches!(
            config(&[
                ("HEARTH_DEMO_DEVICE", "1"),
                ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")
            ]),
            Err(ConfigError::DemoDeviceUnderLambda)
        ));
    }

    #[test]
    fn loopback_client_metadata_is_local_only() {
        assert!(!config(&[]).unwrap().cimd_allow_http_loopback);
        let allowed = config(&[("HEARTH_CIMD_ALLOW_HTTP_LOOPBACK", "true")]).unwrap();
        assert!(allowed.cimd_allow_http_loopback);
        assert!(config(&[("HEARTH_CIMD_ALLOW_HTTP_LOOPBACK", "1")]).is_err());
        assert!(matches!(
            config(&[
                ("HEARTH_CIMD_ALLOW_HTTP_LOOPBACK", "true"),
                ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")
            ]),
            Err(ConfigError::CimdLoopbackUnderLambda)
        ));
    }

    #[test]
    fn the_development_host_key_counts_only_outside_lambda() {
        let local = config(&[("COUNTERSIGN_HOST_KEY", "development")]).unwrap();
        assert_eq!(local.host_key().unwrap().expose(), "development");
        assert!(config(&[]).unwrap().host_key().is_none());
        let mut lambda = config(&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")]).unwrap();
        // Under Lambda the key comes from the secret; the development key is refused there.
        lambda.credentials.host_key = Some(Secret::new("development"));
        assert!(lambda.host_key().is_none());
        lambda.credentials.host_key = Some(Secret::new("a real device key"));
        assert_eq!(lambda.host_key().unwrap().expose(), "a real device key");
    }

    #[test]
    fn hearth_table_selects_dynamodb_and_excludes_hearth_db() {
        assert_eq!(
            config(&[("HEARTH_TABLE", "hearth")]).unwrap().store,
            StoreChoice::DynamoDb("hearth".into())
        );
        assert!(config(&[("HEARTH_TABLE", "hearth"), ("HEARTH_DB", "x.db")]).is_err());
    }

    #[test]
    fn outside_urls_must_be_https_or_loopback() {
        for ok in ["https://aion.example/api/ask", "http://127.0.0.1:9000/ask"] {
            assert_eq!(
                config(&[("AION_BACKEND_URL", ok)])
                    .unwrap()
                    .aion_backend_url
                    .as_deref(),
                Some(ok)
            );
            assert_eq!(
                config(&[("COUNTERSIGN_NOTIFY_URL", ok)])
                    .unwrap()
                    .notify_url
                    .as_deref(),
                Some(ok)
            );
        }
        for bad in [
            "http://aion.example/ask",
            "https://user:pw@aion.example/",
            "aion",
        ] {
            assert!(config(&[("AION_BACKEND_URL", bad)]).is_err(), "{bad}");
            assert!(config(&[("COUNTERSIGN_NOTIFY_URL", bad)]).is_err(), "{bad}");
        }
    }

    #[test]
    fn redirect_uris_are_https_or_loopback_and_have_no_fragment() {
        let linked = config(&[(
            "MCP_REDIRECT_URIS",
            "https://pitangui.amazon.com/api/skill/link/M1, https://layla.amazon.com/api/skill/link/M1",
        )])
        .unwrap();
        assert_eq!(linked.redirect_uris.len(), 2);
        assert!(linked.linking_enabled());
        assert!(!config(&[]).unwrap().linking_enabled());
        for bad in [
            "http://pitangui.amazon.com/link",
            "https://a.example/link#x",
            "/relative",
            "https://a.example/ok,ftp://b.example/",
        ] {
            let error = config(&[("MCP_REDIRECT_URIS", bad)]).unwrap_err();
            assert!(
                error.to_string().contains("MCP_REDIRECT_URIS"),
                "{bad}: {error}"
            );
        }
        assert!(config(&[("MCP_REDIRECT_URIS", "http://127.0.0.1:9/cb")]).is_ok());
    }

    #[test]
    fn log_keys_rotate_with_a_version_and_the_previous_secret() {
        assert!(
            config(&[]).unwrap().log_key_seeds().is_empty(),
            "no key, no seeds"
        );
        let one = config(&[("HEARTH_LOG_KEY", "secret-one")]).unwrap();
        let seeds = one.log_key_seeds();
        assert_eq!(seeds.len(), 1);
        assert_eq!(seeds[0].0, 1);
        let rotating = config(&[
            ("HEARTH_LOG_KEY", "secret-two"),
            ("HEARTH_LOG_KEY_PREVIOUS", "secret-one"),
            ("HEARTH_LOG_KEY_VERSION", "2"),
        ])
        .unwrap();
        let both = rotating.log_key_seeds();
        assert_eq!(
            both.iter().map(|(version, _)| *version).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(both[1].1, seeds[0].1, "the previous key is the old one");
        assert_ne!(both[0].1, both[1].1);
        for bad in ["0", "10000", "two"] {
            assert!(config(&[("HEARTH_LOG_KEY_VERSION", bad)]).is_err(), "{bad}");
        }
        assert!(config(&[("HEARTH_LOG_KEY_VERSION", "9999")]).is_ok());
    }

    #[test]
    fn disabling_takes_one_or_true() {
        for (value, disabled) in [("1", true), ("TRUE", true), ("0", false), ("false", false)] {
            assert_eq!(
                config(&[("MCP_DISABLED", value)]).unwrap().disabled,
                disabled
            );
        }
    }

    #[test]
    fn sign_up_is_off_by_default_and_needs_passkeys_and_linking() {
        let linking = (
            "MCP_REDIRECT_URIS",
            "https://alexa.example/api/skill/link/M2TEST",
        );
        let off = config(&[]).unwrap().signup;
        assert_eq!(off.mode, SignupMode::Off);
        assert_eq!(off.per_day, 100);
        for (value, mode) in [
            ("off", SignupMode::Off),
            ("invite", SignupMode::Invite),
            (" Open ", SignupMode::Open),
        ] {
            let signup = config(&[("HEARTH_SIGNUP", value), linking]).unwrap().signup;
            assert_eq!(signup.mode, mode, "{value}");
        }
        let error = config(&[("HEARTH_SIGNUP", "yes"), linking])
            .unwrap_err()
            .to_string();
        assert!(error.contains("off, invite or open"), "{error}");
        // Without linking there is nothing to link after signing up.
        let error = config(&[("HEARTH_SIGNUP", "open")])
            .unwrap_err()
            .to_string();
        assert!(error.contains("MCP_REDIRECT_URIS"), "{error}");
        // The daily cap at both ends, and one past each.
        let cap = |value: &str| config(&[("HEARTH_SIGNUP_PER_DAY", value), linking]);
        assert_eq!(cap("1").unwrap().signup.per_day, 1);
        assert_eq!(cap("100000").unwrap().signup.per_day, MAX_SIGNUPS_PER_DAY);
        for bad in ["0", "100001", "-1", "lots"] {
            assert!(cap(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rate_limits_are_bounded_at_both_ends() {
        let limit = |value: &str| config(&[("HEARTH_RATE_LIMIT_PER_IP", value)]);
        assert_eq!(limit("1").unwrap().rate_limits.per_ip, 1);
        assert_eq!(limit("1000000").unwrap().rate_limits.per_ip, MAX_RATE_LIMIT);
        for bad in ["0", "1000001", "-1", "many"] {
            assert!(limit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_server_reachable_from_elsewhere_needs_its_public_url() {
        for addr in ["0.0.0.0:8790", "[::]:8790", "192.168.1.20:8790"] {
            let error = config(&[("HEARTH_ADDR", addr)]).unwrap_err().to_string();
            assert!(error.contains("MCP_RESOURCE_URL"), "{addr}: {error}");
        }
        for addr in ["127.0.0.1:8790", "[::1]:8790"] {
            assert!(config(&[("HEARTH_ADDR", addr)]).is_ok(), "{addr}");
        }
        assert!(
            config(&[
                ("HEARTH_ADDR", "0.0.0.0:8790"),
                ("MCP_RESOURCE_URL", "https://hearth.example/mcp")
            ])
            .is_ok()
        );
    }

    #[test]
    fn resource_url_host_is_allowed() {
        let config =
            config(&[("MCP_RESOURCE_URL", "https://Hearth.Example.com:8443/mcp")]).unwrap();
        assert!(
            config
                .allowed_hosts()
                .contains(&"hearth.example.com".to_string())
        );
    }
}
