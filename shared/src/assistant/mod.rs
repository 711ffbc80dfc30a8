//! `hearth assistant`: a model-driven household assistant that plays the device as well, so
//! the whole loop can be watched, including a model that goes wrong and Countersign stopping
//! it.
//!
//! One turn: the device signs who spoke and their words ([`device`]); the assistant opens an
//! MCP session with Hearth as any host would ([`hearth`]), loads Hearth's skills (served as
//! prompts) as its system prompt and Hearth's tools as the model's tools, and runs a Bedrock
//! Converse tool-use loop ([`converse`]) until the model answers. The device then speaks
//! Countersign's own `say` texts, not the model's paraphrase of them.
//!
//! Bounded: at most [`MAX_TOOL_ROUNDS`] rounds of tool calls, each model call within
//! [`MODEL_CALL_TIMEOUT`], the whole turn within [`TURN_TIMEOUT`]; every failure is one
//! sentence.

pub mod converse;
pub mod device;
pub mod hearth;

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::secret::Secret;
use converse::{Model, ModelTurn};
use device::{DeviceKey, Heard, QuestionChange};
use hearth::Session;

/// Most rounds of tool calls in one turn before the assistant gives up.
pub const MAX_TOOL_ROUNDS: usize = 8;
/// Longest wait for one model call.
pub const MODEL_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest turn, from the device hearing the words to the reply.
pub const TURN_TIMEOUT: Duration = Duration::from_secs(90);

/// The model `COUNTERSIGN_ASSISTANT_MODEL` names, on Bedrock with the process's AWS
/// configuration (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME` points it at a stand-in).
pub async fn bedrock_model(config: &Config) -> Model {
    let sdk = crate::aws::sdk_config().await;
    Model::new(
        aws_sdk_bedrockruntime::Client::new(sdk),
        config.assistant_model.clone(),
        MODEL_CALL_TIMEOUT,
    )
}

/// Where Hearth is and how to reach it as this device.
pub struct Connection {
    /// Hearth's `/mcp` URL.
    pub url: String,
    pub token: Secret,
    pub key: DeviceKey,
}

/// One tool call the model made, as `--json` reports it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
    pub is_error: bool,
}

/// What one turn produced.
#[derive(Debug, Clone, Serialize)]
pub struct TurnOutcome {
    /// The model's answer.
    pub reply: String,
    /// What the device reads aloud word for word: every `say` the turn's tool results
    /// carried, in order, or null when none did (the device then speaks the reply).
    pub say: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// What the turn did to the question the device holds for the speaker.
    #[serde(skip)]
    pub question: QuestionChange,
}

/// The assistant: one model, one Hearth.
pub struct Assistant {
    model: Model,
    connection: Connection,
    max_rounds: usize,
    turn_timeout: Duration,
}

impl Assistant {
    pub fn new(model: Model, connection: Connection) -> Self {
        Self {
            model,
            connection,
            max_rounds: MAX_TOOL_ROUNDS,
            turn_timeout: TURN_TIMEOUT,
        }
    }

    /// The same assistant with other bounds (tests shorten them).
    pub fn with_bounds(mut self, max_rounds: usize, turn_timeout: Duration) -> Self {
        self.max_rounds = max_rounds;
        self.turn_timeout = turn_timeout;
        self
    }

    /// Runs one turn for what the device heard. `now` is Unix seconds, for the attestation.
    /// `household` is the household the caller's token does not name by itself (judge and
    /// client tokens), for the tools that take `household_id`.
    pub async fn turn(
        &self,
        heard: &Heard,
        household: Option<&str>,
        now: i64,
    ) -> Result<TurnOutcome, String> {
        match tokio::time::timeout(self.turn_timeout, self.run(heard, household, now)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!(
                "the assistant did not finish the turn within {} s",
                self.turn_timeout.as_secs_f64()
            )),
        }
    }

    async fn run(
        &self,
        heard: &Heard,
        household: Option<&str>,
        now: i64,
    ) -> Result<TurnOutcome, String> {
        let headers = heard.sign(&self.connection.key, now)?;
        let session = Session::open(&self.connection.url, &self.connection.token, headers).await?;
        let outcome = self.converse(&session, heard, household).await;
        session.close().await;
        outcome
    }

    async fn converse(
        &self,
        session: &Session,
        heard: &Heard,
        household: Option<&str>,
    ) -> Result<TurnOutcome, String> {
        let system = system_prompt(&session.skills().await?, heard, household);
        let tools = converse::tool_configuration(&session.tools().await?)?;
        let mut messages = vec![converse::user_message(&heard.words)];
        let mut calls = Vec::new();
        let mut says: Vec<String> = Vec::new();
        let mut question = QuestionChange::Unchanged;
        for _ in 0..self.max_rounds {
            let (message, uses) = match self.model.next(&system, &messages, &tools).await? {
                ModelTurn::Reply(reply) => {
                    return Ok(TurnOutcome {
                        reply,
                        say: (!says.is_empty()).then(|| says.join(" ")),
                        tool_calls: calls,
                        question,
                    });
                }
                ModelTurn::UseTools { message, calls } => (message, calls),
            };
            messages.push(message);
            let mut results = Vec::new();
            for call in uses {
                let answer = session.call(&call.name, call.input.clone()).await?;
                if let Some(say) = answer.result.get("say").and_then(Value::as_str)
                    && says.last().is_none_or(|last| last != say)
                {
                    says.push(say.to_owned());
                }
                if !answer.is_error {
                    question = question_after(&call.name, &answer.result).unwrap_or(question);
                }
                calls.push(ToolCall {
                    name: call.name,
                    arguments: call.input,
                    is_error: answer.is_error,
                });
                results.push((call.id, answer.result, answer.is_error));
            }
            messages.push(converse::results_message(results));
        }
        Err(format!(
            "the assistant used its {} rounds of tool calls without answering",
            self.max_rounds
        ))
    }
}

/// What the device must remember after a Countersign result: a question read aloud (a held
/// proposal, or the request `list_waiting` read), or an answer that settled one.
fn question_after(tool: &str, result: &Value) -> Option<QuestionChange> {
    let request = |value: &Value| value.get("request_id")?.as_str().map(str::to_owned);
    match tool {
        "propose_purchase" if result["status"] == "waiting_for_confirmation" => {
            request(result).map(QuestionChange::Asked)
        }
        "list_waiting" => request(&result["read_aloud"]).map(QuestionChange::Asked),
        "confirm_purchase" | "decide_request" if !result["result"].is_null() => {
            Some(QuestionChange::Settled)
        }
        _ => None,
    }
}

/// The skills, then what the device knows about this turn.
fn system_prompt(skills: &str, heard: &Heard, household: Option<&str>) -> String {
    let mut prompt = String::from(
        "You are a household voice assistant. Hearth's tools act for the household and its \
         skills below are your rules; follow them exactly. Keep replies short: they are \
         spoken.\n\n",
    );
    prompt.push_str("The device says: the speaker is household member `");
    prompt.push_str(&heard.member_id);
    prompt.push_str("`; the device signs that, and you never pass it as an argument.");
    if let Some(household) = household {
        prompt.push_str(" Where a tool takes `household_id`, it is `");
        prompt.push_str(household);
        prompt.push_str("`.");
    }
    match &heard.answering {
        Some(request) => {
            prompt.push_str(
                " The last question the device read aloud to this person was for request `",
            );
            prompt.push_str(request);
            prompt.push_str("`; if their words answer it, that is the request_id to answer.");
        }
        None => prompt.push_str(" No question is waiting for this person's answer."),
    }
    prompt.push_str("\n\n");
    prompt.push_str(skills);
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_device_remembers_questions_read_and_forgets_them_once_settled() {
        let held = json!({"status": "waiting_for_confirmation", "request_id": "r1"});
        assert_eq!(
            question_after("propose_purchase", &held),
            Some(QuestionChange::Asked("r1".into()))
        );
        let placed = json!({"status": "placed", "request_id": "r2"});
        assert_eq!(question_after("propose_purchase", &placed), None);
        let read = json!({"read_aloud": {"request_id": "r3"}, "waiting": 1});
        assert_eq!(
            question_after("list_waiting", &read),
            Some(QuestionChange::Asked("r3".into()))
        );
        assert_eq!(
            question_after("list_waiting", &json!({"read_aloud": null})),
            None
        );
        let settled = json!({"result": "placed"});
        assert_eq!(
            question_after("confirm_purchase", &settled),
            Some(QuestionChange::Settled)
        );
        assert_eq!(
            question_after("decide_request", &json!({"result": null})),
            None
        );
    }
}
