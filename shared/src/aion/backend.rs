//! Where `ask_aion` gets its answers: the real AionRealm backend over HTTP, or a built-in
//! mock with canned answers and no network (the default while `AION_BACKEND_URL` is unset).

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::chain::sha256_hex;
use crate::media::has_media_type;
use crate::secret::Secret;

/// How long the backend may take before the question is given up.
pub const BACKEND_TIMEOUT: Duration = Duration::from_secs(15);

/// The largest answer read from the backend.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The guide's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub text: String,
    #[serde(default)]
    pub meta: Value,
}

/// Why the backend gave no usable answer. For the log only: it never names the URL or key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendFailure {
    #[error("the backend is not configured: {0}")]
    NotConfigured(&'static str),
    #[error("the backend could not be reached")]
    Unreachable,
    #[error("the backend did not answer within {} s", BACKEND_TIMEOUT.as_secs())]
    TimedOut,
    #[error("the backend answered with status {0}")]
    Status(u16),
    #[error("the backend answered with a content type other than JSON")]
    NotJson,
    #[error("the backend's answer is not the expected {{text, meta}} object")]
    Malformed,
    #[error("the backend's answer is empty")]
    Empty,
    #[error("the backend's answer is larger than {MAX_ANSWER_BYTES} bytes")]
    TooLarge,
}

#[async_trait]
pub trait Guide: Send + Sync + 'static {
    async fn ask(&self, question: &str) -> Result<Answer, BackendFailure>;
}

/// Canned answers chosen by the question, for local use without a backend.
pub struct MockGuide;

const CANNED: &[&str] = &[
    "Take a slow breath; the next small step is usually enough for today.",
    "Notice what is already going well, and start from there.",
    "Rest is part of the work. Come back to this with fresh eyes tomorrow.",
];

#[async_trait]
impl Guide for MockGuide {
    async fn ask(&self, question: &str) -> Result<Answer, BackendFailure> {
        let pick =
            usize::from_str_radix(&sha256_hex(question)[..8], 16).unwrap_or(0) % CANNED.len();
        Ok(Answer {
            text: CANNED[pick].to_owned(),
            meta: json!({"source": "mock", "note": "canned answer; no backend is configured"}),
        })
    }
}

/// The AionRealm backend: `POST {url}` with a bearer key.
pub struct HttpGuide {
    client: reqwest::Client,
    url: String,
    api_key: Option<Secret>,
}

#[derive(Serialize)]
struct Question<'a> {
    question: &'a str,
    member_id: Option<&'a str>,
    session_id: Option<&'a str>,
    surface: &'static str,
}

impl HttpGuide {
    /// `timeout` is [`BACKEND_TIMEOUT`] in production; tests shorten it.
    pub fn new(url: String, api_key: Option<Secret>, timeout: Duration) -> Self {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client with only a timeout and no redirects");
        Self {
            client,
            url,
            api_key,
        }
    }
}

#[async_trait]
impl Guide for HttpGuide {
    async fn ask(&self, question: &str) -> Result<Answer, BackendFailure> {
        let key = self.api_key.as_ref().ok_or(BackendFailure::NotConfigured(
            "AION_BACKEND_API_KEY is missing",
        ))?;
        let body = Question {
            question,
            member_id: None,
            session_id: None,
            surface: "alexa_mcp",
        };
        let mut response = self
            .client
            .post(&self.url)
            .bearer_auth(key.expose())
            .json(&body)
            .send()
            .await
            .map_err(|error| {
                if error.is_timeout() {
                    BackendFailure::TimedOut
                } else {
                    BackendFailure::Unreachable
                }
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(BackendFailure::Status(status.as_u16()));
        }
        let is_json = has_media_type(response.headers(), "application/json");
        if !is_json {
            return Err(BackendFailure::NotJson);
        }
        // Read at most MAX_ANSWER_BYTES, chunk by chunk, whether or not a length was declared.
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|error| {
            if error.is_timeout() {
                BackendFailure::TimedOut
            } else {
                BackendFailure::Unreachable
            }
        })? {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(BackendFailure::TooLarge);
            }
            bytes.extend_from_slice(&chunk);
        }
        let answer: Answer =
            serde_json::from_slice(&bytes).map_err(|_| BackendFailure::Malformed)?;
        if answer.text.trim().is_empty() {
            return Err(BackendFailure::Empty);
        }
        Ok(answer)
    }
}
