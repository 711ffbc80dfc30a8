//! Reading the credentials secret from AWS Secrets Manager.
//!
//! Under Lambda the four credentials live in one secret, a JSON object keyed by the credential
//! names (see `auth::credentials`), named by `HEARTH_SECRET_ARN`. It is read once per cold
//! start and kept for the life of the process. Errors describe what failed (the service's
//! error code, or the shape of the secret), never the secret's content.

use aws_sdk_secretsmanager::Client;
use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};

use crate::auth::credentials::{CredentialProblem, Credentials};

/// Why the credentials secret could not be used. Safe to log.
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
}

/// A client for the standard AWS environment (`AWS_REGION`, credentials, and
/// `AWS_ENDPOINT_URL_SECRETS_MANAGER` / `AWS_ENDPOINT_URL` for an emulator).
pub async fn client_from_environment() -> Client {
    Client::new(crate::aws::sdk_config().await)
}

/// Reads `secret_id` and parses it as credentials.
pub async fn read_credentials(
    client: &Client,
    secret_id: &str,
) -> Result<(Credentials, Vec<CredentialProblem>), SecretError> {
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
    Credentials::from_secret_json(json).map_err(|_| SecretError::Format)
}
