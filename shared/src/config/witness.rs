//! The settings of `hearth witness`, which runs apart from Hearth (often on another machine)
//! and reads only these.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::ConfigError;

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
