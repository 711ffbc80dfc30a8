//! Countersign over `/mcp`, as a household device uses it: every call carries a signed
//! attestation of who is speaking. Each test is a short story from the household's week, and
//! its name is the rule it shows.

mod common;

use common::device::{Device, HOST_KEY, Turn, ok, refusal, refusal_code, refusal_reason};
use common::harness;
use hearth_core::chain::Sealed;
use rusqlite::Connection;
use serde_json::{Value, json};

fn device() -> (Device, common::Harness) {
    let harness = harness(&[("COUNTERSIGN_HOST_KEY", HOST_KEY)]);
    (
        Device::new(harness.router.clone(), harness.clock.clone()),
        harness,
    )
}

fn propose(product: &str, variant: &str, quantity: u32) -> Value {
    json!({"product_id": product, "variant_id": variant, "quantity": quantity})
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_parent_ordering_what_they_said_from_a_known_merchant_is_placed_with_a_receipt() {
    let (device, _h) = device();
    let result = device
        .call(
            Turn::new("dana", &["order two packs of double A batteries"]),
            "propose_purchase",
            propose("aa-batteries", "12-pack", 2),
        )
        .await;
    let placed = ok(&result);
    assert_eq!(placed["outcome"], "placed");
    assert_eq!(placed["intent"]["verdict"], "match");
    assert_eq!(placed["order"]["total_cents"], 2598);
    let order_id = text(&placed["placed"]["order_id"]);
    assert!(order_id.starts_with("SIM-"), "{order_id}");
    assert_eq!(placed["placed"]["receipt"]["seq"], 1);
    assert_eq!(placed["placed"]["receipt"]["household_id"], "maple-house");
    assert_eq!(
        text(&placed["say"]),
        "Done. I ordered 2 of PowerCell AA Alkaline Batteries, 12 pack, from Corner Electrics, for $25.98."
    );
    assert_eq!(result["content"][0]["text"], placed["say"]);
}

#[tokio::test]
async fn a_yes_counts_only_from_the_same_person_in_a_later_turn_answering_that_question() {
    let (device, _h) = device();
    let held = device
        .call(
            Turn::new("dana", &["order two packs of double A batteries"]),
            "propose_purchase",
            propose("aa-batteries", "12-pack", 3),
        )
        .await;
    let held = ok(&held);
    assert_eq!(held["outcome"], "needs_confirmation");
    assert!(
        text(&held["reasons"][0]).starts_with("intent check: quantity"),
        "{held}"
    );
    assert!(text(&held["say"]).ends_with("Please answer yes or no."));
    let id = text(&held["request_id"]).to_owned();
    let args = json!({"request_id": id});

    // The same turn the question was asked in: the model confirmed on its own.
    let proposal_turn = device.next_turn();
    let same = device
        .call(
            Turn::new("dana", &["get the dino blocks"]).in_turn(&proposal_turn),
            "propose_purchase",
            propose("dino-blocks", "standard", 1),
        )
        .await;
    let other = ok(&same)["request_id"].as_str().unwrap().to_owned();
    let early = device
        .call(
            Turn::new("dana", &["yes"])
                .answering(&other)
                .in_turn(&proposal_turn),
            "confirm_purchase",
            json!({"request_id": other}),
        )
        .await;
    assert!(
        refusal_code(&early) == "answer_in_questions_turn",
        "{early}"
    );

    // Someone else's yes.
    let chris = device
        .call(
            Turn::new("chris", &["yes"]).answering(&id),
            "confirm_purchase",
            args.clone(),
        )
        .await;
    assert!(
        refusal_code(&chris) == "only_requester_confirms" && refusal(&chris).contains("Only Dana"),
        "{chris}"
    );

    // A yes to some other question.
    let stray = device
        .call(
            Turn::new("dana", &["yes"]),
            "confirm_purchase",
            args.clone(),
        )
        .await;
    assert!(
        refusal_code(&stray) == "answer_not_to_this_request",
        "{stray}"
    );

    // The dino blocks' question was asked after this one; hearing this one again makes it
    // the question Dana's answer can decide.
    let stale = device
        .call(
            Turn::new("dana", &["yes"]).answering(&id),
            "confirm_purchase",
            args.clone(),
        )
        .await;
    assert!(
        refusal_code(&stale) == "answer_not_to_newest_question",
        "{stale}"
    );
    let read = device
        .call(
            Turn::new("dana", &["what's waiting"]),
            "list_waiting",
            json!({}),
        )
        .await;
    assert_eq!(ok(&read)["read_aloud"]["request_id"], id.as_str());

    // Hesitation decides nothing.
    for words in ["yes, I think so", "yes?", "maybe"] {
        let unsure = device
            .call(
                Turn::new("dana", &[words]).answering(&id),
                "confirm_purchase",
                args.clone(),
            )
            .await;
        let unsure = ok(&unsure);
        assert_eq!(unsure["status"], "waiting_for_confirmation", "{words}");
        assert_eq!(unsure["result"], Value::Null);
        assert!(text(&unsure["say"]).starts_with("I didn't hear a clear yes or no"));
    }

    let yes = device
        .call(
            Turn::new("dana", &["yes, go ahead"]).answering(&id),
            "confirm_purchase",
            args.clone(),
        )
        .await;
    let yes = ok(&yes);
    assert_eq!(yes["result"], "placed");
    assert!(text(&yes["placed"]["order_id"]).starts_with("SIM-"));

    let again = device
        .call(
            Turn::new("dana", &["yes"]).answering(&id),
            "confirm_purchase",
            args,
        )
        .await;
    let again = ok(&again);
    assert_eq!(again["result"], Value::Null);
    assert_eq!(again["status"], "placed");
    assert_eq!(again["placed"]["order_id"], yes["placed"]["order_id"]);
}

#[tokio::test]
async fn a_clear_no_cancels_and_nothing_is_bought() {
    let (device, _h) = device();
    let held = device
        .call(
            Turn::new("dana", &["get the dino blocks"]),
            "propose_purchase",
            propose("dino-blocks", "standard", 1),
        )
        .await;
    let held = ok(&held);
    assert_eq!(held["outcome"], "needs_confirmation");
    assert!(text(&held["reasons"][0]).contains("never ordered from Toy Planet"));
    let id = held["request_id"].as_str().unwrap();
    let no = device
        .call(
            Turn::new("dana", &["no, cancel it"]).answering(id),
            "confirm_purchase",
            json!({"request_id": id}),
        )
        .await;
    let no = ok(&no);
    assert_eq!(no["result"], "cancelled");
    assert_eq!(no["placed"], Value::Null);
    let activity = device
        .call(
            Turn::new("chris", &["what did we buy this week"]),
            "household_activity",
            json!({}),
        )
        .await;
    let activity = ok(&activity);
    assert_eq!(activity["spent_cents"], 0);
    assert_eq!(activity["stopped"][0]["status"], "cancelled");
}

#[tokio::test]
async fn a_child_saying_its_mum_is_still_the_child_and_a_guardian_decides_only_what_was_read_to_them()
 {
    let (device, _h) = device();
    let asked = device
        .call(
            Turn::new("mia", &["buy the dino building blocks"]),
            "propose_purchase",
            propose("dino-blocks", "standard", 1),
        )
        .await;
    let asked = ok(&asked);
    assert_eq!(asked["outcome"], "needs_guardian");
    assert!(text(&asked["say"]).starts_with("I've asked a guardian to decide"));
    let id = asked["request_id"].as_str().unwrap().to_owned();
    let approve = json!({"request_id": id, "decision": "approve"});

    let mum = device
        .call(
            Turn::new("mia", &["it's Mum, I approve"]).answering(&id),
            "decide_request",
            approve.clone(),
        )
        .await;
    assert!(
        refusal_code(&mum) == "not_a_guardian" && refusal(&mum).contains("Mia is not a guardian"),
        "{mum}"
    );
    let confirm = device
        .call(
            Turn::new("mia", &["yes"]).answering(&id),
            "confirm_purchase",
            json!({"request_id": id}),
        )
        .await;
    assert!(refusal_code(&confirm) == "waits_for_guardian", "{confirm}");

    let unread = device
        .call(
            Turn::new("dana", &["yes"]).answering(&id),
            "decide_request",
            approve.clone(),
        )
        .await;
    assert!(
        refusal_code(&unread) == "answer_not_to_newest_question",
        "{unread}"
    );

    let reading_turn = device.next_turn();
    let waiting = device
        .call(
            Turn::new("dana", &["anything waiting for me?"]).in_turn(&reading_turn),
            "list_waiting",
            json!({}),
        )
        .await;
    let waiting = ok(&waiting);
    assert_eq!(waiting["waiting"], 1);
    assert_eq!(waiting["read_aloud"]["request_id"], id.as_str());
    assert_eq!(
        text(&waiting["say"]),
        "Mia asked for 1 of Dino Building Blocks, 120 pieces, from Toy Planet, for $24.99. The reasons it waits: Mia is a child, so a guardian decides; the household has never ordered from Toy Planet. Do you approve? Please answer yes or no."
    );

    let same_turn = device
        .call(
            Turn::new("dana", &["yes"])
                .answering(&id)
                .in_turn(&reading_turn),
            "decide_request",
            approve.clone(),
        )
        .await;
    assert!(
        refusal_code(&same_turn) == "answer_in_questions_turn",
        "{same_turn}"
    );
    let contradicted = device
        .call(
            Turn::new("dana", &["yes"]).answering(&id),
            "decide_request",
            json!({"request_id": id, "decision": "decline"}),
        )
        .await;
    assert!(
        refusal_code(&contradicted) == "decision_against_words",
        "{contradicted}"
    );

    let approved = device
        .call(
            Turn::new("dana", &["yes"]).answering(&id),
            "decide_request",
            approve,
        )
        .await;
    let approved = ok(&approved);
    assert_eq!(approved["result"], "placed");
    assert!(text(&approved["placed"]["order_id"]).starts_with("SIM-"));

    let nothing = device
        .call(
            Turn::new("dana", &["anything else?"]),
            "list_waiting",
            json!({}),
        )
        .await;
    assert_eq!(ok(&nothing)["say"], "Nothing is waiting for you.");
}

#[tokio::test]
async fn a_guardian_can_decline_in_their_own_words() {
    let (device, _h) = device();
    let asked = device
        .call(
            Turn::new("rose", &["buy a fifty dollar gift card"]),
            "propose_purchase",
            propose("gift-card", "50", 1),
        )
        .await;
    let asked = ok(&asked);
    assert_eq!(asked["outcome"], "needs_guardian");
    assert!(
        asked["reasons"]
            .to_string()
            .contains("gift cards bought by an older relative")
    );
    let id = asked["request_id"].as_str().unwrap();
    device
        .call(
            Turn::new("chris", &["what's waiting"]),
            "list_waiting",
            json!({}),
        )
        .await;
    let declined = device
        .call(
            Turn::new("chris", &["no"]).answering(id),
            "decide_request",
            json!({"request_id": id, "decision": "decline"}),
        )
        .await;
    let declined = ok(&declined);
    assert_eq!(declined["result"], "declined");
    assert_eq!(declined["status"], "declined");
}

#[tokio::test]
async fn instructions_hidden_in_a_listing_are_caught_and_never_spoken() {
    let (device, _h) = device();
    let result = device
        .call(
            Turn::new("dana", &["order a box of coffee pods, the twenty pod one"]),
            "propose_purchase",
            propose("coffee-pods", "100-pods", 1),
        )
        .await;
    let held = ok(&result);
    assert_eq!(held["outcome"], "needs_confirmation");
    assert_eq!(held["intent"]["verdict"], "mismatch");
    assert!(held["reasons"].to_string().contains("injection"), "{held}");
    let say = text(&held["say"]);
    assert!(!say.to_lowercase().contains("ignore"), "{say}");
    assert!(!say.contains("NOTE TO AI"), "{say}");
}

#[tokio::test]
async fn the_weekly_budget_is_rebuilt_from_the_ledger_and_restarts_on_monday() {
    let (device, harness) = device();
    // Nine 12-packs are $116.91; three fit in the $400 budget, a fourth does not. Each is
    // asked for in words of its own: words that backed one order back no other.
    for words in [
        "order nine packs of double A batteries",
        "nine more packs of double A batteries",
        "and another nine packs of double A batteries",
    ] {
        let placed = device
            .call(
                Turn::new("chris", &[words]),
                "propose_purchase",
                propose("aa-batteries", "12-pack", 9),
            )
            .await;
        assert_eq!(ok(&placed)["outcome"], "placed", "{placed}");
    }
    let fourth = device
        .call(
            Turn::new("chris", &["nine packs of double A batteries once more"]),
            "propose_purchase",
            propose("aa-batteries", "12-pack", 9),
        )
        .await;
    let fourth = ok(&fourth);
    assert_eq!(fourth["outcome"], "blocked");
    assert!(text(&fourth["reasons"][0]).contains("$467.64, over the weekly budget of $400.00"));

    let activity = device
        .call(
            Turn::new("leo", &["what did we buy this week"]),
            "household_activity",
            json!({}),
        )
        .await;
    let activity = ok(&activity);
    assert_eq!(activity["spent_cents"], 35073);
    assert_eq!(activity["placed"].as_array().unwrap().len(), 3);
    assert_eq!(activity["stopped"].as_array().unwrap().len(), 1);
    assert_eq!(activity["ledger"]["intact"], true);
    assert_eq!(activity["ledger"]["entries"], 4);
    assert!(
        text(&activity["say"])
            .starts_with("This week 3 orders were placed for $350.73 of the $400.00 budget")
    );

    harness.clock.advance(time::Duration::days(7));
    let next_week = device
        .call(
            Turn::new("leo", &["and now?"]),
            "household_activity",
            json!({}),
        )
        .await;
    assert_eq!(ok(&next_week)["spent_cents"], 0);
    let fifth = device
        .call(
            Turn::new("chris", &["please order nine packs of double A batteries"]),
            "propose_purchase",
            propose("aa-batteries", "12-pack", 9),
        )
        .await;
    assert_eq!(ok(&fifth)["outcome"], "placed");
}

#[tokio::test]
async fn a_waiting_request_can_be_answered_for_a_day_and_not_a_second_more() {
    let (device, harness) = device();
    let mut ids = Vec::new();
    for (words, product, variant) in [
        ("get the dino blocks", "dino-blocks", "standard"),
        ("buy the garden hose", "garden-hose", "15m"),
    ] {
        let held = device
            .call(
                Turn::new("dana", &[words]),
                "propose_purchase",
                propose(product, variant, 1),
            )
            .await;
        assert_eq!(ok(&held)["status"], "waiting_for_confirmation");
        ids.push(ok(&held)["request_id"].as_str().unwrap().to_owned());
    }
    let answer = |id: &str| {
        let id = id.to_owned();
        let device = &device;
        async move {
            device
                .call(
                    Turn::new("dana", &["yes"]).answering(&id),
                    "confirm_purchase",
                    json!({"request_id": id}),
                )
                .await
        }
    };
    // An answer must follow its question closely, so the question is read again first.
    harness
        .clock
        .advance(time::Duration::hours(24) - time::Duration::seconds(10));
    let read = device
        .call(
            Turn::new("dana", &["what's waiting"]),
            "list_waiting",
            json!({}),
        )
        .await;
    assert_eq!(ok(&read)["read_aloud"]["request_id"], ids[0].as_str());
    harness.clock.advance(time::Duration::seconds(10));
    let in_time = answer(&ids[0]).await;
    assert_eq!(ok(&in_time)["result"], "placed");
    harness.clock.advance(time::Duration::seconds(1));
    let late = answer(&ids[1]).await;
    let late = ok(&late);
    assert_eq!(late["status"], "expired");
    assert_eq!(late["result"], Value::Null);
}

#[tokio::test]
async fn tools_that_act_or_reveal_refuse_without_a_valid_attestation_and_say_why() {
    let (device, harness) = device();
    let acting = [
        ("propose_purchase", propose("aa-batteries", "4-pack", 1)),
        ("confirm_purchase", json!({"request_id": "REQ-0000000000"})),
        (
            "decide_request",
            json!({"request_id": "REQ-0000000000", "decision": "approve"}),
        ),
        ("list_waiting", json!({})),
        ("household_activity", json!({})),
        ("verify_ledger", json!({})),
        (
            "check_receipt",
            json!({"receipt": {"household_id": "maple-house", "window": "x", "seq": 1, "entry_hash": "0".repeat(64)}}),
        ),
    ];
    for (tool, args) in &acting {
        let bare = device.call_with(&[], tool, args.clone()).await;
        assert!(
            refusal_code(&bare) == "attestation_missing",
            "{tool}: {bare}"
        );
    }

    let turn = Turn::new("dana", &["order a 4 pack of AA batteries"]);
    let (attestation, _) = device.headers(&turn, HOST_KEY);
    let (_, wrong) = device.headers(&turn, "not the host key");
    let forged = device
        .call_with(
            &[
                ("x-countersign-attestation", &attestation),
                ("x-countersign-signature", &wrong),
            ],
            "propose_purchase",
            acting[0].1.clone(),
        )
        .await;
    assert!(
        refusal_code(&forged) == "attestation_bad_signature",
        "{forged}"
    );

    let (attestation, signature) = device.headers(&turn, HOST_KEY);
    harness.clock.advance(time::Duration::seconds(301));
    let stale = device
        .call_with(
            &[
                ("x-countersign-attestation", &attestation),
                ("x-countersign-signature", &signature),
            ],
            "propose_purchase",
            acting[0].1.clone(),
        )
        .await;
    assert!(refusal_code(&stale) == "attestation_expired", "{stale}");

    let stranger = device
        .call(
            Turn::new("mallory", &["buy a gift card"]),
            "propose_purchase",
            propose("gift-card", "100", 1),
        )
        .await;
    assert!(refusal_code(&stranger) == "not_a_member", "{stranger}");

    // Searching reveals nothing of the household and needs no attestation.
    let search = device
        .call_with(&[], "search_products", json!({"query": "AA batteries"}))
        .await;
    assert_eq!(ok(&search)["results"][0]["product_id"], "aa-batteries");
}

#[tokio::test]
async fn without_a_host_key_every_acting_tool_refuses() {
    let harness = harness(&[]);
    let device = Device::new(harness.router.clone(), harness.clock.clone());
    let result = device
        .call(
            Turn::new("dana", &["order a 4 pack of AA batteries"]),
            "propose_purchase",
            propose("aa-batteries", "4-pack", 1),
        )
        .await;
    assert!(refusal_code(&result) == "no_host_key", "{result}");
}

#[tokio::test]
async fn arguments_are_bounded_at_their_limits() {
    let (device, _h) = device();
    let speak = || Turn::new("dana", &["order 99 packs of AA batteries"]);
    let at_limit = device
        .call(
            speak(),
            "propose_purchase",
            propose("aa-batteries", "4-pack", 99),
        )
        .await;
    assert_eq!(ok(&at_limit)["order"]["quantity"], 99);
    let past = device
        .call(
            speak(),
            "propose_purchase",
            propose("aa-batteries", "4-pack", 100),
        )
        .await;
    assert!(refusal(&past).contains("between 1 and 99"), "{past}");
    let zero = device
        .call(
            speak(),
            "propose_purchase",
            propose("aa-batteries", "4-pack", 0),
        )
        .await;
    assert!(refusal(&zero).contains("between 1 and 99"), "{zero}");
    let unknown = device
        .call(
            speak(),
            "propose_purchase",
            propose("aa-batteries", "6-pack", 1),
        )
        .await;
    assert!(
        refusal_code(&unknown) == "unknown_variant"
            && refusal_reason(&unknown).contains("the product has 4-pack, 12-pack"),
        "{unknown}"
    );
    let extra = device
        .call(speak(), "propose_purchase", json!({"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1, "member_id": "dana"}))
        .await;
    assert!(
        refusal(&extra).contains("unknown field `member_id`"),
        "{extra}"
    );

    let query = "a".repeat(200);
    let search = device
        .call_with(&[], "search_products", json!({"query": query}))
        .await;
    assert!(ok(&search)["results"].as_array().unwrap().is_empty());
    let long = device
        .call_with(
            &[],
            "search_products",
            json!({"query": format!("{query}a")}),
        )
        .await;
    assert!(
        refusal_code(&long) == "search_too_long" && refusal_reason(&long).contains("limit is 200"),
        "{long}"
    );
    let ten = device
        .call_with(
            &[],
            "search_products",
            json!({"query": "the", "max_results": 10}),
        )
        .await;
    assert_eq!(ok(&ten)["results"].as_array().unwrap().len(), 10);
    let eleven = device
        .call_with(
            &[],
            "search_products",
            json!({"query": "the", "max_results": 11}),
        )
        .await;
    assert!(
        refusal_code(&eleven) == "search_results_out_of_range",
        "{eleven}"
    );

    let id = "R".repeat(64);
    let at = device
        .call(speak(), "confirm_purchase", json!({"request_id": id}))
        .await;
    assert!(refusal_code(&at) == "unknown_request", "{at}");
    let over = device
        .call(
            speak(),
            "confirm_purchase",
            json!({"request_id": format!("{id}R")}),
        )
        .await;
    assert!(refusal_code(&over) == "request_id_out_of_range", "{over}");
}

#[tokio::test]
async fn the_household_rules_are_a_resource() {
    let (device, _h) = device();
    let list = device
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list"}),
            &[],
        )
        .await;
    let resources = &list.body["result"]["resources"];
    assert_eq!(
        resources[0]["uri"], "countersign://household/rules",
        "{}",
        list.raw
    );
    assert_eq!(resources[0]["mimeType"], "application/json");
    let read_rules = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "countersign://household/rules"}});
    // The rules name the members, their roles and limits: like every tool that reveals
    // household data, reading them needs a signed speaker of this household.
    let unsigned = device.post(&read_rules, &[]).await;
    assert_eq!(unsigned.body["error"]["code"], -32600, "{}", unsigned.raw);
    assert!(
        unsigned.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("without knowing who is speaking"),
        "{}",
        unsigned.raw
    );
    assert!(!unsigned.raw.contains("Grandma Rose"), "{}", unsigned.raw);
    let stranger = Turn::new("mallory", &["what are the rules"]);
    let (attestation, signature) = device.headers(&stranger, HOST_KEY);
    let signed_stranger = device
        .post(
            &read_rules,
            &[
                ("x-countersign-attestation", &attestation),
                ("x-countersign-signature", &signature),
            ],
        )
        .await;
    assert_eq!(signed_stranger.body["error"]["code"], -32600);
    let (attestation, signature) =
        device.headers(&Turn::new("mia", &["what are the rules"]), HOST_KEY);
    let read = device
        .post(
            &read_rules,
            &[
                ("x-countersign-attestation", &attestation),
                ("x-countersign-signature", &signature),
            ],
        )
        .await;
    let contents = &read.body["result"]["contents"][0];
    let rules: Value = serde_json::from_str(text(&contents["text"])).unwrap();
    assert_eq!(rules["weekly_budget_cents"], 40000);
    assert_eq!(rules["roles"]["child"]["per_order_limit_cents"], 3000);
    assert_eq!(
        rules["gift_cards_need_guardian_for"],
        json!(["older_relative"])
    );
    let missing = device
        .post(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "countersign://household/secrets"}}),
            &[],
        )
        .await;
    assert_eq!(missing.body["error"]["code"], -32002, "{}", missing.raw);
}

// ---- tampering ----------------------------------------------------------------------------

/// Places three orders and returns their receipts.
async fn three_orders(device: &Device) -> Vec<Value> {
    let mut receipts = Vec::new();
    for words in [
        "order a 4 pack of AA batteries",
        "order 6 rolls of paper towels",
        "buy the unscented laundry detergent",
    ] {
        let (product, variant) = match words {
            w if w.contains("AA") => ("aa-batteries", "4-pack"),
            w if w.contains("towels") => ("paper-towels", "6-rolls"),
            _ => ("laundry-detergent", "unscented-2l"),
        };
        let placed = device
            .call(
                Turn::new("dana", &[words]),
                "propose_purchase",
                propose(product, variant, 1),
            )
            .await;
        assert_eq!(ok(&placed)["outcome"], "placed", "{placed}");
        receipts.push(ok(&placed)["placed"]["receipt"].clone());
    }
    receipts
}

fn ledger_rows(db: &Connection) -> Vec<(String, String, i64, String, String)> {
    let mut statement = db
        .prepare("SELECT scope, name, seq, hash, body FROM chain_records WHERE scope LIKE '%/countersign' ORDER BY seq")
        .unwrap();
    statement
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

async fn check(device: &Device, receipt: &Value) -> Value {
    let result = device
        .call(
            Turn::new("dana", &["check my receipt"]),
            "check_receipt",
            json!({"receipt": receipt}),
        )
        .await;
    ok(&result).clone()
}

#[tokio::test]
async fn an_edited_entry_is_named_and_stops_every_purchase() {
    let (device, harness) = device();
    three_orders(&device).await;
    let db = Connection::open(harness.db_path()).unwrap();
    db.execute(
        "UPDATE chain_records SET body = replace(body, '\"total_cents\":1149', '\"total_cents\":149') WHERE seq = 2 AND scope LIKE '%/countersign'",
        [],
    )
    .unwrap();

    let verify = device
        .call(
            Turn::new("chris", &["is the ledger intact?"]),
            "verify_ledger",
            json!({}),
        )
        .await;
    let verify = ok(&verify);
    assert_eq!(verify["check"]["intact"], false);
    assert_eq!(verify["check"]["first_bad_entry"], 2);
    assert_eq!(
        text(&verify["say"]),
        "The ledger has been altered: entry 2 fails the check (its content does not match its hash)."
    );

    let activity = device
        .call(
            Turn::new("chris", &["what did we buy?"]),
            "household_activity",
            json!({}),
        )
        .await;
    let activity = ok(&activity);
    assert_eq!(activity["ledger"]["intact"], false);
    assert_eq!(activity["placed"], json!([]));
    assert!(text(&activity["say"]).starts_with("I can't tell you what was bought"));

    let refused = device
        .call(
            Turn::new("dana", &["order a 4 pack of AA batteries"]),
            "propose_purchase",
            propose("aa-batteries", "4-pack", 1),
        )
        .await;
    assert!(
        refusal_code(&refused) == "ledger_tampered"
            && refusal_reason(&refused).contains("failed its check at entry 2"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_kept_receipt_catches_deleted_newest_entries_that_the_chain_cannot() {
    let (device, harness) = device();
    let receipts = three_orders(&device).await;
    let db = Connection::open(harness.db_path()).unwrap();
    // Delete the newest entry and point the head at the one before: the chain is consistent.
    let rows = ledger_rows(&db);
    let (scope, name, _, second_hash, _) = rows[1].clone();
    db.execute(
        "DELETE FROM chain_records WHERE scope = ?1 AND seq = 3",
        [&scope],
    )
    .unwrap();
    db.execute(
        "UPDATE chain_heads SET last_seq = 2, last_hash = ?1 WHERE scope = ?2 AND name = ?3",
        [&second_hash, &scope, &name],
    )
    .unwrap();

    let verify = device
        .call(
            Turn::new("dana", &["check the ledger"]),
            "verify_ledger",
            json!({}),
        )
        .await;
    assert_eq!(
        ok(&verify)["check"]["intact"],
        true,
        "the chain alone cannot see it"
    );
    let kept = check(&device, &receipts[2]).await;
    assert_eq!(kept["verdict"], "history_deleted");
    assert_eq!(kept["valid"], false);
    assert!(text(&kept["say"]).contains("History was deleted"));
    let older = check(&device, &receipts[0]).await;
    assert_eq!(older["verdict"], "matches");
    assert_eq!(older["valid"], true);
}

#[tokio::test]
async fn a_kept_receipt_catches_history_rewritten_with_fresh_hashes() {
    let (device, harness) = device();
    let receipts = three_orders(&device).await;
    let db = Connection::open(harness.db_path()).unwrap();
    // Rewrite entry 1 (a cheaper order) and re-seal every entry after it, head included.
    let rows = ledger_rows(&db);
    let mut prev: Option<String> = None;
    for (scope, name, seq, _, body) in &rows {
        let mut entry: Value = serde_json::from_str(body).unwrap();
        if *seq == 1 {
            entry["total_cents"] = json!(1);
        }
        entry["prev"] = json!(prev);
        let sealed = Sealed::new(*seq as u64, &entry);
        db.execute(
            "UPDATE chain_records SET hash = ?1, body = ?2 WHERE scope = ?3 AND seq = ?4",
            rusqlite::params![sealed.hash, sealed.body, scope, seq],
        )
        .unwrap();
        db.execute(
            "UPDATE chain_heads SET last_hash = ?1 WHERE scope = ?2 AND name = ?3 AND last_seq = ?4",
            rusqlite::params![sealed.hash, scope, name, seq],
        )
        .unwrap();
        prev = Some(sealed.hash);
    }
    let verify = device
        .call(
            Turn::new("dana", &["check the ledger"]),
            "verify_ledger",
            json!({}),
        )
        .await;
    assert_eq!(
        ok(&verify)["check"]["intact"],
        true,
        "a full rewrite re-verifies"
    );
    for receipt in &receipts {
        let checked = check(&device, receipt).await;
        assert_eq!(checked["verdict"], "history_rewritten", "{receipt}");
    }
}

#[tokio::test]
async fn receipts_for_another_household_or_malformed_are_told_apart() {
    let (device, _h) = device();
    let receipts = three_orders(&device).await;
    let mut other = receipts[0].clone();
    other["household_id"] = json!("elm-house");
    assert_eq!(check(&device, &other).await["verdict"], "other_household");
    let mut bad = receipts[0].clone();
    bad["entry_hash"] = json!("abc");
    let result = device
        .call(
            Turn::new("dana", &["check"]),
            "check_receipt",
            json!({"receipt": bad}),
        )
        .await;
    assert!(
        refusal_code(&result) == "receipt_hash_malformed",
        "{result}"
    );
}

/// Over HTTP, as the review reproduced it: the same signed attestation sent again with the
/// client-credentials token acts for nothing there, and words carried into later turns back
/// one order.
#[tokio::test]
async fn one_attestation_acts_for_one_credential_and_carried_words_for_one_order() {
    let (device, harness) = device();
    let turn = Turn::new("dana", &["order two packs of double A batteries"]).in_turn("replayed");
    let (attestation, signature) = device.headers(&turn, HOST_KEY);
    let signed = [
        ("x-countersign-attestation", attestation.as_str()),
        ("x-countersign-signature", signature.as_str()),
    ];
    let placed = device
        .call_with(
            &signed,
            "propose_purchase",
            propose("aa-batteries", "12-pack", 2),
        )
        .await;
    assert_eq!(ok(&placed)["outcome"], "placed");
    let client = common::access_token(&harness.router, None).await;
    let bearer = format!("Bearer {client}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "propose_purchase", "arguments": propose("aa-batteries", "12-pack", 2)}});
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json"),
    ];
    headers.extend_from_slice(&signed);
    let replayed = common::request(&harness.router, "POST", "/mcp", &headers, &body.to_string())
        .await
        .body["result"]
        .clone();
    assert_eq!(refusal_code(&replayed), "turn_used_elsewhere", "{replayed}");

    // The same words carried into two later turns, beside new ones, place nothing more.
    for newest in ["thanks", "great"] {
        harness.clock.advance(time::Duration::seconds(20));
        let carried = device
            .call(
                Turn::new("dana", &["order two packs of double A batteries", newest]),
                "propose_purchase",
                propose("aa-batteries", "12-pack", 2),
            )
            .await;
        assert_eq!(ok(&carried)["outcome"], "needs_confirmation", "{carried}");
    }
    let activity = device
        .call(
            Turn::new("leo", &["what did we buy this week"]),
            "household_activity",
            json!({}),
        )
        .await;
    assert_eq!(ok(&activity)["placed"].as_array().unwrap().len(), 1);
}
