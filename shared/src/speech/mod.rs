//! Text that a voice assistant will read aloud. Amazon Polly joins this module later; the
//! sanitiser is here because every spoken quote of caller-supplied text goes through it.

pub mod sanitize;
