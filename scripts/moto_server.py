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

    .venv/bin/python scripts/moto_server.py PORT
"""

import copy
import signal
import sys

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
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


dynamodb_models.copy = _TablesUncopied()
DynamoDBBackend.transact_write_items = _journaled(DynamoDBBackend.transact_write_items)


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
