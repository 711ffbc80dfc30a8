//! HS256 access tokens, issued by the OAuth function and checked on every protected endpoint.
//!
//! The algorithm is pinned: a token whose header names any other algorithm (or `none`) is
//! refused before its signature is looked at. The issuer, the audience (the MCP URL), the
//! expiry (with a small leeway for clock skew) and the signature are all checked by
//! `jsonwebtoken`.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::credentials::MIN_JWT_SECRET_BYTES;
use crate::secret::Secret;

fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}
use super::scope::Scopes;

/// How long an access token lives, in seconds.
pub const TOKEN_LIFETIME_SECS: u64 = 3600;

/// Clock skew tolerated when checking `exp`, in seconds.
pub const LEEWAY_SECS: u64 = 30;

/// Seconds since the Unix epoch by the system clock, which `jsonwebtoken` also checks `exp`
/// against; tokens are issued on the same clock they are verified on.
pub fn now_secs() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// The claims of a Hearth access token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub aud: String,
    pub sub: String,
    pub scope: String,
    pub iat: u64,
    pub exp: u64,
    pub jti: String,
    /// A household token's revocation generation; absent from the tokens of a credential.
    /// Present, it makes `sub` a household id.
    #[serde(rename = "gen", default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// For a household token issued through account linking: the refresh-token family it came
    /// from, so revoking the family revokes it too.
    #[serde(rename = "fam", default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
}

/// What a verified token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub subject: String,
    pub scopes: Scopes,
    /// `Some` for a household token: the generation it was issued under.
    pub generation: Option<u64>,
    /// `Some` for a token issued through account linking: its refresh-token family.
    pub family: Option<String>,
}

/// A freshly issued token and what the token response says about it.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub access_token: String,
    pub expires_in: u64,
    pub scope: Scopes,
}

/// Why a token was refused. Safe to return to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    #[error("token expired")]
    Expired,
    #[error("invalid token")]
    Invalid,
}

/// Signs and verifies access tokens for one issuer and one audience.
pub struct JwtKeys {
    issuer: String,
    audience: String,
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    /// Authenticates refresh tokens (`linking`): derived from the same secret under its own
    /// label, so no refresh-token MAC is ever a valid JWT signature or the other way round.
    refresh_key: [u8; 32],
}

/// The signing key is shorter than [`MIN_JWT_SECRET_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the signing key is shorter than {MIN_JWT_SECRET_BYTES} bytes")]
pub struct WeakKey;

impl JwtKeys {
    /// Keys for `issuer` and `audience`. A key shorter than 32 bytes signs nothing.
    pub fn new(secret: &Secret, issuer: &str, audience: &str) -> Result<Self, WeakKey> {
        let key = secret.expose().as_bytes();
        if key.len() < MIN_JWT_SECRET_BYTES {
            return Err(WeakKey);
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECS;
        // Both constructors fail only for an empty key, excluded above.
        Ok(Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            encoding: EncodingKey::from_secret(key).map_err(|_| WeakKey)?,
            decoding: DecodingKey::from_secret(key).map_err(|_| WeakKey)?,
            validation,
            refresh_key: hmac_sha256(key, b"hearth refresh token key"),
        })
    }

    /// The MAC that makes a refresh token's `message` verifiable: HMAC-SHA256 under the
    /// refresh key.
    pub fn refresh_mac(&self, message: &str) -> [u8; 32] {
        hmac_sha256(&self.refresh_key, message.as_bytes())
    }

    /// Issues a token for `subject` with `scopes`, valid for [`TOKEN_LIFETIME_SECS`] from
    /// `now_secs`.
    pub fn issue(&self, subject: &str, scopes: Scopes, now_secs: u64) -> IssuedToken {
        self.sign(subject, None, None, scopes, TOKEN_LIFETIME_SECS, now_secs)
    }

    /// Issues a household token: `sub` is the household id and `gen` its current revocation
    /// generation. It lives `lifetime_secs`.
    pub fn issue_household(
        &self,
        household_id: &str,
        generation: u64,
        scopes: Scopes,
        lifetime_secs: u64,
        now_secs: u64,
    ) -> IssuedToken {
        self.sign(
            household_id,
            Some(generation),
            None,
            scopes,
            lifetime_secs,
            now_secs,
        )
    }

    /// Issues a household token through account linking: like [`JwtKeys::issue_household`],
    /// naming the refresh-token `family` it belongs to, for [`TOKEN_LIFETIME_SECS`].
    pub fn issue_linked(
        &self,
        household_id: &str,
        generation: u64,
        family: &str,
        scopes: Scopes,
        now_secs: u64,
    ) -> IssuedToken {
        self.sign(
            household_id,
            Some(generation),
            Some(family),
            scopes,
            TOKEN_LIFETIME_SECS,
            now_secs,
        )
    }

    fn sign(
        &self,
        subject: &str,
        generation: Option<u64>,
        family: Option<&str>,
        scopes: Scopes,
        lifetime_secs: u64,
        now_secs: u64,
    ) -> IssuedToken {
        let jti: [u8; 16] = rand::rng().random();
        let claims = Claims {
            iss: self.issuer.clone(),
            aud: self.audience.clone(),
            sub: subject.to_owned(),
            scope: scopes.to_string(),
            iat: now_secs,
            exp: now_secs + lifetime_secs,
            jti: hex::encode(jti),
            generation,
            family: family.map(str::to_owned),
        };
        let access_token =
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
                // HS256 over serialisable claims cannot fail; a failure here is a broken build.
                .expect("HS256 signing of plain claims");
        IssuedToken {
            access_token,
            expires_in: lifetime_secs,
            scope: scopes,
        }
    }

    /// Checks a token and returns what it says.
    pub fn verify(&self, token: &str) -> Result<VerifiedToken, TokenRejection> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|error| match error.kind() {
                ErrorKind::ExpiredSignature => TokenRejection::Expired,
                _ => TokenRejection::Invalid,
            })?;
        let scopes = Scopes::parse(&data.claims.scope).map_err(|_| TokenRejection::Invalid)?;
        Ok(VerifiedToken {
            subject: data.claims.sub,
            scopes,
            generation: data.claims.generation,
            family: data.claims.family,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    const SECRET: &str = "an-hs256-key-of-at-least-32-bytes!!";
    const ISSUER: &str = "https://hearth.example";
    const AUDIENCE: &str = "https://hearth.example/mcp";

    fn keys() -> JwtKeys {
        JwtKeys::new(&Secret::new(SECRET), ISSUER, AUDIENCE).unwrap()
    }

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    #[test]
    fn an_issued_token_verifies_with_its_subject_and_scopes() {
        let scopes = Scopes::parse("mcp:tools").unwrap();
        let issued = keys().issue("alexa", scopes, now());
        assert_eq!(issued.expires_in, 3600);
        assert_eq!(
            keys().verify(&issued.access_token),
            Ok(VerifiedToken {
                subject: "alexa".into(),
                scopes,
                generation: None,
                family: None,
            })
        );
        let payload = issued.access_token.split('.').nth(1).unwrap();
        let claims: Claims =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert_eq!(
            (claims.iss.as_str(), claims.aud.as_str()),
            (ISSUER, AUDIENCE)
        );
        assert_eq!(claims.exp - claims.iat, 3600);
        assert_eq!(claims.jti.len(), 32);
        assert_eq!(
            claims.generation, None,
            "a credential's token has no generation"
        );
    }

    #[test]
    fn a_household_token_carries_its_generation_and_lifetime() {
        let issued = keys().issue_household("hh-1", 7, Scopes::DEFAULT, 90 * 86_400, now());
        assert_eq!(issued.expires_in, 90 * 86_400);
        let verified = keys().verify(&issued.access_token).unwrap();
        assert_eq!(verified.subject, "hh-1");
        assert_eq!(verified.generation, Some(7));
        assert_eq!(verified.family, None);
        let linked = keys().issue_linked("hh-1", 7, "f00d", Scopes::DEFAULT, now());
        assert_eq!(linked.expires_in, TOKEN_LIFETIME_SECS);
        let verified = keys().verify(&linked.access_token).unwrap();
        assert_eq!(verified.family.as_deref(), Some("f00d"));
    }

    #[test]
    fn expiry_allows_the_leeway_and_not_a_second_more() {
        let within = now() - TOKEN_LIFETIME_SECS - LEEWAY_SECS + 5;
        let token = keys().issue("alexa", Scopes::DEFAULT, within).access_token;
        assert!(keys().verify(&token).is_ok());
        let past = now() - TOKEN_LIFETIME_SECS - LEEWAY_SECS - 5;
        let token = keys().issue("alexa", Scopes::DEFAULT, past).access_token;
        assert_eq!(keys().verify(&token), Err(TokenRejection::Expired));
    }

    #[test]
    fn a_key_of_31_bytes_is_refused_and_32_accepted() {
        let key = "k".repeat(32);
        assert!(JwtKeys::new(&Secret::new(key.clone()), ISSUER, AUDIENCE).is_ok());
        assert_eq!(
            JwtKeys::new(&Secret::new(&key[1..]), ISSUER, AUDIENCE).err(),
            Some(WeakKey)
        );
    }

    #[test]
    fn other_issuers_audiences_and_keys_are_refused() {
        let token = keys().issue("alexa", Scopes::DEFAULT, now()).access_token;
        let elsewhere =
            JwtKeys::new(&Secret::new(SECRET), ISSUER, "https://other.example/mcp").unwrap();
        assert_eq!(elsewhere.verify(&token), Err(TokenRejection::Invalid));
        let other_issuer =
            JwtKeys::new(&Secret::new(SECRET), "https://other.example", AUDIENCE).unwrap();
        assert_eq!(other_issuer.verify(&token), Err(TokenRejection::Invalid));
        let other_key = JwtKeys::new(
            &Secret::new("another-hs256-key-of-at-least-32-bytes"),
            ISSUER,
            AUDIENCE,
        )
        .unwrap();
        assert_eq!(other_key.verify(&token), Err(TokenRejection::Invalid));
    }
}
