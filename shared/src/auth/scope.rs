//! OAuth scopes and what each MCP method needs.
//!
//! `mcp:service` covers everything, `mcp:tools` covers `tools/*` and `mcp:resources` covers
//! `resources/*`. `initialize`, `ping`, notifications and responses need only a valid token.
//! Any other method (prompts, completion, logging) needs `mcp:service`.
//!
//! `offline_access` (OpenID Connect's name, which claude.ai and ChatGPT look for before they
//! will use a refresh token) opens nothing either: every code exchange already issues a refresh
//! token. It is accepted and granted wherever it is asked for, shown nowhere as a permission,
//! and dropped from client credentials, which have no refresh token.
//!
//! `countersign:read` opens no method: it lets a household token read its own household's
//! purchase records (activity, the ledger's check, receipts, the rules) without a device's
//! signed attestation. Account linking asks for it by default, and the consent page says
//! what it reveals; `hearth admin token` grants it.

use std::fmt;

/// One scope a token can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Service,
    Tools,
    Resources,
    CountersignRead,
    OfflineAccess,
}

impl Scope {
    pub const ALL: [Scope; 5] = [
        Scope::Service,
        Scope::Tools,
        Scope::Resources,
        Scope::CountersignRead,
        Scope::OfflineAccess,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Service => "mcp:service",
            Scope::Tools => "mcp:tools",
            Scope::Resources => "mcp:resources",
            Scope::CountersignRead => "countersign:read",
            Scope::OfflineAccess => "offline_access",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Scope::Service => 1,
            Scope::Tools => 2,
            Scope::Resources => 4,
            Scope::CountersignRead => 8,
            Scope::OfflineAccess => 16,
        }
    }
}

/// What an invalid scope's error says may be asked for.
pub const SCOPES_ACCEPTED: &str =
    "scope must be mcp:service, mcp:tools, mcp:resources, countersign:read and/or offline_access";

/// The scopes granted to one token.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Scopes(u8);

/// A scope string names a scope Hearth does not know, or none at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown or empty scope")]
pub struct UnknownScope;

impl Scopes {
    /// What a token gets when the request names no scope.
    pub const DEFAULT: Scopes = Scopes(1);
    /// What a household gets when linking names no scope, and `hearth admin token` grants:
    /// everything, and its own purchase records without a device.
    pub const HOUSEHOLD_DEFAULT: Scopes = Scopes(1 | 8);

    /// Parses a space-separated scope list (RFC 6749 §3.3). Every entry must be known.
    pub fn parse(list: &str) -> Result<Self, UnknownScope> {
        let mut bits = 0;
        for word in list.split(' ').filter(|word| !word.is_empty()) {
            let scope = Scope::ALL
                .into_iter()
                .find(|scope| scope.as_str() == word)
                .ok_or(UnknownScope)?;
            bits |= scope.bit();
        }
        if bits == 0 {
            return Err(UnknownScope);
        }
        Ok(Scopes(bits))
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// The same scopes without `scope`.
    pub fn without(self, scope: Scope) -> Scopes {
        Scopes(self.0 & !scope.bit())
    }

    /// `default` in place of a list that names nothing but `offline_access` (which opens
    /// nothing), keeping `offline_access`; any other list as it is.
    pub fn or_default(self, default: Scopes) -> Scopes {
        let offline = Scope::OfflineAccess.bit();
        if self.0 & !offline == 0 {
            Scopes(default.0 | (self.0 & offline))
        } else {
            self
        }
    }

    /// Whether these scopes allow `method`; on refusal, the scope the method needs.
    pub fn allow(self, method: Option<&str>) -> Result<(), Scope> {
        let needed = match needed_scope(method) {
            None => return Ok(()),
            Some(needed) => needed,
        };
        if self.contains(Scope::Service) || self.contains(needed) {
            Ok(())
        } else {
            Err(needed)
        }
    }
}

/// The scope `method` needs beyond a valid token, if any.
fn needed_scope(method: Option<&str>) -> Option<Scope> {
    let method = method?;
    if matches!(method, "initialize" | "server/discover" | "ping")
        || method.starts_with("notifications/")
    {
        None
    } else if method.starts_with("tools/") {
        Some(Scope::Tools)
    } else if method.starts_with("resources/") {
        Some(Scope::Resources)
    } else {
        Some(Scope::Service)
    }
}

/// Space-separated, in a fixed order, as the `scope` claim and token response carry it.
impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for scope in Scope::ALL.into_iter().filter(|scope| self.contains(*scope)) {
            if !first {
                f.write_str(" ")?;
            }
            f.write_str(scope.as_str())?;
            first = false;
        }
        Ok(())
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scopes({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_access_alone_asks_for_the_default_and_is_kept() {
        let offline = Scopes::parse("offline_access").unwrap();
        assert_eq!(
            offline.or_default(Scopes::HOUSEHOLD_DEFAULT).to_string(),
            "mcp:service countersign:read offline_access"
        );
        let named = Scopes::parse("offline_access mcp:tools").unwrap();
        assert_eq!(
            named.or_default(Scopes::DEFAULT).to_string(),
            "mcp:tools offline_access"
        );
        assert_eq!(named.without(Scope::OfflineAccess).to_string(), "mcp:tools");
        assert_eq!(offline.allow(Some("tools/call")), Err(Scope::Tools));
    }

    #[test]
    fn scope_lists_parse_strictly_and_print_in_order() {
        assert_eq!(
            Scopes::parse("mcp:resources mcp:tools")
                .unwrap()
                .to_string(),
            "mcp:tools mcp:resources"
        );
        assert_eq!(Scopes::parse("mcp:service").unwrap(), Scopes::DEFAULT);
        for bad in [
            "",
            " ",
            "mcp:admin",
            "mcp:tools mcp:everything",
            "MCP:TOOLS",
        ] {
            assert_eq!(Scopes::parse(bad), Err(UnknownScope), "{bad:?}");
        }
    }

    #[test]
    fn each_method_needs_its_scope() {
        let tools = Scopes::parse("mcp:tools").unwrap();
        let resources = Scopes::parse("mcp:resources").unwrap();
        let service = Scopes::DEFAULT;
        let table: [(&str, Option<Scope>); 8] = [
            ("initialize", None),
            ("ping", None),
            ("notifications/initialized", None),
            ("tools/list", Some(Scope::Tools)),
            ("tools/call", Some(Scope::Tools)),
            ("resources/read", Some(Scope::Resources)),
            ("prompts/list", Some(Scope::Service)),
            ("logging/setLevel", Some(Scope::Service)),
        ];
        for (method, needed) in table {
            assert_eq!(service.allow(Some(method)), Ok(()), "{method}");
            let expect_tools = match needed {
                None | Some(Scope::Tools) => Ok(()),
                Some(other) => Err(other),
            };
            assert_eq!(tools.allow(Some(method)), expect_tools, "{method}");
            let expect_resources = match needed {
                None | Some(Scope::Resources) => Ok(()),
                Some(other) => Err(other),
            };
            assert_eq!(resources.allow(Some(method)), expect_resources, "{method}");
        }
        assert_eq!(
            tools.allow(None),
            Ok(()),
            "a JSON-RPC response has no method"
        );
    }
}
