//! Reading the credentials secrets from AWS Secrets Manager.
//!
//! Under Lambda the credentials live in Secrets Manager secrets named by `HEARTH_SECRET_ARN`
//! (comma-separated), each a JSON object keyed by credential names (see `auth::credentials`).
//! A deployment splits them so that each function's role reads only what it uses; a name
//! held by two secrets is refused. They are read once per cold start and kept for the life
//! of the process. Errors describe what failed (the service's error code, or the shape of a
//! secret), never a secret's content.

use aws_sdk_secretsmanager::Client;
use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};

use crate::auth::credentials::{CredentialProblem, Credentials, SecretObject, secret_object};

/// Why the credentials secrets could not be used. Safe to log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("Secrets Manager refused the request: {code}")]
    Service { code: String },
    #[error("Secrets Manager could not be reached: {0}")]
    Unreachable(String),
    #[error("the secret has no string value")]
    NotAString,
    #[error("the secret is not a JSON object whose values are strings")]
    Format,
    #[error("{name} is held by two of the secrets; keep each credential in one")]
    Overlap { name: String },
}

/// A client for the standard AWS environment (`AWS_REGION`, credentials, and
/// `AWS_ENDPOINT_URL_SECRETS_MANAGER` / `AWS_ENDPOINT_URL` for an emulator).
pub async fn client_from_environment() -> Client {
    Client::new(crate::aws::sdk_config().await)
}

/// Reads every secret in `secret_ids` and parses them together as credentials. The reads run
/// at once (each is a round trip on the cold start); they are merged in the order given.
pub async fn read_credentials(
    client: &Client,
    secret_ids: &[String],
) -> Result<(Credentials, Vec<CredentialProblem>), SecretError> {
    let objects = futures_util::future::try_join_all(
        secret_ids
            .iter()
            .map(|secret_id| read_object(client, secret_id)),
    )
    .await?;
    let mut merged = SecretObject::new();
    for object in objects {
        for (name, value) in object {
            if merged.contains_key(&name) {
                return Err(SecretError::Overlap { name });
            }
            merged.insert(name, value);
        }
    }
    Ok(Credentials::from_secret_object(&merged))
}

async fn read_object(client: &Client, secret_id: &str) -> Result<SecretObject, SecretError> {
    let output = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|error| match &error {
            SdkError::ServiceError(service) => SecretError::Service {
                code: service.err().code().unwrap_or("unknown error").to_owned(),
            },
            SdkError::TimeoutError(_) => SecretError::Unreachable("timed out".into()),
            SdkError::DispatchFailure(_) => SecretError::Unreachable("connection failed".into()),
            _ => SecretError::Unreachable("unexpected response".into()),
        })?;
    let json = output.secret_string().ok_or(SecretError::NotAString)?;
    secret_object(json).map_err(|_| SecretError::Format)
}
