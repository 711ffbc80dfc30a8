//! Settings from the environment. Every entry point loads a [`Config`] once at start; nothing
//! else reads the environment. A setting that cannot be honoured is a startup error, never a
//! silent fallback to something weaker.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::auth::BearerAuth;

/// Where the process runs. Decided by `AWS_LAMBDA_RUNTIME_API`, which the Lambda runtime sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Lambda,
    Local,
}

/// The toolsets this build can serve.
pub const KNOWN_TOOLSETS: &[&str] = &["why"];

/// Which chain store runs. Locally the default is a SQLite file in the data directory; under
/// Lambda a SQLite file is used only when `HEARTH_DB` names one explicitly (a function's disk
/// is not durable), and otherwise decision tools report storage unavailable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// `HEARTH_DB`, default `<data dir>/hearth.db` locally.
    Sqlite(PathBuf),
    Unconfigured,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub runtime: Runtime,
    /// `HEARTH_ADDR`, default `127.0.0.1:8787`.
    pub addr: SocketAddr,
    /// `HEARTH_DATA_DIR`, default `./.hearth`: the SQLite file and the dev token live here.
    pub data_dir: PathBuf,
    /// Where chains are kept; see [`StoreChoice`].
    pub store: StoreChoice,
    /// `MCP_JUDGE_TOKEN_HASHES`: comma-separated hex SHA-256 of accepted bearer tokens.
    pub token_hashes: Vec<[u8; 32]>,
    /// `MCP_ALLOW_NO_AUTH=true` (exactly, any case): local development without authentication.
    pub allow_no_auth: bool,
    /// `MCP_ALLOWED_ORIGINS`: comma-separated exact browser origins; any other `Origin` is 403.
    pub allowed_origins: Vec<String>,
    /// `MCP_RESOURCE_URL`: the public URL of `/mcp`; its host is accepted in `Host` headers.
    pub resource_url: Option<String>,
    /// `HEARTH_ALLOWED_HOSTS`: extra accepted `Host` values for a local server behind a proxy.
    pub extra_hosts: Vec<String>,
    /// `HEARTH_TOOLSETS`, default every known toolset.
    pub toolsets: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{name} is not valid: {reason}")]
    Invalid { name: &'static str, reason: String },
    #[error("MCP_ALLOW_NO_AUTH is for local development only and is refused under Lambda")]
    NoAuthUnderLambda,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
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
                reason: "expected host:port, e.g. 127.0.0.1:8787".into(),
            })?,
            None => SocketAddr::from(([127, 0, 0, 1], 8787)),
        };
        let data_dir = PathBuf::from(get("HEARTH_DATA_DIR").unwrap_or_else(|| ".hearth".into()));
        let store = match (get("HEARTH_DB"), runtime) {
            (Some(path), _) => StoreChoice::Sqlite(PathBuf::from(path)),
            (None, Runtime::Local) => StoreChoice::Sqlite(data_dir.join("hearth.db")),
            (None, Runtime::Lambda) => StoreChoice::Unconfigured,
        };
        let token_hashes = BearerAuth::parse_hashes(
            &get("MCP_JUDGE_TOKEN_HASHES").unwrap_or_default(),
        )
        .map_err(|error| ConfigError::Invalid {
            name: "MCP_JUDGE_TOKEN_HASHES",
            reason: error.to_string(),
        })?;
        let allow_no_auth =
            get("MCP_ALLOW_NO_AUTH").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if allow_no_auth && runtime == Runtime::Lambda {
            return Err(ConfigError::NoAuthUnderLambda);
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
        Ok(Self {
            runtime,
            addr,
            data_dir,
            store,
            token_hashes,
            allow_no_auth,
            allowed_origins: split_list(&get("MCP_ALLOWED_ORIGINS").unwrap_or_default()),
            resource_url: get("MCP_RESOURCE_URL").map(|url| url.trim().to_owned()),
            extra_hosts: split_list(&get("HEARTH_ALLOWED_HOSTS").unwrap_or_default()),
            toolsets,
        })
    }

    /// The bearer verifier this configuration asks for.
    pub fn bearer_auth(&self) -> BearerAuth {
        if self.allow_no_auth {
            BearerAuth::allow_anonymous()
        } else {
            BearerAuth::new(self.token_hashes.clone())
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
        if let Some(host) = self.resource_url.as_deref().and_then(url_host) {
            hosts.push(host);
        }
        hosts.extend(self.extra_hosts.iter().cloned());
        hosts
    }
}

fn split_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(String::from)
        .collect()
}

/// The host part of an absolute http(s) URL, without port or path.
fn url_host(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next()?,
        None => authority.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
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
    fn defaults_are_local_and_closed() {
        let config = config(&[]).unwrap();
        assert_eq!(config.runtime, Runtime::Local);
        assert_eq!(config.addr.to_string(), "127.0.0.1:8787");
        assert_eq!(
            config.store,
            StoreChoice::Sqlite(PathBuf::from(".hearth/hearth.db"))
        );
        assert!(config.token_hashes.is_empty() && !config.allow_no_auth);
        assert_eq!(config.toolsets, vec!["why"]);
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
        assert_eq!(url_host("http://[::1]:8787/mcp").as_deref(), Some("::1"));
    }
}
