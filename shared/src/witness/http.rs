//! The witness's HTTP interface, at the root of its address (the submission and monitoring
//! prefixes are both the base URL):
//!
//! - `POST /add-checkpoint` (C2SP `tlog-witness` v1.0.0);
//! - `GET /<hex sha256(origin)>/checkpoint`: the latest cosigned checkpoint of that origin;
//! - `GET /events?after=<id>`: new logs and epochs, as JSON, for monitors.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::{MAX_BODY_BYTES, Witness};

/// How many events one `GET /events` returns at most.
pub const EVENTS_PAGE: u32 = 1000;

pub fn router(witness: Arc<Witness>) -> Router {
    Router::new()
        .route("/add-checkpoint", post(add_checkpoint))
        .route("/events", get(events))
        .route("/{origin_hash}/checkpoint", get(checkpoint))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(witness)
}

fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |elapsed| elapsed.as_secs())
}

async fn add_checkpoint(State(witness): State<Arc<Witness>>, body: Bytes) -> Response {
    let Ok(body) = String::from_utf8(body.to_vec()) else {
        return (StatusCode::BAD_REQUEST, "the body is not UTF-8 text\n").into_response();
    };
    let reply =
        match tokio::task::spawn_blocking(move || witness.add_checkpoint(&body, now_seconds()))
            .await
        {
            Ok(reply) => reply,
            Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        };
    match reply.status {
        200 => tracing::info!(status = reply.status, "cosigned a checkpoint"),
        500 => {
            tracing::error!(status = reply.status, error = %reply.body.trim_end(), "witness state failed")
        }
        _ => {
            tracing::warn!(status = reply.status, reason = %reply.body.trim_end(), "refused a checkpoint")
        }
    }
    (
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, reply.content_type)],
        reply.body,
    )
        .into_response()
}

async fn checkpoint(
    State(witness): State<Arc<Witness>>,
    Path(origin_hash): Path<String>,
) -> Response {
    let well_formed = origin_hash.len() == 64
        && origin_hash
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
    if !well_formed {
        return (StatusCode::NOT_FOUND, "no checkpoint for that origin\n").into_response();
    }
    match tokio::task::spawn_blocking(move || witness.state().checkpoint(&origin_hash)).await {
        Ok(Ok(Some(note))) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            note,
        )
            .into_response(),
        Ok(Ok(None)) => (StatusCode::NOT_FOUND, "no checkpoint for that origin\n").into_response(),
        _ => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

#[derive(serde::Deserialize)]
struct After {
    #[serde(default)]
    after: i64,
}

async fn events(State(witness): State<Arc<Witness>>, Query(after): Query<After>) -> Response {
    match tokio::task::spawn_blocking(move || witness.state().events(after.after, EVENTS_PAGE))
        .await
    {
        Ok(Ok(events)) => axum::Json(serde_json::json!({ "events": events })).into_response(),
        _ => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
