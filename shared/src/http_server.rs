//! The local HTTP/1.1 server under `hearth serve` and `hearth witness serve`: an accept loop
//! on hyper-util, since `axum::serve` sets none of the limits a server reachable by strangers
//! needs (a connection that sent half its headers stayed open for good):
//!
//! - a request's head must arrive within [`HEADER_TIMEOUT`] of the connection starting to wait
//!   for it, which also closes a kept-alive connection left idle that long (hyper's own
//!   header-read timer, which runs from the moment it waits for a head);
//! - its body within [`BODY_TIMEOUT`] of the head, answered 408 otherwise ([`Deadline`]);
//! - at most `max_connections` connections at once: past the cap the loop stops accepting, so
//!   new connections wait in the kernel's backlog instead of being answered or refused.
//!
//! Under Lambda none of this runs: API Gateway holds the connections.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use http_body::{Body, Frame};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// How long a request's head may take to arrive, and a kept-alive connection may sit idle.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request's body may take to arrive once its head has.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stop waits for the requests in flight before dropping them.
const DRAIN: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` until `shutdown` resolves, each request carrying its peer's
/// address (`ConnectInfo<SocketAddr>`), with at most `max_connections` open at once.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    max_connections: usize,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A slot first: while every slot is taken, nothing is accepted.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, say: wait rather than spin, and keep serving.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
            answer(router.clone(), peer, request)
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away mid-request is an ordinary end, not worth a log line.
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {},
        () = tokio::time::sleep(DRAIN) => {
            tracing::warn!("requests still in flight after {DRAIN:?} were dropped at stop");
        }
    }
}

/// One request through `router`, its body held to [`BODY_TIMEOUT`]; a body that ran out of
/// time is answered 408 whatever the route made of the failed read, and the connection closed.
async fn answer(
    router: Router,
    peer: SocketAddr,
    request: http::Request<Incoming>,
) -> Result<Response, Infallible> {
    let late = Arc::new(AtomicBool::new(false));
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(ConnectInfo(peer));
    let body = axum::body::Body::new(Deadline::new(body, BODY_TIMEOUT, late.clone()));
    let response = router
        .oneshot(http::Request::from_parts(parts, body))
        .await
        .unwrap_or_else(|never| match never {});
    if late.load(Ordering::Relaxed) {
        let mut response = (
            StatusCode::REQUEST_TIMEOUT,
            axum::Json(serde_json::json!({
                "error": "request_timeout",
                "error_description": "the request body did not arrive within 30 seconds; send it again",
            })),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return Ok(response);
    }
    Ok(response)
}

pin_project_lite::pin_project! {
    /// A request body that must be whole by a fixed deadline. Written here because
    /// tower-http's `TimeoutBody` restarts its timer at every frame, so a client sending a byte
    /// every few seconds would never be cut off. The deadline only ends a wait: a body already
    /// received is handed over whenever the route reads it.
    pub struct Deadline<B> {
        #[pin]
        body: B,
        #[pin]
        timer: tokio::time::Sleep,
        late: Arc<AtomicBool>,
    }
}

impl<B> Deadline<B> {
    pub fn new(body: B, within: Duration, late: Arc<AtomicBool>) -> Self {
        Self {
            body,
            timer: tokio::time::sleep(within),
            late,
        }
    }
}

/// The error a body that missed its deadline ends with.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct TooSlow;

impl<B> Body for Deadline<B>
where
    B: Body,
    B::Error: Into<axum::BoxError>,
{
    type Data = B::Data;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        match this.body.poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|frame| frame.map_err(Into::into))),
            Poll::Pending => match this.timer.poll(cx) {
                Poll::Ready(()) => {
                    this.late.store(true, Ordering::Relaxed);
                    Poll::Ready(Some(Err(TooSlow.into())))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;
    use http_body_util::BodyExt;
    use http_body_util::channel::Channel;

    #[tokio::test(start_paused = true)]
    async fn a_body_still_arriving_at_its_deadline_fails_and_says_so() {
        let (mut sender, body) = Channel::<Bytes, Infallible>::new(4);
        let late = Arc::new(AtomicBool::new(false));
        let mut body = std::pin::pin!(Deadline::new(body, BODY_TIMEOUT, late.clone()));
        sender.send_data(Bytes::from_static(b"{")).await.unwrap();
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), Bytes::from_static(b"{"));
        // A byte just before the deadline does not move it.
        tokio::time::advance(BODY_TIMEOUT - Duration::from_millis(1)).await;
        sender.send_data(Bytes::from_static(b"\"")).await.unwrap();
        assert!(body.frame().await.unwrap().is_ok());
        assert!(!late.load(Ordering::Relaxed));
        let waited = body.frame().await.unwrap();
        assert!(waited.is_err(), "the rest did not come by the deadline");
        assert!(late.load(Ordering::Relaxed));
        drop(sender);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_already_received_is_read_after_its_deadline() {
        let (mut sender, body) = Channel::<Bytes, Infallible>::new(4);
        let late = Arc::new(AtomicBool::new(false));
        let body = Deadline::new(body, BODY_TIMEOUT, late.clone());
        sender.send_data(Bytes::from_static(b"{}")).await.unwrap();
        drop(sender);
        tokio::time::advance(BODY_TIMEOUT * 2).await;
        let whole = body.collect().await.unwrap().to_bytes();
        assert_eq!(whole, Bytes::from_static(b"{}"));
        assert!(!late.load(Ordering::Relaxed));
    }
}
