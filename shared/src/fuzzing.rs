//! The bodies of the fuzz targets in `fuzz/` (libFuzzer, `cargo fuzz`), kept here so that the
//! stable test suite replays every committed corpus through exactly the same code
//! (`shared/tests/fuzz_corpora.rs`). Each function takes the fuzzer's bytes, must never panic,
//! and checks the invariants that hold for any input.
//!
//! The whole-request target runs the local router in process, over a SQLite store in a
//! temporary directory and a clock that never moves, so that the attestations in the seeds
//! (signed with [`HOST_KEY`] for [`NOW`]) stay fresh for every run.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use crate::app::Backing;
use crate::auth::attestation::{Attestation, AttestationVerifier, HostClaim};
use crate::auth::{Authenticator, Caller, Credentials, JwtKeys};
use crate::chain::sha256_hex;
use crate::clock::ManualClock;
use crate::config::Config;
use crate::mcp::HearthServer;
use crate::secret::Secret;
use crate::store::Stores;
use crate::store::sqlite::SqliteStore;

/// The judge token the in-process server accepts.
pub const JUDGE_TOKEN: &str = "fuzz-judge-token";
/// The OAuth client the in-process server accepts.
pub const CLIENT_ID: &str = "fuzz-client";
pub const CLIENT_SECRET: &str = "fuzz-client-secret-0123456789";
pub const JWT_SECRET: &str = "fuzz-jwt-signing-key-of-at-least-32-bytes";
/// The device key attestations in the seeds are signed with.
pub const HOST_KEY: &str = "fuzz-host-key";
/// The redirect URI account linking accepts (the seeds use it).
pub const REDIRECT_URI: &str = "https://alexa.example/api/skill/link/FUZZ";
/// The instant the in-process server's clock stands at (Unix seconds).
pub const NOW: i64 = 1_796_000_000;

struct World {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    server: HearthServer,
}

/// The world every fuzz target shares for the life of the process: state one input leaves
/// (a proposal, a spent nonce) is what the next input meets, as in a real server.
fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    // One directory per process, left behind: the process ends when the fuzzer does.
    WORLD.get_or_init(|| World::new(&format!("hearth-fuzz-{}", std::process::id())))
}

impl World {
    fn new(directory_name: &str) -> World {
        let dir = std::env::temp_dir().join(directory_name);
        // Empty, whatever a process of the same id left behind.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let vars: HashMap<&str, String> = HashMap::from([
            ("HEARTH_DATA_DIR", dir.display().to_string()),
            ("MCP_JUDGE_TOKEN_HASHES", sha256_hex(JUDGE_TOKEN)),
            ("MCP_CLIENT_ID", CLIENT_ID.to_owned()),
            ("MCP_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
            ("MCP_JWT_SECRET", JWT_SECRET.to_owned()),
            ("COUNTERSIGN_HOST_KEY", HOST_KEY.to_owned()),
            ("HEARTH_RATE_LIMIT_PER_SUBJECT", "1000000".to_owned()),
            ("HEARTH_RATE_LIMIT_PER_IP", "1000000".to_owned()),
            ("HEARTH_DEMO_DEVICE", "1".to_owned()),
            // Account linking on, so the consent page's checks are reachable.
            ("MCP_REDIRECT_URIS", REDIRECT_URI.to_owned()),
        ]);
        let config = Config::from_lookup(|name| vars.get(name).cloned()).expect("configuration");
        let store = Arc::new(SqliteStore::open(&dir.join("fuzz.db")).expect("store"));
        let stores = Stores::shared(store);
        let clock = Arc::new(ManualClock::new(
            time::OffsetDateTime::from_unix_timestamp(NOW).expect("a valid instant"),
        ));
        let backing = Backing {
            resolver: Arc::new(crate::clients::metadata_document::LocalhostOnly),
            witnesses: None,
            accounts: Arc::new(crate::accounts::Accounts::new(
                stores.accounts.clone(),
                clock.clone(),
            )),
            stores,
            clock,
            household: crate::app::household_data(&config).expect("household data"),
            judge: crate::app::judge(&config),
            #[cfg(feature = "aws")]
            voice: None,
        };
        World {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
            router: crate::app::local_router_with(&config, &backing),
            server: HearthServer::new(crate::app::toolsets(&config, &backing)),
        }
    }

    fn answer(&self, data: &[u8]) -> Option<(StatusCode, String)> {
        let request = parse_request(data)?;
        Some(self.runtime.block_on(async {
            let response = self
                .router
                .clone()
                .oneshot(request)
                .await
                .expect("the router is infallible");
            let status = response.status();
            let body = http_body_util::BodyExt::collect(response.into_body())
                .await
                .map(|collected| collected.to_bytes())
                .unwrap_or_default();
            (status, String::from_utf8_lossy(&body).into_owned())
        }))
    }
}

/// A whole HTTP request to the local router: `METHOD PATH`, header lines `name: value`, an
/// empty line, then the body. Whatever it is, the answer is never a 500 and never a panic.
pub fn http_request(data: &[u8]) {
    if let Some((status, _)) = http_answer(data) {
        assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}

/// The local router's answer to the request `data` frames (see [`http_request`]), or `None`
/// when the bytes frame no HTTP request at all.
pub fn http_answer(data: &[u8]) -> Option<(StatusCode, String)> {
    world().answer(data)
}

/// The answers to `requests`, in order, from a world of their own that starts empty: what
/// the shared world's earlier inputs left (a proposal already made for a turn) cannot change
/// them, whichever test or fuzz input ran first.
pub fn fresh_http_answers(requests: &[&[u8]]) -> Vec<Option<(StatusCode, String)>> {
    static WORLDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let number = WORLDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let directory_name = format!("hearth-fuzz-{}-fresh-{number}", std::process::id());
    let world = World::new(&directory_name);
    let answers = requests.iter().map(|data| world.answer(data)).collect();
    drop(world);
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(directory_name));
    answers
}

fn parse_request(data: &[u8]) -> Option<http::Request<axum::body::Body>> {
    let split = data.windows(2).position(|pair| pair == b"\n\n")?;
    let head = std::str::from_utf8(&data[..split]).ok()?;
    let body = data[split + 2..].to_vec();
    let mut lines = head.lines();
    let (method, path) = lines.next()?.split_once(' ')?;
    let mut builder = http::Request::builder()
        .method(http::Method::from_bytes(method.as_bytes()).ok()?)
        .uri(path);
    let mut host = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let name = http::HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
        host |= name == http::header::HOST;
        builder = builder.header(name, HeaderValue::from_str(value.trim()).ok()?);
    }
    if !host {
        builder = builder.header(http::header::HOST, "127.0.0.1");
    }
    builder.body(axum::body::Body::from(body)).ok()
}

/// One tool call with fuzzed arguments: the tool's name and a newline, one byte picking the
/// member the device attests, then the arguments' JSON. A tool answers anything with a result
/// or an `isError`, never a panic.
pub fn tool_call(data: &[u8]) {
    let Some(at) = data.iter().position(|byte| *byte == b'\n') else {
        return;
    };
    let (Ok(name), [member, arguments @ ..]) = (std::str::from_utf8(&data[..at]), &data[at + 1..])
    else {
        return;
    };
    let Ok(Value::Object(arguments)) = serde_json::from_slice::<Value>(arguments) else {
        return;
    };
    let world = world();
    if !world.server.knows_tool(name) {
        return;
    }
    let members = ["dana", "chris", "mia", "leo", "rose", "stranger"];
    let mut caller = Caller::unattested(sha256_hex(sha256_hex(JUDGE_TOKEN)));
    caller.host = HostClaim::Verified(Attestation {
        member_id: members[usize::from(*member) % members.len()].to_owned(),
        turn_id: format!("turn-{}", sha256_hex(data)),
        utterances: vec!["buy a 4 pack of AA batteries".to_owned()],
        issued_at: NOW,
        answering: None,
    });
    let request = serde_json::from_value(serde_json::json!({"name": name, "arguments": arguments}))
        .expect("tool call parameters");
    let answered = world.runtime.block_on(world.server.call(&caller, request));
    assert!(answered.is_some(), "{name} is a listed tool");
}

/// Scholia text through the parser and both modes of the linter.
pub fn scholia(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = crate::scholia::parser::parse(&text);
    for mode in [
        crate::scholia::validator::Mode::Full,
        crate::scholia::validator::Mode::TagBalance,
    ] {
        let report = crate::scholia::validator::validate(&text, mode, &[]);
        if parsed.is_err() {
            assert!(
                report
                    .errors
                    .iter()
                    .any(|issue| issue.rule == "well_formed"),
                "text that does not parse is reported as not well formed"
            );
        }
    }
}

/// Attestation headers: the first byte's low bit says whether to sign the rest properly (so
/// that decoding and the shape and age checks are reached), the next eight bytes are the
/// checking instant, the rest is the header value. A claim is verified only when signed.
pub fn attestation(data: &[u8]) {
    let [flags, rest @ ..] = data else {
        return;
    };
    let (now, encoded) = match rest.split_first_chunk::<8>() {
        Some((now, encoded)) => (i64::from_le_bytes(*now), encoded),
        None => (NOW, rest),
    };
    let Ok(encoded) = std::str::from_utf8(encoded) else {
        return;
    };
    let Ok(value) = HeaderValue::from_str(encoded) else {
        return;
    };
    let signed = flags & 1 == 1;
    let signature = if signed {
        crate::auth::attestation::sign(HOST_KEY, encoded)
    } else {
        "00".repeat(32)
    };
    let mut headers = HeaderMap::new();
    headers.insert(crate::auth::attestation::ATTESTATION_HEADER, value);
    headers.insert(
        crate::auth::attestation::SIGNATURE_HEADER,
        HeaderValue::from_str(&signature).expect("hex"),
    );
    let verifier = AttestationVerifier::new(
        Some(Secret::new(HOST_KEY)),
        Arc::new(ManualClock::new(time::OffsetDateTime::UNIX_EPOCH)),
    );
    let claim = verifier.check_at(&headers, now);
    if let HostClaim::Verified(attestation) = &claim {
        assert!(signed, "an unsigned attestation was accepted");
        crate::auth::attestation::check_shape(attestation)
            .expect("a verified claim keeps the shape");
    }
}

/// The OAuth function's inputs: the first line is an `Authorization` header value, read as
/// Basic client credentials and as a bearer token (the JWT verification path); the rest is a
/// token-request form, whose linking parameters are read as a refresh token, a link code and
/// a PKCE pair.
pub fn oauth(data: &[u8]) {
    let (line, form) = match data.iter().position(|byte| *byte == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &data[data.len()..]),
    };
    if let Ok(form) = crate::oauth::form::Form::parse(form) {
        linking_parameters(&form);
    }
    let Ok(value) = HeaderValue::from_bytes(line) else {
        return;
    };
    let mut headers = HeaderMap::new();
    headers.insert(http::header::AUTHORIZATION, value);
    let _ = crate::oauth::form::basic_credentials(&headers);
    let (credentials, _) = Credentials::from_lookup(|name| match name {
        "MCP_CLIENT_ID" => Some(CLIENT_ID.to_owned()),
        "MCP_JUDGE_TOKEN_HASHES" => Some(sha256_hex(JUDGE_TOKEN)),
        _ => None,
    });
    let keys = JwtKeys::new(
        &Secret::new(JWT_SECRET),
        "http://127.0.0.1:8790",
        "http://127.0.0.1:8790/mcp",
    )
    .expect("a long enough key");
    if let Ok(token) = std::str::from_utf8(line) {
        let _ = keys.verify(token.trim_start_matches("Bearer ").trim());
    }
    let authenticator = Authenticator::new(&credentials, Some(keys));
    if let Ok(grant) = authenticator.authenticate(&headers) {
        assert!(
            grant.household_generation.is_none()
                || crate::accounts::is_household_id(grant.subject.as_str()),
            "a household grant names a household id"
        );
    }
}

/// Account linking's parsers on whatever a form carries: none may panic, and what they accept
/// has the shape they promise.
fn linking_parameters(form: &crate::oauth::form::Form) {
    use crate::linking::{pkce, secrets};
    if let Some(token) = form.get("refresh_token")
        && let Some((family, hash)) = secrets::parse_refresh_token(token)
    {
        assert_eq!(family.len(), 32, "a family id is 32 hex digits");
        assert_eq!(hash.len(), 64, "a stored hash is a hex SHA-256");
    }
    if let Some(code) = form.get("link_code")
        && let Some(normalized) = secrets::normalize_link_code(code)
    {
        assert_eq!(normalized.len(), secrets::LINK_CODE_CHARS);
        assert_eq!(
            secrets::normalize_link_code(&normalized).as_ref(),
            Some(&normalized)
        );
    }
    let challenge = form.get("code_challenge");
    let accepted = pkce::check_challenge(challenge, form.get("code_challenge_method")).is_ok();
    if let (Some(verifier), Some(challenge)) = (form.get("code_verifier"), challenge)
        && pkce::verifier_matches(verifier, challenge)
    {
        assert!(accepted || form.get("code_challenge_method") != Some("S256"));
    }
}

/// The seed of the log key the `tlog` target's seeds are signed with.
pub const LOG_SEED: [u8; 32] = [9; 32];
/// The host that key's name and the seeds' origins name.
pub const LOG_HOST: &str = "fuzz.example";

/// The transparency log's readers on arbitrary input: a checkpoint, a tlog-proof file whose
/// checkpoint is verified against the fuzz log key, and the Merkle verification of what the
/// file claims, at its own sizes and at fuzzed ones. Nothing may panic, and a signature can
/// only verify on a note the key really signed (the seeds carry some).
pub fn tlog(data: &[u8]) {
    use crate::tlog::checkpoint::{Checkpoint, parse_proof};
    use crate::tlog::note;
    use crate::tlog::tree::{root_from_inclusion, verify_consistency};
    use crate::transparency::LogKeys;
    static KEYS: OnceLock<LogKeys> = OnceLock::new();
    let keys = KEYS.get_or_init(|| LogKeys::new(LOG_HOST, &[(1, LOG_SEED)]).expect("a key"));
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Checkpoint::parse(text);
    let _ = note::verify(text, keys.verifiers());
    let Ok(file) = parse_proof(text) else {
        return;
    };
    if let Ok(signed) = note::verify(file.checkpoint, keys.verifiers())
        && let Ok(checkpoint) = Checkpoint::parse(signed)
    {
        let root = root_from_inclusion(file.index, checkpoint.size, &[0; 32], &file.path);
        let _ = root == Some(checkpoint.root);
        let _ = verify_consistency(
            file.index,
            &[0; 32],
            checkpoint.size,
            &checkpoint.root,
            &file.path,
        );
    }
    let size = file.index.saturating_add(file.path.len() as u64);
    let _ = root_from_inclusion(file.index, size, &[1; 32], &file.path);
    let _ = verify_consistency(file.index, &[1; 32], size, &[2; 32], &file.path);
}

/// A witness's two parsers on arbitrary input: the first byte picks which. Even: an
/// `add-checkpoint` body, answered by a witness (over an in-memory state) that trusts the fuzz
/// log key for `fuzz.example/`; its status is one the protocol names, and a cosignature only
/// ever answers a checkpoint the key really signed (the seeds carry some). Odd: a witness
/// policy; one that parses must judge a fixed note without panicking.
pub fn witness(data: &[u8]) {
    use crate::tlog::cosignature::Cosigner;
    use crate::tlog::note::NoteSigner;
    use crate::tlog::policy::Policy;
    use crate::witness::{Trust, Witness, WitnessState};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if mode % 2 == 1 {
        if let Ok(policy) = Policy::parse(text) {
            let _ = policy
                .verify("o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\u{2014} k AAAA\n");
            let _ = policy.quorum_met(&Default::default());
        }
        return;
    }
    let state = WitnessState::open(std::path::Path::new(":memory:")).expect("an in-memory state");
    let log =
        NoteSigner::from_seed(&format!("{LOG_HOST}/hearth-log/v1"), &LOG_SEED).expect("a key");
    state
        .trust(&Trust {
            vkey: log.vkey(),
            origin_prefix: format!("{LOG_HOST}/"),
            max_logs: 4,
        })
        .expect("trusted");
    let witness = Witness::new(
        Cosigner::from_seed("fuzz.example/witness", &[5; 32]).expect("a witness key"),
        state,
    );
    let reply = witness.add_checkpoint(text, 1_800_000_000);
    assert!(
        [200, 400, 403, 404, 409, 422].contains(&reply.status),
        "status {}: {}",
        reply.status,
        reply.body
    );
    if reply.status == 200 {
        assert!(reply.body.starts_with("\u{2014} fuzz.example/witness "));
    }
}
