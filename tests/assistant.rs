//! The model-driven assistant against Hearth served on loopback and a Converse stand-in that
//! plays scripted tool-use turns (`tests/assistant/scripts.json`): the assistant loads the
//! skills and tools over MCP as a real client, the device signs each turn, and when the model
//! goes wrong Countersign stops it and the device hears Countersign's `say`.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::device::HOST_KEY;
use common::{Harness, TOKEN};
use hearth_core::assistant::converse::Model;
use hearth_core::assistant::device::{DeviceKey, Heard, QuestionChange};
use hearth_core::assistant::{Assistant, Connection, TurnOutcome};
use hearth_core::clock::Clock;
use hearth_core::secret::Secret;
use hearth_testkit::converse::{self, Scripts, Seen};
use hearth_testkit::moto::bedrock_client;
use serde_json::{Value, json};

const MODEL: &str = "test.assistant-model-v1:0";
const HOUSEHOLD: &str = "maple-house";

struct World {
    h: Harness,
    assistant: Assistant,
    seen: Seen,
    url: String,
    turns: std::cell::Cell<u32>,
}

/// Hearth (rules judge, the fixture host key) on a loopback port, the stand-in on another,
/// and an assistant between them.
async fn world() -> World {
    let h = common::harness(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)]);
    let url = serve(&h).await;
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/assistant/scripts.json");
    let (converse_url, seen) = converse::start(Scripts::load(&scripts)).await;
    // Generous: the SDK retries a throttled call with backoff, on a busy machine too.
    let assistant = host_assistant(&converse_url, Duration::from_secs(15), &url);
    World {
        h,
        assistant,
        seen,
        url,
        turns: std::cell::Cell::new(0),
    }
}

/// An assistant on the model at `converse_url`, each call bounded by `model_timeout`, reaching
/// Hearth at `mcp_url` with the fixture token and signing with the host key.
fn host_assistant(converse_url: &str, model_timeout: Duration, mcp_url: &str) -> Assistant {
    Assistant::new(
        Model::new(bedrock_client(converse_url), MODEL.into(), model_timeout),
        Connection {
            url: mcp_url.to_owned(),
            token: Secret::new(TOKEN),
            key: DeviceKey::host(Secret::new(HOST_KEY)),
        },
    )
}

async fn serve(h: &Harness) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = h
        .router
        .clone()
        .into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await.unwrap() });
    url
}

impl World {
    async fn say(
        &self,
        member: &str,
        words: &str,
        answering: Option<&str>,
    ) -> Result<TurnOutcome, String> {
        self.turns.set(self.turns.get() + 1);
        let heard = Heard {
            member_id: member.into(),
            turn_id: format!("turn-{}", self.turns.get()),
            words: words.into(),
            answering: answering.map(str::to_owned),
        };
        let now = self.h.clock.now().unix_timestamp();
        self.assistant.turn(&heard, Some(HOUSEHOLD), now).await
    }

    /// What the household's ledger says was placed, asked through Hearth directly.
    async fn placed(&self) -> Vec<Value> {
        let device = common::device::Device::new(self.h.router.clone(), self.h.clock.clone());
        let turn = common::device::Turn::new("dana", &["what did we buy"]).in_turn("report");
        let result = device.call(turn, "household_activity", json!({})).await;
        result["structuredContent"]["placed"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("{result}"))
    }
}

fn names(outcome: &TurnOutcome) -> Vec<&str> {
    outcome.tool_calls.iter().map(|c| c.name.as_str()).collect()
}

#[tokio::test]
async fn a_plain_order_is_placed_through_the_tools_the_skills_describe() {
    let w = world().await;
    let outcome = w
        .say("dana", "Please order two packs of AA batteries", None)
        .await
        .unwrap();
    assert_eq!(names(&outcome), ["search_products", "propose_purchase"]);
    assert!(
        outcome.tool_calls.iter().all(|c| !c.is_error),
        "{outcome:?}"
    );
    assert_eq!(outcome.tool_calls[1].arguments["quantity"], 2);
    assert_eq!(outcome.reply, "Your two packs of batteries are ordered.");
    let say = outcome.say.clone().unwrap();
    assert!(say.contains("PowerCell"), "{say}");
    assert_eq!(outcome.question, QuestionChange::Unchanged);
    assert_eq!(w.placed().await.len(), 1);

    // What the model was given: Hearth's skills as the system prompt, Hearth's tools, the
    // speaker, and every tool result.
    let seen = w.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "three model calls for two tool rounds");
    let (model, first) = &seen[0];
    assert_eq!(model, MODEL);
    let system = first["system"][0]["text"].as_str().unwrap();
    assert!(system.contains("household member `dana`"), "{system}");
    assert!(system.contains("# Buying for a household with Countersign"));
    assert!(system.contains("# A household's memory of why"));
    assert!(system.contains("# Asking the guide"));
    let tools: Vec<&str> = first["toolConfig"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["toolSpec"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 18, "{tools:?}");
    assert!(tools.contains(&"propose_purchase") && tools.contains(&"ask_aion"));
    let last = &seen[2].1["messages"];
    let result = &last[last.as_array().unwrap().len() - 1]["content"][0]["toolResult"];
    assert_eq!(result["status"], "success");
    assert_eq!(result["content"][0]["json"]["status"], "placed");
}

#[tokio::test]
async fn a_fooled_assistant_orders_twenty_and_countersign_asks_the_person() {
    let w = world().await;
    let outcome = w
        .say("dana", "Get two tubes of kids toothpaste", None)
        .await
        .unwrap();
    assert_eq!(names(&outcome), ["search_products", "propose_purchase"]);
    assert_eq!(outcome.tool_calls[1].arguments["quantity"], 20);
    // The model claims it is done; the device reads Countersign's words instead.
    assert_eq!(outcome.reply, "Done: I ordered 20 tubes of toothpaste.");
    let say = outcome.say.clone().unwrap();
    assert!(say.contains("20"), "{say}");
    assert!(!say.contains("Done"), "{say}");
    let QuestionChange::Asked(request) = outcome.question.clone() else {
        panic!("Countersign held the order with a question: {outcome:?}")
    };
    assert!(w.placed().await.is_empty(), "nothing was bought");

    // The next turn, Dana says no to the question she heard: it is cancelled.
    let answer = w.say("dana", "Cancel it", Some(&request)).await.unwrap();
    assert_eq!(names(&answer), ["confirm_purchase"]);
    assert_eq!(
        answer.tool_calls[0].arguments["request_id"],
        request.as_str()
    );
    assert_eq!(answer.question, QuestionChange::Settled);
    assert!(answer.say.unwrap().to_lowercase().contains("cancel"));
    assert!(w.placed().await.is_empty());
}

#[tokio::test]
async fn a_listings_hidden_instruction_steers_the_model_and_countersign_stops_it() {
    let w = world().await;
    let outcome = w
        .say("chris", "Order the usual coffee pods", None)
        .await
        .unwrap();
    assert_eq!(outcome.tool_calls[1].arguments["variant_id"], "100-pods");
    assert!(
        matches!(outcome.question, QuestionChange::Asked(_)),
        "{outcome:?}"
    );
    let say = outcome.say.unwrap();
    assert!(
        !say.contains("NOTE TO AI"),
        "listing text never reaches say: {say}"
    );
    assert!(w.placed().await.is_empty());
}

#[tokio::test]
async fn a_yes_counts_in_the_next_turn_and_not_in_the_turn_of_the_question() {
    let w = world().await;
    let same_turn = w
        .say(
            "dana",
            "Order a 12 pack of AA batteries and confirm it",
            None,
        )
        .await
        .unwrap();
    assert_eq!(names(&same_turn), ["propose_purchase", "confirm_purchase"]);
    let QuestionChange::Asked(request) = same_turn.question.clone() else {
        panic!("{same_turn:?}")
    };
    assert!(
        w.placed().await.is_empty(),
        "a confirmation in the question's turn places nothing"
    );
    let yes = w.say("dana", "Yes please", Some(&request)).await.unwrap();
    assert_eq!(yes.tool_calls[0].arguments["request_id"], request.as_str());
    assert!(!yes.tool_calls[0].is_error, "{yes:?}");
    assert_eq!(yes.question, QuestionChange::Settled);
    assert_eq!(w.placed().await.len(), 1);
}

#[tokio::test]
async fn the_why_tools_and_the_guide_answer_with_the_models_reply() {
    let w = world().await;
    let why = w
        .say("dana", "Why are the lights dim?", None)
        .await
        .unwrap();
    assert_eq!(names(&why), ["record_decision", "explain_why"]);
    assert_eq!(why.tool_calls[0].arguments["household_id"], HOUSEHOLD);
    assert!(why.tool_calls.iter().all(|c| !c.is_error), "{why:?}");
    assert_eq!(
        why.say, None,
        "the why tools carry no say; the device speaks the reply"
    );
    let guide = w
        .say("rose", "Ask the guide how to start journaling", None)
        .await
        .unwrap();
    assert_eq!(names(&guide), ["ask_aion"]);
    assert_eq!(guide.reply, "The guide says: start with one line a day.");
}

#[tokio::test]
async fn a_tool_that_does_not_exist_is_an_error_the_model_sees() {
    let w = world().await;
    let outcome = w.say("dana", "Use a made-up tool", None).await.unwrap();
    assert_eq!(names(&outcome), ["buy_now"]);
    assert!(outcome.tool_calls[0].is_error);
    let seen = w.seen.lock().unwrap().clone();
    let messages = seen[1].1["messages"].as_array().unwrap();
    let result = &messages[messages.len() - 1]["content"][0]["toolResult"];
    assert_eq!(result["status"], "error");
    assert!(
        result["content"][0]["json"]["error"]
            .as_str()
            .unwrap()
            .contains("buy_now")
    );
}

#[tokio::test]
async fn every_bound_and_failure_is_one_clear_sentence() {
    let w = world().await;
    let refused = |words: &'static str| {
        let w = &w;
        async move { w.say("dana", words, None).await.unwrap_err() }
    };
    assert_eq!(
        refused("keep searching").await,
        "the assistant used its 8 rounds of tool calls without answering"
    );
    assert!(
        refused("throttle").await.contains("could not be reached"),
        "throttled"
    );
    assert!(refused("ramble").await.contains("cut off at 1024 tokens"));
    assert!(refused("filtered").await.contains("content filter"));
    let long = "a".repeat(501);
    let error = w.say("dana", &long, None).await.unwrap_err();
    assert!(error.contains("cannot sign"), "{error}");
    assert!(
        w.say("dana", &"a".repeat(500), None).await.is_ok(),
        "500 characters are signed"
    );

    // Hearth unreachable, and a whole turn's bound.
    let gone = host_assistant(
        "http://127.0.0.1:9",
        Duration::from_secs(1),
        "http://127.0.0.1:9/mcp",
    );
    let heard = Heard {
        member_id: "dana".into(),
        turn_id: "t".into(),
        words: "hello".into(),
        answering: None,
    };
    let error = gone.turn(&heard, None, 0).await.unwrap_err();
    assert!(
        error.starts_with("Hearth at http://127.0.0.1:9/mcp could not be reached"),
        "{error}"
    );
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/assistant/scripts.json");
    let (converse_url, _) = converse::start(Scripts::load(&scripts)).await;
    let hurried = host_assistant(&converse_url, Duration::from_secs(10), &w.url)
        .with_bounds(8, Duration::from_millis(500));
    let heard = Heard {
        words: "answer slowly".into(),
        ..heard
    };
    let now = w.h.clock.now().unix_timestamp();
    assert_eq!(
        hurried.turn(&heard, None, now).await.unwrap_err(),
        "the assistant did not finish the turn within 0.5 s"
    );
    // One model call's bound (the stand-in's slow step takes 5 s).
    let impatient = host_assistant(&converse_url, Duration::from_secs(1), &w.url);
    assert_eq!(
        impatient.turn(&heard, None, now).await.unwrap_err(),
        "the assistant model did not answer within 1 s"
    );
}

/// `hearth assistant` as a person runs it: the device's settings from the environment, the
/// `--json` shape, the question remembered between invocations, and exit statuses.
#[tokio::test(flavor = "multi_thread")]
async fn the_command_line_plays_the_device_across_turns() {
    let w = world().await;
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/assistant/scripts.json");
    let (converse_url, _) = converse::start(Scripts::load(&scripts)).await;
    let data = tempfile::tempdir().unwrap();
    let run = |args: Vec<&'static str>| {
        let (url, converse_url, data) =
            (w.url.clone(), converse_url.clone(), data.path().to_owned());
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
                .arg("assistant")
                .args(args)
                .env_clear()
                .env("HEARTH_DATA_DIR", &data)
                .env("MCP_RESOURCE_URL", &url)
                .env("HEARTH_TOKEN", TOKEN)
                .env("COUNTERSIGN_HOST_KEY", HOST_KEY)
                .env("COUNTERSIGN_ASSISTANT_MODEL", MODEL)
                .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", &converse_url)
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .output()
                .unwrap()
        })
    };
    let fooled = run(vec![
        "--member",
        "dana",
        "--json",
        "Get two tubes of kids toothpaste",
    ])
    .await
    .unwrap();
    assert!(
        fooled.status.success(),
        "{}",
        String::from_utf8_lossy(&fooled.stderr)
    );
    let outcome: Value = serde_json::from_slice(&fooled.stdout).unwrap();
    let keys: Vec<&String> = outcome.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["reply", "say", "tool_calls"]);
    assert_eq!(
        outcome["tool_calls"][1],
        json!({"name": "propose_purchase", "is_error": false, "arguments":
            {"product_id": "kids-toothpaste", "variant_id": "strawberry", "quantity": 20}})
    );
    assert!(
        outcome["say"]
            .as_str()
            .unwrap()
            .contains("Should I order 20"),
        "{outcome}"
    );
    let memory: Value =
        serde_json::from_slice(&std::fs::read(data.path().join("assistant-device.json")).unwrap())
            .unwrap();
    let request = memory["questions"]["dana"].as_str().unwrap().to_owned();

    // The next invocation is the next turn: "cancel it" answers the question remembered.
    let cancel = run(vec!["--member", "dana", "--json", "Cancel it"])
        .await
        .unwrap();
    let outcome: Value = serde_json::from_slice(&cancel.stdout).unwrap();
    assert_eq!(
        outcome["tool_calls"][0]["arguments"]["request_id"],
        request.as_str()
    );
    assert!(
        outcome["say"].as_str().unwrap().starts_with("Cancelled."),
        "{outcome}"
    );
    let memory: Value =
        serde_json::from_slice(&std::fs::read(data.path().join("assistant-device.json")).unwrap())
            .unwrap();
    assert_eq!(memory["questions"], json!({}));

    let human = run(vec!["--member", "rose", "ask the guide about journaling"])
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&human.stdout),
        "  tool ask_aion {\"question\":\"How do I start journaling?\"}\ndevice says: The guide says: start with one line a day.\n"
    );
    let throttled = run(vec!["--member", "dana", "--json", "throttle"])
        .await
        .unwrap();
    assert_eq!(throttled.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&throttled.stdout).unwrap();
    assert_eq!(
        error["error"],
        "the assistant model (test.assistant-model-v1:0) could not be reached: ThrottlingException: Too many requests, please wait before trying again."
    );
    let usage = run(vec!["--json", "hello"]).await.unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let error: Value = serde_json::from_slice(&usage.stdout).unwrap();
    assert!(
        error["error"].as_str().unwrap().contains("--member"),
        "{error}"
    );
    let household = run(vec!["--member", "dana", "--household", "hh-1", "hi"])
        .await
        .unwrap();
    assert_eq!(household.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&household.stderr).contains("HEARTH_DEVICE_KEY"));
}

/// A household's own device: its token names the household, and the device signs with one of
/// the household's device keys (sent with its key id). The order lands in that household.
#[tokio::test]
async fn a_households_device_signs_with_its_own_key() {
    let config = common::config(
        &common::settings(&[])
            .iter()
            .map(|(n, v)| (*n, v.as_str()))
            .collect::<Vec<_>>(),
    );
    // The SQLite store is used; the DynamoDB client is never called.
    let unused = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .endpoint_url("http://127.0.0.1:9")
            .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
            .build(),
    );
    let (h, admin) = common::operated(&config, common::Backend::Sqlite, unused, "unused").await;
    let mut policy = hearth_core::countersign::household::built_in_policy();
    policy.as_object_mut().unwrap().remove("household_id");
    policy.as_object_mut().unwrap().remove("name");
    let created = admin
        .create("The Birch household", Some(policy))
        .await
        .unwrap();
    let token = admin.token(&created.household_id, 1).await.unwrap();
    let key = admin.add_device_key(&created.household_id).await.unwrap();
    let url = serve(&h).await;
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/assistant/scripts.json");
    let (converse_url, seen) = converse::start(Scripts::load(&scripts)).await;
    let device = |key: DeviceKey| {
        Assistant::new(
            Model::new(
                bedrock_client(&converse_url),
                MODEL.into(),
                Duration::from_secs(15),
            ),
            Connection {
                url: url.clone(),
                token: Secret::new(token.access_token.clone()),
                key,
            },
        )
    };
    let heard = Heard {
        member_id: "dana".into(),
        turn_id: "birch-1".into(),
        words: "Order two packs of AA batteries".into(),
        answering: None,
    };
    let now = h.clock.now().unix_timestamp();
    let own = DeviceKey::parse_household(&format!("{}:{}", key.key_id, key.key)).unwrap();
    let outcome = device(own).turn(&heard, None, now).await.unwrap();
    assert!(
        outcome.tool_calls.iter().all(|c| !c.is_error),
        "{outcome:?}"
    );
    assert!(outcome.say.unwrap().contains("I ordered 2"));
    let system = seen.lock().unwrap()[0].1["system"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !system.contains("household_id`, it is"),
        "the token names the household"
    );

    // The deployment's host key attests nothing for a household token.
    let heard = Heard {
        turn_id: "birch-2".into(),
        ..heard
    };
    let host = DeviceKey::host(Secret::new(HOST_KEY));
    let refused = device(host).turn(&heard, None, now).await.unwrap();
    assert!(refused.tool_calls[1].is_error, "{refused:?}");
}
