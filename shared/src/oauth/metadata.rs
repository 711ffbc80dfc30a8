//! The two discovery documents: authorization-server metadata (RFC 8414), served by the OAuth
//! function, and protected-resource metadata (RFC 9728), served by the MCP function.

use serde_json::{Value, json};

use crate::auth::Scope;
use crate::config::PublicUrls;

fn scopes_supported() -> Vec<&'static str> {
    Scope::ALL.iter().map(|scope| scope.as_str()).collect()
}

/// `GET /.well-known/oauth-authorization-server`: client credentials for Tier 1, the
/// authorization code with PKCE S256 and rotating refresh tokens for account linking, and
/// RFC 7009 revocation. Hosts may register themselves (RFC 7591) or name themselves by a
/// Client ID Metadata Document's URL; either way they may be public clients (`none`: PKCE
/// is their proof). Codes carry `iss` in the redirect (RFC 9207).
pub fn authorization_server(urls: &PublicUrls) -> Value {
    json!({
        "issuer": urls.issuer(),
        "authorization_endpoint": urls.authorization_endpoint(),
        "token_endpoint": urls.token_endpoint(),
        "revocation_endpoint": urls.revocation_endpoint(),
        "registration_endpoint": urls.registration_endpoint(),
        "client_id_metadata_document_supported": true,
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "scopes_supported": scopes_supported(),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
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
