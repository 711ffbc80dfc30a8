//! The two discovery documents: authorization-server metadata (RFC 8414), served by the OAuth
//! function, and protected-resource metadata (RFC 9728), served by the MCP function.

use serde_json::{Value, json};

use crate::auth::Scope;
use crate::config::PublicUrls;

fn scopes_supported() -> Vec<&'static str> {
    Scope::ALL.iter().map(|scope| scope.as_str()).collect()
}

/// `GET /.well-known/oauth-authorization-server`.
///
/// Hearth implements only the client-credentials grant. `response_types_supported` (required by
/// RFC 8414) and `code_challenge_methods_supported` are still listed because Alexa+ refuses
/// to deploy against an authorization server that does not advertise S256; no authorization
/// endpoint is offered, so no code is ever issued.
pub fn authorization_server(urls: &PublicUrls) -> Value {
    json!({
        "issuer": urls.issuer(),
        "token_endpoint": urls.token_endpoint(),
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        "scopes_supported": scopes_supported(),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    })
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub fn protected_resource(urls: &PublicUrls) -> Value {
    json!({
        "resource": urls.resource(),
        "authorization_servers": [urls.issuer()],
        "scopes_supported": scopes_supported(),
        "bearer_methods_supported": ["header"],
        "resource_name": "Hearth",
    })
}
