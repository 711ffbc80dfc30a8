"""scripts/cost.py: DynamoDB's sizing rules as the cost model applies them, and its arithmetic."""

import importlib.util
import math

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
    lines = cost.monthly(measured, {"record_decision": 10}, 1000, witness_ms=0, alarms=6)
    calls = 10 * cost.DAYS_PER_MONTH * 1000
    prices = cost.PRICES
    assert lines["DynamoDB requests"] == pytest.approx(
        calls * (2 * prices["dynamodb_read_request_unit"] + 10 * prices["dynamodb_write_request_unit"]))
    assert lines["API Gateway"] == pytest.approx(calls * prices["api_gateway_http_request"])
    billed_seconds = 5 / 1000
    assert lines["Lambda"] == pytest.approx(
        calls * (prices["lambda_request"] + billed_seconds * 0.25 * prices["lambda_gb_second"]))
    assert lines["Fixed (secrets, alarms, metrics)"] == pytest.approx(
        4 * 0.40 + 6 * 0.10 + 5 * (3 + 1) * 0.30)
    with_witnesses = cost.monthly(measured, {"record_decision": 10}, 1000, witness_ms=50, alarms=6)
    assert with_witnesses["Lambda"] == pytest.approx(
        calls * (prices["lambda_request"] + math.ceil(4.2 + 50) / 1000 * 0.25 * prices["lambda_gb_second"]))
    with pytest.raises(SystemExit):
        cost.monthly(measured, {"explain_why": 1}, 10)
