//! `POST /demo/assistant`: the demo page's assistant option. The page sends who spoke, their
//! words and the question it last read aloud to them; this endpoint runs one turn of
//! `hearth assistant` (the Bedrock Converse loop over Hearth's own `/mcp`, with the caller's
//! bearer token and an attestation signed with the host key) and answers what the device
//! should say.
//!
//! It exists only beside `POST /demo/device` (`HEARTH_DEMO_DEVICE=1`, local only), for the
//! same reason: whoever holds a token can speak as any member through it.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use super::DeviceEndpoint;
use crate::assistant::converse::Model;
use crate::assistant::device::{DeviceKey, Heard, QuestionChange};
use crate::assistant::{Assistant, Connection, MODEL_CALL_TIMEOUT, ToolCall};
use crate::json_endpoint::{admit, error};
use crate::secret::Secret;
use crate::telemetry::{RequestLog, request_id};

/// The largest request body read.
pub const MAX_ASSISTANT_BODY_BYTES: usize = 4096;

pub struct AssistantEndpoint {
    /// The simulated device's checks and key: the assistant signs as it does.
    device: DeviceEndpoint,
    /// Hearth's own `/mcp`, which the assistant calls like any host.
    mcp_url: String,
    model_id: String,
    client: OnceCell<aws_sdk_bedrockruntime::Client>,
}

impl AssistantEndpoint {
    pub fn new(device: DeviceEndpoint, mcp_url: String, model_id: String) -> Self {
        Self {
            device,
            mcp_url,
            model_id,
            client: OnceCell::new(),
        }
    }

    async fn model(&self) -> Model {
        let client = self
            .client
            .get_or_init(|| async {
                aws_sdk_bedrockruntime::Client::new(crate::aws::sdk_config().await)
            })
            .await;
        Model::new(client.clone(), self.model_id.clone(), MODEL_CALL_TIMEOUT)
    }
}

pub fn router(endpoint: Arc<AssistantEndpoint>) -> Router {
    Router::new()
        .route("/demo/assistant", any(assistant))
        .with_state(endpoint)
}

/// What the page heard.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Asked {
    member_id: String,
    words: String,
    answering: Option<String>,
}

/// One turn as the page shows it: the assistant's outcome and what the device must remember.
#[derive(Serialize)]
struct Answered {
    reply: String,
    say: Option<String>,
    tool_calls: Vec<ToolCall>,
    question: QuestionChange,
}

async fn assistant(State(endpoint): State<Arc<AssistantEndpoint>>, request: Request) -> Response {
    let started = Instant::now();
    let mut log = RequestLog::new(request_id(&request));
    log.method(Some("demo_assistant"));
    let response = handle(&endpoint, request, &mut log).await;
    log.finish(response.status(), started.elapsed());
    response
}

async fn handle(endpoint: &AssistantEndpoint, request: Request, log: &mut RequestLog) -> Response {
    // The assistant calls /mcp with the caller's own token, checked here first.
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| Secret::new(token.trim()));
    let bytes = match admit(
        &endpoint.device.auth,
        &endpoint.device.gate,
        request,
        MAX_ASSISTANT_BODY_BYTES,
        log,
    )
    .await
    {
        Ok((_caller, bytes)) => bytes,
        Err(refusal) => return refusal,
    };
    let Some(token) = bearer else {
        return error(StatusCode::UNAUTHORIZED, "a bearer token is required");
    };
    let Ok(asked) = serde_json::from_slice::<Asked>(&bytes) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the body must be {\"member_id\", \"words\", \"answering\"}",
        );
    };
    let key = match endpoint.device.signing_key(&asked.member_id) {
        Ok(key) => key,
        Err((status, why)) => return error(status, why),
    };
    let Ok(turn) = crate::random::os_bytes::<8>() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the OS random source failed",
        );
    };
    let heard = Heard {
        member_id: asked.member_id,
        turn_id: format!("demo-assistant-{}", hex::encode(turn)),
        words: asked.words,
        answering: asked.answering,
    };
    let now = endpoint.device.clock.now().unix_timestamp();
    let key = DeviceKey::host(key.clone());
    // Words or ids the attestation contract refuses are the caller's mistake, named here.
    if let Err(problem) = heard.sign(&key, now) {
        return error(StatusCode::BAD_REQUEST, &problem);
    }
    let assistant = Assistant::new(
        endpoint.model().await,
        Connection {
            url: endpoint.mcp_url.clone(),
            token,
            key,
        },
    );
    let household = &endpoint.device.household.household.household_id;
    match assistant.turn(&heard, Some(household), now).await {
        Ok(outcome) => {
            let mut response = axum::Json(Answered {
                reply: outcome.reply,
                say: outcome.say,
                tool_calls: outcome.tool_calls,
                question: outcome.question,
            })
            .into_response();
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        // The model or Hearth behind it failed: the sentence says which.
        Err(problem) => error(StatusCode::BAD_GATEWAY, &problem),
    }
}
