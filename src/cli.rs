//! The command line, declared with clap: every command, flag and the setting behind it. The
//! manual's CLI reference is generated from these definitions (`hearth reference cli`), so
//! what `--help` says and what the manual says cannot drift.
//!
//! Usage errors exit 2. A command run with `--json` reports its usage error as one JSON object
//! on stdout, `{"error", "usage"}`, like every other answer it gives.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

/// Hearth: a self-hosted MCP server that keeps what a household voice assistant must not be
/// trusted to keep on its own.
#[derive(Debug, Parser)]
#[command(
    name = "hearth",
    version,
    about = "Hearth: a self-hosted MCP server for household voice assistants",
    long_about = "Hearth: a self-hosted MCP server for household voice assistants. It keeps what \
the assistant must not be trusted to keep on its own: why it did things (toolset `why`), a second \
signature on everything it buys (`countersign`), and a narrow relay to an outside guide (`aion`).\n\n\
With no command, `hearth` serves every router on one local address (`hearth serve`).",
    after_help = "Every setting is an environment variable; the manual's Configuration page lists them all \
(docs/src/reference/configuration.md)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// How log lines are written: `text` for people, `json` for machines (CloudWatch reads
    /// JSON). By default `text` at a terminal and `json` otherwise.
    #[arg(
        long,
        global = true,
        value_enum,
        hide_env_values = true,
        env = "HEARTH_LOG_FORMAT"
    )]
    pub log_format: Option<LogFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve every router (MCP, OAuth, speech, the demo) on one local address, with an
    /// embedded SQLite store by default
    Serve(ServeArgs),
    /// The operator's commands over the configured store: households, devices, tokens, logs,
    /// OAuth clients
    Admin(AdminArgs),
    /// One turn of the model-driven assistant, with this process playing the household's device
    Assistant(AssistantArgs),
    /// A witness that cosigns Hearth's log checkpoints (C2SP tlog-witness), run apart from the
    /// server by whoever the household trusts
    Witness(WitnessArgs),
    /// Check the server's setup (settings, store, file modes, log key, URL, witnesses, clock)
    /// and say what to fix; never writes
    Doctor(DoctorArgs),
    /// Run an intent judge over labelled cases and print how it did
    Eval(EvalArgs),
    /// Print every route and the function that serves it, as JSON (what the template routes)
    Routes,
    /// Ask a server's /healthz, as a container's HEALTHCHECK does (an image has no curl):
    /// exit 0 when it answers 200, 1 otherwise
    Healthcheck {
        /// The URL to ask [default: http://<HEARTH_ADDR>/healthz, loopback for 0.0.0.0 and ::]
        url: Option<String>,
    },
    /// Write the packages' man pages, shell completions and settings file into DIR
    #[command(hide = true, name = "package-files")]
    PackageFiles {
        /// The folder to write man/, completions/ and hearth.env into
        dir: PathBuf,
    },
    /// Print what the code generates for the manual's reference pages, or rewrite them
    #[command(hide = true)]
    Reference {
        /// The page (or, for a page that is mostly prose, its generated table) to print
        #[arg(value_enum, required_unless_present = "update")]
        page: Option<ReferencePage>,
        /// Rewrite every generated page and table under docs/src/reference/ (run it from the
        /// project root)
        #[arg(long, conflicts_with = "page")]
        update: bool,
    },
}

/// The reference pages generated from the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReferencePage {
    /// docs/src/reference/cli.md, from these definitions
    Cli,
    /// docs/src/reference/configuration.md, from the configuration's settings table
    Configuration,
    /// The table of docs/src/reference/routes.md, from `app::ROUTES`
    Routes,
    /// The table of docs/src/reference/tools.md, from what `tools/list` answers
    Tools,
    /// The items table of docs/src/reference/dynamodb.md, from the DynamoDB store's own
    /// module comment
    Dynamodb,
}

impl ReferencePage {
    pub const ALL: [ReferencePage; 5] = [
        Self::Cli,
        Self::Configuration,
        Self::Routes,
        Self::Tools,
        Self::Dynamodb,
    ];

    /// The page's file, from the project root.
    pub fn path(self) -> &'static str {
        match self {
            Self::Cli => "docs/src/reference/cli.md",
            Self::Configuration => "docs/src/reference/configuration.md",
            Self::Routes => "docs/src/reference/routes.md",
            Self::Tools => "docs/src/reference/tools.md",
            Self::Dynamodb => "docs/src/reference/dynamodb.md",
        }
    }

    /// What the code generates: the whole page, or the table spliced into it between
    /// `<!-- generated:NAME:begin/end -->` markers (see `config::reference::splice`).
    pub fn generate(self) -> anyhow::Result<Generated> {
        Ok(match self {
            Self::Cli => Generated::Page(markdown()),
            Self::Configuration => Generated::Page(hearth_core::config::reference::markdown()),
            Self::Routes => Generated::Table("routes", hearth_core::app::routes_markdown()),
            Self::Tools => Generated::Table("tools", hearth_core::app::tools_markdown()?),
            Self::Dynamodb => Generated::Table("items", dynamodb_items()),
        })
    }
}

/// The item table of the DynamoDB store's module comment, where the code that writes the items
/// is: the one place it is edited.
fn dynamodb_items() -> String {
    include_str!("../shared/src/store/dynamodb.rs")
        .lines()
        .filter_map(|line| line.strip_prefix("//! |"))
        .map(|row| format!("|{row}\n"))
        .collect()
}

/// A generated reference: a whole page, or a named table within one.
pub enum Generated {
    Page(String),
    Table(&'static str, String),
}

/// The settings a local server is most often started with. Each is also read from its
/// environment variable; the flag wins. Credentials are never flags (a command line is visible
/// to every user of the machine): they come from the environment, Secrets Manager or the
/// development credentials.
#[derive(Debug, Default, Args)]
#[command(
    after_help = "Every other setting (credentials, log keys, rate limits, AWS) is read from \
the environment: see the manual's Configuration page (docs/src/reference/configuration.md)."
)]
pub struct ServeArgs {
    #[command(flatten)]
    pub settings: ServerSettings,
    /// Start every log the log key does not verify anew, each with a recorded reset (as
    /// `hearth admin log reset` does), making a new key when there is none: the explicit way to
    /// begin a new log identity. Without it the server refuses to start when the key is
    /// missing or verifies at most half the stored log heads
    #[arg(long)]
    pub new_log_key: bool,
}

impl ServeArgs {
    /// The settings given, by environment variable name (see [`ServerSettings::settings`]).
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        self.settings.settings()
    }
}

/// `hearth doctor`: the server's settings, checked.
#[derive(Debug, Args)]
#[command(
    after_help = "Exits 0 when no check fails and 1 otherwise; it never writes. Every other \
setting is read from the environment, as `hearth serve` reads it."
)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub settings: ServerSettings,
    /// Also check a deployment on AWS: the table HEARTH_TABLE and its point-in-time recovery,
    /// and the secrets HEARTH_SECRET_ARN, with the usual AWS settings
    #[arg(long)]
    pub aws: bool,
    /// Print the checks as one JSON object, {"ok", "checks": [{"name", "status", "detail", "fix"}]}
    #[arg(long)]
    pub json: bool,
}

/// The settings a server is started with, as flags: `hearth serve` and `hearth doctor` read
/// the same ones.
#[derive(Debug, Default, Args)]
pub struct ServerSettings {
    /// Listen address. Anything but loopback needs --resource-url: clients must be told the
    /// URL they reach the server by
    #[arg(
        long,
        hide_env_values = true,
        env = "HEARTH_ADDR",
        value_name = "HOST:PORT"
    )]
    pub addr: Option<String>,
    /// The data directory: the SQLite file, the development credentials and the log key
    /// [default: ./.hearth]
    #[arg(
        long,
        hide_env_values = true,
        env = "HEARTH_DATA_DIR",
        value_name = "DIR"
    )]
    pub data_dir: Option<PathBuf>,
    /// The SQLite file [default: <data dir>/hearth.db]
    #[arg(
        long,
        hide_env_values = true,
        env = "HEARTH_DB",
        value_name = "FILE",
        conflicts_with = "table"
    )]
    pub db: Option<PathBuf>,
    /// A DynamoDB table instead of SQLite (created with TTL if missing)
    #[arg(
        long,
        hide_env_values = true,
        env = "HEARTH_TABLE",
        value_name = "NAME"
    )]
    pub table: Option<String>,
    /// The public URL of /mcp, as clients reach it (the token audience; discovery follows it)
    #[arg(
        long,
        hide_env_values = true,
        env = "MCP_RESOURCE_URL",
        value_name = "URL"
    )]
    pub resource_url: Option<String>,
    /// Account linking: comma-separated redirect URIs an authorization request may name
    #[arg(
        long,
        hide_env_values = true,
        env = "MCP_REDIRECT_URIS",
        value_name = "URIS"
    )]
    pub redirect_uris: Option<String>,
    /// Comma-separated browser origins allowed to call /mcp and the OAuth endpoints
    #[arg(
        long,
        hide_env_values = true,
        env = "MCP_ALLOWED_ORIGINS",
        value_name = "ORIGINS"
    )]
    pub allowed_origins: Option<String>,
    /// Extra accepted Host values, for a server behind a reverse proxy
    #[arg(
        long,
        hide_env_values = true,
        env = "HEARTH_ALLOWED_HOSTS",
        value_name = "HOSTS"
    )]
    pub allowed_hosts: Option<String>,
    /// The toolsets to serve, comma-separated [default: why,countersign,aion]
    #[arg(
        long,
        hide_env_values = true,
        env = "HEARTH_TOOLSETS",
        value_name = "NAMES"
    )]
    pub toolsets: Option<String>,
    /// A witness policy file (C2SP tlog-policy): every new checkpoint goes to its witnesses
    #[arg(
        long,
        hide_env_values = true,
        env = "HEARTH_WITNESS_POLICY_FILE",
        value_name = "FILE"
    )]
    pub witness_policy_file: Option<PathBuf>,
    /// How long a call waits for witnesses' cosignatures, in milliseconds [default: 200]
    #[arg(
        long,
        hide_env_values = true,
        env = "HEARTH_WITNESS_TIMEOUT_MS",
        value_name = "MS"
    )]
    pub witness_timeout_ms: Option<String>,
}

impl ServerSettings {
    /// The settings given, by environment variable name, for the configuration to read before
    /// the environment.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let path = |path: &Option<PathBuf>| path.as_ref().map(|p| p.display().to_string());
        [
            ("HEARTH_ADDR", self.addr.clone()),
            ("HEARTH_DATA_DIR", path(&self.data_dir)),
            ("HEARTH_DB", path(&self.db)),
            ("HEARTH_TABLE", self.table.clone()),
            ("MCP_RESOURCE_URL", self.resource_url.clone()),
            ("MCP_REDIRECT_URIS", self.redirect_uris.clone()),
            ("MCP_ALLOWED_ORIGINS", self.allowed_origins.clone()),
            ("HEARTH_ALLOWED_HOSTS", self.allowed_hosts.clone()),
            ("HEARTH_TOOLSETS", self.toolsets.clone()),
            (
                "HEARTH_WITNESS_POLICY_FILE",
                path(&self.witness_policy_file),
            ),
            ("HEARTH_WITNESS_TIMEOUT_MS", self.witness_timeout_ms.clone()),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|value| (name, value)))
        .collect()
    }
}

#[derive(Debug, Args)]
#[command(
    after_help = "HOUSEHOLD is the household id that `household create` printed. Every \
command works on the store the server uses: --db (or <data dir>/hearth.db), or the DynamoDB \
table HEARTH_TABLE with the usual AWS settings. It never creates a store, credentials or a log \
key: a missing one is an error that names the path it looked at."
)]
pub struct AdminArgs {
    /// Print exactly one JSON object: the result, or {"error"} (with "usage" for a usage error)
    #[arg(long, global = true)]
    pub json: bool,
    /// The server's data directory: its SQLite file, development credentials and log key
    /// [default: ./.hearth]
    #[arg(
        long,
        global = true,
        hide_env_values = true,
        env = "HEARTH_DATA_DIR",
        value_name = "DIR"
    )]
    pub data_dir: Option<PathBuf>,
    /// The server's SQLite file [default: <data dir>/hearth.db]
    #[arg(
        long,
        global = true,
        hide_env_values = true,
        env = "HEARTH_DB",
        value_name = "FILE"
    )]
    pub db: Option<PathBuf>,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Household accounts
    #[command(subcommand)]
    Household(HouseholdCommand),
    /// A household's device keys (what its devices sign speaker attestations with)
    #[command(subcommand, name = "device-key")]
    DeviceKey(DeviceKeyCommand),
    /// Mint a household token (a JWT bound to the household's current generation)
    Token {
        household: String,
        /// How long it lasts
        #[arg(long, default_value_t = hearth_core::admin::TOKEN_DAYS_DEFAULT,
              value_parser = clap::value_parser!(u32).range(1..=i64::from(hearth_core::admin::TOKEN_DAYS_MAX)))]
        days: u32,
    },
    /// A one-time link code for the consent page (15 minutes)
    LinkCode { household: String },
    /// A sign-up link (7 days) that makes one household: whoever opens it names the household
    /// and becomes its first guardian (needs HEARTH_SIGNUP=invite or open, as the server has it)
    SignupLink,
    /// The verifier key of the households' logs; `re-sign` signs log heads again with the
    /// current key and host
    LogKey {
        #[command(subcommand)]
        command: Option<LogKeyCommand>,
    },
    /// Start a household's logs anew (see the manual, Transparency logs)
    #[command(subcommand)]
    Log(LogCommand),
    /// OAuth clients kept in the store
    #[command(subcommand)]
    Client(ClientCommand),
    /// Unlink a household from its assistant: its tokens, codes and refresh tokens stop at once
    Unlink { household: String },
    /// Members' passkeys (what they approve orders with on their phones)
    #[command(subcommand)]
    Passkey(PasskeyCommand),
    /// A household's purchase ledger
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// Copy the SQLite store, its log key and the development credentials into one new file
    /// (mode 0600), consistently, while the server runs
    Backup {
        /// The backup file to create (never replaced)
        path: PathBuf,
    },
    /// Restore a backup into an empty data folder (created 0700 if missing), after checking
    /// that its log key verifies the log heads it holds
    Restore {
        /// The backup file `admin backup` wrote
        path: PathBuf,
        /// Confirm: without it, nothing is written and the command says what it would do
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Print the retained ledger entries as stored, for backups and audits (approvals in it
    /// check offline with scripts/verify_approvals.py)
    Export { household: String },
}

#[derive(Debug, Subcommand)]
pub enum PasskeyCommand {
    /// A single-use enrolment link for one member (15 minutes); the household's first passkey
    /// must be a guardian's
    Invite { household: String, member: String },
    /// List a household's passkeys, revoked and pending ones included
    List { household: String },
    /// Revoke one passkey: it signs nothing more, and stays listed
    Revoke {
        household: String,
        /// As `passkey list` prints it: base64url, which may begin with a hyphen
        #[arg(allow_hyphen_values = true)]
        credential_id: String,
    },
    /// A new link to the page where a guardian approves a pending passkey (links are kept
    /// only as hashes, so `passkey list` cannot show one; earlier links keep working)
    ApprovalLink {
        household: String,
        /// As `passkey list` prints it: base64url, which may begin with a hyphen
        #[arg(allow_hyphen_values = true)]
        credential_id: String,
    },
    /// Add the passkeys of every household (or of one) to the household page's sign-in index
    /// where they are missing: run once after upgrading to the household's page
    Index { household: Option<String> },
}

#[derive(Debug, Subcommand)]
pub enum HouseholdCommand {
    /// Create a household account
    Create {
        /// Its name (quote a name with spaces)
        name: String,
        /// A JSON policy file (budget, limits, members)
        #[arg(long, value_name = "FILE")]
        policy: Option<String>,
    },
    /// List every household
    List,
    /// Show one household
    Show { household: String },
    /// Replace a household's policy with a JSON file
    SetPolicy { household: String, file: String },
    /// Delete a household: its account, decisions, ledger and logs, for good
    Delete {
        household: String,
        /// Confirm: without it, nothing is deleted and the command says what it would delete
        #[arg(long)]
        yes: bool,
    },
    /// Make a credential's data (a judge token's or a client's household label) a household
    /// account's
    Adopt {
        /// The hashed owner of the data (the subject scope)
        #[arg(long, value_name = "HASH")]
        subject_scope: String,
        /// The household label the data was kept under
        #[arg(long, value_name = "OLD")]
        household_id: String,
        /// The new account's name
        #[arg(long)]
        name: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum DeviceKeyCommand {
    /// Add a device key (shown once)
    Add { household: String },
    /// List a household's device keys
    List { household: String },
    /// Revoke one device key
    Revoke { household: String, key_id: String },
}

#[derive(Debug, Subcommand)]
pub enum LogKeyCommand {
    /// Sign log heads again with the current key and host
    #[command(name = "re-sign")]
    Resign {
        /// Every household
        #[arg(
            long,
            conflicts_with = "household",
            required_unless_present = "household"
        )]
        all: bool,
        household: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Start the household's logs anew: kept proofs of the old log then check as "the log was
    /// replaced"
    Reset {
        household: String,
        /// Confirm: without it, nothing changes and the command says what it would do
        #[arg(long)]
        yes: bool,
        /// Only this log [default: both]
        #[arg(long, value_enum)]
        log: Option<LogName>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogName {
    Decisions,
    Ledger,
}

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Add an OAuth client (its secret is shown once)
    Add {
        /// Its name (quote a name with spaces)
        name: String,
        /// A redirect URI it may use (repeat for more)
        #[arg(long = "redirect-uri", value_name = "URI", required = true)]
        redirect_uris: Vec<String>,
        /// A public client (PKCE, no secret), as desktop and browser hosts are
        #[arg(long)]
        public: bool,
    },
    /// List the clients: added, registered, kept and imported metadata clients, and removed
    /// metadata URLs
    List,
    /// Delete a client: its codes and refresh tokens stop at once. A metadata document's URL
    /// stays refused until `client allow`
    Delete { client_id: String },
    /// Store a host's metadata document by hand, for a host whose site refuses Hearth's
    /// fetch: checked by the same rules, never fetched, never expiring
    Import {
        /// The document's URL: the client id the host names itself by
        url: String,
        /// The document, saved from the host's site (`curl -o`, or a browser)
        #[arg(long, value_name = "FILE")]
        document: String,
    },
    /// Lift the removal of a metadata document's URL; its next use fetches the document
    Allow { url: String },
}

#[derive(Debug, Args)]
#[command(
    after_help = "The device's settings: MCP_RESOURCE_URL (where Hearth's /mcp is), \
HEARTH_TOKEN (the bearer token; by default the local server's development judge token), \
COUNTERSIGN_HOST_KEY or, with --household, HEARTH_DEVICE_KEY (what it signs with), and \
COUNTERSIGN_ASSISTANT_MODEL (the Bedrock model)."
)]
pub struct AssistantArgs {
    /// Who is speaking (a member id of the household)
    #[arg(long, value_name = "ID")]
    pub member: String,
    /// Speak for this household account, signing with HEARTH_DEVICE_KEY
    #[arg(long, value_name = "H")]
    pub household: Option<String>,
    /// Print the turn as one JSON object
    #[arg(long)]
    pub json: bool,
    /// What the person says
    #[arg(required = true, num_args = 1.., value_name = "WORDS")]
    pub words: Vec<String>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Settings: HEARTH_WITNESS_ADDR (default 127.0.0.1:8788), HEARTH_WITNESS_DIR \
(default ./.hearth-witness: its key and state), HEARTH_WITNESS_NAME (default: derived from its key)."
)]
pub struct WitnessArgs {
    /// Print exactly one JSON object (not for serve)
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: WitnessCommand,
}

#[derive(Debug, Subcommand)]
pub enum WitnessCommand {
    /// Serve POST /add-checkpoint, GET /<sha256 of origin>/checkpoint and GET /events on
    /// HEARTH_WITNESS_ADDR
    Serve,
    /// This witness's name and verifier key, for a policy
    Key,
    /// Cosign a log key's checkpoints for origins under a prefix
    Trust {
        /// The log's verifier key (`hearth admin log-key` prints it)
        log_vkey: String,
        /// Origins under this prefix, for example hearth.example/hearth/
        #[arg(long, value_name = "PREFIX")]
        origin_prefix: String,
        /// The most logs it keeps under the prefix
        #[arg(long, value_name = "N", default_value_t = hearth_core::witness::DEFAULT_MAX_LOGS,
              value_parser = clap::value_parser!(u32).range(1..))]
        max_logs: u32,
    },
    /// What it trusts, and the latest size it cosigned of each log
    List,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The cases file (JSON lines)
    #[arg(long, value_name = "FILE", default_value = "eval/cases.jsonl")]
    pub cases: PathBuf,
    /// Only the cases of this split
    #[arg(long, value_enum)]
    pub split: Option<SplitName>,
    /// Which judge (its settings, such as COUNTERSIGN_JUDGE_URL, come from the environment)
    #[arg(long, value_enum, default_value_t = JudgeName::Rules)]
    pub judge: JudgeName,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Also write the report into this directory
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SplitName {
    Dev,
    Test,
}

/// `hearth eval --judge`: every `COUNTERSIGN_JUDGE` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JudgeName {
    Rules,
    Bedrock,
    #[value(name = "openai")]
    OpenAi,
    #[value(name = "rules+openai")]
    RulesOpenAi,
}

impl JudgeName {
    /// The `COUNTERSIGN_JUDGE` value it stands for.
    pub fn setting(self) -> &'static str {
        match self {
            JudgeName::Rules => "rules",
            JudgeName::Bedrock => "bedrock",
            JudgeName::OpenAi => "openai",
            JudgeName::RulesOpenAi => "rules+openai",
        }
    }
}

/// What `hearth --version` prints: the version, then the build's commit, whether the tree
/// differed from it, the commit's date and the optional parts (see build.rs).
pub fn version_text() -> String {
    let features: Vec<String> = hearth_core::BUILD_FEATURES
        .iter()
        .map(|(name, on)| format!("{name} {}", if *on { "on" } else { "off" }))
        .collect();
    format!(
        "hearth {}\ncommit: {}\ndirty: {}\ndate: {}\nfeatures: {}\n",
        env!("CARGO_PKG_VERSION"),
        env!("HEARTH_BUILD_COMMIT"),
        env!("HEARTH_BUILD_DIRTY"),
        env!("HEARTH_BUILD_DATE"),
        features.join(", ")
    )
}

/// `hearth --version --json`: the same as one object; what is unknown (a build outside a
/// Git checkout) is `"unknown"` for the commit and null for the rest.
pub fn version_json() -> serde_json::Value {
    let known = |value: &'static str| (value != "unknown").then_some(value);
    serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": env!("HEARTH_BUILD_COMMIT"),
        "dirty": known(env!("HEARTH_BUILD_DIRTY")).map(|dirty| dirty == "yes"),
        "date": known(env!("HEARTH_BUILD_DATE")),
        "features": hearth_core::BUILD_FEATURES
            .iter()
            .map(|(name, on)| ((*name).to_owned(), serde_json::Value::Bool(*on)))
            .collect::<serde_json::Map<_, _>>(),
    })
}

/// Parses the command line. Help and `--version` print and exit 0; a usage error exits 2,
/// reported as `{"error", "usage"}` on stdout when `--json` is among the arguments.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Cli {
    let args: Vec<OsString> = args.into_iter().collect();
    // The version is answered here rather than by clap: its lines are built at run time (the
    // core's features), and `--json` is not a flag of the top-level command.
    let rest: Vec<&str> = args.iter().skip(1).filter_map(|arg| arg.to_str()).collect();
    if rest.len() == args.len().saturating_sub(1) {
        match rest.as_slice() {
            ["--version" | "-V"] => {
                print!("{}", version_text());
                std::process::exit(0);
            }
            ["--version" | "-V", "--json"] | ["--json", "--version" | "-V"] => {
                println!("{}", version_json());
                std::process::exit(0);
            }
            _ => {}
        }
    }
    match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(error) if error.use_stderr() && args.iter().any(|arg| arg == "--json") => {
            // The first paragraph of clap's message, on one line ("the following required
            // arguments were not provided: <HOUSEHOLD>").
            let rendered = error.render().to_string();
            let message = rendered
                .split("\n\n")
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            println!(
                "{}",
                serde_json::json!({"error": message, "usage": usage_of(&args)})
            );
            std::process::exit(2);
        }
        Err(error) => error.exit(),
    }
}

/// The usage line of the deepest command `args` name.
fn usage_of(args: &[OsString]) -> String {
    let mut command = Cli::command();
    command.build();
    let mut path: Vec<&str> = Vec::new();
    let mut known = &command;
    for arg in args.iter().skip(1).filter_map(|arg| arg.to_str()) {
        if let Some(sub) = known.find_subcommand(arg) {
            path.push(arg);
            known = sub;
        }
    }
    let mut current = &mut command;
    for name in path {
        current = current
            .find_subcommand_mut(name)
            .expect("a subcommand found above");
    }
    current.render_usage().to_string()
}

/// A usage error found after parsing (a missing `--yes`): exit 2, as JSON when asked.
pub fn usage_error(json: bool, message: &str, usage: &str) -> std::process::ExitCode {
    if json {
        println!("{}", serde_json::json!({"error": message, "usage": usage}));
    } else {
        eprintln!("error: {message}\n\n{usage}");
    }
    std::process::ExitCode::from(2)
}

/// The command-line reference as Markdown: every command's `--help`, generated from the
/// definitions above. `docs/src/reference/cli.md` is this output (tests/cli.rs compares them).
pub fn markdown() -> String {
    let mut command = Cli::command().term_width(100);
    command.build();
    let mut page = String::from(
        "# The command line\n\n\
         <!-- Generated by `hearth reference cli` from src/cli.rs; edit those definitions, then \
         run `cargo run -q -- reference --update` from the project root. tests/cli.rs fails when \
         they differ. -->\n\n\
         One binary, `hearth` (`cargo run --` in a checkout, or `target/release/hearth` after a \
         [release build](../self-hosting/release-build.md)). Every command takes `--help`. Usage \
         errors exit 2, failures 1; a command run with `--json` answers with one JSON object, \
         errors included.\n",
    );
    write_command(&mut page, &mut command, "hearth");
    page
}

fn write_command(page: &mut String, command: &mut clap::Command, path: &str) {
    if command.is_hide_set() {
        return;
    }
    let help = command.render_long_help().to_string();
    page.push_str(&format!(
        "\n## `{path}`\n\n```text\n{}\n```\n",
        help.trim_end()
    ));
    let names: Vec<String> = command
        .get_subcommands()
        .filter(|sub| sub.get_name() != "help")
        .map(|sub| sub.get_name().to_owned())
        .collect();
    for name in names {
        let sub = command
            .find_subcommand_mut(&name)
            .expect("a subcommand just listed");
        write_command(page, sub, &format!("{path} {name}"));
    }
}
