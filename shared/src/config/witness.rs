//! Witness settings: those of `hearth witness`, which runs apart from Hearth (often on
//! another machine) and reads only [`WitnessSettings`]; and Hearth's own, which say which
//! witnesses it submits its checkpoints to ([`WitnessSubmission`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{ConfigError, Runtime};
use crate::tlog::policy::Policy;

/// How long Hearth waits for witnesses before answering, by default: Alexa+ allows 500 ms
/// for a whole call.
pub const DEFAULT_WITNESS_TIMEOUT_MS: u64 = 200;

/// The longest `HEARTH_WITNESS_TIMEOUT_MS` may be.
pub const MAX_WITNESS_TIMEOUT_MS: u64 = 5_000;

/// Which witnesses Hearth asks to cosign each new checkpoint, and how long it waits.
#[derive(Debug, Clone)]
pub struct WitnessSubmission {
    /// The policy as given: published at `/.well-known/hearth/witness-policy`.
    pub text: String,
    pub policy: Policy,
    /// `HEARTH_WITNESS_TIMEOUT_MS`, default 200.
    pub timeout: Duration,
}

/// Reads `HEARTH_WITNESS_POLICY` (the policy text) or `HEARTH_WITNESS_POLICY_FILE` (a path to
/// it; not under Lambda, whose functions take the text), and `HEARTH_WITNESS_TIMEOUT_MS`.
///
/// The policy is C2SP `tlog-policy`, with Hearth's deviation: its `log` line's key name is
/// the deployment's (`<host>/hearth-log/v<N>`), not an origin. Every `witness` line must carry
/// the witness's URL prefix, which is where Hearth submits.
pub(super) fn submission(
    get: &impl Fn(&str) -> Option<String>,
    runtime: Runtime,
) -> Result<Option<WitnessSubmission>, ConfigError> {
    let text = match (
        get("HEARTH_WITNESS_POLICY"),
        get("HEARTH_WITNESS_POLICY_FILE"),
    ) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(ConfigError::Invalid {
                name: "HEARTH_WITNESS_POLICY_FILE",
                reason: "HEARTH_WITNESS_POLICY is set too; give the policy in one place".into(),
            });
        }
        // A CloudFormation parameter cannot hold a newline: there, lines may be separated by
        // the two characters `\n` (a policy has no backslashes of its own).
        (Some(text), None) if !text.contains('\n') => text.replace("\\n", "\n"),
        (Some(text), None) => text,
        (None, Some(_)) if runtime == Runtime::Lambda => {
            return Err(ConfigError::Invalid {
                name: "HEARTH_WITNESS_POLICY_FILE",
                reason: "under Lambda the policy is given as text, in HEARTH_WITNESS_POLICY".into(),
            });
        }
        (None, Some(path)) => {
            std::fs::read_to_string(path.trim()).map_err(|error| ConfigError::Invalid {
                name: "HEARTH_WITNESS_POLICY_FILE",
                reason: format!("reading {}: {error}", path.trim()),
            })?
        }
    };
    let name = if get("HEARTH_WITNESS_POLICY").is_some() {
        "HEARTH_WITNESS_POLICY"
    } else {
        "HEARTH_WITNESS_POLICY_FILE"
    };
    let policy = Policy::parse(&text).map_err(|error| ConfigError::Invalid {
        name,
        reason: format!("{error} (C2SP tlog-policy; the log line is this deployment's log key)"),
    })?;
    if policy.logs.is_empty() {
        return Err(ConfigError::Invalid {
            name,
            reason: "the policy names no log: add `log <vkey>` with the key `hearth admin log-key` prints".into(),
        });
    }
    for witness in &policy.witnesses {
        let url = witness.url.as_deref().unwrap_or_default();
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(ConfigError::Invalid {
                name,
                reason: format!(
                    "witness {} has no URL: each witness line ends with its http(s) URL prefix, where Hearth submits",
                    witness.name
                ),
            });
        }
    }
    let timeout_ms = match get("HEARTH_WITNESS_TIMEOUT_MS") {
        None => DEFAULT_WITNESS_TIMEOUT_MS,
        Some(value) => value
            .trim()
            .parse()
            .ok()
            .filter(|ms| (1..=MAX_WITNESS_TIMEOUT_MS).contains(ms))
            .ok_or_else(|| ConfigError::Invalid {
                name: "HEARTH_WITNESS_TIMEOUT_MS",
                reason: format!(
                    "a whole number of milliseconds from 1 to {MAX_WITNESS_TIMEOUT_MS}"
                ),
            })?,
    };
    Ok(Some(WitnessSubmission {
        text,
        policy,
        timeout: Duration::from_millis(timeout_ms),
    }))
}

/// Where a witness listens, keeps its key and state, and what it calls itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessSettings {
    /// `HEARTH_WITNESS_ADDR`, default `127.0.0.1:8788`.
    pub addr: SocketAddr,
    /// `HEARTH_WITNESS_DIR`, default `./.hearth-witness`: the key (`witness-key`, mode 0600)
    /// and the state (`witness.db`).
    pub dir: PathBuf,
    /// `HEARTH_WITNESS_NAME`: the cosigner's key name; by default one derived from its key.
    pub name: Option<String>,
    /// `HEARTH_WITNESS_MAX_CONNECTIONS` (default 512): connections held open at once.
    pub max_connections: usize,
}

impl WitnessSettings {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let addr = match get("HEARTH_WITNESS_ADDR") {
            Some(addr) => addr.parse().map_err(|_| ConfigError::Invalid {
                name: "HEARTH_WITNESS_ADDR",
                reason: format!("an address and port, like 127.0.0.1:8788, not {addr:?}"),
            })?,
            None => SocketAddr::from(([127, 0, 0, 1], 8788)),
        };
        let name = get("HEARTH_WITNESS_NAME");
        if let Some(name) = &name
            && !crate::tlog::note::is_key_name(name)
        {
            return Err(ConfigError::Invalid {
                name: "HEARTH_WITNESS_NAME",
                reason: format!("a key name (no spaces, no +), not {name:?}"),
            });
        }
        Ok(Self {
            max_connections: super::connection_cap(
                get("HEARTH_WITNESS_MAX_CONNECTIONS"),
                "HEARTH_WITNESS_MAX_CONNECTIONS",
            )?,
            addr,
            dir: PathBuf::from(
                get("HEARTH_WITNESS_DIR").unwrap_or_else(|| ".hearth-witness".into()),
            ),
            name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::cosignature::Cosigner;
    use crate::tlog::note::NoteSigner;

    fn lookup<'a>(vars: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.clone())
        }
    }

    fn policy(url: &str) -> String {
        let log = NoteSigner::from_seed("h.example/hearth-log/v1", &[1; 32]).unwrap();
        let witness = Cosigner::from_seed("w.example/1", &[2; 32]).unwrap();
        format!(
            "log {}\nwitness w1 {} {url}\nquorum w1\n",
            log.vkey(),
            witness.vkey()
        )
    }

    #[test]
    fn a_policy_is_text_or_a_file_and_each_witness_has_a_url() {
        assert!(submission(&lookup(&[]), Runtime::Local).unwrap().is_none());
        let text = policy("http://127.0.0.1:8788");
        let given = submission(
            &lookup(&[("HEARTH_WITNESS_POLICY", text.clone())]),
            Runtime::Local,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (given.text.as_str(), given.timeout),
            (text.as_str(), Duration::from_millis(200))
        );
        // As a template parameter, with `\n` between lines.
        let escaped = text.replace('\n', "\\n");
        let from_parameter = submission(
            &lookup(&[("HEARTH_WITNESS_POLICY", escaped)]),
            Runtime::Lambda,
        )
        .unwrap()
        .unwrap();
        assert_eq!(from_parameter.text, text);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy");
        std::fs::write(&path, &text).unwrap();
        let file = [("HEARTH_WITNESS_POLICY_FILE", path.display().to_string())];
        assert_eq!(
            submission(&lookup(&file), Runtime::Local)
                .unwrap()
                .unwrap()
                .text,
            text
        );
        // Lambda takes the text only; both at once is refused.
        assert!(submission(&lookup(&file), Runtime::Lambda).is_err());
        let both = [file[0].clone(), ("HEARTH_WITNESS_POLICY", text.clone())];
        assert!(submission(&lookup(&both), Runtime::Local).is_err());
        // A witness without its URL, a policy without a log, or bad grammar: refused at start.
        for bad in [
            policy(""),
            policy("ftp://w.example"),
            policy("http://w").replace("quorum w1", "quorum w2"),
            policy("http://w")
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join("\n"),
        ] {
            let error = submission(
                &lookup(&[("HEARTH_WITNESS_POLICY", bad.clone())]),
                Runtime::Local,
            );
            assert!(error.is_err(), "{bad}");
        }
    }

    #[test]
    fn the_timeout_is_bounded_at_both_ends() {
        let text = policy("http://127.0.0.1:8788");
        let with = |ms: &str| {
            submission(
                &lookup(&[
                    ("HEARTH_WITNESS_POLICY", text.clone()),
                    ("HEARTH_WITNESS_TIMEOUT_MS", ms.into()),
                ]),
                Runtime::Local,
            )
            .map(|found| found.unwrap().timeout)
        };
        assert_eq!(with("1").unwrap(), Duration::from_millis(1));
        assert_eq!(with("5000").unwrap(), Duration::from_millis(5000));
        for bad in ["0", "5001", "fast", "-1"] {
            assert!(with(bad).is_err(), "{bad}");
        }
    }

    fn settings(vars: &[(&str, &str)]) -> Result<WitnessSettings, ConfigError> {
        WitnessSettings::from_lookup(|name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn a_witness_defaults_to_loopback_and_its_own_folder() {
        let defaults = settings(&[]).unwrap();
        assert_eq!(defaults.addr.to_string(), "127.0.0.1:8788");
        assert_eq!(defaults.dir, PathBuf::from(".hearth-witness"));
        assert_eq!(defaults.name, None);
        assert!(settings(&[("HEARTH_WITNESS_ADDR", "8788")]).is_err());
        assert!(settings(&[("HEARTH_WITNESS_NAME", "two words")]).is_err());
        assert!(settings(&[("HEARTH_WITNESS_NAME", "a+b")]).is_err());
        assert_eq!(
            settings(&[("HEARTH_WITNESS_NAME", "home.example/w1")])
                .unwrap()
                .name
                .as_deref(),
            Some("home.example/w1")
        );
    }
}
