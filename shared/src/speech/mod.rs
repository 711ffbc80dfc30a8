//! Text that a voice assistant will read aloud: the sanitiser every spoken quote of
//! caller-supplied text goes through, and Amazon Polly for `/tts`.

pub mod polly;
pub mod sanitize;
