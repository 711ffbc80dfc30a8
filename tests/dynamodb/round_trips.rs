//! What each call costs on DynamoDB: every tool and every OAuth grant, counted on moto through
//! the SDK client itself (`Moto::counted_dynamodb_client`): its requests by kind, its
//! sequential round trips (requests in flight together are one), and its read and write
//! request units by DynamoDB's sizing rules (`hearth_testkit::capacity`, from the items before
//! and after the call).
//!
//! The counts are the manual's table "What each call costs" (docs/src/reference/dynamodb.md,
//! between its generated markers): the test fails when the two differ, and
//! `HEARTH_UPDATE_COSTS=1 cargo test --test dynamodb round_trips` writes the table anew.
//!
//! Every request the calls make is also held to the role of the Lambda function that serves
//! its route: the same page's IAM table (generated from infra/template.yaml, which
//! tests/infra checks) must allow each action on each partition it touched, so a code change
//! that reads or writes something new fails here before it is denied on AWS.

use std::collections::{BTreeSet, HashMap};

use crate::common::oauth::{VERIFIER, encode_pairs, hidden_fields};
use crate::common::{CLIENT_ID, CLIENT_SECRET, Harness, RESOURCE, Reply, basic, request, settings};
use hearth_core::admin::Admin;
use hearth_core::auth::attestation::{Attestation, sign};
use hearth_core::clock::Clock;
use hearth_core::countersign::household::built_in_policy;
use hearth_testkit::capacity::{item_size, key_of, request_units, wire_item};
use hearth_testkit::moto::{Moto, unique_name};
use hearth_testkit::{Call, CallCounter};
use http::StatusCode;
use serde_json::{Value, json};

const REDIRECT: &str = "https://alexa.example/api/skill/link/M2TEST";
const HOST_KEY: &str = "round-trips-host-key";
const PAGE: &str = "docs/src/reference/dynamodb.md";
const TABLE: &str = "what-each-call-costs";
const IAM: &str = "iam";

/// One row of the table.
struct Row {
    call: &'static str,
    requests: String,
    rounds: usize,
    target: Target,
    read_units: f64,
    write_units: f64,
}

/// A call's most sequential round trips (issue 48's targets).
#[derive(Clone, Copy)]
enum Target {
    AtMost(usize),
    None,
}

/// The calls over their target today, each named in the manual's table as missed: a call
/// that passes its target and is not here fails the test, and so does one here that meets it.
const KNOWN_MISSES: &[&str] = &[];

/// Every read-only tool is one round trip.
const READ_ONLY: Target = Target::AtMost(1);
/// `propose_purchase` with a signed speaker, and the other Countersign calls that append to
/// the ledger the same way.
const ACTING: Target = Target::AtMost(3);

/// A server over its own table and the operator's `hearth admin` over it, with a household
/// and its device.
struct World {
    h: Harness,
    admin: Admin,
    household: String,
    key_id: String,
    key: String,
    turns: std::sync::atomic::AtomicU64,
}

/// The rows counted so far, and what they are counted with; and each table access, by the
/// function that made it.
struct Costs {
    counter: CallCounter,
    /// (function, IAM action, partition key), for every request a function made.
    access: BTreeSet<(&'static str, String, String)>,
    /// Straight to the table, uncounted: the items' sizes around each call.
    reader: aws_sdk_dynamodb::Client,
    table: String,
    rows: Vec<Row>,
    /// Each item's size in bytes as the last call left it, by key.
    sizes: HashMap<String, u64>,
}

impl World {
    async fn new() -> (Self, Costs) {
        let redirects = settings(&[
            ("MCP_REDIRECT_URIS", REDIRECT),
            ("COUNTERSIGN_HOST_KEY", HOST_KEY),
        ]);
        let vars: Vec<(&str, &str)> = redirects.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let config = crate::common::config(&vars);
        let moto = Moto::shared();
        let (client, counter) = moto.counted_dynamodb_client();
        let table = unique_name("hearth-round-trips");
        let (h, admin, _) = crate::common::operated_on_table(&config, client, &table).await;
        let mut policy = built_in_policy();
        let fields = policy.as_object_mut().unwrap();
        fields.remove("household_id");
        fields.remove("name");
        let household = admin
            .create("The Counted House", Some(policy))
            .await
            .unwrap()
            .household_id;
        let device = admin.add_device_key(&household).await.unwrap();
        let world = Self {
            h,
            admin,
            household,
            key_id: device.key_id,
            key: device.key,
            turns: Default::default(),
        };
        let mut costs = Costs {
            counter,
            access: BTreeSet::new(),
            reader: moto.dynamodb_client(),
            table,
            rows: Vec::new(),
            sizes: HashMap::new(),
        };
        costs.sizes = costs.scan().await;
        costs.operator();
        (world, costs)
    }
}

impl Costs {
    /// Every item's size, by key.
    async fn scan(&self) -> HashMap<String, u64> {
        let mut sizes = HashMap::new();
        let mut start = None;
        loop {
            let page = self
                .reader
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan the table");
            for item in page.items() {
                let item = wire_item(item);
                sizes.insert(key_text(&key_of(&json!({"Item": item}))), item_size(&item));
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return sizes;
            }
        }
    }

    /// The requests made since the last take were the operator's (`hearth admin`, with its
    /// own credentials): no function's role is asked for them.
    fn operator(&self) {
        self.counter.take_calls();
    }

    /// The requests made since the last take were `function`'s.
    fn served_by(&mut self, function: &'static str) {
        let calls = self.counter.take_calls();
        self.attribute(function, &calls);
    }

    fn attribute(&mut self, function: &'static str, calls: &[Call]) {
        for call in calls {
            for (action, partition) in table_access(call) {
                self.access.insert((function, action, partition));
            }
        }
    }

    /// Counts what `call` sends to the table as the row `name`, made by `function`.
    async fn count<T>(
        &mut self,
        name: &'static str,
        function: &'static str,
        target: Target,
        call: impl std::future::Future<Output = T>,
    ) -> T {
        let unattributed = self.counter.take_calls();
        assert!(
            unattributed.is_empty(),
            "requests made before {name} were not attributed to a function or the operator: {unattributed:?}"
        );
        let output = call.await;
        let calls = self.counter.take_calls();
        self.attribute(function, &calls);
        let after = self.scan().await;
        let before = std::mem::replace(&mut self.sizes, after);
        let stored = |key: &Value| {
            let key = key_text(key);
            let size = |sizes: &HashMap<String, u64>| sizes.get(&key).copied().unwrap_or(0);
            size(&before).max(size(&self.sizes))
        };
        let (read_units, write_units) = calls
            .iter()
            .map(|call| request_units(call, &stored))
            .fold((0.0, 0.0), |(r, w), (read, write)| (r + read, w + write));
        self.rows.push(Row {
            call: name,
            requests: by_kind(&calls),
            rounds: calls.iter().map(|call| call.round).max().unwrap_or(0),
            target,
            read_units,
            write_units,
        });
        output
    }
}

impl World {
    async fn form(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        request(&self.h.router, "POST", path, &all, body).await
    }

    async fn token(&self, body: &str) -> Value {
        let client = basic(CLIENT_ID, CLIENT_SECRET);
        let reply = self
            .form("/oauth/token", &[("authorization", &client)], body)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        reply.body
    }

    /// The household linked through the consent page with `link_code`: an authorization code.
    async fn authorization_code(&self, link_code: &str) -> String {
        let query =
            crate::common::oauth::authorize_query(CLIENT_ID, REDIRECT, "counted", "mcp:service");
        let page = request(
            &self.h.router,
            "GET",
            &format!("/oauth/authorize?{query}"),
            &[],
            "",
        )
        .await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.raw);
        let cookie = page.header("set-cookie").split(';').next().unwrap();
        let mut fields = hidden_fields(&page.raw);
        fields.insert("decision".into(), "allow".into());
        fields.insert("link_code".into(), link_code.to_owned());
        let reply = self
            .form(
                "/oauth/authorize",
                &[("cookie", cookie)],
                &crate::common::oauth::encode(&fields),
            )
            .await;
        assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.raw);
        let location = url::Url::parse(reply.header("location")).unwrap();
        let code = location.query_pairs().find(|(name, _)| name == "code");
        code.expect("an authorization code").1.into_owned()
    }

    /// A device attestation of `member` saying `words` (answering `request_id`, if given).
    fn spoken(&self, member: &str, words: &str, answering: Option<&str>) -> Vec<(String, String)> {
        let turn = self
            .turns
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let attestation = Attestation {
            member_id: member.into(),
            turn_id: format!("turn-{turn}"),
            utterances: vec![words.into()],
            issued_at: self.h.clock.now().unix_timestamp(),
            answering: answering.map(str::to_owned),
        };
        let encoded = attestation.encode();
        vec![
            ("x-countersign-signature".into(), sign(&self.key, &encoded)),
            ("x-countersign-attestation".into(), encoded),
            ("x-countersign-key-id".into(), self.key_id.clone()),
        ]
    }

    /// Calls `tool` with `token` and `headers`; the structured result of a call that went well.
    async fn call(
        &self,
        token: &str,
        tool: &str,
        arguments: Value,
        headers: &[(String, String)],
    ) -> Value {
        let bearer = format!("Bearer {token}");
        let mut all: Vec<(&str, &str)> = vec![
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        all.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let reply = request(&self.h.router, "POST", "/mcp", &all, &body.to_string()).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        let result = &reply.body["result"];
        assert_ne!(result["isError"], true, "{tool} failed: {result}");
        result["structuredContent"].clone()
    }

    /// A `/tts` request with `token`.
    async fn speak(&self, token: &str) {
        let bearer = format!("Bearer {token}");
        let headers = [
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
        ];
        let body = json!({"text": "The lights are dimmed."}).to_string();
        let reply = request(&self.h.router, "POST", "/tts", &headers, &body).await;
        assert_ne!(reply.status, StatusCode::TOO_MANY_REQUESTS, "{}", reply.raw);
        assert_ne!(reply.status, StatusCode::UNAUTHORIZED, "{}", reply.raw);
    }

    /// Revokes the family `refresh_token` belongs to (RFC 7009).
    async fn revoke(&self, refresh_token: &str) {
        let client = basic(CLIENT_ID, CLIENT_SECRET);
        let body = encode_pairs(&[("token", refresh_token)]);
        let reply = self
            .form("/oauth/revoke", &[("authorization", &client)], &body)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    }

    async fn tool_names(&self, token: &str) -> Vec<String> {
        let bearer = format!("Bearer {token}");
        let headers = [
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let reply = request(&self.h.router, "POST", "/mcp", &headers, &body.to_string()).await;
        let tools = reply.body["result"]["tools"].as_array().unwrap().clone();
        tools
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// What a request asks of the table, as IAM authorises it: each action (a transaction's
/// items one by one) on each partition key.
fn table_access(call: &Call) -> Vec<(String, String)> {
    let request = &call.request;
    let partition = |key: &Value| key["pk"]["S"].as_str().unwrap_or("?").to_owned();
    let keyed = |body: &Value| {
        if body["Item"].is_object() {
            partition(&body["Item"])
        } else {
            partition(&body["Key"])
        }
    };
    let each = |field: &Value| field.as_array().cloned().unwrap_or_default();
    match call.operation.as_str() {
        "GetItem" | "PutItem" | "UpdateItem" | "DeleteItem" => {
            vec![(call.operation.clone(), keyed(request))]
        }
        "Query" => vec![(
            "Query".into(),
            request["ExpressionAttributeValues"][":pk"]["S"]
                .as_str()
                .unwrap_or("?")
                .to_owned(),
        )],
        "BatchGetItem" => request["RequestItems"]
            .as_object()
            .into_iter()
            .flat_map(|tables| tables.values())
            .flat_map(|asked| each(&asked["Keys"]))
            .map(|key| ("BatchGetItem".to_owned(), partition(&key)))
            .collect(),
        "TransactWriteItems" | "TransactGetItems" => each(&request["TransactItems"])
            .iter()
            .filter_map(Value::as_object)
            .flat_map(|item| item.iter())
            .map(|(kind, body)| {
                let action = match kind.as_str() {
                    "Get" => "GetItem".to_owned(),
                    "ConditionCheck" => "ConditionCheckItem".to_owned(),
                    other => format!("{other}Item"),
                };
                (action, keyed(body))
            })
            .collect(),
        other => vec![(other.to_owned(), "*".to_owned())],
    }
}

/// The roles' table access, as the page's IAM table states it: (function, actions,
/// partition patterns, or `None` for any partition).
fn roles(page: &str) -> Vec<(String, Vec<String>, Option<Vec<String>>)> {
    let ticked = |cell: &str| -> Vec<String> {
        cell.split(',')
            .map(|part| part.trim().trim_matches('`').to_owned())
            .filter(|part| !part.is_empty())
            .collect()
    };
    generated(page, IAM)
        .lines()
        .skip(2)
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let partitions = (cells[4] != "any").then(|| ticked(cells[4]));
            (
                cells[1].trim_matches('`').to_owned(),
                ticked(cells[3]),
                partitions,
            )
        })
        .collect()
}

/// Whether `partition` is one an IAM `dynamodb:LeadingKeys` pattern names (`*` matching the
/// rest).
fn names(pattern: &str, partition: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => partition.starts_with(prefix),
        None => partition == pattern,
    }
}

/// The text between a page's generated markers named `name`.
fn generated<'a>(page: &'a str, name: &str) -> &'a str {
    let begin = format!("<!-- generated:{name}:begin -->\n");
    let end = format!("<!-- generated:{name}:end -->");
    page.split_once(&begin)
        .and_then(|(_, rest)| rest.split_once(&end))
        .map(|(text, _)| text)
        .unwrap_or_else(|| panic!("{PAGE} has no {name} markers"))
}

/// A key as a map key.
fn key_text(key: &Value) -> String {
    format!("{}\u{0}{}", key["pk"], key["sk"])
}

/// The calls' operations with how often each was sent, in the order first sent.
fn by_kind(calls: &[Call]) -> String {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for call in calls {
        match kinds.iter_mut().find(|(kind, _)| *kind == call.operation) {
            Some((_, n)) => *n += 1,
            None => kinds.push((&call.operation, 1)),
        }
    }
    if kinds.is_empty() {
        return "none".into();
    }
    kinds
        .iter()
        .map(|(kind, n)| match n {
            1 => format!("`{kind}`"),
            n => format!("{n} `{kind}`"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn order(product: &str, variant: &str, quantity: u32) -> Value {
    json!({"product_id": product, "variant_id": variant, "quantity": quantity})
}

/// The table, as the manual shows it.
fn table(rows: &[Row]) -> String {
    let mut text = String::from(
        "| Call | DynamoDB requests | Round trips | Target | Read units | Write units |\n\
         | --- | --- | --- | --- | --- | --- |\n",
    );
    for row in rows {
        let target = match row.target {
            Target::AtMost(most) if row.rounds <= most => format!("≤ {most}"),
            Target::AtMost(most) => format!("≤ {most}: **missed**"),
            Target::None => "–".into(),
        };
        text.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            row.call, row.requests, row.rounds, target, row.read_units, row.write_units
        ));
    }
    text
}

#[tokio::test]
async fn what_each_call_costs_is_the_manuals_table_and_within_its_targets() {
    let (w, mut costs) = World::new().await;

    // The OAuth grants, as a linked host meets them.
    let client_credentials =
        encode_pairs(&[("grant_type", "client_credentials"), ("resource", RESOURCE)]);
    costs
        .count(
            "`client_credentials` grant",
            "oauth",
            Target::AtMost(1),
            w.token(&client_credentials),
        )
        .await;
    let link_code = w.admin.link_code(&w.household).await.unwrap().code;
    costs.operator();
    let code = w.authorization_code(&link_code).await;
    costs.served_by("oauth");
    let exchange = encode_pairs(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("resource", RESOURCE),
    ]);
    let linked = costs
        .count(
            "`authorization_code` grant",
            "oauth",
            Target::None,
            w.token(&exchange),
        )
        .await;
    let refresh = encode_pairs(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", linked["refresh_token"].as_str().unwrap()),
        ("resource", RESOURCE),
    ]);
    let refreshed = costs
        .count(
            "`refresh_token` grant",
            "oauth",
            Target::AtMost(2),
            w.token(&refresh),
        )
        .await;
    let token = refreshed["access_token"].as_str().unwrap().to_owned();

    // Warm: the token's standing read and cached, the decision window and the ledger open.
    let decision = json!({"action": "dim the lights", "reason": "Movie time", "inputs": {}, "approver": "Dana"});
    w.call(&token, "record_decision", decision.clone(), &[])
        .await;
    let towels = w.spoken("dana", "buy 6 rolls of paper towels", None);
    w.call(
        &token,
        "propose_purchase",
        order("paper-towels", "6-rolls", 1),
        &towels,
    )
    .await;
    costs.served_by("mcp");

    // The why tools.
    let recorded = costs
        .count(
            "`record_decision`",
            "mcp",
            Target::AtMost(2),
            w.call(&token, "record_decision", decision, &[]),
        )
        .await;
    let trace_id = recorded["trace_id"].as_str().unwrap().to_owned();
    let reads = [
        (
            "`explain_why`",
            "explain_why",
            json!({"action": "dim the lights"}),
        ),
        (
            "`whats_changed`",
            "whats_changed",
            json!({"since": "2000-01-01T00:00:00Z"}),
        ),
        ("`get_trace`", "get_trace", json!({"trace_id": trace_id})),
        ("`prove_history`", "prove_history", json!({"from_size": 1})),
        ("`scholia_catalog`", "scholia_catalog", json!({})),
        (
            "`scholia_lookup`",
            "scholia_lookup",
            json!({"term": "claim"}),
        ),
        (
            "`scholia_lint_snippet`",
            "scholia_lint_snippet",
            json!({"snippet": "<claim id=\"c1\">the lights were dimmed</claim>"}),
        ),
        (
            "`scholia_lint_trace`",
            "scholia_lint_trace",
            json!({"snippet": "<claim id=\"c1\">the lights were dimmed</claim>"}),
        ),
        (
            "`ask_aion`",
            "ask_aion",
            json!({"question": "What should we cook tonight?"}),
        ),
        (
            "`search_products`",
            "search_products",
            json!({"query": "batteries"}),
        ),
    ];
    for (name, tool, arguments) in reads {
        costs
            .count(name, "mcp", READ_ONLY, w.call(&token, tool, arguments, &[]))
            .await;
    }

    // Countersign, each spoken by a member on the household's device.
    let spoken = w.spoken("dana", "buy a 4 pack of AA batteries", None);
    let ordered = costs
        .count(
            "`propose_purchase` (a signed speaker, placed)",
            "mcp",
            ACTING,
            w.call(
                &token,
                "propose_purchase",
                order("aa-batteries", "4-pack", 1),
                &spoken,
            ),
        )
        .await;
    assert_eq!(ordered["outcome"], "placed", "{ordered}");
    let spoken = w.spoken("dana", "order two packs of double A batteries", None);
    let held = w
        .call(
            &token,
            "propose_purchase",
            order("aa-batteries", "12-pack", 3),
            &spoken,
        )
        .await;
    costs.served_by("mcp");
    assert_eq!(held["outcome"], "needs_confirmation", "{held}");
    let id = held["request_id"].as_str().unwrap().to_owned();
    let yes = w.spoken("dana", "yes", Some(&id));
    costs
        .count(
            "`confirm_purchase`",
            "mcp",
            ACTING,
            w.call(&token, "confirm_purchase", json!({"request_id": id}), &yes),
        )
        .await;
    let spoken = w.spoken("mia", "buy the dino building blocks", None);
    let asked = w
        .call(
            &token,
            "propose_purchase",
            order("dino-blocks", "standard", 1),
            &spoken,
        )
        .await;
    costs.served_by("mcp");
    assert_eq!(asked["outcome"], "needs_guardian", "{asked}");
    let id = asked["request_id"].as_str().unwrap().to_owned();
    let spoken = w.spoken("dana", "what's waiting", None);
    costs
        .count(
            "`list_waiting`",
            "mcp",
            ACTING,
            w.call(&token, "list_waiting", json!({}), &spoken),
        )
        .await;
    let approve = w.spoken("dana", "yes", Some(&id));
    let decided = costs
        .count(
            "`decide_request`",
            "mcp",
            ACTING,
            w.call(
                &token,
                "decide_request",
                json!({"request_id": id, "decision": "approve"}),
                &approve,
            ),
        )
        .await;
    assert_eq!(decided["status"], "placed", "{decided}");
    let reports = [
        ("`household_activity`", "household_activity", json!({})),
        ("`verify_ledger`", "verify_ledger", json!({})),
        (
            "`prove_history` (the ledger)",
            "prove_history",
            json!({"log": "ledger", "from_size": 1}),
        ),
        (
            "`check_receipt`",
            "check_receipt",
            json!({"receipt": ordered["placed"]["receipt"]}),
        ),
    ];
    for (name, tool, arguments) in reports {
        let spoken = w.spoken("dana", "check what we bought", None);
        costs
            .count(
                name,
                "mcp",
                READ_ONLY,
                w.call(&token, tool, arguments, &spoken),
            )
            .await;
    }

    // Every tool has its row.
    let tools = w.tool_names(&token).await;
    costs.served_by("mcp");
    for tool in tools {
        let named = format!("`{tool}`");
        assert!(
            costs.rows.iter().any(|row| row.call.starts_with(&named)),
            "{tool} has no row in the table"
        );
    }

    // The speech function's requests (no voice is configured: what runs before it), and the
    // end of the link.
    w.speak(&token).await;
    costs.served_by("tts");
    w.revoke(linked["refresh_token"].as_str().unwrap()).await;
    costs.served_by("oauth");

    let counted = table(&costs.rows);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join(PAGE);
    let page = std::fs::read_to_string(&path).unwrap();
    if std::env::var_os("HEARTH_UPDATE_COSTS").is_some() {
        let updated = hearth_core::config::reference::splice(&page, TABLE, &counted)
            .expect("the page's generated markers");
        std::fs::write(&path, updated).unwrap();
    } else {
        assert_eq!(
            generated(&page, TABLE),
            counted,
            "{PAGE} no longer shows what each call costs; if the change is meant, run \
             `HEARTH_UPDATE_COSTS=1 cargo test --test dynamodb round_trips` and say why in the commit"
        );
    }

    // Every call within its target, but for the known misses.
    for row in &costs.rows {
        let Target::AtMost(most) = row.target else {
            continue;
        };
        if KNOWN_MISSES.contains(&row.call) {
            assert!(
                row.rounds > most,
                "{} meets its target of {most} round trips now: take it off KNOWN_MISSES",
                row.call
            );
        } else {
            assert!(
                row.rounds <= most,
                "{} takes {} round trips; its target is at most {most}",
                row.call,
                row.rounds
            );
        }
    }

    // Every request each function made, allowed by its role.
    let roles = roles(&page);
    for function in ["mcp", "oauth", "tts"] {
        assert!(
            costs.access.iter().any(|(f, _, _)| *f == function),
            "no request of the {function} function was seen"
        );
    }
    for (function, action, partition) in &costs.access {
        let allowed = roles.iter().any(|(role, actions, partitions)| {
            role == function
                && actions.contains(action)
                && partitions
                    .as_ref()
                    .is_none_or(|patterns| patterns.iter().any(|p| names(p, partition)))
        });
        assert!(
            allowed,
            "the {function} function's role does not allow {action} on partition {partition}: \
             grant it in infra/template.yaml (and tests/infra), or do not make the request"
        );
    }
}
