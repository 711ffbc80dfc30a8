//! The model judge on Amazon Bedrock (Converse API), after the rules.
//!
//! The rules judge runs first and its mismatch is final. Otherwise the model sees the person's
//! words (quoted) and the proposed order, with the listing text quoted and labelled as
//! untrusted data, under the system prompt in `prompt.txt`, and must answer one strict JSON
//! verdict. An optional Bedrock guardrail screens the listing text first. A model error, a
//! timeout, a refusal, a guardrail intervention or an answer that is not the expected JSON
//! all become `unclear`: the judge never lets an order through because it could not decide.

use std::time::Duration;

use super::model::{MAX_ANSWER_TOKENS, PROMPT, parse_answer, unclear, user_message};
use super::{Judge, Judgement, Proposal, Verdict, rules};
use async_trait::async_trait;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, GuardrailAction, GuardrailContentBlock, GuardrailContentSource,
    GuardrailTextBlock, InferenceConfiguration, Message, StopReason, SystemContentBlock,
};

pub use super::DEFAULT_MODEL;
pub use super::model::prompt_sha256;

/// How long the judge may take, guardrail included.
pub const JUDGE_TIMEOUT: Duration = Duration::from_secs(10);

/// A Bedrock guardrail to screen listing text with.
#[derive(Debug, Clone)]
pub struct Guardrail {
    pub id: String,
    pub version: String,
}

/// See [`BedrockJudge::lazy`].
pub struct LazyBedrockJudge {
    model: String,
    guardrail: Option<Guardrail>,
    judge: tokio::sync::OnceCell<BedrockJudge>,
}

#[async_trait]
impl Judge for LazyBedrockJudge {
    fn name(&self) -> &'static str {
        "bedrock"
    }

    async fn judge(&self, words: &[String], proposal: &Proposal) -> Judgement {
        self.judge
            .get_or_init(|| {
                BedrockJudge::from_environment(self.model.clone(), self.guardrail.clone())
            })
            .await
            .judge(words, proposal)
            .await
    }
}

pub struct BedrockJudge {
    client: Client,
    model: String,
    guardrail: Option<Guardrail>,
    timeout: Duration,
}

impl BedrockJudge {
    /// `timeout` is [`JUDGE_TIMEOUT`] in production; tests shorten it.
    pub fn new(
        client: Client,
        model: String,
        guardrail: Option<Guardrail>,
        timeout: Duration,
    ) -> Self {
        Self {
            client,
            model,
            guardrail,
            timeout,
        }
    }

    /// A judge whose client comes from the process's AWS configuration.
    pub async fn from_environment(model: String, guardrail: Option<Guardrail>) -> Self {
        let client = Client::new(crate::aws::sdk_config().await);
        Self::new(client, model, guardrail, JUDGE_TIMEOUT)
    }

    /// A judge whose client is made on first use, so a process that never judges (the OAuth
    /// and speech functions, or an MCP call that buys nothing) never loads the AWS settings.
    pub fn lazy(model: String, guardrail: Option<Guardrail>) -> LazyBedrockJudge {
        LazyBedrockJudge {
            model,
            guardrail,
            judge: tokio::sync::OnceCell::new(),
        }
    }

    async fn screened(&self, text: &str) -> Result<(), String> {
        let Some(guardrail) = &self.guardrail else {
            return Ok(());
        };
        if text.trim().is_empty() {
            return Ok(());
        }
        let block = GuardrailContentBlock::Text(
            GuardrailTextBlock::builder()
                .text(text)
                .build()
                .map_err(|_| "guardrail request could not be built".to_owned())?,
        );
        let output = self
            .client
            .apply_guardrail()
            .guardrail_identifier(&guardrail.id)
            .guardrail_version(&guardrail.version)
            .source(GuardrailContentSource::Input)
            .content(block)
            .send()
            .await
            .map_err(|error| format!("guardrail unavailable ({})", describe(&error)))?;
        if output.action == GuardrailAction::GuardrailIntervened {
            return Err("the guardrail intervened on the listing text".into());
        }
        Ok(())
    }

    async fn ask_model(&self, words: &[String], proposal: &Proposal) -> Result<Judgement, String> {
        let user = Message::builder()
            .role(ConversationRole::User)
            .content(ContentBlock::Text(user_message(words, proposal)))
            .build()
            .map_err(|_| "judge request could not be built".to_owned())?;
        let output = self
            .client
            .converse()
            .model_id(&self.model)
            .system(SystemContentBlock::Text(PROMPT.to_owned()))
            .messages(user)
            .inference_config(
                InferenceConfiguration::builder()
                    .temperature(0.0)
                    .max_tokens(MAX_ANSWER_TOKENS as i32)
                    .build(),
            )
            .send()
            .await
            .map_err(|error| format!("model unavailable ({})", describe(&error)))?;
        if matches!(
            output.stop_reason,
            StopReason::ContentFiltered | StopReason::GuardrailIntervened
        ) {
            return Err("the model's answer was filtered".into());
        }
        let text: String = output
            .output
            .and_then(|output| output.as_message().ok().cloned())
            .map(|message| {
                message
                    .content
                    .iter()
                    .filter_map(|block| block.as_text().ok())
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("")
            })
            .unwrap_or_default();
        parse_answer(&text)
    }
}

#[async_trait]
impl Judge for BedrockJudge {
    fn name(&self) -> &'static str {
        "bedrock"
    }

    async fn judge(&self, words: &[String], proposal: &Proposal) -> Judgement {
        let ruled = rules::judge(words, proposal);
        if ruled.verdict == Verdict::Mismatch {
            return ruled;
        }
        let asked = async {
            self.screened(&proposal.text).await?;
            self.ask_model(words, proposal).await
        };
        match tokio::time::timeout(self.timeout, asked).await {
            Ok(Ok(judgement)) => judgement,
            Ok(Err(reason)) => unclear(reason),
            Err(_) => unclear(format!("no answer within {} s", self.timeout.as_secs_f32())),
        }
    }
}

/// The SDK error's code or kind, never its message (which could echo the request).
fn describe<E: aws_sdk_bedrockruntime::error::ProvideErrorMetadata, R>(
    error: &aws_sdk_bedrockruntime::error::SdkError<E, R>,
) -> String {
    use aws_sdk_bedrockruntime::error::SdkError;
    match error {
        SdkError::ServiceError(service) => {
            service.err().code().unwrap_or("service error").to_owned()
        }
        SdkError::TimeoutError(_) => "timed out".into(),
        SdkError::DispatchFailure(_) => "connection failed".into(),
        _ => "request failed".into(),
    }
}
