//! `ask_aion` against a loopback stand-in for the AionRealm backend: what is sent (the bearer
//! key, the question, null identity), what comes back, and every way the backend can fail,
//! each of which the caller sees as the same generic message. `aion_over_mcp.rs` checks the
//! answers and logs over `/mcp`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::http::header;
use common::aion_stand_in::stand_in;
use hearth_core::aion::{AionToolset, HttpGuide, MockGuide};
use hearth_core::auth::Caller;
use hearth_core::secret::Secret;
use hearth_core::toolset::{ToolOutput, Toolset};
use serde_json::{Value, json};

const KEY: &str = "aion-backend-key-for-tests";

fn caller() -> Caller {
    Caller::unattested("test")
}

async fn ask(toolset: &AionToolset, question: Value) -> ToolOutput {
    let arguments = json!({"question": question}).as_object().unwrap().clone();
    toolset
        .call(&caller(), "ask_aion", arguments)
        .await
        .unwrap()
}

fn toolset(url: &str, timeout: Duration) -> AionToolset {
    AionToolset::new(Arc::new(HttpGuide::new(
        url.to_owned(),
        Some(Secret::new(KEY)),
        timeout,
    )))
}

#[tokio::test]
async fn a_question_is_relayed_with_the_key_and_no_identity() {
    let (url, seen) = stand_in("ok").await;
    let output = ask(
        &toolset(&url, Duration::from_secs(5)),
        json!("How do I start?"),
    )
    .await;
    match output {
        ToolOutput::Success { text, structured } => {
            assert_eq!(text, "Begin with one small step.");
            assert_eq!(structured["meta"], json!({"model": "aion-1"}));
        }
        other => panic!("{other:?}"),
    }
    let seen = seen.0.lock().unwrap();
    let (headers, body) = &seen[0];
    assert_eq!(
        headers[header::AUTHORIZATION],
        format!("Bearer {KEY}").as_str()
    );
    assert_eq!(
        *body,
        json!({"question": "How do I start?", "member_id": null, "session_id": null, "surface": "alexa_mcp"})
    );
}

#[tokio::test]
async fn every_backend_failure_is_the_same_generic_answer() {
    for scenario in ["500", "malformed", "empty", "html", "slow"] {
        let (url, _) = stand_in(scenario).await;
        let output = ask(
            &toolset(&url, Duration::from_millis(500)),
            json!("Anything?"),
        )
        .await;
        assert_eq!(
            output,
            ToolOutput::Failure(hearth_core::aion::tools::UNREACHABLE.into()),
            "{scenario}"
        );
    }
    // Nothing listening, and no key configured, look the same.
    let closed = common::process::free_port();
    let output = ask(
        &toolset(
            &format!("http://127.0.0.1:{closed}/ask"),
            Duration::from_secs(2),
        ),
        json!("x"),
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::Failure(hearth_core::aion::tools::UNREACHABLE.into())
    );
    let (url, seen) = stand_in("ok").await;
    let keyless = AionToolset::new(Arc::new(HttpGuide::new(url, None, Duration::from_secs(2))));
    assert_eq!(
        ask(&keyless, json!("x")).await,
        ToolOutput::Failure(hearth_core::aion::tools::UNREACHABLE.into())
    );
    assert!(
        seen.0.lock().unwrap().is_empty(),
        "nothing is sent without a key"
    );
}

#[tokio::test]
async fn answers_are_read_up_to_64_kib() {
    let (url, _) = stand_in("at_limit").await;
    let at_limit = ask(
        &toolset(&url, Duration::from_secs(5)),
        json!("Tell me everything"),
    )
    .await;
    assert!(
        matches!(at_limit, ToolOutput::Success { .. }),
        "{at_limit:?}"
    );
    let (url, _) = stand_in("past_limit").await;
    let past = ask(
        &toolset(&url, Duration::from_secs(5)),
        json!("Tell me everything"),
    )
    .await;
    assert_eq!(
        past,
        ToolOutput::Failure(hearth_core::aion::tools::UNREACHABLE.into())
    );
}

#[tokio::test]
async fn questions_hold_1_to_2000_characters() {
    let mock = AionToolset::new(Arc::new(MockGuide));
    assert!(matches!(
        ask(&mock, json!("x".repeat(2000))).await,
        ToolOutput::Success { .. }
    ));
    for bad in [json!(""), json!("   "), json!("x".repeat(2001)), json!(7)] {
        assert!(
            matches!(ask(&mock, bad.clone()).await, ToolOutput::Failure(_)),
            "{bad}"
        );
    }
    let empty = ask(&mock, json!("  ")).await;
    assert_eq!(
        empty,
        ToolOutput::Failure(
            "The question is empty; ask something of 1 to 2,000 characters.".into()
        )
    );
    let identity = json!({"question": "hi", "member_id": "m-1"})
        .as_object()
        .unwrap()
        .clone();
    let refused = mock.call(&caller(), "ask_aion", identity).await.unwrap();
    assert!(matches!(refused, ToolOutput::Failure(message) if message.contains("member_id")));
}
