//! Speech from Amazon Polly: plain text in, MP3 out.
//!
//! The client is built on first use from the process's one AWS configuration, so a server
//! that never speaks never loads it. A voice that cannot speak for any reason (no AWS
//! configuration, an error, a timeout) reports [`VoiceUnavailable`] with a reason for the log;
//! the reason never contains the text.

use std::time::Duration;

use aws_sdk_polly::Client;
use aws_sdk_polly::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_polly::operation::synthesize_speech::SynthesizeSpeechError;
use aws_sdk_polly::types::{Engine, OutputFormat, TextType, VoiceId};
use tokio::sync::OnceCell;

/// How long one synthesis may take, retries included.
pub const SPEECH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why no audio was produced. Safe to log: it names what failed, never the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("voice unavailable: {0}")]
pub struct VoiceUnavailable(pub String);

pub struct Voice {
    client: OnceCell<Client>,
    voice: VoiceId,
    engine: Engine,
}

impl Voice {
    /// A voice whose Polly client comes from the AWS environment on first use.
    pub fn from_environment(voice: &str, engine: &str) -> Self {
        Self {
            client: OnceCell::new(),
            voice: VoiceId::from(voice),
            engine: Engine::from(engine),
        }
    }

    /// A voice over a given client (tests point it at a loopback server).
    pub fn with_client(client: Client, voice: &str, engine: &str) -> Self {
        Self {
            client: OnceCell::new_with(Some(client)),
            voice: VoiceId::from(voice),
            engine: Engine::from(engine),
        }
    }

    async fn client(&self) -> &Client {
        self.client
            .get_or_init(|| async {
                let config = aws_sdk_polly::config::Builder::from(crate::aws::sdk_config().await)
                    .timeout_config(
                        aws_config::timeout::TimeoutConfig::builder()
                            .operation_timeout(SPEECH_TIMEOUT)
                            .build(),
                    )
                    .build();
                Client::from_conf(config)
            })
            .await
    }

    /// MP3 audio of `text`. A `generative` request that Polly answers with
    /// `EngineNotSupportedException` is retried once with `neural`; nothing else is retried
    /// here (the SDK's standard retries cover throttling and 5xx).
    pub async fn speak(&self, text: &str) -> Result<Vec<u8>, VoiceUnavailable> {
        match self.synthesize(text, self.engine.clone()).await {
            Err(Failure::EngineNotSupported) if self.engine == Engine::Generative => self
                .synthesize(text, Engine::Neural)
                .await
                .map_err(Failure::into_unavailable),
            other => other.map_err(Failure::into_unavailable),
        }
    }

    async fn synthesize(&self, text: &str, engine: Engine) -> Result<Vec<u8>, Failure> {
        let output = self
            .client()
            .await
            .synthesize_speech()
            .text(text)
            .text_type(TextType::Text)
            .output_format(OutputFormat::Mp3)
            .voice_id(self.voice.clone())
            .engine(engine)
            .send()
            .await
            .map_err(|error| match &error {
                SdkError::ServiceError(service)
                    if matches!(
                        service.err(),
                        SynthesizeSpeechError::EngineNotSupportedException(_)
                    ) =>
                {
                    Failure::EngineNotSupported
                }
                SdkError::ServiceError(service) => {
                    Failure::Other(service.err().code().unwrap_or("service error").to_owned())
                }
                SdkError::TimeoutError(_) => Failure::Other("timed out".into()),
                SdkError::DispatchFailure(_) => Failure::Other("connection failed".into()),
                SdkError::ConstructionFailure(_) => {
                    Failure::Other("AWS configuration incomplete (region or credentials)".into())
                }
                _ => Failure::Other("unexpected response".into()),
            })?;
        let audio = output
            .audio_stream
            .collect()
            .await
            .map_err(|_| Failure::Other("audio stream interrupted".into()))?
            .into_bytes()
            .to_vec();
        if audio.is_empty() {
            return Err(Failure::Other("empty audio".into()));
        }
        Ok(audio)
    }
}

enum Failure {
    EngineNotSupported,
    Other(String),
}

impl Failure {
    fn into_unavailable(self) -> VoiceUnavailable {
        match self {
            Failure::EngineNotSupported => VoiceUnavailable("EngineNotSupportedException".into()),
            Failure::Other(reason) => VoiceUnavailable(reason),
        }
    }
}
