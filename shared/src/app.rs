//! Composition: builds each entry point's router from a [`Config`] and serves it, under the
//! Lambda runtime or as a plain local server. Entry points stay a few lines long.

use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;

use crate::accounts::Accounts;
use crate::admin::Admin;
use crate::aion::backend::BACKEND_TIMEOUT;
use crate::aion::{AionToolset, Guide, HttpGuide, MockGuide};
use crate::auth::attestation::{AttestationVerifier, DEVELOPMENT_HOST_KEY};
use crate::clients::metadata_document::{HostResolver, MetadataFetcher, SystemResolver};
use crate::clients::{Clients, ConfiguredClient};
use crate::clock::{Clock, SystemClock};
#[cfg(feature = "aws")]
use crate::config::secrets;
use crate::config::{Config, CredentialSource, JudgeKind, Runtime, StoreChoice};
use crate::countersign::household::{Catalogue, HouseholdData};
use crate::countersign::judge::Judge;
#[cfg(feature = "aws")]
use crate::countersign::judge::bedrock::{BedrockJudge, Guardrail};
use crate::countersign::judge::openai::{Endpoint, OpenAiJudge};
use crate::countersign::judge::rules::RulesJudge;
use crate::countersign::ledger::Ledger;
use crate::countersign::notify::{NOTIFY_TIMEOUT, Notifier};
use crate::countersign::{CountersignService, CountersignToolset};
use crate::demo::DeviceEndpoint;
use crate::gate::{Gate, kill_switch};
use crate::linking::Linking;
use crate::mcp::{HearthServer, McpEndpoint};
use crate::oauth::{
    LINK_CODE_ATTEMPTS, LINK_CODE_WINDOW_MS, OAuthEndpoint, REGISTRATION_WINDOW_MS,
    REGISTRATIONS_PER_WINDOW,
};
use crate::passkeys::ceremony::Site;
use crate::passkeys::{Member as PasskeyMember, PasskeySite, Passkeys, RosterOf};
use crate::ratelimit::{AttemptLimiter, RateLimiter};
#[cfg(feature = "aws")]
use crate::speech::polly::Voice;
use crate::store::Stores;
#[cfg(feature = "aws")]
use crate::store::dynamodb::DynamoStore;
use crate::store::sqlite::SqliteStore;
use crate::store::unconfigured::Unconfigured;
use crate::store::{AccountItem, GrantStore};
use crate::toolset::Toolset;
use crate::transparency::LogKeys;
#[cfg(feature = "aws")]
use crate::tts::TtsEndpoint;
use crate::why::{WhyService, WhyToolset};
use crate::witnessing::Witnesses;

/// What every router is built over: the stores, the clock, the voice for `/tts` (`None`:
/// speech is not configured and `/tts` answers 503), and the purchase guard's household and
/// intent judge.
#[derive(Clone)]
pub struct Backing {
    pub stores: Stores,
    /// Household accounts, over `stores.accounts`.
    pub accounts: Arc<Accounts>,
    pub clock: Arc<dyn Clock>,
    #[cfg(feature = "aws")]
    pub voice: Option<Arc<Voice>>,
    pub household: Arc<HouseholdData>,
    pub judge: Arc<dyn Judge>,
    /// The witnesses of `HEARTH_WITNESS_POLICY`, when it names some.
    pub witnesses: Option<Arc<Witnesses>>,
    /// Resolves the host names of client metadata documents and their keys: the system's
    /// resolver in a deployment; tests and the fuzzer give one of their own.
    pub resolver: Arc<dyn HostResolver>,
}

/// One route: the function that serves it, its method (`ANY` when the handler answers other
/// methods itself, with 405), its path, and what it is (for the manual's routes page, which is
/// generated from this table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Route {
    pub function: &'static str,
    pub method: &'static str,
    pub path: &'static str,
    #[serde(skip)]
    pub summary: &'static str,
    #[serde(skip)]
    pub limited_by: Limit,
    /// Served by its function under Lambda too (and routed by the template). The path-inserted
    /// metadata names are not: under API Gateway a stage or an API mapping key is a path the
    /// host's root is outside of, so they could never answer there; the local server serves
    /// them behind a reverse proxy. `hearth routes` marks the others `"local_only": true`.
    #[serde(rename = "local_only", serialize_with = "local_only")]
    pub lambda: bool,
}

fn local_only<S: serde::Serializer>(lambda: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bool(!lambda)
}

/// What counts a route's requests (see `gate`): every route but `/healthz` spends the client
/// address's one budget (`HEARTH_RATE_LIMIT_PER_IP`) before anything else runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Never limited: a load balancer's probe must not be refused.
    Nothing,
    /// The address's budget.
    Address,
    /// The address's budget, or, once the bearer token checks out, the budget of the subject
    /// it names (`HEARTH_RATE_LIMIT_PER_SUBJECT`), the address's only read: one counter call
    /// with one write either way.
    AddressAndSubject,
    /// The address's budget, and attempts at something guessable per address, as described.
    AddressAndAttempts(&'static str),
}

impl Limit {
    /// The routes table's words for it.
    pub fn describe(self) -> String {
        match self {
            Limit::Nothing => "nothing".into(),
            Limit::Address => "address".into(),
            Limit::AddressAndSubject => "address, or a token's subject".into(),
            Limit::AddressAndAttempts(attempts) => format!("address; {attempts}"),
        }
    }
}

/// Every route Hearth serves. The local server serves all of them; each Lambda function its
/// own; `infra/template.yaml` routes exactly these (tests check both).
pub const ROUTES: &[Route] = &[
    route(
        "mcp",
        "ANY",
        "/mcp",
        "the MCP endpoint: POST only, stateless Streamable HTTP, JSON responses ([Protocol behaviour](protocol.md))",
        Limit::AddressAndSubject,
    ),
    route(
        "mcp",
        "GET",
        "/healthz",
        r#"unauthenticated; answers only `{"status":"ok","service":"hearth"}`"#,
        Limit::Nothing,
    ),
    route(
        "mcp",
        "GET",
        "/.well-known/hearth/log-keys",
        "the transparency logs' verifier keys ([Transparency logs](../concepts/transparency-logs.md)); 503 without a log key",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/.well-known/hearth/witness-policy",
        "the policy checkpoints are checked under, C2SP tlog-policy text ([Witnesses](../concepts/witnesses.md)); without `HEARTH_WITNESS_POLICY`, the log keys and `quorum none`; 503 without a log key",
        Limit::Address,
    ),
    route(
        "mcp",
        "ANY",
        "/.well-known/oauth-protected-resource",
        "RFC 9728 protected-resource metadata; 503 without `MCP_RESOURCE_URL`",
        Limit::Address,
    ),
    route(
        "mcp",
        "ANY",
        "/.well-known/oauth-protected-resource/mcp",
        "the same document at its path-suffixed name",
        Limit::Address,
    ),
    local_route(route(
        "mcp",
        "ANY",
        "/.well-known/oauth-protected-resource/{*path}",
        "the same document at RFC 9728's path-inserted name of a resource with a path prefix (`/.well-known/oauth-protected-resource/prod/mcp` for `…/prod/mcp`); 404 for any other path",
        Limit::Address,
    )),
    route(
        "mcp",
        "GET",
        "/demo",
        "the web demo page ([The demo](../getting-started/demo.md))",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/demo/{asset}",
        "its scripts, styles and tour, built into the binary",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/passkeys/page.js",
        "the passkey pages' script ([Passkeys](../concepts/passkeys.md))",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/passkeys/sw.js",
        "the service worker that shows a pushed message and opens its link (it caches nothing); `Service-Worker-Allowed` lets the household page register it over `/household`",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/passkeys/push/{token}",
        "a phone's Web Push subscription (`PushSubscription.toJSON()`), with the push token its enrolment answered (15 minutes, once)",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/passkeys/enrol/{token}",
        "a member's enrolment page (`Create passkey`), from `hearth admin passkey invite`; 410 once used, expired or voided",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/passkeys/enrol/{token}",
        "the new credential (`{\"credential\"}`, WebAuthn JSON); from the page's own origin only",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/passkeys/enrol/{token}/options",
        "the creation options for the enrolment page",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/passkeys/confirm/{token}",
        "a guardian's page letting a later passkey in (`Approve`)",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/passkeys/confirm/{token}",
        "the guardian's signed statement (`{\"statement\", \"credential\"}`)",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/passkeys/confirm/{token}/challenge",
        "the statement to sign and its request options",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/passkeys/approve/{token}",
        "the approval page of an order proposed without a device (`Approve`, `Decline`); 410 once it is decided, 30 minutes pass, or the household is unlinked",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/passkeys/approve/{token}",
        "the signed decision (`{\"decision\", \"statement\", \"credential\"}`); the purchase guard applies it with the approver as the requester",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/passkeys/approve/{token}/challenge",
        "the `hearth-approval/v1` statement to sign for `{\"decision\"}`, and its request options",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/household",
        "the household's page ([The household's page](../getting-started/household-page.md)): `Sign in with a passkey`, then the view `?view=` names (`today`, `why` with `q`, `orders`, `waiting`, `members`, `devices`, `assistants`, `rules`)",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/household/page.js",
        "the household page's script (it runs over `/passkeys/page.js`)",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/household/check.js",
        "the household page's check of the history it shows, on the phone (it runs over `/demo/canonical.js` and `/demo/tlog.js`)",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/household/log/{log}",
        "the signed-in member's household log (`decisions` or `ledger`): its retained records, each with its inclusion proof, and its signed checkpoint with the witnesses' cosignatures, for the page to check; 409 `untrusted_history` when Hearth's own check of it fails",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/household/log/{log}/history",
        "the log's signed checkpoint now and the consistency proof from `?from_size=`, the size of the checkpoint the phone pinned",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/household/manifest.webmanifest",
        "the household page's web app manifest (it installs to a home screen)",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/household/icon.svg",
        "the household page's icon",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/push",
        "the signed-in phone's Web Push subscription (`PushSubscription.toJSON()`); what waits then opens on the household page; session, origin and `X-Hearth-CSRF` checked",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/sign-in/options",
        "a sign-in challenge (single use, 5 minutes) and its request options, no passkey named",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/sign-in",
        "the sign-in assertion (`{\"credential\"}`); sets the session cookie (`__Host-hearth_session`, or `hearth_session` on loopback http)",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/sign-out",
        "ends the session on the server; needs the session's CSRF token in `X-Hearth-CSRF`",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/decide/{request_id}/challenge",
        "the `hearth-approval/v1` statement deciding a waiting order for `{\"decision\"}`, for the signed-in member's passkeys; session, origin and `X-Hearth-CSRF` checked",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/decide/{request_id}",
        "the signed decision (`{\"decision\", \"statement\", \"credential\"}`), applied as on the order's approval page",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/act/challenge",
        "a guardian's `{\"action\", \"target\"}` (`invite-member`, `approve-passkey`, `revoke-passkey`, `add-device-key`, `revoke-device-key`, `unlink-assistant`): the `hearth-household-action/v1` statement to sign and its request options",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/act",
        "the signed statement (`{\"statement\", \"credential\"}`): kept in the ledger, then done",
        Limit::Address,
    ),
    route(
        "mcp",
        "GET",
        "/household/signup",
        "the sign-up page: name a household, become its first guardian with a passkey (`HEARTH_SIGNUP`; 404 when `off`; an operator's link carries its token in the fragment) ([Opening sign-up](../self-hosting/signup.md))",
        Limit::Address,
    ),
    route(
        "mcp",
        "POST",
        "/household/signup",
        "`{\"household_name\", \"member_name\", \"time_zone\", \"invite\"}` from the pages' origin: makes the household and answers its first guardian's `enrolment_url` (201)",
        Limit::AddressAndAttempts(
            "3 sign-ups a day per address, `HEARTH_SIGNUP_PER_DAY` for everyone",
        ),
    ),
    route(
        "mcp",
        "GET",
        "/household/signup.js",
        "the script the sign-up page and the consent page's **Create a household** share",
        Limit::Address,
    ),
    route(
        "oauth",
        "ANY",
        "/oauth/authorize",
        "the consent page (GET) and its form (POST) ([Account linking](../concepts/account-linking.md))",
        Limit::AddressAndAttempts("10 link codes per 15 minutes per address"),
    ),
    route(
        "oauth",
        "POST",
        "/oauth/authorize/passkey",
        "request options for a guardian's passkey on the consent page: the consent form's fields, form-encoded, from the page's own origin; the challenge is the SHA-256 of a `hearth-link/v1` statement naming the request's client, redirect URI and PKCE challenge",
        Limit::Address,
    ),
    route(
        "oauth",
        "GET",
        "/oauth/consent.js",
        "the consent page's script for `Sign in with a passkey` (it runs over `/passkeys/page.js`)",
        Limit::Address,
    ),
    route(
        "oauth",
        "ANY",
        "/oauth/token",
        "the token endpoint: client credentials, authorization code, refresh token",
        Limit::Address,
    ),
    route(
        "oauth",
        "ANY",
        "/oauth/revoke",
        "RFC 7009 revocation of a refresh-token family",
        Limit::Address,
    ),
    route(
        "oauth",
        "ANY",
        "/oauth/register",
        "RFC 7591 dynamic client registration",
        Limit::AddressAndAttempts("20 registrations an hour per address"),
    ),
    route(
        "oauth",
        "ANY",
        "/oauth/judge",
        "a static judge token exchanged for an access token",
        Limit::Address,
    ),
    route(
        "oauth",
        "ANY",
        "/.well-known/oauth-authorization-server",
        "RFC 8414 authorization-server metadata",
        Limit::Address,
    ),
    local_route(route(
        "oauth",
        "ANY",
        "/.well-known/oauth-authorization-server/{*path}",
        "the same document at RFC 8414's path-inserted name of an issuer with a path (`/.well-known/oauth-authorization-server/prod`); 404 for any other path",
        Limit::Address,
    )),
    route(
        "tts",
        "ANY",
        "/tts",
        "speech from Amazon Polly ([below](#speech-post-tts))",
        Limit::AddressAndSubject,
    ),
];

const fn route(
    function: &'static str,
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    limited_by: Limit,
) -> Route {
    Route {
        function,
        method,
        path,
        summary,
        limited_by,
        lambda: true,
    }
}

/// A route only the local server serves (see [`Route::lambda`]).
const fn local_route(route: Route) -> Route {
    Route {
        lambda: false,
        ..route
    }
}

/// The routes table of the manual's HTTP routes page, generated from [`ROUTES`] (see
/// `config::reference::splice`).
pub fn routes_markdown() -> String {
    let mut table = String::from(
        "| Function | Method | Path | What it is | Limited by |\n| --- | --- | --- | --- | --- |\n",
    );
    for route in ROUTES {
        let function = if route.lambda {
            format!("`{}`", route.function)
        } else {
            format!("`{}`, local server only", route.function)
        };
        table.push_str(&format!(
            "| {} | `{}` | `{}` | {} | {} |\n",
            function,
            route.method,
            route.path,
            route.summary,
            route.limited_by.describe()
        ));
    }
    table
}

/// The at-a-glance table of the manual's Tools page, generated from what `tools/list` answers
/// with every toolset on (see `config::reference::splice`): each tool's toolset, arguments
/// (required ones in bold) and hints. The tools need no store to describe themselves.
pub fn tools_markdown() -> anyhow::Result<String> {
    let config = Config::from_lookup(|_| None)?;
    let stores = Stores::shared(Arc::new(Unconfigured));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let backing = Backing {
        accounts: Arc::new(Accounts::new(stores.accounts.clone(), clock.clone())),
        stores,
        household: household_data(&config)?,
        judge: judge(&config),
        clock,
        #[cfg(feature = "aws")]
        voice: None,
        witnesses: None,
        resolver: Arc::new(SystemResolver),
    };
    let mut table = String::from(
        "| Tool | Toolset | Arguments (**required**) | Hints |\n| --- | --- | --- | --- |\n",
    );
    for toolset in toolsets(&config, &backing) {
        for tool in toolset.tools() {
            let required: Vec<&str> = tool
                .input_schema
                .get("required")
                .and_then(serde_json::Value::as_array)
                .map(|names| names.iter().filter_map(serde_json::Value::as_str).collect())
                .unwrap_or_default();
            let arguments: Vec<String> = tool
                .input_schema
                .get("properties")
                .and_then(serde_json::Value::as_object)
                .map(|properties| {
                    properties
                        .keys()
                        .map(|name| match required.contains(&name.as_str()) {
                            true => format!("**`{name}`**"),
                            false => format!("`{name}`"),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let hints = tool
                .annotations
                .as_ref()
                .map(|hints| {
                    [
                        (hints.read_only_hint, "read-only"),
                        (hints.destructive_hint, "destructive"),
                        (hints.idempotent_hint, "idempotent"),
                        (hints.open_world_hint, "open world"),
                    ]
                    .into_iter()
                    .filter(|(hint, _)| *hint == Some(true))
                    .map(|(_, name)| name)
                    .collect::<Vec<_>>()
                    .join(", ")
                })
                .unwrap_or_default();
            table.push_str(&format!(
                "| `{}` | `{}` | {} | {} |\n",
                tool.name,
                toolset.name(),
                if arguments.is_empty() {
                    "none".to_owned()
                } else {
                    arguments.join(", ")
                },
                if hints.is_empty() { "–" } else { &hints }
            ));
        }
    }
    Ok(table)
}

/// The household and catalogue: from `COUNTERSIGN_DATA` when set, else the built-in files.
/// A malformed file is an error that names it.
pub fn household_data(config: &Config) -> anyhow::Result<Arc<HouseholdData>> {
    let data = match &config.countersign_data {
        Some(dir) => HouseholdData::load(dir)?,
        None => HouseholdData::built_in()?,
    };
    Ok(Arc::new(data))
}

/// The intent judge `COUNTERSIGN_JUDGE` names. The Bedrock judge makes its client on first use.
pub fn judge(config: &Config) -> Arc<dyn Judge> {
    match config.judge.kind {
        JudgeKind::Rules => Arc::new(RulesJudge),
        #[cfg(feature = "aws")]
        JudgeKind::Bedrock => Arc::new(BedrockJudge::lazy(
            config.judge.model.clone(),
            config
                .judge
                .guardrail
                .clone()
                .map(|(id, version)| Guardrail { id, version }),
        )),
        #[cfg(not(feature = "aws"))]
        JudgeKind::Bedrock => {
            tracing::error!(
                "this build has no AWS services; the rules judge runs instead of Bedrock"
            );
            Arc::new(RulesJudge)
        }
        JudgeKind::OpenAi | JudgeKind::RulesOpenAi => Arc::new(
            openai_judge(config).expect("the configuration requires a URL for an openai judge"),
        ),
    }
}

/// The OpenAI-compatible judge, when `COUNTERSIGN_JUDGE` names one (`openai` or
/// `rules+openai`). A key it may not send is reported now, and every verdict it would have
/// asked the model for is `unclear`.
pub fn openai_judge(config: &Config) -> Option<OpenAiJudge> {
    let settings = &config.judge;
    let base_url = settings.url.clone().filter(|_| settings.kind.is_openai())?;
    let endpoint = Endpoint {
        base_url,
        model: settings.model.clone(),
        key: config.credentials.judge_api_key.clone(),
        timeout: std::time::Duration::from_millis(settings.timeout_ms),
    };
    if let Some(refusal) = endpoint.key_refusal() {
        tracing::error!(refusal, "the intent judge cannot ask its model");
    }
    Some(OpenAiJudge::new(
        endpoint,
        settings.kind == JudgeKind::RulesOpenAi,
    ))
}

/// Opens the configured store, over the system clock. A DynamoDB table is created (with TTL)
/// when missing, outside Lambda only; if that fails the server still starts, and whatever
/// needs the store reports it unavailable.
pub async fn open_backing(config: &Config) -> anyhow::Result<Backing> {
    let stores = open_stores(config).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    Ok(Backing {
        resolver: Arc::new(SystemResolver),
        witnesses: witnesses(config, &stores, clock.clone())?,
        accounts: Arc::new(Accounts::new(stores.accounts.clone(), clock.clone())),
        stores,
        household: household_data(config)?,
        judge: judge(config),
        clock,
        #[cfg(feature = "aws")]
        voice: Some(Arc::new(Voice::from_environment(
            &config.polly_voice,
            &config.polly_engine,
        ))),
    })
}

/// The configured store as the server opens it: a SQLite file is created (0600, in a 0700
/// folder) when missing, and so is a DynamoDB table outside Lambda.
pub async fn open_stores(config: &Config) -> anyhow::Result<Stores> {
    Ok(match &config.store {
        #[cfg(feature = "aws")]
        StoreChoice::DynamoDb(table) => {
            let client = DynamoStore::client_from_environment().await;
            let store = DynamoStore::new(client, table.clone());
            if config.runtime == Runtime::Local
                && let Err(error) = store.ensure_table().await
            {
                tracing::warn!(%error, "the DynamoDB table could not be checked or created");
            }
            Stores::shared(Arc::new(store))
        }
        #[cfg(not(feature = "aws"))]
        StoreChoice::DynamoDb(_) => {
            anyhow::bail!("this build has no AWS services; HEARTH_TABLE cannot be served")
        }
        StoreChoice::Sqlite(path) => {
            Stores::shared(Arc::new(SqliteStore::open(path).with_context(|| {
                format!("opening the SQLite store at {}", path.display())
            })?))
        }
        StoreChoice::Unconfigured => {
            tracing::warn!(
                "no store configured; decision tools report storage unavailable and the rate limiter refuses every request"
            );
            Stores::shared(Arc::new(Unconfigured))
        }
    })
}

/// What `hearth admin` works over: the configured store, which must already exist (a missing
/// DynamoDB table or SQLite file is an error that names it; nothing is created), the
/// configured household and catalogue, and the token keys.
pub async fn admin(config: &Config) -> anyhow::Result<Admin> {
    let stores = existing_stores(config).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    Ok(Admin::new(
        Accounts::new(stores.accounts.clone(), clock.clone()),
        stores.chains,
        stores.grants,
        household_data(config)?,
        config.jwt_keys(),
        clock,
    )
    .with_log_keys(log_keys(config)))
}

/// The members' passkeys as `hearth admin passkey` manages them, over the configured store.
pub async fn admin_passkeys(config: &Config) -> anyhow::Result<Passkeys> {
    let stores = existing_stores(config).await?;
    let accounts = Arc::new(Accounts::new(stores.accounts, Arc::new(SystemClock)));
    passkeys(config, accounts, stores.grants, &*household_data(config)?).ok_or_else(|| {
        anyhow::anyhow!(
            "passkey links need the public URL their pages are served under: set MCP_RESOURCE_URL"
        )
    })
}

/// The OAuth clients as `hearth admin client` manages them, over the configured store.
pub async fn admin_clients(config: &Config) -> anyhow::Result<Clients> {
    let stores = existing_stores(config).await?;
    let clients = Clients::new(stores.clients, None, Arc::new(SystemClock));
    // The server's document rules, so that an import is checked as a fetch would be.
    Ok(clients.with_documents(
        MetadataFetcher::new(config.cimd_allow_http_loopback),
        stores.grants,
    ))
}

/// The configured store as an operator finds it: it must exist already (`hearth admin`
/// never creates one).
async fn existing_stores(config: &Config) -> anyhow::Result<Stores> {
    Ok(match &config.store {
        #[cfg(feature = "aws")]
        StoreChoice::DynamoDb(table) => {
            let client = DynamoStore::client_from_environment().await;
            let store = DynamoStore::new(client, table.clone());
            store.require_table().await?;
            Stores::shared(Arc::new(store))
        }
        #[cfg(not(feature = "aws"))]
        StoreChoice::DynamoDb(_) => {
            anyhow::bail!("this build has no AWS services; HEARTH_TABLE cannot be used")
        }
        StoreChoice::Sqlite(path) => Stores::shared(Arc::new(SqliteStore::open_existing(path)?)),
        StoreChoice::Unconfigured => anyhow::bail!(
            "no store is configured: set HEARTH_TABLE (DynamoDB) or HEARTH_DB (SQLite)"
        ),
    })
}

/// Fills in `config.credentials` from Secrets Manager when that is their source, and warns
/// (by name only) about every credential still missing. Never fails: a secret that cannot be
/// read leaves the credentials empty, so every request that needs one is denied.
pub async fn load_credentials(config: &mut Config) {
    match &config.credential_source {
        #[cfg(not(feature = "aws"))]
        CredentialSource::SecretsManager(_) => {
            tracing::error!(
                "this build has no AWS services, so HEARTH_SECRET_ARN cannot be read; every authenticated request will be denied"
            );
        }
        #[cfg(feature = "aws")]
        CredentialSource::SecretsManager(secret_ids) => {
            let client = secrets::client_from_environment().await;
            config.credentials = match secrets::read_credentials(&client, secret_ids).await {
                Ok((credentials, problems)) => {
                    for problem in problems {
                        tracing::error!(%problem, "a credential in the secrets was left out");
                    }
                    credentials
                }
                Err(error) => {
                    tracing::error!(
                        %error,
                        "the credentials secrets (HEARTH_SECRET_ARN) could not be read; every authenticated request will be denied"
                    );
                    crate::auth::Credentials::default()
                }
            };
        }
        CredentialSource::None if config.runtime == Runtime::Lambda => {
            tracing::error!(
                "HEARTH_SECRET_ARN is not set; every authenticated request will be denied"
            );
        }
        CredentialSource::None | CredentialSource::Environment => {}
    }
    let missing = config.credentials.missing();
    if !missing.is_empty() && !config.allow_no_auth {
        tracing::warn!(
            missing = missing.join(","),
            "credentials missing; whatever needs them is denied"
        );
    }
    match &config.credentials.host_key {
        None => tracing::warn!(
            "COUNTERSIGN_HOST_KEY is not set; purchase tools refuse every request (set it, or COUNTERSIGN_HOST_KEY=development locally)"
        ),
        Some(key) if key.expose() == DEVELOPMENT_HOST_KEY => {
            if config.runtime == Runtime::Lambda {
                tracing::error!(
                    "COUNTERSIGN_HOST_KEY is the public development key, which is refused under Lambda; purchase tools refuse every request"
                );
            } else {
                tracing::warn!(
                    "!!! COUNTERSIGN_HOST_KEY=development: the host key is PUBLIC, anyone can sign speaker attestations; never use it outside local development !!!"
                );
            }
        }
        Some(_) => {}
    }
    if config.urls.is_none() {
        tracing::warn!(
            "MCP_RESOURCE_URL is not set; access tokens are neither issued nor accepted"
        );
    }
    // A local server reads or makes its log key in `log_key_start`, after checking what the
    // store holds.
    if config.credentials.log_key.is_none() && config.runtime == Runtime::Lambda {
        tracing::warn!(
            "HEARTH_LOG_KEY is not set; the transparency logs grow unsigned and no receipt carries a proof"
        );
    }
}

/// The transparency logs' signing keys, when a log key and the public URL are configured.
pub fn log_keys(config: &Config) -> Option<Arc<LogKeys>> {
    let urls = config.urls.as_ref()?;
    let seeds = config.log_key_seeds();
    if seeds.is_empty() {
        return None;
    }
    match LogKeys::new(urls.host(), &seeds)
        .and_then(|keys| keys.with_previous(&config.log_key_names_previous))
    {
        Ok(keys) => Some(Arc::new(keys)),
        Err(error) => {
            tracing::error!(%error, "the log keys could not be made");
            None
        }
    }
}

/// The witnesses of `HEARTH_WITNESS_POLICY`, when it names some. The policy's `log` line must
/// be this deployment's current log key: its key name is the deployment's
/// (`<host>/hearth-log/v<N>`), not each log's origin, which is where Hearth's policies depart
/// from C2SP tlog-policy.
pub fn witnesses(
    config: &Config,
    stores: &Stores,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Option<Arc<Witnesses>>> {
    let Some(submission) = &config.witnesses else {
        return Ok(None);
    };
    let keys = log_keys(config).ok_or_else(|| {
        anyhow::anyhow!(
            "HEARTH_WITNESS_POLICY needs a log key and MCP_RESOURCE_URL: witnesses cosign signed checkpoints"
        )
    })?;
    let current = keys
        .published()
        .into_iter()
        .next()
        .map(|key| key.vkey)
        .unwrap_or_default();
    if !submission
        .policy
        .logs
        .iter()
        .any(|log| log.verifier.vkey() == current)
    {
        anyhow::bail!(
            "HEARTH_WITNESS_POLICY: no log line is this deployment's current log key, {current} (`hearth admin log-key` prints it; in Hearth's policies a log's key name is the deployment's, not an origin)"
        );
    }
    let witnesses = Witnesses::new(
        submission,
        stores.chains.clone(),
        stores.cosigned.clone(),
        clock,
    )
    .map_err(|error| anyhow::anyhow!(error))?;
    Ok(Some(Arc::new(witnesses)))
}

/// The bearer verifier, checking household tokens against the backing's accounts.
fn authenticator(config: &Config, backing: &Backing) -> crate::auth::Authenticator {
    config
        .authenticator()
        .with_accounts(backing.accounts.clone())
        .with_clients(backing.stores.clients.clone(), backing.clock.clone())
}

/// The enabled toolsets over one store and clock.
pub fn toolsets(config: &Config, backing: &Backing) -> Vec<Arc<dyn Toolset>> {
    let mut toolsets: Vec<Arc<dyn Toolset>> = Vec::new();
    // Derived once: both toolsets sign with the same keys.
    let keys = log_keys(config);
    if config.toolsets.iter().any(|name| name == "why") {
        let service = Arc::new(
            WhyService::new(backing.stores.chains.clone(), backing.clock.clone())
                .with_log_keys(keys.clone())
                .with_witnesses(backing.witnesses.clone()),
        );
        toolsets.push(Arc::new(WhyToolset::new(service)));
    }
    if config.toolsets.iter().any(|name| name == "aion") {
        match guide(config) {
            Some(guide) => toolsets.push(Arc::new(AionToolset::new(guide))),
            None => tracing::warn!(
                "the aion toolset is left out: under Lambda ask_aion needs AION_BACKEND_URL, or MOCK_AION_BACKEND=true for the canned answers"
            ),
        }
    }
    if config.toolsets.iter().any(|name| name == "countersign") {
        let service = countersign_service(config, backing, keys);
        toolsets.push(Arc::new(CountersignToolset::new(Arc::new(service))));
    }
    toolsets
}

/// The purchase guard over the backing: household accounts, the guardians' webhook, and
/// approval pages for proposals without a device where passkey pages are served.
fn countersign_service(
    config: &Config,
    backing: &Backing,
    keys: Option<Arc<LogKeys>>,
) -> CountersignService {
    let mut service = CountersignService::new(
        backing.household.clone(),
        Ledger::new(backing.stores.chains.clone(), backing.clock.clone())
            .with_log_keys(keys)
            .with_witnesses(backing.witnesses.clone()),
        backing.judge.clone(),
        backing.stores.counters.clone(),
        backing.stores.grants.clone(),
    )
    .with_accounts(backing.accounts.clone());
    if let Some(notifier) = notifier(config) {
        service = service.with_notifier(notifier);
    }
    if let Some(passkeys) = passkeys(
        config,
        backing.accounts.clone(),
        backing.stores.grants.clone(),
        &backing.household,
    ) {
        service = service.with_approval_links(Arc::new(passkeys));
    }
    service
}

/// The guardians' webhook (`COUNTERSIGN_NOTIFY_URL` with its key), when configured.
fn notifier(config: &Config) -> Option<Arc<Notifier>> {
    match (&config.notify_url, &config.credentials.notify_key) {
        (Some(url), Some(key)) => Some(Arc::new(Notifier::new(
            url.clone(),
            key.clone(),
            NOTIFY_TIMEOUT,
        ))),
        (Some(_), None) => {
            tracing::error!(
                "COUNTERSIGN_NOTIFY_URL is set but COUNTERSIGN_NOTIFY_KEY is missing; guardians are not notified"
            );
            None
        }
        (None, _) => None,
    }
}

/// The guide `ask_aion` asks: the mock when `MOCK_AION_BACKEND` says so, else the configured
/// backend, else the mock on a local server. Under Lambda with neither, there is none: a
/// deployment never serves canned answers it did not ask for.
fn guide(config: &Config) -> Option<Arc<dyn Guide>> {
    match (&config.aion_backend_url, config.aion_mock, config.runtime) {
        (_, true, _) => Some(Arc::new(MockGuide)),
        (Some(url), false, _) => Some(Arc::new(HttpGuide::new(
            url.clone(),
            config.credentials.aion_api_key.clone(),
            BACKEND_TIMEOUT,
        ))),
        (None, false, Runtime::Local) => Some(Arc::new(MockGuide)),
        (None, false, Runtime::Lambda) => None,
    }
}

fn gate(config: &Config, backing: &Backing) -> Gate {
    let limiter = RateLimiter::new(
        backing.stores.counters.clone(),
        backing.clock.clone(),
        config.rate_limits,
    );
    // A configured store that stops answering is an outage, counted locally meanwhile; no
    // store at all is a misconfiguration, and the limiter keeps failing closed.
    let limiter = match config.store {
        StoreChoice::Unconfigured => limiter,
        _ => limiter.with_local_fallback(),
    };
    Gate::new(config.browser_origins(), limiter)
        .with_trusted_proxies(config.trusted_proxies.clone())
}

/// `local`: the local server's, which also answers the path-inserted metadata names (see
/// [`Route::lambda`]).
fn mcp_routes(config: &Config, backing: &Backing, local: bool) -> Router {
    let server = HearthServer::new(toolsets(config, backing));
    let gate = gate(config, backing);
    let endpoint = McpEndpoint::new(
        server,
        authenticator(config, backing),
        AttestationVerifier::new(config.host_key(), backing.clock.clone()),
        gate.clone(),
        config.allowed_hosts(),
        config.urls.clone(),
    )
    .with_linking(config.linking_enabled())
    .with_log_keys(log_keys(config))
    .with_witness_policy(
        backing
            .witnesses
            .as_ref()
            .map(|witnesses| witnesses.policy_text().to_owned()),
    );
    let router =
        crate::mcp::router(Arc::new(endpoint), local).merge(crate::demo::page_router(&gate));
    let Some(passkeys) = passkeys(
        config,
        backing.accounts.clone(),
        backing.stores.grants.clone(),
        &backing.household,
    ) else {
        return router;
    };
    let passkeys = Arc::new(passkeys);
    let keys = log_keys(config);
    let countersign = Arc::new(countersign_service(config, backing, keys.clone()));
    let why = Arc::new(
        WhyService::new(backing.stores.chains.clone(), backing.clock.clone())
            .with_log_keys(keys)
            .with_witnesses(backing.witnesses.clone()),
    );
    let household = crate::household::HouseholdPage::new(
        passkeys.clone(),
        crate::household::sessions::Sessions::new(
            backing.stores.grants.clone(),
            backing.clock.clone(),
        ),
        countersign.clone(),
        why,
        Linking::new(
            backing.stores.grants.clone(),
            backing.accounts.clone(),
            backing.clock.clone(),
        ),
        clients(config, backing),
    );
    let signup = crate::household::signup::Signup::new(
        config.signup,
        passkeys.clone(),
        backing.stores.grants.clone(),
        backing.stores.counters.clone(),
        backing.household.catalogue.clone(),
    );
    router
        .merge(crate::passkeys::http::router(
            passkeys,
            notifier(config),
            countersign,
            &gate,
        ))
        .merge(crate::household::http::router(Arc::new(household), &gate))
        .merge(crate::household::signup_http::router(
            Arc::new(signup),
            &gate,
        ))
}

/// The operator's sign-up links (`hearth admin signup-link`), over the configured store.
pub async fn admin_signup_links(
    config: &Config,
) -> anyhow::Result<crate::household::signup::SignupLinks> {
    if config.signup.mode == crate::config::SignupMode::Off {
        anyhow::bail!(
            "sign-up links work only where the server runs with HEARTH_SIGNUP=invite (or open); set it here as the server has it"
        );
    }
    // The configuration refuses sign-up without the pages' public URL.
    let place = config.passkeys.as_ref().ok_or_else(|| {
        anyhow::anyhow!(
            "sign-up links need the public URL their page is served under: set MCP_RESOURCE_URL"
        )
    })?;
    let stores = existing_stores(config).await?;
    Ok(crate::household::signup::SignupLinks::new(
        stores.grants,
        Arc::new(SystemClock),
        place.base_url.clone(),
    ))
}

/// The members' passkeys, where there is a public URL to serve their pages under.
pub fn passkeys(
    config: &Config,
    accounts: Arc<Accounts>,
    grants: Arc<dyn GrantStore>,
    household: &HouseholdData,
) -> Option<Passkeys> {
    let place = config.passkeys.as_ref()?;
    Some(
        Passkeys::new(
            accounts,
            grants,
            PasskeySite {
                site: Site {
                    rp_id: place.rp_id.clone(),
                    origin: place.origin.clone(),
                },
                base_url: place.base_url.clone(),
            },
            roster_of(household.catalogue.clone()),
        )
        .with_push(pusher(config, &place.origin)),
    )
}

/// Web Push to members' phones: its VAPID key derives from the current log key, so there is
/// none without one.
fn pusher(config: &Config, origin: &str) -> Option<Arc<crate::passkeys::push::Pusher>> {
    let (_, seed) = config.log_key_seeds().into_iter().next()?;
    crate::passkeys::push::Pusher::from_seed(&seed, origin, config.push_allow_http_loopback)
        .map(Arc::new)
}

/// The members passkeys are enrolled for: a household account's policy, read over the
/// deployment's catalogue (passkeys know nothing of the purchase guard's rules).
fn roster_of(catalogue: Catalogue) -> RosterOf {
    Arc::new(move |account: &AccountItem| {
        let policy = account.policy.as_ref().ok_or(
            "it has no policy yet; set one with hearth admin household set-policy".to_owned(),
        )?;
        let data = HouseholdData::for_account(policy, &account.household_id, &catalogue)
            .map_err(|error| error.to_string())?;
        Ok(data
            .household
            .members
            .iter()
            .map(|member| PasskeyMember {
                id: member.id.clone(),
                name: member.name.clone(),
                role: serde_json::to_value(member.role)
                    .ok()
                    .and_then(|role| role.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                guardian: data.is_guardian(&member.id),
            })
            .collect())
    })
}

/// The OAuth clients: the configured one (`MCP_CLIENT_ID`, its secret and
/// `MCP_REDIRECT_URIS`) and the stored ones.
pub fn clients(config: &Config, backing: &Backing) -> Clients {
    use sha2::{Digest, Sha256};
    let configured = match (
        &config.credentials.client_id,
        &config.credentials.client_secret,
    ) {
        (Some(client_id), Some(secret)) => Some(ConfiguredClient {
            client_id: client_id.clone(),
            secret_hash: Sha256::digest(secret.expose().as_bytes()).into(),
            redirect_uris: config.redirect_uris.clone(),
        }),
        _ => None,
    };
    let clients = Clients::new(
        backing.stores.clients.clone(),
        configured,
        backing.clock.clone(),
    );
    if !config.cimd {
        return clients;
    }
    clients.with_documents(
        MetadataFetcher::with_resolver(backing.resolver.clone(), config.cimd_allow_http_loopback),
        backing.stores.grants.clone(),
    )
}

fn oauth_routes(config: &Config, backing: &Backing, local: bool) -> Router {
    let linking = Linking::new(
        backing.stores.grants.clone(),
        backing.accounts.clone(),
        backing.clock.clone(),
    );
    let attempts = AttemptLimiter::new(
        backing.stores.counters.clone(),
        backing.clock.clone(),
        "link",
        LINK_CODE_ATTEMPTS,
        LINK_CODE_WINDOW_MS,
    );
    let endpoint = OAuthEndpoint::new(
        gate(config, backing),
        &config.credentials,
        Arc::new(clients(config, backing)),
        config.jwt_keys(),
        config.urls.clone(),
    )
    .with_linking(linking, attempts)
    .with_passkeys(
        household_data(config)
            .ok()
            .and_then(|household| {
                passkeys(
                    config,
                    backing.accounts.clone(),
                    backing.stores.grants.clone(),
                    &household,
                )
            })
            .map(Arc::new),
    )
    .with_signup(config.signup.mode)
    .with_registration(AttemptLimiter::new(
        backing.stores.counters.clone(),
        backing.clock.clone(),
        "register",
        REGISTRATIONS_PER_WINDOW,
        REGISTRATION_WINDOW_MS,
    ));
    crate::oauth::router(Arc::new(endpoint), local)
}

#[cfg(feature = "aws")]
fn tts_routes(config: &Config, backing: &Backing) -> Router {
    let endpoint = TtsEndpoint::new(
        authenticator(config, backing),
        gate(config, backing),
        backing.voice.clone(),
    );
    crate::tts::router(Arc::new(endpoint))
}

/// The speech function's router: `/tts`.
#[cfg(feature = "aws")]
pub fn tts_router_with(config: &Config, backing: &Backing) -> Router {
    kill_switch(tts_routes(config, backing), config.disabled)
}

#[cfg(feature = "aws")]
pub async fn tts_router(config: &Config) -> anyhow::Result<Router> {
    Ok(tts_router_with(config, &open_backing(config).await?))
}

/// The MCP function's router: `/mcp`, `/healthz`, protected-resource metadata.
pub fn mcp_router_with(config: &Config, backing: &Backing) -> Router {
    kill_switch(mcp_routes(config, backing, false), config.disabled)
}

/// The OAuth function's router: `/oauth/authorize`, `/oauth/token`, `/oauth/revoke`,
/// `/oauth/judge`, server metadata.
pub fn oauth_router_with(config: &Config, backing: &Backing) -> Router {
    kill_switch(oauth_routes(config, backing, false), config.disabled)
}

/// Everything the local server serves on one address, with the same paths as API Gateway.
pub fn local_router_with(config: &Config, backing: &Backing) -> Router {
    let mut router = mcp_routes(config, backing, true).merge(oauth_routes(config, backing, true));
    #[cfg(feature = "aws")]
    {
        router = router.merge(tts_routes(config, backing));
    }
    if config.demo_device {
        let device = || {
            DeviceEndpoint::new(
                authenticator(config, backing),
                gate(config, backing),
                config.host_key(),
                backing.clock.clone(),
                backing.household.clone(),
            )
        };
        router = router.merge(crate::demo::device_router(Arc::new(device())));
        if let Some(passkeys) = passkeys(
            config,
            backing.accounts.clone(),
            backing.stores.grants.clone(),
            &backing.household,
        ) {
            let phone = crate::demo::phone::PhoneEndpoint::new(
                authenticator(config, backing),
                gate(config, backing),
                backing.accounts.clone(),
                passkeys,
                config.jwt_keys(),
                backing.household.clone(),
                backing.clock.clone(),
            );
            router = router.merge(crate::demo::phone::router(Arc::new(phone)));
        }
        #[cfg(feature = "aws")]
        if let Some(urls) = &config.urls {
            let assistant = crate::demo::assistant::AssistantEndpoint::new(
                device(),
                urls.resource().to_owned(),
                config.assistant_model.clone(),
            );
            router = router.merge(crate::demo::assistant::router(Arc::new(assistant)));
        }
    }
    kill_switch(router, config.disabled)
}

pub async fn mcp_router(config: &Config) -> anyhow::Result<Router> {
    Ok(mcp_router_with(config, &open_backing(config).await?))
}

pub async fn oauth_router(config: &Config) -> anyhow::Result<Router> {
    Ok(oauth_router_with(config, &open_backing(config).await?))
}

pub async fn local_router(config: &Config) -> anyhow::Result<Router> {
    Ok(local_router_with(config, &open_backing(config).await?))
}

/// Serves `router` under the Lambda runtime, or on `config.addr` until Ctrl-C or SIGTERM.
pub async fn serve(router: Router, config: &Config) -> anyhow::Result<()> {
    match config.runtime {
        Runtime::Lambda => lambda_http::run(router)
            .await
            .map_err(|error| anyhow::anyhow!("Lambda runtime stopped: {error}")),
        Runtime::Local => serve_on(bind(config).await?, router, config).await,
    }
}

/// The local server's listening socket on `config.addr`.
pub async fn bind(config: &Config) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("binding {}", config.addr))
}

/// Serves `router` on `listener` until Ctrl-C or SIGTERM.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    router: Router,
    config: &Config,
) -> anyhow::Result<()> {
    tracing::info!(address = %listener.local_addr()?, "serving");
    crate::http_server::serve(listener, router, config.max_connections, shutdown_signal()).await;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM: what ends a local server (and `hearth witness serve`) cleanly.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
