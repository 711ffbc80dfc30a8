//! Each host's first connection to Hearth, replayed as the host's own code, documentation or
//! issue tracker shows it sends it, on the SQLite store and on DynamoDB (moto): discovery in
//! the host's order and at its well-known names, its registration or metadata document, the
//! redirect URIs and client authentication it uses, the scopes it asks for, the `resource` it
//! sends, its check of `iss` on the callback, the code exchange, a refresh and a first tool
//! call. Each host's module says where every step comes from.
//!
//! No host's own software can run here (claude.ai, ChatGPT, Cursor and Alexa+ are closed;
//! VS Code and Goose need a desktop); what runs for real is the MCP Inspector, `mcp-remote`
//! and the official SDKs, in `scripts/test`. What nobody has tried against the real hosts is
//! in the manual's "How every host connects".

#[path = "../common/mod.rs"]
mod common;

mod alexa;
mod chatgpt;
mod claude;
mod claude_code;
mod cursor;
mod goose;
mod replay;
mod vscode;

use common::Backend;

on_both_stores!(
    claude_ai_and_claude_desktop,
    claude_code_on_any_loopback_port,
    chatgpt_signs_every_token_request,
    vscode_registers_its_four_callbacks,
    cursor_registers_beside_its_own_scheme,
    goose_requires_iss,
    alexa_tier_one_then_account_linking,
);

async fn claude_ai_and_claude_desktop(backend: Backend) {
    claude::links(backend).await;
}

async fn claude_code_on_any_loopback_port(backend: Backend) {
    claude_code::links(backend).await;
}

async fn chatgpt_signs_every_token_request(backend: Backend) {
    chatgpt::links(backend).await;
}

async fn vscode_registers_its_four_callbacks(backend: Backend) {
    vscode::links(backend).await;
}

async fn cursor_registers_beside_its_own_scheme(backend: Backend) {
    cursor::links(backend).await;
}

async fn goose_requires_iss(backend: Backend) {
    goose::links(backend).await;
}

async fn alexa_tier_one_then_account_linking(backend: Backend) {
    alexa::links(backend).await;
}
