"""scripts/cost.py: DynamoDB's sizing rules as the cost model applies them, and its arithmetic."""

import base64
import importlib.util
import math
import re

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("cost", ROOT / "scripts" / "cost.py")
cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cost)


def test_an_items_size_is_its_names_and_values_bytes():
    assert cost.item_size({"pk": {"S": "abc"}}) == 2 + 3
    assert cost.item_size({"n": {"N": "12345"}}) == 1 + 3 + 1, "one byte per two digits, plus one"
    assert cost.item_size({"n": {"N": "-1.500"}}) == 1 + 1 + 1, "signs and trailing zeroes are not digits"
    assert cost.item_size({"é": {"S": "ü"}}) == 2 + 2, "UTF-8 bytes, not characters"
    assert cost.item_size({"m": {"M": {"a": {"BOOL": True}}}}) == 1 + 3 + (1 + 1 + 1)
    assert cost.item_size({"l": {"L": [{"NULL": True}, {"S": "xy"}]}}) == 1 + 3 + (1 + 1) + (2 + 1)
    assert cost.item_size({"b": {"B": "AAEC"}}) == 1 + 3
    assert cost.item_size({"b": {"B": b"\x00\x01\x02"}}) == 1 + 3, "boto3's bytes, as read back"


def test_a_chain_head_item_with_its_log_head_is_sized_the_same_on_the_wire_and_read_back():
    """The head item holds the window's and the log's heads, the frontiers in binary: an
    append's Update is billed by the item it leaves, which the model reads back with boto3."""
    frontier = bytes(range(32)) * 5
    wire = {"pk": {"S": "chain#scope#home"}, "sk": {"S": "head"}, "last_seq": {"N": "25"},
            "log_frontier": {"B": base64.b64encode(frontier).decode()},
            "log_base": {"B": base64.b64encode(frontier[:64]).decode()}}
    read_back = dict(wire, log_frontier={"B": frontier}, log_base={"B": frontier[:64]})
    size = cost.item_size(wire)
    assert size == cost.item_size(read_back)
    assert size == 2 + 16 + 2 + 4 + 8 + 2 + 12 + 160 + 8 + 64
    key = {"pk": wire["pk"], "sk": wire["sk"]}
    update = {"TransactItems": [{"Update": {"Key": key}}]}
    stored = lambda _key: size
    assert cost.request_units("TransactWriteItems", update, {}, stored) == (0, 2)


def item_of(size):
    """An item of exactly `size` bytes: a one-letter name and a string."""
    return {"s": {"S": "x" * (size - 1)}}


@pytest.mark.parametrize(
    "operation, request_, answer, expected",
    [
        ("GetItem", {"ConsistentRead": True}, {"Item": item_of(4096)}, (1, 0)),
        ("GetItem", {"ConsistentRead": True}, {"Item": item_of(4097)}, (2, 0)),
        ("GetItem", {"ConsistentRead": True}, {}, (1, 0)),
        ("GetItem", {}, {"Item": item_of(100)}, (0.5, 0)),
        ("Query", {"ConsistentRead": True}, {"Items": [item_of(2048), item_of(2048)]}, (1, 0)),
        ("Query", {"ConsistentRead": True}, {"Items": [item_of(2048), item_of(2049)]}, (2, 0)),
        ("PutItem", {"Item": item_of(1024)}, {}, (0, 1)),
        ("PutItem", {"Item": item_of(1025)}, {}, (0, 2)),
        ("UpdateItem", {"Key": {}}, {}, (0, 1)),
        ("DeleteItem", {"Key": {}}, {}, (0, 1)),
        ("TransactWriteItems", {"TransactItems": [{"Put": {"Item": item_of(1025)}}, {"Delete": {"Key": {}}}]}, None,
         (0, 2 * 2 + 2 * 1)),
    ],
)
def test_request_units_follow_dynamodbs_rounding(operation, request_, answer, expected):
    assert cost.request_units(operation, request_, answer) == expected


def test_a_write_is_billed_by_the_larger_of_the_item_before_and_after():
    key = {"pk": {"S": "a"}, "sk": {"S": "b"}}
    sizes = {"before-big": lambda _key: 3000, "none": lambda _key: 0}
    small_put = {"Item": dict(key, v={"S": "x"})}
    assert cost.request_units("PutItem", small_put, {}, sizes["before-big"]) == (0, 3)
    assert cost.request_units("PutItem", small_put, {}, sizes["none"]) == (0, 1)
    assert cost.request_units("DeleteItem", {"Key": key}, {}, sizes["before-big"]) == (0, 3)
    evicting = {"TransactItems": [{"Delete": {"Key": key}}, {"ConditionCheck": {"Key": key}}]}
    assert cost.request_units("TransactWriteItems", evicting, None, sizes["before-big"]) == (0, 2 * 3 + 2 * 3)


def test_batch_reads_round_each_key_up_found_or_not():
    request_ = {"RequestItems": {"t": {"Keys": [{}, {}, {}], "ConsistentRead": True}}}
    answer = {"Responses": {"t": [item_of(10), item_of(4097)]}}
    assert cost.request_units("BatchGetItem", request_, answer) == (1 + 2 + 1, 0)


def test_a_month_is_the_profiles_calls_priced_line_by_line():
    measured = {"tools": {"record_decision": {
        "read_units": 2, "write_units": 10, "stored_bytes": 1000, "log_bytes": 300,
        "handler_ms_mean": 4.2, "handler_ms_median": 4.0, "dynamodb_requests": {}, "calls": 1}}}
    lines = cost.monthly(measured, {"record_decision": 10}, 1000, witness_ms=0, alarm_metrics=6)
    calls = 10 * cost.DAYS_PER_MONTH * 1000
    prices = cost.PRICES
    assert lines["DynamoDB requests"] == pytest.approx(
        calls * (2 * prices["dynamodb_read_request_unit"] + 10 * prices["dynamodb_write_request_unit"]))
    assert lines["API Gateway"] == pytest.approx(calls * prices["api_gateway_http_request"])
    billed_seconds = 5 / 1000
    assert lines["Lambda"] == pytest.approx(
        calls * (prices["lambda_request"] + billed_seconds * 0.25 * prices["lambda_gb_second"]))
    # A measurement from before HEARTH_METRICS carried every metric, as `tool` does now.
    assert lines["Fixed (secrets, alarms, metrics)"] == pytest.approx(
        4 * 0.40 + 6 * 0.10 + (3 + 5 * (3 + 1) + 1) * 0.30)
    with_witnesses = cost.monthly(measured, {"record_decision": 10}, 1000, witness_ms=50, alarm_metrics=6)
    assert with_witnesses["Lambda"] == pytest.approx(
        calls * (prices["lambda_request"] + math.ceil(4.2 + 50) / 1000 * 0.25 * prices["lambda_gb_second"]))
    with pytest.raises(SystemExit):
        cost.monthly(measured, {"explain_why": 1}, 10)


def test_a_chains_appends_cost_what_they_cost_against_a_full_window_once_it_fills():
    """20 decisions a day into a window of 25 records and 3 days: of a window's 60 appends the
    last 35 also delete the oldest record, so they cost what appends to a full window cost."""
    filling = {"read_units": 2, "write_units": 6, "stored_bytes": 1500, "log_bytes": 300,
               "lambda_billed_ms_mean": 10, "lambda_ms_median": 10, "dynamodb_requests": {}, "calls": 1,
               "records": {"why": [1, 1100]}}
    full = dict(filling, write_units=10, stored_bytes=400, lambda_billed_ms_mean=20, log_bytes=310,
                records={"why": [0, 0]})
    measured = {"metrics": "function", "tools": {"record_decision": filling,
                                                 "record_decision, window full": full}}
    assert cost.evicting_share("why", 20) == pytest.approx(35 / 60)
    assert cost.evicting_share("why", 25 / 3) == 0
    assert cost.evicting_share("countersign", 0.8) == 0
    lines = cost.monthly(measured, {"record_decision": 20}, 1000, alarm_metrics=0)
    calls = 20 * cost.DAYS_PER_MONTH * 1000
    share = 35 / 60
    prices = cost.PRICES
    assert lines["DynamoDB requests"] == pytest.approx(calls * (
        2 * prices["dynamodb_read_request_unit"]
        + ((1 - share) * 6 + share * 10) * prices["dynamodb_write_request_unit"]))
    assert lines["Lambda"] == pytest.approx(calls * (
        prices["lambda_request"] + math.ceil((1 - share) * 10 + share * 20) / 1000 * 0.25 * prices["lambda_gb_second"]))
    # A year of the 400 bytes a call keeps for good, and 25 records of 1,100 bytes a household.
    assert lines["DynamoDB storage"] == pytest.approx(
        (calls * 12 * 400 + 1000 * 25 * 1100) / cost.GIB * prices["dynamodb_storage_gb_month"])
    # Fewer decisions than a window holds: no append evicts, and a year's records are what
    # the window holds (a window ends after 3 days, so at most 3 days of them).
    quiet = cost.monthly(measured, {"record_decision": 2}, 1000, alarm_metrics=0)
    quiet_calls = 2 * cost.DAYS_PER_MONTH * 1000
    assert quiet["DynamoDB requests"] == pytest.approx(quiet_calls * (
        2 * prices["dynamodb_read_request_unit"] + 6 * prices["dynamodb_write_request_unit"]))
    assert quiet["DynamoDB storage"] == pytest.approx(
        (quiet_calls * 12 * 400 + 1000 * 6 * 1100) / cost.GIB * prices["dynamodb_storage_gb_month"])
    # A profile that fills a window its calls were not measured against is refused.
    with pytest.raises(SystemExit):
        cost.monthly({"tools": {"record_decision": filling}}, {"record_decision": 20}, 10)


def test_calls_cost_what_they_cost_against_the_twelfth_months_chains():
    """A call that reads the decision window costs what it cost against a full one, a ledger
    call what it cost against a year of orders, and what a call keeps for good is what it adds
    to chains already open, not a first call's head item."""
    base = {"read_units": 2, "write_units": 1, "stored_bytes": 0, "log_bytes": 300,
            "lambda_billed_ms_mean": 10, "lambda_ms_median": 10, "dynamodb_requests": {}, "calls": 1}
    proposing = dict(base, write_units=8, stored_bytes=2000, records={"countersign": [1, 1100]})
    measured = {"metrics": "function", "tools": {
        "explain_why": base,
        "explain_why, window full": dict(base, read_units=7, lambda_billed_ms_mean=12),
        "propose_purchase": proposing,
        "propose_purchase, ledger of a year": dict(proposing, read_units=90, stored_bytes=1500),
    }}
    lines = cost.monthly(measured, {"explain_why": 3, "propose_purchase": 0.5}, 1000, alarm_metrics=0)
    prices = cost.PRICES
    reads, proposals = 3 * cost.DAYS_PER_MONTH * 1000, 0.5 * cost.DAYS_PER_MONTH * 1000
    assert lines["DynamoDB requests"] == pytest.approx(
        reads * (7 * prices["dynamodb_read_request_unit"] + 1 * prices["dynamodb_write_request_unit"])
        + proposals * (90 * prices["dynamodb_read_request_unit"] + 8 * prices["dynamodb_write_request_unit"]))
    assert lines["Lambda"] == pytest.approx(
        reads * (prices["lambda_request"] + 12 / 1000 * 0.25 * prices["lambda_gb_second"])
        + proposals * (prices["lambda_request"] + 10 / 1000 * 0.25 * prices["lambda_gb_second"]))
    # 400 bytes a proposal kept for good (1,500 less its record), a year; and a year of its
    # records, as a ledger holds them.
    assert lines["DynamoDB storage"] == pytest.approx(
        (proposals * 12 * 400 + 1000 * 0.5 * 365 * 1100) / cost.GIB * prices["dynamodb_storage_gb_month"])


def test_a_chain_records_retention_is_the_codes():
    """RETENTION mirrors the constants the stores apply: a change to either fails here."""
    def constant(path, name):
        text = (cost.ROOT / path).read_text()
        return re.search(rf"pub const {name}: [a-z0-9]+ = ([^;]+);", text).group(1)

    def days(expression):
        hours = re.fullmatch(r"(\d+) \* 60 \* 60 \* 1000", expression)
        if hours:
            return int(hours.group(1)) / 24
        return int(re.fullmatch(r"(\d+) \* 24 \* 60 \* 60 \* 1000", expression).group(1))

    why, ledger = "shared/src/why/limits.rs", "shared/src/countersign/ledger/mod.rs"
    assert cost.RETENTION == {
        "why": {"capacity": int(constant(why, "WINDOW_CAPACITY")), "window_days": days(constant(why, "WINDOW_MS"))},
        "countersign": {"capacity": int(constant(ledger, "CAPACITY")),
                        "window_days": days(constant(ledger, "WINDOW_MS"))},
    }


def test_a_chain_record_is_told_by_its_key():
    assert cost.record_scope(("chain#s1/why#home", "rec#0000000003")) == "why"
    assert cost.record_scope(("chain#s1/countersign#home", "rec#0000000001")) == "countersign"
    assert cost.record_scope(("chain#s1/why#home", "hash#00000000000000000003")) is None
    assert cost.record_scope(("chain#s1/why#home", "head")) is None
    assert cost.record_scope(("account#home", "account")) is None
    grown = cost.TableSize()
    grown.add({"pk": {"S": "chain#s1/why#home"}, "sk": {"S": "rec#0000000003"}}, ("chain#s1/why#home", "rec#0000000003"))
    grown.add({"pk": {"S": "account#home"}, "sk": {"S": "account"}}, ("account#home", "account"))
    added = grown - cost.TableSize()
    assert added.total == grown.total and added.records == {"why": [1, grown.records["why"][1]]}


def test_the_fixed_costs_follow_the_metrics_the_measurement_ran_at():
    tool = {"read_units": 0, "write_units": 0, "stored_bytes": 0, "log_bytes": 0,
            "handler_ms_mean": 1, "handler_ms_median": 1, "dynamodb_requests": {}, "calls": 1}
    profile = {"tools/list": 5, "explain_why": 1, "get_trace": 1}

    def fixed(detail):
        measured = {"metrics": detail, "tools": {name: tool for name in profile}}
        return cost.monthly(measured, profile, 10)["Fixed (secrets, alarms, metrics)"]

    # The template's twelve alarms read 17 metrics (the rate alarms two each, the throttles
    # alarm three, the table's throttles two); the two that read a custom metric (three metrics)
    # exist only while there are metrics (Condition: HasMetrics).
    assert (cost.alarm_metrics_in_template("function"), cost.alarm_metrics_in_template("off")) == (17, 14)
    # At `function` two custom metrics (Throttled, WitnessRefusals); a tool error is no metric.
    assert fixed("function") == pytest.approx(4 * 0.40 + 17 * 0.10 + 2 * 0.30)
    assert fixed("tool") == pytest.approx(4 * 0.40 + 17 * 0.10 + (3 + 5 * (3 + 2) + 1) * 0.30)
    assert fixed("off") == pytest.approx(4 * 0.40 + 14 * 0.10)


def test_lambdas_duration_replaces_the_handlers_time_where_it_was_measured():
    tool = {"read_units": 0, "write_units": 0, "stored_bytes": 0, "log_bytes": 0,
            "handler_ms_mean": 4.2, "handler_ms_median": 4.0, "dynamodb_requests": {}, "calls": 1}
    on_lambda = dict(tool, lambda_ms_median=6.1, lambda_billed_ms_mean=7.5)
    calls = cost.DAYS_PER_MONTH * 1000
    prices = cost.PRICES
    for measured_tool, billed_ms in ((tool, 5), (on_lambda, 8)):
        lines = cost.monthly({"tools": {"explain_why": measured_tool}}, {"explain_why": 1}, 1000, alarm_metrics=0)
        assert lines["Lambda"] == pytest.approx(
            calls * (prices["lambda_request"] + billed_ms / 1000 * 0.25 * prices["lambda_gb_second"]))


def test_a_function_that_answers_before_the_event_is_fully_handed_out_still_gets_its_duration(monkeypatch):
    """The runtime API's `next` handler stamps the hand-out before writing the event: a function
    may answer on another thread before the write returns (CI saw it once), and its Duration
    must not then be lost, nor the request left unanswered."""
    import json
    import threading
    import urllib.request

    written = threading.Event()
    answered = threading.Event()
    hand_out = cost.coldstart.hand_out

    def hand_out_then_wait_for_the_answer(handler, event, request_id=None):
        got = hand_out(handler, event, request_id)
        written.set()
        answered.wait(5)  # hold here until the function's answer has been handled
        return got

    monkeypatch.setattr(cost.coldstart, "hand_out", hand_out_then_wait_for_the_answer)
    gateway = cost.LambdaGateway()

    def function():
        with urllib.request.urlopen(f"http://{gateway.runtime_api}/2018-06-01/runtime/invocation/next") as got:
            request_id = got.headers["Lambda-Runtime-Aws-Request-Id"]
            got.read()
        urllib.request.urlopen(urllib.request.Request(
            f"http://{gateway.runtime_api}/2018-06-01/runtime/invocation/{request_id}/response",
            data=b'{"statusCode": 204}', method="POST")).read()
        answered.set()

    threading.Thread(target=function, daemon=True).start()
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{gateway.url}/mcp", method="GET"), timeout=10) as got:
            assert got.status == 204
        assert written.is_set()
        durations = gateway.take()
        assert len(durations) == 1 and durations[0] >= 0
    finally:
        answered.set()
        gateway.close()


def test_the_gateway_hands_each_request_to_the_function_as_an_api_gateway_event():
    """A function that answers on the runtime API with what its event said, as a Lambda binary
    would: the HTTP answer is its response, and each invocation's Duration is kept."""
    import http.client
    import json
    import threading
    import urllib.request

    gateway = cost.LambdaGateway()

    def function():
        for n in range(3):
            with urllib.request.urlopen(f"http://{gateway.runtime_api}/2018-06-01/runtime/invocation/next") as got:
                request_id = got.headers["Lambda-Runtime-Aws-Request-Id"]
                event = json.loads(got.read())
            said = {"path": event["rawPath"], "query": event["rawQueryString"], "body": event.get("body"),
                    "method": event["requestContext"]["http"]["method"],
                    "authorization": event["headers"].get("authorization")}
            response = {"statusCode": 201, "headers": {"content-type": "application/json"},
                        "body": json.dumps(said), "isBase64Encoded": False, "cookies": ["a=b"]}
            if n == 1:
                response = {"statusCode": 200, "body": "aGk=", "isBase64Encoded": True}
            outcome = "error" if n == 2 else "response"
            if n == 2:
                response = {"errorType": "Panic", "errorMessage": "the handler failed"}
            urllib.request.urlopen(urllib.request.Request(
                f"http://{gateway.runtime_api}/2018-06-01/runtime/invocation/{request_id}/{outcome}",
                data=json.dumps(response).encode(), method="POST")).read()

    threading.Thread(target=function, daemon=True).start()
    try:
        front = http.client.HTTPConnection("127.0.0.1", gateway.front.server_address[1], timeout=10)
        front.request("POST", "/mcp?x=1", body=b'{"jsonrpc":"2.0"}', headers={"Authorization": "Bearer t"})
        answer = front.getresponse()
        assert answer.status == 201
        assert answer.getheader("Set-Cookie") == "a=b"
        assert json.loads(answer.read()) == {"path": "/mcp", "query": "x=1", "body": '{"jsonrpc":"2.0"}',
                                             "method": "POST", "authorization": "Bearer t"}
        front.request("GET", "/mcp")
        answer = front.getresponse()
        assert (answer.status, answer.read()) == (200, b"hi")
        durations = gateway.take()
        assert len(durations) == 2 and all(d >= 0 for d in durations)
        # A function error answers 502, as API Gateway does, and bills no Duration here.
        front.request("POST", "/mcp", body=b"{}")
        answer = front.getresponse()
        assert answer.status == 502
        assert b"the handler failed" in answer.read()
        assert gateway.take() == []
    finally:
        gateway.close()


def test_logs_are_stored_for_the_templates_default_retention():
    """A month's logs are kept LogRetentionDays (the template's default, 7), so they are
    stored for that share of a month, not a whole one."""
    assert cost.log_retention_days() == 7
    measured = {"metrics": "function", "tools": {"tools/list": {
        "read_units": 0, "write_units": 0, "stored_bytes": 0, "log_bytes": 300,
        "lambda_billed_ms_mean": 1, "lambda_ms_median": 1, "dynamodb_requests": {}, "calls": 1}}}
    lines = cost.monthly(measured, {"tools/list": 10}, 1000, alarm_metrics=0)
    gb = 10 * cost.DAYS_PER_MONTH * 1000 * (300 + cost.PLATFORM_LOG_BYTES) / cost.GIB
    prices = cost.PRICES
    assert lines["CloudWatch Logs"] == pytest.approx(
        gb * (prices["cloudwatch_logs_ingested_gb"] + 7 / 30.4 * prices["cloudwatch_logs_stored_gb_month"]))


def test_a_measurement_refuses_more_rounds_than_a_window_and_a_members_turns_allow():
    """Ten rounds at most: past them one member's acting calls would pass the 20 a member may
    make in ten minutes (and, past 25, the rounds' decisions would evict)."""
    import argparse

    for rounds in (11, 26):
        with pytest.raises(SystemExit, match="--rounds at most 10"):
            cost.measure(argparse.Namespace(rounds=rounds))


def test_every_proposal_of_a_run_is_asked_in_words_of_its_own():
    assert len(set(cost.ORDER_WORDS)) == len(cost.ORDER_WORDS)
    # The most proposals a run makes: a year of the ledger, and two phases of the most rounds.
    assert len(cost.ORDER_WORDS) >= cost.LEDGER_YEAR_ENTRIES + 2 * 10
