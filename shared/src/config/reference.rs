//! The configuration reference: every environment variable Hearth reads, with its default and
//! meaning. The manual's Configuration page is generated from these tables (`hearth reference
//! configuration`), and a test records every variable the configuration reads and fails if
//! one is missing here, so the page cannot drift from the code.

/// One row of the reference: the variable(s) (Markdown, each name in backticks), the default
/// (for [`READ_ELSEWHERE`], who reads it) and what it means. A row whose meaning says "Local
/// only" is one no Lambda function needs (the template test reads that); "Secret" marks a
/// credential.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub names: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

impl Setting {
    /// The variable names of the row.
    pub fn variables(&self) -> impl Iterator<Item = &'static str> {
        self.names.split('`').skip(1).step_by(2).filter(|name| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        })
    }
}

/// The variables Hearth's configuration reads.
pub const SETTINGS: &[Setting] = &[
    Setting {
        names: r#"`HEARTH_ADDR`"#,
        default: r#"`127.0.0.1:8790`"#,
        meaning: r#"Local listen address. Local only"#,
    },
    Setting {
        names: r#"`HEARTH_DATA_DIR`"#,
        default: r#"`./.hearth`"#,
        meaning: r#"Data directory: the SQLite file, the development credentials and the log key file `log-key`. Local only"#,
    },
    Setting {
        names: r#"`HEARTH_TABLE`"#,
        default: r#"unset"#,
        meaning: r#"DynamoDB table for everything the store keeps: chains, logs, counters, accounts, linking records, clients (excludes `HEARTH_DB`). Created with TTL if missing, outside Lambda only"#,
    },
    Setting {
        names: r#"`HEARTH_DB`"#,
        default: r#"`<data dir>/hearth.db`"#,
        meaning: r#"SQLite file. Under Lambda only used when set; with neither store set there, decision tools report storage unavailable and the rate limiter refuses (503). Local only in practice: the template sets `HEARTH_TABLE`"#,
    },
    Setting {
        names: r#"`MCP_CLIENT_ID`, `MCP_CLIENT_SECRET`"#,
        default: r#"unset"#,
        meaning: r#"The configured OAuth client (Alexa+'s). Secret (local env, or Secrets Manager under Lambda)"#,
    },
    Setting {
        names: r#"`MCP_JWT_SECRET`"#,
        default: r#"unset"#,
        meaning: r#"HS256 signing key, at least 32 bytes. Secret"#,
    },
    Setting {
        names: r#"`MCP_JUDGE_TOKEN_HASHES`"#,
        default: r#"unset"#,
        meaning: r#"Comma-separated hex SHA-256 of accepted static judge tokens"#,
    },
    Setting {
        names: r#"`HEARTH_SECRET_ARN`"#,
        default: r#"unset"#,
        meaning: r#"The Secrets Manager secrets (comma-separated) holding the credentials above, merged; a name in two is refused (required under Lambda; optional locally, instead of the variables)"#,
    },
    Setting {
        names: r#"`HEARTH_LOG_KEY`"#,
        default: r#"local: generated into `<data dir>/log-key`; Lambda: the log secret"#,
        meaning: r#"What the transparency logs' Ed25519 signing key is derived from (SHA-256 of it is the seed). Secret: under Lambda in the `LogCredentials` secret. Back it up: see [Backup and restore](../self-hosting/backup.md)"#,
    },
    Setting {
        names: r#"`HEARTH_LOG_KEY_PREVIOUS`"#,
        default: r#"unset"#,
        meaning: r#"During a log key rotation, the previous secret: it keeps signing beside the new key. Secret"#,
    },
    Setting {
        names: r#"`HEARTH_LOG_KEY_VERSION`"#,
        default: r#"`1`"#,
        meaning: r#"The version in the current key's name, `<host>/hearth-log/v<N>` (1–9999); the previous key is the version before"#,
    },
    Setting {
        names: r#"`HEARTH_LOG_KEY_NAMES_PREVIOUS`"#,
        default: r#"unset"#,
        meaning: r#"Earlier log key identities that verify but no longer sign, comma-separated: a whole vkey (`name+id+key`, a key dropped after a rotation) or a key name (`<host>/hearth-log/v<N>`, the configured keys under an earlier host). Published with `"verify_only": true`; see [Rotating the log key](../self-hosting/log-key-rotation.md)"#,
    },
    Setting {
        names: r#"`HEARTH_WITNESS_POLICY`"#,
        default: r#"unset (no witnesses)"#,
        meaning: r#"The witnesses every new checkpoint is submitted to: a C2SP tlog-policy whose `log` line is this deployment's log verifier key (its key name is the deployment's, `<host>/hearth-log/v<N>`, not an origin: Hearth's one deviation from tlog-policy) and whose `witness` lines each end in the witness's URL. Checked at start. Without real newlines, lines may be separated by the two characters `\n` (a template parameter cannot hold a newline). Published at `/.well-known/hearth/witness-policy`; see [Witnesses](../concepts/witnesses.md)"#,
    },
    Setting {
        names: r#"`HEARTH_WITNESS_POLICY_FILE`"#,
        default: r#"unset"#,
        meaning: r#"A path to the policy instead of the text (not both). Local only: under Lambda the policy is given as text"#,
    },
    Setting {
        names: r#"`HEARTH_WITNESS_TIMEOUT_MS`"#,
        default: r#"`200`"#,
        meaning: r#"How long a call that appends waits for witnesses' cosignatures (1–5000); later ones are kept and attached to later proofs"#,
    },
    Setting {
        names: r#"`HEARTH_WITNESS_ADDR`"#,
        default: r#"`127.0.0.1:8788`"#,
        meaning: r#"Where `hearth witness serve` listens. Local only: a witness runs apart from Hearth, never as one of its functions"#,
    },
    Setting {
        names: r#"`HEARTH_WITNESS_DIR`"#,
        default: r#"`./.hearth-witness`"#,
        meaning: r#"The witness's key (`witness-key`, mode 0600) and state (`witness.db`). Local only. Back it up with the witness: a witness that loses its state must be retired, not restarted"#,
    },
    Setting {
        names: r#"`HEARTH_WITNESS_MAX_CONNECTIONS`"#,
        default: r#"`512`"#,
        meaning: r#"Connections `hearth witness serve` holds open at once (1–65,536), with the same 10 s head and 30 s body limits as the server's (`HEARTH_MAX_CONNECTIONS`). Local only"#,
    },
    Setting {
        names: r#"`HEARTH_WITNESS_NAME`"#,
        default: r#"derived from its key"#,
        meaning: r#"The witness's key name in its cosignatures (a signed-note key name). Local only"#,
    },
    Setting {
        names: r#"`MCP_REDIRECT_URIS`"#,
        default: r#"unset (the configured client links nowhere)"#,
        meaning: r#"The configured client's redirect URIs (`MCP_CLIENT_ID`, Alexa+'s account linking): comma-separated, compared exactly (`https`, or `http` on loopback; no fragment). Set, the client-credentials token is Tier 1 only (see [Authorization](../concepts/authorization.md)). Unset, the configured client cannot link a household, and its token reaches every tool; hosts that register themselves or name themselves by a metadata document link either way, with their own redirect URIs"#,
    },
    Setting {
        names: r#"`MCP_RESOURCE_URL`"#,
        default: r#"local: `http://127.0.0.1:<port>/mcp`; Lambda: unset"#,
        meaning: r#"Public URL of `/mcp`: JWT audience, the only accepted `resource`, base of the issuer; its host is accepted in `Host` headers"#,
    },
    Setting {
        names: r#"`HEARTH_PASSKEY_RP_ID`"#,
        default: r#"the host of `MCP_RESOURCE_URL`; `localhost` for a loopback IP"#,
        meaning: r#"The WebAuthn relying party id of members' passkeys: the pages' host or a parent domain of it, never an IP address. Passkey pages are served on the origin of `MCP_RESOURCE_URL` (a loopback IP spelled `localhost`) and every printed link uses it. **Changing it later voids every passkey** ([Passkeys](../concepts/passkeys.md))"#,
    },
    Setting {
        names: r#"`MCP_ALLOW_NO_AUTH`"#,
        default: r#"unset"#,
        meaning: r#"Exactly `true` (any case) turns authentication off for local development. Refused under Lambda; never inferred. Local only"#,
    },
    Setting {
        names: r#"`MCP_DISABLED`"#,
        default: r#"unset"#,
        meaning: r#"`1` or `true`: 503 on every endpoint. `0`/`false` serve; anything else is refused at start"#,
    },
    Setting {
        names: r#"`MCP_ALLOWED_ORIGINS`"#,
        default: r#"unset"#,
        meaning: r#"Exact browser origins allowed to call `/mcp`, `/oauth/*` and `/tts`, besides the server's own origin (from `MCP_RESOURCE_URL`, so `/demo` can call it; locally also as `localhost`); any other `Origin` header is 403. These origins, and no others, also get CORS answers (preflights included, no credentials) on `/mcp`, `/oauth/token`, `/oauth/revoke`, `/oauth/register` and the discovery documents, for hosts that run in a browser such as the MCP Inspector 1.x in its Direct mode (its page is `http://localhost:6274` or `http://127.0.0.1:6274`, two different origins: list the one you open, or both). A preflight from any other origin is answered 403 and logged with the origin. Every deployment takes a list: the template's `AllowedOrigins` parameter sets it"#,
    },
    Setting {
        names: r#"`HEARTH_SIGNUP`"#,
        default: r#"`off`"#,
        meaning: r#"Who may create a household without the operator: `off` (only `hearth admin household create`), `invite` (a person holding a link from `hearth admin signup-link`, which makes one household) or `open` (anyone: the consent page offers **Create a household**). The person names the household and becomes its first guardian with a new passkey; it starts with no merchant and no budget, and is deleted after 24 hours unless an assistant is linked. Needs `MCP_RESOURCE_URL` and `MCP_REDIRECT_URIS`. Limited to 3 a day per client address (IPv6 by its /64) and by `HEARTH_SIGNUP_PER_DAY` ([Opening sign-up](../self-hosting/signup.md))"#,
    },
    Setting {
        names: r#"`HEARTH_SIGNUP_PER_DAY`"#,
        default: r#"`100`"#,
        meaning: r#"Households the whole deployment creates by sign-up per UTC day (1–100,000); past it, sign-up answers 429 until midnight UTC"#,
    },
    Setting {
        names: r#"`HEARTH_RATE_LIMIT_PER_SUBJECT`"#,
        default: r#"`60`"#,
        meaning: r#"Requests per minute per authenticated subject (1–1,000,000; there is no "unlimited")"#,
    },
    Setting {
        names: r#"`HEARTH_RATE_LIMIT_PER_IP`"#,
        default: r#"`120`"#,
        meaning: r#"Requests per minute per client address (1–1,000,000), on every route but `/healthz` (the [routes table](routes.md) says how each is limited): spent by requests without a valid token, and checked by all, so an address over it is refused whatever token it sends (a valid token spends its subject's budget instead). An IPv6 client is counted by its /64, an IPv4-mapped address as its IPv4 address; the link-code and registration limits count the same way"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_ASSISTANT_MODEL`"#,
        default: r#"`us.amazon.nova-pro-v1:0`"#,
        meaning: r#"The Bedrock model `hearth assistant` and the demo's assistant option run on. Local only (no function reads it)"#,
    },
    Setting {
        names: r#"`HEARTH_TOKEN`, `HEARTH_DEVICE_KEY`"#,
        default: r#"unset"#,
        meaning: r#"`hearth assistant` only: the device's bearer token, and (with `--household`) its household device key as `KEY_ID:KEY`. Local only"#,
    },
    Setting {
        names: r#"`POLLY_VOICE`"#,
        default: r#"`Ruth`"#,
        meaning: r#"Polly voice for `/tts`"#,
    },
    Setting {
        names: r#"`POLLY_ENGINE`"#,
        default: r#"`generative`"#,
        meaning: r#"`standard`, `neural`, `long-form` or `generative`"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_HOST_KEY`"#,
        default: r#"unset"#,
        meaning: r#"HMAC key shared with the device for speaker attestations; without it the purchase tools refuse. Secret (environment locally, the device secret under Lambda). `development` selects the public development key, locally only"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_DATA`"#,
        default: r#"built-in `data/`"#,
        meaning: r#"Directory with `household.json` and `catalogue.json` replacing the demo household; a malformed file stops the server. Local only (a deployment changes the built-in files and rebuilds)"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_JUDGE`"#,
        default: r#"`rules+openai` when `COUNTERSIGN_JUDGE_URL` is set; else `bedrock` under Lambda, `rules` locally"#,
        meaning: r#"The intent judge: `rules`, `bedrock`, `openai` (a model on an OpenAI-compatible server, alone) or `rules+openai` (the rules, and the model where they are unclear); [Running the judge on your own model](../concepts/intent-check.md#running-the-judge-on-your-own-model)"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_JUDGE_MODEL`"#,
        default: r#"`us.amazon.nova-premier-v1:0` for `bedrock`; required for `openai` and `rules+openai`"#,
        meaning: r#"The judge's model: a Bedrock model or inference profile, or the model's name on the `COUNTERSIGN_JUDGE_URL` server (such as `llama3.1:8b`)"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_JUDGE_URL`"#,
        default: r#"unset"#,
        meaning: r#"Base URL of an OpenAI-compatible API (`/chat/completions` and `/models` below it), such as `http://127.0.0.1:11434/v1` for Ollama; `http` or `https`. Used by `openai` and `rules+openai`"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_JUDGE_TIMEOUT_MS`"#,
        default: r#"`1500`"#,
        meaning: r#"How long that server may take to answer, 1 to 60000; a later answer is `unclear`"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_JUDGE_API_KEY`"#,
        default: r#"unset"#,
        meaning: r#"Bearer key for that server, sent only over `https` or to a loopback address: otherwise the local server does not start, and under Lambda every verdict asked of the model is `unclear`. Secret (environment locally, the device secret under Lambda)"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_GUARDRAIL_ID`, `COUNTERSIGN_GUARDRAIL_VERSION`"#,
        default: r#"unset, `DRAFT`"#,
        meaning: r#"Optional guardrail screening listing text"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_NOTIFY_URL`"#,
        default: r#"unset (none sent)"#,
        meaning: r#"Where each request that starts waiting for a guardian is POSTed: `{"kind": "request", "household_id", "request_id", "requester_role", "title", "total_cents", "sent_at"}`, never the words; `https`, or `http` on loopback. Sent on its own task after the ledger append; failures are logged and never block or change the answer. A passkey waiting for a guardian is POSTed as `{"kind": "passkey_enrolment", "household_id", "requester_role", "approval_url", "sent_at"}` before the enrolment answers, within 1.5 s ([Passkeys](../concepts/passkeys.md))"#,
    },
    Setting {
        names: r#"`COUNTERSIGN_NOTIFY_KEY`"#,
        default: r#"unset"#,
        meaning: r#"HMAC-SHA256 key for `X-Countersign-Notification-Signature` (lowercase hex over the body as sent); without it nothing is sent. Secret (environment locally, the device secret under Lambda)"#,
    },
    Setting {
        names: r#"`AION_BACKEND_URL`"#,
        default: r#"unset (mock guide locally; under Lambda no `ask_aion` unless `MOCK_AION_BACKEND`)"#,
        meaning: r#"The AionRealm guide endpoint for `ask_aion`; `https`, or `http` on loopback"#,
    },
    Setting {
        names: r#"`MOCK_AION_BACKEND`"#,
        default: r#"`false` (the template: `true` exactly when `AionBackendUrl` is empty)"#,
        meaning: r#"`true` or `1` answers `ask_aion` from the built-in mock guide even when a backend URL is set; `0` or `false` do not; anything else is refused at start"#,
    },
    Setting {
        names: r#"`AION_BACKEND_API_KEY`"#,
        default: r#"unset"#,
        meaning: r#"Its bearer key. Secret: environment locally, the device secret under Lambda"#,
    },
    Setting {
        names: r#"`HEARTH_ALLOWED_HOSTS`"#,
        default: r#"unset"#,
        meaning: r#"Extra accepted `Host` values for a local server behind a proxy. Local only"#,
    },
    Setting {
        names: r#"`HEARTH_CIMD`"#,
        default: r#"`on`"#,
        meaning: r#"`on` or `off`: whether hosts may name themselves by a Client ID Metadata Document's URL (claude.ai, Claude Code, ChatGPT, VS Code do when it is advertised). `off` advertises no support, refuses a URL `client_id` with a message naming this setting, and leaves hosts to register themselves instead ([How every host connects](../connect/index.md))"#,
    },
    Setting {
        names: r#"`HEARTH_TRUSTED_PROXIES`"#,
        default: r#"unset (no proxy is believed)"#,
        meaning: r#"Comma-separated CIDRs (or single addresses) of the reverse proxies in front of a local server. From those peers only, the client every per-address limit counts is the right-most entry of `X-Forwarded-For` (or, without it, `Forwarded`) that is not itself a trusted proxy, or the left-most when all are; a malformed header, or one over 2,048 bytes or 32 entries, means the proxy's own address. Anyone else's header is ignored ([TLS behind a reverse proxy](../self-hosting/reverse-proxy.md)). Refused under Lambda, where API Gateway's source IP is the client. Local only"#,
    },
    Setting {
        names: r#"`HEARTH_MAX_CONNECTIONS`"#,
        default: r#"`512`"#,
        meaning: r#"Connections the local server holds open at once (1–65,536); past it new connections wait in the kernel's backlog, unanswered, until one closes. Every connection must send its request head within 10 s (an idle kept-alive connection is closed after 10 s) and its body within 30 s (408). Local only"#,
    },
    Setting {
        names: r#"`HEARTH_DEMO_DEVICE`"#,
        default: r#"unset"#,
        meaning: r#"`1` serves `POST /demo/device`, which signs speaker attestations for the web demo's simulated device for any token holder, `POST /demo/assistant`, the demo's assistant option, and `POST /demo/host` and `POST /demo/phone`, the demo's host that signs nothing and its phone (a household token and passkey invites for any token holder). Refused under Lambda. Local only"#,
    },
    Setting {
        names: r#"`HEARTH_PUSH_ALLOW_HTTP_LOOPBACK`"#,
        default: r#"`false`"#,
        meaning: r#"`true` also accepts phones' Web Push endpoints at `http` loopback URLs, and posts to loopback addresses, for a local push receiver in tests. Otherwise an endpoint must be `https` on a public address. Refused under Lambda. Local only ([Passkeys](../concepts/passkeys.md))"#,
    },
    Setting {
        names: r#"`HEARTH_CIMD_ALLOW_HTTP_LOOPBACK`"#,
        default: r#"`false`"#,
        meaning: r#"`true` also accepts Client ID Metadata Documents at `http://127.0.0.1`, `http://[::1]` or `http://localhost` URLs, and fetches from loopback addresses, for testing a host that names itself by URL on one machine. Private addresses stay refused. Refused under Lambda. Local only"#,
    },
    Setting {
        names: r#"`HEARTH_TOOLSETS`"#,
        default: r#"all built"#,
        meaning: r#"Comma-separated toolsets to serve: `why`, `aion`, `countersign`"#,
    },
    Setting {
        names: r#"`RUST_LOG`"#,
        default: r#"`info,rmcp=off`"#,
        meaning: r#"Log filter (rmcp is off because its lines quote client input)"#,
    },
    Setting {
        names: r#"`AWS_LAMBDA_RUNTIME_API`"#,
        default: r#"set by Lambda"#,
        meaning: r#"Its presence means "running under Lambda": the stricter rules apply (no development key, no `MCP_ALLOW_NO_AUTH`, no demo device, credentials only from Secrets Manager)"#,
    },
    Setting {
        names: r#"`AWS_LAMBDA_FUNCTION_NAME`"#,
        default: r#"set by Lambda; `local` otherwise"#,
        meaning: r#"The `Function` dimension of the `Hearth` metrics (at `HEARTH_METRICS=tool`)"#,
    },
    Setting {
        names: r#"`HEARTH_DEPLOYMENT`"#,
        default: r#"`local`; the stack's name in the template"#,
        meaning: r#"The `Deployment` dimension of the `Hearth` metrics, so that two deployments in one account and region count apart"#,
    },
    Setting {
        names: r#"`HEARTH_METRICS`"#,
        default: r#"`function`"#,
        meaning: r#"Which CloudWatch metrics the log lines embed (the template's `MetricDetail`): `function`, two counts by deployment, written only when not zero (`Throttled`, `WitnessRefusals`), all the alarms need (a failed tool call's line is marked `ToolErrors: 1`, which the dashboard counts with a log query); `tool`, also `ToolErrors` by deployment, and `Requests`, `Errors`, `Throttled`, `ToolErrors` and `Latency` by function and by tool on every line (five metrics a tool, $1.50 a month each); `off`, none (see [Alarms](../aws/alarms.md))"#,
    },
    Setting {
        names: r#"`HEARTH_LOG_FORMAT`"#,
        default: r#"`text` at a terminal, `json` otherwise"#,
        meaning: r#"How log lines are written (`--log-format`); the functions always write JSON, which CloudWatch reads. Local only"#,
    },
];

/// Variables read by a library, the allocator or the platform, not by the configuration.
pub const READ_ELSEWHERE: &[Setting] = &[
    Setting {
        names: r#"`AWS_REGION`, `AWS_ENDPOINT_URL[_DYNAMODB/_SECRETS_MANAGER/_POLLY/_BEDROCK_RUNTIME]`"#,
        default: r#"the AWS SDK"#,
        meaning: r#"Standard AWS SDK settings (region, endpoints); no region configured means `us-east-1`. The tests point them at moto and the Converse stand-in"#,
    },
    Setting {
        names: r#"`MIMALLOC_ARENA_EAGER_COMMIT`"#,
        default: r#"mimalloc, before `main`"#,
        meaning: r#"`0` (as `cargo run` and the template set it) commits memory on demand: about 10 MiB less peak RSS"#,
    },
    Setting {
        names: r#"`AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH`"#,
        default: r#"`lambda_http`"#,
        meaning: r#"`true` for a REST API (v1) deployment, so the function sees `/mcp` without the stage"#,
    },
    Setting {
        names: r#"`AWS_LC_SYS_NO_JITTER_ENTROPY`"#,
        default: r#"aws-lc"#,
        meaning: r#"the template sets `1` so that aws-lc seeds from the operating system only; locally it made no measurable difference"#,
    },
];

/// `page` with the part between `<!-- generated:NAME:begin -->` and `<!-- generated:NAME:end -->`
/// replaced by `generated`: how a page that is mostly prose carries a table the code makes.
/// `None` when the page has no such markers.
pub fn splice(page: &str, name: &str, generated: &str) -> Option<String> {
    let begin = format!("<!-- generated:{name}:begin -->\n");
    let end = format!("<!-- generated:{name}:end -->");
    let start = page.find(&begin)? + begin.len();
    let stop = start + page[start..].find(&end)?;
    Some(format!("{}{generated}{}", &page[..start], &page[stop..]))
}

/// The packages' `/etc/hearth/hearth.env`: every setting of [`SETTINGS`], commented out, each
/// under its meaning and default in plain text, for an operator to uncomment. The systemd unit
/// sets `HEARTH_ADDR` and `HEARTH_DATA_DIR` itself.
pub fn env_file() -> String {
    let mut file = String::from(
        "# Hearth's settings, read by the hearth service (systemctl restart hearth after a change).\n\
         # Every setting is commented out: its default applies. Uncomment and set what you need.\n\
         # The manual's Configuration page says more (man hearth, or /usr/share/doc/hearth).\n\
         # This file holds secrets: keep it mode 0600, owned by root.\n",
    );
    for setting in SETTINGS {
        file.push('\n');
        let meaning = plain(setting.meaning);
        let default = plain(setting.default);
        for line in wrap(&format!("{meaning} (default: {default})"), 96) {
            file.push_str(&format!("# {line}\n"));
        }
        for name in setting.variables() {
            file.push_str(&format!("#{name}=\n"));
        }
    }
    file
}

/// Markdown as plain text: links become their text, backticks and emphasis go.
fn plain(markdown: &str) -> String {
    let mut text = String::new();
    let mut rest = markdown;
    while let Some(start) = rest.find('[') {
        let Some(middle) = rest[start..].find("](") else {
            break;
        };
        let Some(end) = rest[start + middle..].find(')') else {
            break;
        };
        text.push_str(&rest[..start]);
        text.push_str(&rest[start + 1..start + middle]);
        rest = &rest[start + middle + end + 1..];
    }
    text.push_str(rest);
    text.replace(['`', '*'], "").replace("<br>", " ")
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// The Configuration page of the manual, as `hearth reference configuration` prints it.
pub fn markdown() -> String {
    let mut page = String::from(
        "# Configuration\n\n\
<!-- Generated by `hearth reference configuration` from shared/src/config/reference.rs; edit \
that table, then run `cargo run -q -- reference --update` from the project root. \
tests/cli.rs fails when they differ. -->\n\n\
Every environment variable Hearth reads. The `config` module is the only part of Hearth that \
reads the environment: once, at start, so a setting that cannot be honoured stops the server \
with the variable named, and nothing falls back silently to something weaker. A test records \
every variable it reads and fails if one is missing from this page. `hearth serve --help` \
shows the settings that are also flags.\n\n\
Rows that say **local only** are variables the SAM template does not set and no Lambda \
function needs: `tests/infra/test_template.py` reads this page and fails if the code reads a \
variable that is neither set by the template, held in a secret, nor marked local only here. \
\"Secret\" marks a credential: under Lambda it may only come from Secrets Manager, and \
setting it in a function's environment is refused at start.\n\n\
| Variable | Default | Meaning |\n| --- | --- | --- |\n",
    );
    for setting in SETTINGS {
        page.push_str(&format!(
            "| {} | {} | {} |\n",
            setting.names, setting.default, setting.meaning
        ));
    }
    page.push_str(
        "\n## Read by something other than Hearth's configuration\n\n\
| Variable | Read by | Meaning |\n| --- | --- | --- |\n",
    );
    for setting in READ_ELSEWHERE {
        page.push_str(&format!(
            "| {} | {} | {} |\n",
            setting.names, setting.default, setting.meaning
        ));
    }
    page.push_str(
        "\nSetting any one credential variable switches the development file off; whatever is \
left unset then denies. To accept your own judge token: \
`MCP_JUDGE_TOKEN_HASHES=$(printf %s \"$TOKEN\" | sha256sum | cut -d' ' -f1) cargo run`.\n",
    );
    page
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    #[test]
    fn a_generated_part_replaces_only_what_its_markers_hold() {
        let page = "intro\n<!-- generated:t:begin -->\nold\n<!-- generated:t:end -->\nafter\n";
        assert_eq!(
            super::splice(page, "t", "new\n").unwrap(),
            "intro\n<!-- generated:t:begin -->\nnew\n<!-- generated:t:end -->\nafter\n"
        );
        assert_eq!(super::splice(page, "other", "x"), None);
    }
    use std::collections::BTreeSet;

    use super::*;
    use crate::config::{Config, LogSettings, WitnessSettings};

    /// Every variable the configuration reads, recorded by the lookup it is given, over
    /// configurations that between them reach every conditional read.
    fn read_by_configuration() -> BTreeSet<String> {
        let read = RefCell::new(BTreeSet::new());
        let signer = crate::tlog::note::NoteSigner::from_seed("127.0.0.1/hearth-log/v1", &[1; 32]);
        let witness = crate::tlog::cosignature::Cosigner::from_seed("w", &[2; 32]).unwrap();
        let policy = format!(
            "log {}\nwitness w {} http://127.0.0.1:9\nquorum w\n",
            signer.unwrap().vkey(),
            witness.vkey()
        );
        let scenarios: Vec<Vec<(&str, &str)>> = vec![
            vec![],
            vec![("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")],
            vec![(
                "HEARTH_SECRET_ARN",
                "arn:aws:secretsmanager:us-east-1:1:secret:x",
            )],
            vec![("MCP_CLIENT_ID", "client")],
            vec![("COUNTERSIGN_GUARDRAIL_ID", "guardrail")],
            vec![("HEARTH_WITNESS_POLICY", &policy)],
        ];
        for scenario in &scenarios {
            let lookup = |name: &str| {
                read.borrow_mut().insert(name.to_owned());
                scenario
                    .iter()
                    .find(|(given, _)| *given == name)
                    .map(|(_, value)| (*value).to_owned())
            };
            let _ = Config::from_lookup(lookup);
            let _ = WitnessSettings::from_lookup(lookup);
            let _ = LogSettings::from_lookup(lookup);
        }
        read.into_inner()
    }

    #[test]
    fn the_env_file_names_every_setting_commented_out() {
        let file = env_file();
        for name in SETTINGS.iter().flat_map(Setting::variables) {
            assert!(file.contains(&format!("\n#{name}=\n")), "{name}");
        }
        assert!(
            file.lines()
                .all(|line| line.is_empty() || line.starts_with('#')),
            "nothing is set"
        );
        assert!(file.lines().all(|line| line.chars().count() <= 100));
        assert!(!file.contains("]("), "links are plain text");
        assert_eq!(
            plain("see [Rotating](../a.md) and `X`"),
            "see Rotating and X"
        );
    }

    #[test]
    fn the_reference_holds_exactly_the_variables_the_configuration_reads() {
        let documented: BTreeSet<&str> = SETTINGS.iter().flat_map(Setting::variables).collect();
        let read = read_by_configuration();
        assert!(
            read.len() > 40,
            "{} variables recorded: {read:?}",
            read.len()
        );
        let missing: Vec<&String> = read
            .iter()
            .filter(|name| !documented.contains(name.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "read by the configuration but missing from config/reference.rs: {missing:?}"
        );
        // The one row the configuration does not read: the command line's own flag, which clap
        // reads for `--log-format`.
        let unread: Vec<&&str> = documented
            .iter()
            .filter(|name| !read.contains(**name) && **name != "HEARTH_LOG_FORMAT")
            .collect();
        assert!(
            unread.is_empty(),
            "in config/reference.rs but never read by the configuration: {unread:?}"
        );
    }
}
