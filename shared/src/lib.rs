//! Hearth's core library: everything that is not a Lambda entry point.
//!
//! Dependencies point one way. At the top, [`app`] composes entry points and [`mcp`] wires the
//! protocol and HTTP; [`auth`] and [`telemetry`] serve them. In the middle, toolsets ([`why`])
//! implement [`toolset::Toolset`]. At the bottom, [`chain`], [`store`], [`scholia`],
//! [`speech`], [`clock`] and [`config`] know nothing of the layers above.

pub mod app;
pub mod auth;
pub mod chain;
pub mod clock;
pub mod config;
pub mod mcp;
pub mod scholia;
pub mod speech;
pub mod store;
pub mod telemetry;
pub mod toolset;
pub mod why;

/// Every Hearth binary allocates through mimalloc: a request allocates many small, short-lived
/// objects (rmcp messages, JSON values, rows), where it measured faster than glibc's malloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
