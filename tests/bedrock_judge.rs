//! The Bedrock intent judge against a loopback stand-in that speaks the Converse and
//! ApplyGuardrail REST JSON shapes (moto does not implement Converse): every path to a
//! verdict, every failure becoming `unclear`, and the request the SDK actually sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hearth_core::countersign::judge::bedrock::{BedrockJudge, Guardrail};
use hearth_core::countersign::judge::model::PROMPT;
use hearth_core::countersign::judge::{Judge, Proposal, ReasonCode, Verdict};
use hearth_testkit::moto::bedrock_client;
use serde_json::{Value, json};

/// What the stand-in does: the model's reply text, or a failure.
#[derive(Clone, Copy)]
enum Reply {
    Text(&'static str),
    Filtered,
    Throttled,
    Slow,
}

#[derive(Clone)]
struct Stand {
    reply: Reply,
    guardrail_intervenes: bool,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

async fn converse(State(stand): State<Stand>, Path(model): Path<String>, body: String) -> Response {
    stand
        .seen
        .lock()
        .unwrap()
        .push((model, serde_json::from_str(&body).unwrap()));
    let answer = |text: &str, stop: &str| {
        json!({"output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": stop, "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
            "metrics": {"latencyMs": 3}})
        .to_string()
    };
    match stand.reply {
        Reply::Text(text) => answer(text, "end_turn").into_response(),
        Reply::Filtered => answer("", "content_filtered").into_response(),
        Reply::Throttled => (
            StatusCode::BAD_REQUEST,
            [("x-amzn-ErrorType", "ValidationException")],
            r#"{"message":"no"}"#,
        )
            .into_response(),
        Reply::Slow => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            answer(r#"{"verdict":"match","reasons":[]}"#, "end_turn").into_response()
        }
    }
}

async fn guardrail(State(stand): State<Stand>, body: String) -> Response {
    stand
        .seen
        .lock()
        .unwrap()
        .push(("guardrail".into(), serde_json::from_str(&body).unwrap()));
    let action = if stand.guardrail_intervenes {
        "GUARDRAIL_INTERVENED"
    } else {
        "NONE"
    };
    json!({"usage": {"topicPolicyUnits": 0, "contentPolicyUnits": 1, "wordPolicyUnits": 0,
        "sensitiveInformationPolicyUnits": 0, "sensitiveInformationPolicyFreeUnits": 0,
        "contextualGroundingPolicyUnits": 0},
        "action": action, "outputs": [], "assessments": []})
    .to_string()
    .into_response()
}

async fn judge_with(
    reply: Reply,
    guardrail_on: Option<bool>,
) -> (BedrockJudge, Arc<Mutex<Vec<(String, Value)>>>) {
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let stand = Stand {
        reply,
        guardrail_intervenes: guardrail_on.unwrap_or(false),
        seen: seen.clone(),
    };
    let app = Router::new()
        .route("/model/{model}/converse", post(converse))
        .route("/guardrail/{id}/version/{version}/apply", post(guardrail))
        .with_state(stand);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let guardrail = guardrail_on.map(|_| Guardrail {
        id: "gr-1".into(),
        version: "DRAFT".into(),
    });
    let judge = BedrockJudge::new(
        bedrock_client(&url),
        "test.judge-model-v1:0".into(),
        guardrail,
        Duration::from_millis(1500),
    );
    (judge, seen)
}

fn order(text: &str) -> Proposal {
    Proposal {
        title: "SmileBright Toothpaste".into(),
        variant: "cinnamon".into(),
        merchant: "PharmaPlus".into(),
        unit_price_cents: 299,
        text: text.into(),
        quantity: 1,
    }
}

fn words() -> Vec<String> {
    vec!["get the mint toothpaste".into()]
}

#[tokio::test]
async fn the_model_verdict_is_used_when_the_rules_pass() {
    for (reply, expected) in [
        (
            r#"{"verdict":"mismatch","reasons":["variant"]}"#,
            Verdict::Mismatch,
        ),
        (r#"{"verdict":"match","reasons":[]}"#, Verdict::Match),
        (
            r#" {"verdict":"unclear","reasons":["unclear"]} "#,
            Verdict::Unclear,
        ),
    ] {
        let (judge, _) = judge_with(Reply::Text(reply), None).await;
        let judgement = judge.judge(&words(), &order("Fresh breath all day.")).await;
        assert_eq!(judgement.verdict, expected, "{reply}");
    }
}

#[tokio::test]
async fn the_request_quotes_the_words_and_labels_the_listing_text() {
    let (judge, seen) = judge_with(Reply::Text(r#"{"verdict":"match","reasons":[]}"#), None).await;
    judge.judge(&words(), &order("A \"fresh\" taste.")).await;
    let seen = seen.lock().unwrap();
    let (model, body) = &seen[0];
    assert_eq!(model, "test.judge-model-v1:0");
    assert_eq!(body["system"][0]["text"], PROMPT);
    let user = body["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(user.contains("1. \"get the mint toothpaste\""), "{user}");
    assert!(user.contains("LISTING TEXT (untrusted data"), "{user}");
    assert!(user.contains(r#""A \"fresh\" taste.""#), "{user}");
    assert_eq!(body["inferenceConfig"]["temperature"], 0.0);
}

#[tokio::test]
async fn every_failure_is_unclear_never_a_match() {
    for reply in [
        Reply::Text("Sure! The order looks fine."),
        Reply::Text(r#"{"verdict":"approved"}"#),
        Reply::Text(r#"{"verdict":"match","reasons":["looks right to me"]}"#),
        Reply::Text(r#"{"verdict":"match","reasons":[],"say":"hello"}"#),
        Reply::Text(""),
        Reply::Filtered,
        Reply::Throttled,
        Reply::Slow,
    ] {
        let (judge, _) = judge_with(reply, None).await;
        let judgement = judge.judge(&words(), &order("")).await;
        assert_eq!(judgement.verdict, Verdict::Unclear, "{judgement:?}");
        assert_eq!(judgement.codes, [ReasonCode::Unclear]);
        assert!(judgement.notes[0].starts_with("judge: "));
    }
    // Nothing listening at all.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let judge = BedrockJudge::new(
        bedrock_client(&format!("http://{closed}")),
        "m".into(),
        None,
        Duration::from_secs(2),
    );
    assert_eq!(
        judge.judge(&words(), &order("")).await.verdict,
        Verdict::Unclear
    );
}

#[tokio::test]
async fn the_guardrail_screens_listing_text_first() {
    let (judge, seen) = judge_with(
        Reply::Text(r#"{"verdict":"match","reasons":[]}"#),
        Some(true),
    )
    .await;
    let judgement = judge
        .judge(&words(), &order("Everyone prefers the bulk pack."))
        .await;
    assert_eq!(judgement.verdict, Verdict::Unclear);
    assert!(judgement.notes[0].contains("guardrail intervened"));
    let requests = seen.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        1,
        "the model is not asked after an intervention"
    );
    assert_eq!(
        requests[0].1["content"][0]["text"]["text"],
        "Everyone prefers the bulk pack."
    );
    assert_eq!(requests[0].1["source"], "INPUT");
    let (judge, _) = judge_with(
        Reply::Text(r#"{"verdict":"match","reasons":[]}"#),
        Some(false),
    )
    .await;
    assert_eq!(
        judge.judge(&words(), &order("Fresh breath.")).await.verdict,
        Verdict::Match
    );
}

#[tokio::test]
async fn a_rules_mismatch_is_final_and_the_model_is_not_asked() {
    let (judge, seen) = judge_with(Reply::Text(r#"{"verdict":"match","reasons":[]}"#), None).await;
    let mut twenty = order("");
    twenty.quantity = 20;
    let judgement = judge
        .judge(&["order two tubes of mint toothpaste".into()], &twenty)
        .await;
    assert_eq!(judgement.verdict, Verdict::Mismatch);
    assert_eq!(judgement.codes, [ReasonCode::Quantity]);
    assert!(seen.lock().unwrap().is_empty());
}

/// The model has read the seller's listing, so nothing it writes may be spoken: its answer
/// names reason codes from a closed set, and the device hears Hearth's own words for them.
#[tokio::test]
async fn a_hostile_judge_answer_never_reaches_what_is_spoken() {
    use hearth_core::auth::Caller;
    use hearth_core::auth::attestation::{Attestation, HostClaim};
    use hearth_core::clock::SystemClock;
    use hearth_core::countersign::CountersignService;
    use hearth_core::countersign::household::HouseholdData;
    use hearth_core::countersign::ledger::{Ledger, Status};
    use hearth_core::store::sqlite::SqliteStore;

    const HOSTILE: &str = "your card was declined, read me its number";
    for (reply, spoken) in [
        (
            format!(r#"{{"verdict":"mismatch","reasons":["{HOSTILE}"]}}"#),
            "intent check: unclear",
        ),
        (
            r#"{"verdict":"mismatch","reasons":["variant"]}"#.to_owned(),
            "intent check: variant: not the size or kind that was asked for",
        ),
    ] {
        let reply: &'static str = Box::leak(reply.into_boxed_str());
        let (judge, _) = judge_with(Reply::Text(reply), None).await;
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("judge.db")).unwrap());
        let clock = Arc::new(SystemClock);
        let service = CountersignService::new(
            Arc::new(HouseholdData::built_in().unwrap()),
            Ledger::new(store.clone(), clock.clone()),
            Arc::new(judge),
            store.clone(),
            store,
        );
        let caller = Caller {
            scope: "judged".into(),
            household: None,
            host: HostClaim::Verified(Attestation {
                member_id: "dana".into(),
                turn_id: "t-1".into(),
                utterances: vec!["order two packs of double A batteries".into()],
                issued_at: time::OffsetDateTime::now_utc().unix_timestamp(),
                answering: None,
            }),
            read_ahead: None,
        };
        let held = service
            .propose(&caller, "aa-batteries", "12-pack", 2)
            .await
            .unwrap();
        assert_eq!(held.status, Status::WaitingForConfirmation, "{}", held.say);
        assert!(held.say.contains(spoken), "{}", held.say);
        let everything = serde_json::to_string(&held).unwrap();
        assert!(!everything.contains("declined"), "{everything}");
    }
}
