//! Text that a voice assistant will read aloud: the sanitiser every spoken quote of
//! caller-supplied text goes through, and Amazon Polly for `/tts`.

#[cfg(feature = "aws")]
pub mod polly;
pub mod sanitize;
