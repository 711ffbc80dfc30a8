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
/// RFC 7009 revocation. Hosts may register themselves (RFC 7591) or, with `documents`
/// (`HEARTH_CIMD=on`), name themselves by a Client ID Metadata Document's URL; they may be
/// public clients (`none`: PKCE is their proof) or sign their token requests (`private_key_jwt`,
/// a document's client only). Codes carry `iss` in the redirect (RFC 9207).
pub fn authorization_server(urls: &PublicUrls, documents: bool) -> Value {
    let methods = [
        "client_secret_basic",
        "client_secret_post",
        "none",
        "private_key_jwt",
    ];
    let mut metadata = json!({
        "issuer": urls.issuer(),
        "authorization_endpoint": urls.authorization_endpoint(),
        "token_endpoint": urls.token_endpoint(),
        "revocation_endpoint": urls.revocation_endpoint(),
        "registration_endpoint": urls.registration_endpoint(),
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "token_endpoint_auth_methods_supported": methods,
        "token_endpoint_auth_signing_alg_values_supported": crate::clients::assertion::ALGORITHMS,
        "revocation_endpoint_auth_methods_supported": methods,
        "revocation_endpoint_auth_signing_alg_values_supported": crate::clients::assertion::ALGORITHMS,
        "scopes_supported": scopes_supported(),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
    });
    if documents {
        metadata["client_id_metadata_document_supported"] = Value::Bool(true);
    }
    metadata
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
