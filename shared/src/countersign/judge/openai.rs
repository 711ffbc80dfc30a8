//! The model judge on any OpenAI-compatible chat completions server: Ollama, llama.cpp's
//! server, vLLM or LM Studio on the household's own machine, or a hosted one.
//!
//! Two judges use it (`COUNTERSIGN_JUDGE`):
//! - `openai`: the model alone, for every case, so that a model can be measured by itself;
//! - `rules+openai`: the rules decide what they are sure of (a mismatch they can name, a listing
//!   that instructs, a plain match), and the model is asked only when the rules answer
//!   `unclear`. A model's `match` therefore never overrides a rules `mismatch`.
//!
//! The request is the Bedrock judge's prompt and message (`super::model`): the person's words
//! quoted, and the listing text only inside the quoted, labelled data section. The answer is
//! asked for as structured output (a JSON schema through `response_format`); a server that
//! refuses the schema (400) is asked again without it, once per process, and its answer read by
//! the same strict parse. Anything else (an error status, a refusal, a filtered or oversized
//! answer, an answer outside the closed verdicts and reason codes, no answer within the time
//! limit) is `unclear`, never `match`. Neither the model's text nor the server's error body is
//! logged: only Hearth's own words for what failed. The API key, when there is one, is sent
//! only over https or to a loopback address.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::model::{MAX_ANSWER_TOKENS, PROMPT, answer_schema, parse_answer, unclear, user_message};
use super::{Judge, Judgement, Proposal, Verdict, rules};
use crate::secret::Secret;

/// The time limit by default: the answer must fit in a voice turn.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1500);
/// The largest answer read from the server.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Where the model is, and how to ask it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The API's base URL, such as `http://127.0.0.1:11434/v1` (`COUNTERSIGN_JUDGE_URL`).
    pub base_url: String,
    /// The model's name on that server (`COUNTERSIGN_JUDGE_MODEL`).
    pub model: String,
    /// `COUNTERSIGN_JUDGE_API_KEY`, sent as a bearer token.
    pub key: Option<Secret>,
    /// `COUNTERSIGN_JUDGE_TIMEOUT_MS`.
    pub timeout: Duration,
}

impl Endpoint {
    /// Why the key, when there is one, may not be sent to `base_url`.
    pub fn key_refusal(&self) -> Option<&'static str> {
        self.key.as_ref()?;
        key_refusal(&self.base_url)
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base_url.trim_end_matches('/'))
    }
}

/// Why an API key may not be sent to `base_url`: only https or a loopback address carry it.
pub fn key_refusal(base_url: &str) -> Option<&'static str> {
    let url = url::Url::parse(base_url).ok()?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    (url.scheme() != "https" && !loopback)
        .then_some("the API key is sent only over https or to a loopback address")
}

pub struct OpenAiJudge {
    endpoint: Endpoint,
    /// `rules+openai`: the rules first, the model only for what they leave unclear.
    with_rules: bool,
    http: reqwest::Client,
    /// The server refused `response_format` once: ask without it from now on.
    schema_refused: AtomicBool,
}

impl OpenAiJudge {
    pub fn new(endpoint: Endpoint, with_rules: bool) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(endpoint.timeout)
            .user_agent(format!(
                "Hearth/{} (intent judge)",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .expect("a TLS backend is compiled in");
        Self {
            endpoint,
            with_rules,
            http,
            schema_refused: AtomicBool::new(false),
        }
    }

    pub fn model(&self) -> &str {
        &self.endpoint.model
    }

    fn request(&self, builder: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, String> {
        if let Some(refusal) = self.endpoint.key_refusal() {
            return Err(refusal.to_owned());
        }
        Ok(match &self.endpoint.key {
            Some(key) => builder.bearer_auth(key.expose()),
            None => builder,
        })
    }

    /// What the server's `GET /models` answers, for an evaluation report to record what ran.
    pub async fn models(&self) -> Result<Value, String> {
        let response = self
            .request(self.http.get(self.endpoint.url("models")))?
            .send()
            .await
            .map_err(|error| failure(&error))?;
        if !response.status().is_success() {
            return Err(format!(
                "the server answered {}",
                response.status().as_u16()
            ));
        }
        let body = read_capped(response).await?;
        serde_json::from_slice(&body).map_err(|_| "the models list is not JSON".to_owned())
    }

    async fn ask(&self, words: &[String], proposal: &Proposal) -> Result<Judgement, String> {
        let mut body = json!({
            "model": self.endpoint.model,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": user_message(words, proposal)},
            ],
            "temperature": 0,
            "max_tokens": MAX_ANSWER_TOKENS,
            "stream": false,
        });
        if !self.schema_refused.load(Ordering::Relaxed) {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "intent_verdict", "strict": true, "schema": answer_schema()},
            });
        }
        let mut response = self.completion(&body).await?;
        if response.status() == reqwest::StatusCode::BAD_REQUEST
            && body.get("response_format").is_some()
        {
            // A server without structured output: ask again, and read the answer strictly.
            self.schema_refused.store(true, Ordering::Relaxed);
            tracing::info!("intent judge: the server refused response_format; asking without it");
            body.as_object_mut()
                .expect("the body is an object")
                .remove("response_format");
            response = self.completion(&body).await?;
        }
        if !response.status().is_success() {
            return Err(format!(
                "the server answered {}",
                response.status().as_u16()
            ));
        }
        let answer: Value = serde_json::from_slice(&read_capped(response).await?)
            .map_err(|_| "the server's answer is not JSON".to_owned())?;
        let choice = answer
            .get("choices")
            .and_then(|choices| choices.get(0))
            .ok_or("the server's answer has no choice")?;
        if choice.get("finish_reason").and_then(Value::as_str) == Some("content_filter") {
            return Err("the model's answer was filtered".into());
        }
        let message = choice
            .get("message")
            .ok_or("the server's answer has no message")?;
        if message
            .get("refusal")
            .is_some_and(|refusal| !refusal.is_null() && refusal != "")
        {
            return Err("the model refused".into());
        }
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .ok_or("the model's answer has no text")?;
        parse_answer(text)
    }

    async fn completion(&self, body: &Value) -> Result<reqwest::Response, String> {
        self.request(self.http.post(self.endpoint.url("chat/completions")))?
            .json(body)
            .send()
            .await
            .map_err(|error| failure(&error))
    }
}

#[async_trait]
impl Judge for OpenAiJudge {
    fn name(&self) -> &'static str {
        if self.with_rules {
            "rules+openai"
        } else {
            "openai"
        }
    }

    async fn judge(&self, words: &[String], proposal: &Proposal) -> Judgement {
        if self.with_rules {
            let ruled = rules::judge(words, proposal);
            if ruled.verdict != Verdict::Unclear {
                return ruled;
            }
        }
        let timeout = self.endpoint.timeout;
        match tokio::time::timeout(timeout, self.ask(words, proposal)).await {
            Ok(Ok(judgement)) => judgement,
            Ok(Err(reason)) => unclear(reason),
            Err(_) => unclear(format!("no answer within {} ms", timeout.as_millis())),
        }
    }
}

/// The body, refused as soon as it passes [`MAX_ANSWER_BYTES`].
async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| failure(&error))? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(format!(
                "the answer is larger than {MAX_ANSWER_BYTES} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Hearth's words for a request that failed, never the error's own text (which may quote the
/// URL or what the server said).
fn failure(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "no answer in time".into()
    } else if error.is_connect() {
        "the server could not be reached".into()
    } else {
        "the request failed".into()
    }
}
