//! `POST /tts` over HTTP: speech from Polly (moto on loopback, and a stand-in that refuses the
//! generative engine), every refusal with its status, and 503 `voice unavailable` for every
//! failure behind it.

mod common;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::{Harness, Reply, TOKEN, harness, harness_speaking, request};
use hearth_core::speech::polly::Voice;
use hearth_testkit::moto::{Moto, polly_client};
use serde_json::{Value, json};

async fn speak(h: &Harness, body: &str, extra: &[(&str, &str)]) -> Reply {
    let bearer = format!("Bearer {TOKEN}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    for (name, value) in extra {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        if !value.is_empty() {
            headers.push((name, value));
        }
    }
    request(&h.router, "POST", "/tts", &headers, body).await
}

fn text(words: &str) -> String {
    json!({"text": words}).to_string()
}

fn moto_voice() -> Voice {
    Voice::with_client(Moto::shared().polly_client(), "Ruth", "generative")
}

#[tokio::test]
async fn text_becomes_mp3_from_polly() {
    let h = harness_speaking(&[], moto_voice());
    let reply = speak(&h, &text("Recorded answer"), &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    assert_eq!(reply.header("content-type"), "audio/mpeg");
    assert_eq!(reply.header("cache-control"), "no-store");
    assert!(!reply.raw.is_empty());
}

#[tokio::test]
async fn text_is_sanitised_and_held_to_300_characters() {
    let h = harness_speaking(&[], moto_voice());
    assert_eq!(
        speak(&h, &text(&"a".repeat(300)), &[]).await.status,
        StatusCode::OK
    );
    // Whitespace collapses and invisible characters vanish before counting.
    let padded = format!("{}{}", "a".repeat(300), "\u{200b}   \u{202e}");
    assert_eq!(speak(&h, &text(&padded), &[]).await.status, StatusCode::OK);
    let over = speak(&h, &text(&"a".repeat(301)), &[]).await;
    assert_eq!(over.status, StatusCode::BAD_REQUEST);
    assert!(over.body["error"].as_str().unwrap().contains("300"));
    for empty in ["", "   ", "\u{200b}\u{2060}"] {
        let reply = speak(&h, &text(empty), &[]).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{empty:?}");
        assert_eq!(reply.body["error"], "the text is empty");
    }
}

/// A case name, header overrides, a body and the expected status.
type RefusalCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, String, StatusCode);

/// The engines a Polly stand-in was asked for, in order.
type Engines = Arc<Mutex<Vec<String>>>;

#[tokio::test]
async fn every_refusal_has_its_status() {
    let h = harness_speaking(
        &[("MCP_ALLOWED_ORIGINS", "https://demo.example")],
        moto_voice(),
    );
    let body = text("hello");
    let cases: Vec<RefusalCase> = vec![
        (
            "no token",
            vec![("authorization", "")],
            body.clone(),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "wrong token",
            vec![("authorization", "Bearer nope")],
            body.clone(),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "basic auth",
            vec![("authorization", "Basic dTpw")],
            body.clone(),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "bad origin",
            vec![("origin", "https://evil.example")],
            body.clone(),
            StatusCode::FORBIDDEN,
        ),
        (
            "not json",
            vec![("content-type", "text/plain")],
            body.clone(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "wrong shape",
            vec![],
            json!({"words": "hi"}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "not a string",
            vec![],
            json!({"text": 7}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        ("broken json", vec![], "{".into(), StatusCode::BAD_REQUEST),
    ];
    for (case, headers, body, status) in cases {
        let reply = speak(&h, &body, &headers).await;
        assert_eq!(reply.status, status, "{case}: {}", reply.raw);
        assert!(reply.body["error"].is_string(), "{case}");
    }
    assert_eq!(
        speak(&h, &body, &[("origin", "https://demo.example")])
            .await
            .status,
        StatusCode::OK
    );
    let at_limit = json!({"text": format!("hi{}", " ".repeat(4096 - 13))}).to_string();
    assert_eq!(at_limit.len(), 4096);
    assert_eq!(speak(&h, &at_limit, &[]).await.status, StatusCode::OK);
    let past = json!({"text": format!("hi{}", " ".repeat(4096 - 12))}).to_string();
    assert_eq!(
        speak(&h, &past, &[]).await.status,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let get = request(&h.router, "GET", "/tts", &[], "").await;
    assert_eq!(
        (get.status, get.header("allow")),
        (StatusCode::METHOD_NOT_ALLOWED, "POST")
    );
}

#[tokio::test]
async fn tts_is_rate_limited_and_disabled_with_everything_else() {
    let h = harness_speaking(&[("HEARTH_RATE_LIMIT_PER_SUBJECT", "2")], moto_voice());
    for _ in 0..2 {
        assert_eq!(speak(&h, &text("hi"), &[]).await.status, StatusCode::OK);
    }
    let limited = speak(&h, &text("hi"), &[]).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(!limited.header("retry-after").is_empty());
    let off = harness_speaking(&[("MCP_DISABLED", "1")], moto_voice());
    assert_eq!(
        speak(&off, &text("hi"), &[]).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

/// A Polly stand-in: refuses `generative` with EngineNotSupportedException, or fails with
/// `status`, and records the engine of every request.
async fn polly_stand_in(failure: Option<u16>) -> (String, Engines) {
    let engines: Engines = Arc::default();
    async fn speech(
        State((engines, failure)): State<(Engines, Option<u16>)>,
        body: String,
    ) -> Response {
        let request: Value = serde_json::from_str(&body).unwrap();
        let engine = request["Engine"].as_str().unwrap_or_default().to_owned();
        engines.lock().unwrap().push(engine.clone());
        if let Some(status) = failure {
            return (
                StatusCode::from_u16(status).unwrap(),
                [("x-amzn-ErrorType", "ServiceFailureException")],
                r#"{"message":"down"}"#,
            )
                .into_response();
        }
        if engine == "generative" {
            return (
                StatusCode::BAD_REQUEST,
                [("x-amzn-ErrorType", "EngineNotSupportedException")],
                r#"{"message":"This voice does not support the selected engine"}"#,
            )
                .into_response();
        }
        (
            [(header::CONTENT_TYPE, "audio/mpeg")],
            b"ID3-neural-audio".to_vec(),
        )
            .into_response()
    }
    let app = Router::new()
        .route("/v1/speech", post(speech))
        .with_state((engines.clone(), failure));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, engines)
}

#[tokio::test]
async fn generative_is_retried_once_with_neural_only_when_polly_refuses_the_engine() {
    let (url, engines) = polly_stand_in(None).await;
    let h = harness_speaking(
        &[],
        Voice::with_client(polly_client(&url), "Ruth", "generative"),
    );
    let reply = speak(&h, &text("hello"), &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    assert_eq!(reply.raw, "ID3-neural-audio");
    assert_eq!(*engines.lock().unwrap(), ["generative", "neural"]);
}

#[tokio::test]
async fn any_other_failure_is_503_voice_unavailable() {
    let (url, engines) = polly_stand_in(Some(400)).await;
    let h = harness_speaking(
        &[],
        Voice::with_client(polly_client(&url), "Ruth", "generative"),
    );
    let reply = speak(&h, &text("hello"), &[]).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        reply.body,
        json!({"error": "voice unavailable", "reason": "Amazon Polly: ServiceFailureException"})
    );
    assert_eq!(
        engines.lock().unwrap().len(),
        1,
        "no engine retry for other errors"
    );
    // Nothing listening.
    let closed = common::process::free_port();
    let nowhere = harness_speaking(
        &[],
        Voice::with_client(
            polly_client(&format!("http://127.0.0.1:{closed}")),
            "Ruth",
            "neural",
        ),
    );
    let reply = speak(&nowhere, &text("hello"), &[]).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(reply.body["reason"], "Amazon Polly: connection failed");
    // No voice configured at all.
    let silent = harness(&[]);
    let reply = speak(&silent, &text("hello"), &[]).await;
    assert_eq!(
        (reply.status, reply.body["error"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("voice unavailable"))
    );
    assert_eq!(
        reply.body["reason"],
        "speech is not configured on this server"
    );
}

/// Locally, with no AWS region configured, Polly is asked in us-east-1 rather than failing,
/// and without credentials the answer says so.
#[test]
fn a_local_server_without_a_region_still_speaks_and_says_why_when_it_cannot() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (url, engines) = runtime.block_on(polly_stand_in(None));
    let token_hash = hearth_core::chain::sha256_hex(common::TOKEN);
    let bearer = format!("Bearer {}", common::TOKEN);
    let speak = |vars: &[(&str, String)]| {
        let data = tempfile::tempdir().unwrap();
        let mut all = vec![
            ("MCP_JUDGE_TOKEN_HASHES", token_hash.clone()),
            ("AWS_ENDPOINT_URL_POLLY", url.clone()),
        ];
        all.extend(vars.iter().cloned());
        let server = common::process::Server::start(data.path(), &all);
        let answer = common::process::http(
            server.port,
            "POST",
            "/tts",
            &[
                ("authorization", &bearer),
                ("content-type", "application/json"),
            ],
            r#"{"text": "hello"}"#,
        );
        server.stop();
        answer
    };
    let (status, body) = speak(&[
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
    ]);
    assert_eq!((status, body.as_str()), (200, "ID3-neural-audio"));
    assert_eq!(*engines.lock().unwrap(), ["generative", "neural"]);
    // HOME points nowhere, so no shared credentials file is found either.
    let (status, body) = speak(&[("HOME", "/nonexistent".into())]);
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "voice unavailable");
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .starts_with("Amazon Polly: "),
        "{body}"
    );
}
