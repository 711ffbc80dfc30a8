"""What someone with the database alone can do to a household's history, done to the store
itself, so the browser tests can show what the household page's phone then says:

  snapshot PATH      copy the whole store into PATH (a file that must not exist)
  restore PATH       put the store back as PATH holds it: a rollback to an older signed state,
                     or back to a newer one
  edit OLD NEW       replace the text OLD with NEW in every stored chain record holding it,
                     leaving its hash as it was
  forget-log         remove every chain's signed log (its head, its stored hashes, and the
                     window's note of it), keeping the records: a history with nothing signed

With HEARTH_DB (SQLite), or HEARTH_TABLE and AWS_ENDPOINT_URL (DynamoDB), as the server.
The server may keep running: SQLite's backup API copies under the database's own locks, and
DynamoDB items are replaced one request at a time. Prints what it did."""

import base64
import json
import os
import sqlite3
import sys


def dynamodb():
    import boto3

    client = boto3.client(
        "dynamodb",
        endpoint_url=os.environ["AWS_ENDPOINT_URL"],
        region_name=os.environ.get("AWS_REGION", "us-east-1"),
    )
    return client, os.environ["HEARTH_TABLE"]


def scan(client, table):
    items, start = [], {}
    while True:
        page = client.scan(TableName=table, ConsistentRead=True, **start)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}


# Binary attributes (log frontiers and hashes) are bytes; JSON keeps them as base64.
def to_json(value):
    if isinstance(value, bytes):
        return {"__bytes": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {key: to_json(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [to_json(inner) for inner in value]
    return value


def from_json(value):
    if isinstance(value, dict):
        if set(value) == {"__bytes"}:
            return base64.b64decode(value["__bytes"])
        return {key: from_json(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [from_json(inner) for inner in value]
    return value


def snapshot(path):
    if os.environ.get("HEARTH_TABLE"):
        client, table = dynamodb()
        items = scan(client, table)
        with open(path, "x", encoding="utf-8") as out:
            json.dump([to_json(item) for item in items], out)
        return f"{len(items)} items"
    source = sqlite3.connect(os.environ["HEARTH_DB"])
    copy = sqlite3.connect(path)
    source.backup(copy)
    copy.close()
    source.close()
    return "the database"


def restore(path):
    if os.environ.get("HEARTH_TABLE"):
        client, table = dynamodb()
        with open(path, encoding="utf-8") as kept:
            items = [from_json(item) for item in json.load(kept)]
        for item in scan(client, table):
            client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
        for item in items:
            client.put_item(TableName=table, Item=item)
        return f"{len(items)} items"
    kept = sqlite3.connect(path)
    live = sqlite3.connect(os.environ["HEARTH_DB"], timeout=10)
    kept.backup(live)
    live.close()
    kept.close()
    return "the database"


def edit(old, new):
    edited = 0
    if os.environ.get("HEARTH_TABLE"):
        client, table = dynamodb()
        for item in scan(client, table):
            body = item.get("body", {}).get("S", "")
            if item["sk"]["S"].startswith("rec#") and old in body:
                item["body"] = {"S": body.replace(old, new)}
                client.put_item(TableName=table, Item=item)
                edited += 1
    else:
        with sqlite3.connect(os.environ["HEARTH_DB"], timeout=10) as db:
            edited = db.execute(
                "UPDATE chain_records SET body = replace(body, ?, ?) WHERE instr(body, ?) > 0",
                (old, new, old),
            ).rowcount
    return f"{edited} records"


# The window head's attributes that name or hold its log (see docs/src/reference/dynamodb.md).
LOG_ATTRIBUTES = ["log_id", "log_base_size", "log_base", "log_head_id", "log_epoch", "log_size",
                  "log_frontier", "log_checkpoint", "log_expires_at_ms"]


def forget_log():
    if os.environ.get("HEARTH_TABLE"):
        client, table = dynamodb()
        forgotten = 0
        for item in scan(client, table):
            if item["sk"]["S"] == "head" and "log_epoch" in item:
                for name in LOG_ATTRIBUTES:
                    item.pop(name, None)
                client.put_item(TableName=table, Item=item)
                forgotten += 1
        return f"{forgotten} logs"
    with sqlite3.connect(os.environ["HEARTH_DB"], timeout=10) as db:
        forgotten = db.execute("DELETE FROM chain_logs").rowcount
        db.execute("DELETE FROM log_hashes")
        db.execute("UPDATE chain_heads SET log_id = NULL, log_base_size = NULL, log_base = NULL")
    return f"{forgotten} logs"


def main(command, *args):
    done = {"snapshot": snapshot, "restore": restore, "edit": edit, "forget-log": forget_log}[command](*args)
    print(f"{command}: {done}")


if __name__ == "__main__":
    main(*sys.argv[1:])
