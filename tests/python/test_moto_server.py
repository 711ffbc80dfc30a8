"""scripts/moto_server.py answers as moto does, only faster: its direct path for plain update
expressions leaves every item as moto's own path does, and refuses what it refuses."""

import importlib.util
import os
import random

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from conftest import ROOT

MOTOS_OWN_UPDATE = DynamoDBBackend.update_item
spec = importlib.util.spec_from_file_location("moto_server", ROOT / "scripts" / "moto_server.py")
moto_server = importlib.util.module_from_spec(spec)
spec.loader.exec_module(moto_server)
DIRECT_UPDATE = DynamoDBBackend.update_item


def run(updates, update_item):
    """The table's items after `updates` (each a TransactWriteItems' items, or an exception
    class it must raise), with DynamoDB's update_item as given."""
    DynamoDBBackend.update_item = update_item
    try:
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="testing",
                                  aws_secret_access_key="testing")
            client.create_table(
                TableName="t", BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                      {"AttributeName": "sk", "AttributeType": "S"}])
            outcomes = []
            for items in updates:
                try:
                    client.transact_write_items(TransactItems=items)
                    outcomes.append("ok")
                except ClientError as error:
                    outcomes.append(error.response["Error"]["Code"])
            scanned = client.scan(TableName="t", ConsistentRead=True)["Items"]
            return outcomes, sorted(scanned, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))
    finally:
        DynamoDBBackend.update_item = DIRECT_UPDATE


def head_update(seq, sets, removes, expected=None):
    names, values, assignments = {}, {":seq": {"N": str(seq)}}, ["#seq = :seq"]
    names["#seq"] = "last_seq"
    for n, (name, value) in enumerate(sets):
        names[f"#s{n}"] = name
        values[f":s{n}"] = value
        assignments.append(f"#s{n} = :s{n}")
    expression = "SET " + ", ".join(assignments)
    if removes:
        for n, name in enumerate(removes):
            names[f"#r{n}"] = name
        expression += " REMOVE " + ", ".join(f"#r{n}" for n in range(len(removes)))
    update = {"TableName": "t", "Key": {"pk": {"S": "chain"}, "sk": {"S": "head"}},
              "UpdateExpression": expression, "ExpressionAttributeNames": names,
              "ExpressionAttributeValues": values}
    if expected is None:
        update["ConditionExpression"] = "attribute_not_exists(last_seq)"
    else:
        update["ConditionExpression"] = "last_seq = :e"
        values[":e"] = {"N": str(expected)}
    return {"Update": update}


def record(seq):
    return {"Put": {"TableName": "t", "Item": {"pk": {"S": "chain"}, "sk": {"S": f"rec#{seq:010}"},
                                               "body": {"S": f"record {seq}"}}}}


def test_plain_updates_leave_the_items_moto_leaves():
    rng = random.Random(7)
    attributes = [f"a{n}" for n in range(12)]
    kinds = [lambda: {"S": rng.choice(["x", "yy", ""])}, lambda: {"N": str(rng.randrange(1000))},
             lambda: {"B": os.urandom(rng.randrange(0, 64))}]
    updates, seq = [], 0
    for step in range(60):
        chosen = rng.sample(attributes, rng.randrange(1, len(attributes)))
        cut = rng.randrange(len(chosen) + 1)
        sets = [(name, rng.choice(kinds)()) for name in chosen[:cut]]
        removes = chosen[cut:]
        stale = step % 7 == 6  # a lost race: the condition names an older head
        expected = None if seq == 0 else (seq - 1 if stale else seq)
        updates.append([head_update(seq + 1, sets, removes, expected), record(seq + 1)])
        if not stale:
            seq += 1
    own, direct = run(updates, MOTOS_OWN_UPDATE), run(updates, DIRECT_UPDATE)
    assert own == direct
    outcomes, items = direct
    assert outcomes.count("TransactionCanceledException") == 8 and len(items) == seq + 1


@pytest.mark.parametrize("sets, removes", [
    ([("a", {"S": "x"})], ["a"]),           # one attribute both set and removed
    ([("sk", {"S": "other"})], []),          # a key attribute
])
def test_what_moto_refuses_the_direct_path_refuses(sets, removes):
    updates = [[head_update(1, sets, removes)]]
    own, direct = run(updates, MOTOS_OWN_UPDATE), run(updates, DIRECT_UPDATE)
    assert own == direct
    assert own[0] != ["ok"], own


def test_only_a_plain_expression_takes_the_direct_path():
    names = {"#a": "a", "#b": "b"}
    values = {":a": {"S": "x"}}

    class Table:
        hash_key_attr, range_key_attr = "pk", "sk"

    plain = moto_server._plain_update
    assert plain("SET #a = :a REMOVE #b", names, values, Table) == ([("a", {"S": "x"})], ["b"])
    assert plain("SET #a = :a + :a", names, values, Table) is None
    assert plain("SET #a = if_not_exists(#a, :a)", names, values, Table) is None
    assert plain("SET #a = :missing", names, values, Table) is None
    assert plain("ADD #a :a", names, values, Table) is None
    assert plain("SET a = :a", names, values, Table) is None
