//! Hearth's core library: everything that is not a Lambda entry point.
//!
//! Dependencies point one way. At the top, [`app`] composes entry points; [`mcp`] and [`oauth`]
//! wire the protocols and HTTP, with [`gate`] (kill switch, Origin, rate limits) and
//! [`telemetry`] in front of both. In the middle, toolsets ([`why`]) implement
//! [`toolset::Toolset`], [`linking`] keeps account linking's codes and refresh tokens, [`transparency`] grows and
//! signs each chain's log, and
//! [`ratelimit`] applies its policy to the store's counters. At the bottom, [`auth`],
//! [`accounts`], [`chain`], [`tlog`], [`store`], [`scholia`], [`speech`], [`clock`], [`random`],
//! [`secret`] and [`config`] know nothing of the layers above.

/// The optional parts in this build of the core, for `hearth --version`: the product's cargo
/// features, and `fuzzing` (the `--cfg fuzzing` cargo fuzz builds with), which a product build
/// never has.
pub const BUILD_FEATURES: [(&str, bool); 3] = [
    ("aws", cfg!(feature = "aws")),
    ("mimalloc", cfg!(feature = "mimalloc")),
    ("fuzzing", cfg!(fuzzing)),
];

pub mod accounts;
pub mod admin;
pub mod aion;
pub mod app;
#[cfg(feature = "aws")]
pub mod assistant;
pub mod auth;
#[cfg(feature = "aws")]
pub mod aws;
pub mod backup;
pub mod chain;
pub mod clients;
pub mod clock;
pub mod config;
pub mod countersign;
pub mod demo;
pub mod doctor;
pub mod forwarded;
pub mod fuzzing;
pub mod gate;
pub mod household;
pub mod html;
pub mod http_server;
pub mod json_endpoint;
pub mod linking;
pub mod log_key_start;
pub mod mcp;
pub mod media;
pub mod oauth;
pub mod passkeys;
pub mod private_files;
pub mod random;
pub mod ratelimit;
pub mod scholia;
pub mod secret;
pub mod skills;
pub mod speech;
pub mod store;
pub mod telemetry;
pub mod tlog;
pub mod toolset;
pub mod transparency;
#[cfg(feature = "aws")]
pub mod tts;
pub mod why;
pub mod witness;
pub mod witnessing;

/// Every Hearth binary allocates through mimalloc: a request allocates many small, short-lived
/// objects (rmcp messages, JSON values, rows), where it measured faster than glibc's malloc.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
