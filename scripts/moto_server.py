"""Runs moto's AWS emulator (PyPI `moto[server]`) on loopback, one request at a time.

`moto_server` serves requests on parallel threads, and moto's TransactWriteItems is not
isolated between threads: it applies items one by one and, when a condition fails, restores a
copy of the whole table taken before it started, discarding whatever another request wrote
meanwhile. DynamoDB serialises conflicting transactions. Serving one request at a time makes
the emulator faithful on that point, which Hearth's concurrency tests depend on.

That copy also makes every transaction cost time in proportion to the whole table, so an
emulated chain's appends slowed as its log grew (a table of a few thousand items took tens of
milliseconds a transaction). Here a transaction instead keeps a copy of each item it names
before it starts and, when it is cancelled, puts exactly those back: the same outcome, since
a transaction changes nothing but the items it names and requests are served one at a time.

Three more costs of the emulator's own are cut the same way, each with the same answers, since
every request waits for every other here (measured 2026-12-03 under `scripts/contention`):
- a Query sorted and scanned every item of the table, where DynamoDB reads one partition; it
  now looks only at the partition it names;
- answers were written by a generic serializer driven by the service model, attribute by
  attribute (two thirds of a 25-record Query's time); an answer made only of data (items and
  capacity figures) is now written with `json.dumps`, keeping only the members of the
  operation's output shape and writing binary values as base64, as that serializer does;
- every condition expression was lexed with a dozen regular expressions at every request;
  each distinct expression is now lexed once.
A window's Query went from about 13.5 ms to 3.5 ms and a transaction from 2.5 ms to 2.1 ms.
And (2026-12-04) an update expression that only sets and removes attributes, as the chain
head's does, is applied directly instead of being parsed, validated and executed through
moto's syntax tree (`_assigned_directly`): an append's transaction with the head's twenty
assignments took about 7.5 times as long as with a Put of the same item, and after this about
2.3 times (tests/python/test_moto_server.py checks the items and errors against moto's own).

    .venv/bin/python scripts/moto_server.py PORT
"""

import base64
import copy
import inspect
import json
import re
import signal
import sys
from collections import deque

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.core.responses import ActionResult
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


class _TablesUncopied:
    """The `copy` module as moto's DynamoDB backend sees it, but a table is not copied: the
    backend keeps it for a rollback that `_journaled` does item by item instead."""

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value, memo=None):
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def _key_of(table, operation):
    attributes = operation["Item"] if "Item" in operation else operation.get("Key", {})
    hash_value = attributes.get(table.hash_key_attr)
    if hash_value is None:
        return None
    range_value = attributes.get(table.range_key_attr) if table.range_key_attr else None
    if table.range_key_attr and range_value is None:
        return None
    return DynamoType(hash_value), DynamoType(range_value) if range_value is not None else None


def _journaled(transact_write_items):
    def transact(self, transact_items):
        before = []
        for entry in transact_items:
            _, operation = next(iter(entry.items()))
            table = self.tables.get(operation.get("TableName"))
            key = _key_of(table, operation) if table is not None else None
            if key is not None:
                before.append((table, key, copy.deepcopy(table.get_item(*key))))
        try:
            return transact_write_items(self, transact_items)
        except Exception:
            for table, (hash_value, range_value), item in reversed(before):
                if range_value is None:
                    if item is None:
                        table.items.pop(hash_value, None)
                    else:
                        table.items[hash_value] = item
                elif item is None:
                    table.items[hash_value].pop(range_value, None)
                else:
                    table.items[hash_value][range_value] = item
            raise

    return transact


def _one_partition(query):
    """Moto's Query sorts every item of the table and then filters them; a Query on the table's
    own key names one partition, so only that partition's items are handed to it."""

    def partition_query(self, hash_key, *args, **kwargs):
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None or not self.range_key_attr:
            return query(self, hash_key, *args, **kwargs)
        partition = list(self.items.get(hash_key, {}).values())
        self.all_items = lambda: partition
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    return partition_query


# DynamoDB's answers that are built only of data: their items and capacity figures.
_DATA_ANSWERS = {
    "BatchGetItem",
    "BatchWriteItem",
    "DeleteItem",
    "GetItem",
    "PutItem",
    "Query",
    "Scan",
    "TransactGetItems",
    "TransactWriteItems",
    "UpdateItem",
}


class _NotData(Exception):
    pass


def _as_json(value, shape):
    """`value` as the JSON protocol writes `shape`: only the shape's members, None left out,
    binary as base64. An attribute value is written as it is: its members are its types."""
    if shape.name == "AttributeValue":
        return _attribute_value(value)
    if shape.type_name == "structure" and isinstance(value, dict):
        members = shape.members
        return {
            key: _as_json(member, members[key])
            for key, member in value.items()
            if member is not None and key in members
        }
    if shape.type_name == "list" and isinstance(value, list):
        return [_as_json(member, shape.member) for member in value]
    if shape.type_name == "map" and isinstance(value, dict):
        return {key: _as_json(member, shape.value) for key, member in value.items()}
    # Anything else only when its Python type is exactly the shape's, which needs no converting;
    # the rest goes to moto's serializer.
    kind = type(value)
    if shape.type_name == "blob" and kind is bytes:
        return base64.b64encode(value).decode()
    if (shape.type_name, kind) in {
        ("string", str),
        ("boolean", bool),
        ("integer", int),
        ("long", int),
        ("double", float),
        ("float", float),
    }:
        return value
    raise _NotData


def _attribute_value(value):
    if isinstance(value, dict):
        return {key: _attribute_value(member) for key, member in value.items()}
    if isinstance(value, list):
        return [_attribute_value(member) for member in value]
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise _NotData


def _written_directly(execute_result):
    def execute(self, context):
        if (
            context.service_model.service_name == "dynamodb"
            and context.operation_model.name in _DATA_ANSWERS
            and isinstance(self.result, dict)
        ):
            try:
                body = json.dumps(_as_json(self.result, context.operation_model.output_shape))
            except _NotData:
                return execute_result(self, context)
            return 200, {"Content-Type": "application/x-amz-json-1.0"}, body
        return execute_result(self, context)

    return execute


# An update expression that only sets attributes to values and removes attributes, every
# name and value a placeholder: what Hearth's chain head update is.
_PLAIN_UPDATE = re.compile(r"SET (#\w+ = :\w+(?:, #\w+ = :\w+)*)(?: REMOVE (#\w+(?:, #\w+)*))?")


def _plain_update(expression, names, values, table):
    """The attributes `expression` sets, with their values, and those it removes, when it is
    plain (`_PLAIN_UPDATE`) and names each attribute once, no key attribute among them, every
    placeholder given; else None (moto's own path then answers, errors included)."""
    match = _PLAIN_UPDATE.fullmatch(expression or "")
    if not match:
        return None
    sets = [assignment.split(" = ") for assignment in match.group(1).split(", ")]
    removes = match.group(2).split(", ") if match.group(2) else []
    placeholders = [name for name, _ in sets] + removes
    if any(name not in names for name in placeholders) or any(value not in values for _, value in sets):
        return None
    attributes = [names[name] for name in placeholders]
    if len(set(attributes)) != len(attributes) or {table.hash_key_attr, table.range_key_attr} & set(attributes):
        return None
    return [(names[name], values[value]) for name, value in sets], [names[name] for name in removes]


def _assigned_directly(update_item):
    """Moto parses, validates and executes every update expression, walking and copying its
    syntax tree many times over: about 30 ms for the chain head's twenty assignments, seven
    times the rest of an append's transaction, which put the emulator's tail latency, not
    Hearth's, into the contention figures. A plain one (`_plain_update`) is applied directly,
    after moto has checked the condition and found or made the item exactly as it does for
    any update: the same item, the same errors."""
    parameters = inspect.signature(update_item)

    def update(self, *args, **kwargs):
        bound = parameters.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = bound.arguments
        plain = _plain_update(arguments["update_expression"], arguments["expression_attribute_names"] or {},
                              arguments["expression_attribute_values"] or {},
                              self.get_table(arguments["table_name"]))
        if plain is None:
            return update_item(*bound.args, **bound.kwargs)
        sets, removes = plain
        # Nothing to update: moto checks the condition and makes a missing item, keys only.
        arguments["update_expression"] = None
        arguments["attribute_updates"] = {}
        item = update_item(*bound.args, **bound.kwargs)
        for name, value in sets:
            item.attrs[name] = DynamoType(value)
        for name in removes:
            item.attrs.pop(name, None)
        return item

    return update


def _lexed_once(lex):
    """Moto lexes a condition expression with a dozen regular expressions at every request;
    Hearth sends the same few expressions with new values, so each is lexed once. Lexing
    reads only the expression's text; names and values are looked up after it."""
    lexed = {}

    def lex_once(self):
        tokens = lexed.get(self.condition_expression)
        if tokens is None:
            tokens = tuple((node.nonterminal, node.text) for node in lex(self))
            if len(lexed) < 4096:
                lexed[self.condition_expression] = tokens
        # Fresh nodes every time: the parser's later steps may change a node's children.
        return deque(
            self.Node(
                nonterminal=nonterminal,
                kind=self.Kind.LITERAL,
                text=text,
                value=text,
                children=[],
            )
            for nonterminal, text in tokens
        )

    return lex_once


dynamodb_models.copy = _TablesUncopied()
DynamoDBBackend.transact_write_items = _journaled(DynamoDBBackend.transact_write_items)
DynamoDBBackend.update_item = _assigned_directly(DynamoDBBackend.update_item)
Table.query = _one_partition(Table.query)
ActionResult.execute_result = _written_directly(ActionResult.execute_result)
ConditionExpressionParser._lex_condition_expression = _lexed_once(
    ConditionExpressionParser._lex_condition_expression
)


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: moto_server.py PORT")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        "127.0.0.1",
        int(sys.argv[1]),
        app,
        threaded=False,
        use_reloader=False,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
