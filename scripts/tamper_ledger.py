#!/usr/bin/env python3
"""Tampers with a Countersign ledger directly in its store, as someone with write access to
the database could, to show what verify_ledger and kept receipts catch. For demos and tests
only: it damages the ledger on purpose.

  delete-newest   removes the newest entry and points the chain head at the one before, so
                  the chain alone still verifies; a kept receipt for it does not
  edit SEQ        rewrites entry SEQ's total without re-hashing; verify_ledger names it
  snapshot FILE   saves every ledger as stored, chain and transparency log, to FILE
  restore FILE    puts every ledger back as FILE saved it, as restoring an old database
                  backup would: the log's checkpoint is genuinely signed, only older, so the
                  server cannot tell; a device's kept checkpoint can (verify_log.py consistency)

Stores: --sqlite PATH (stdlib only), or --dynamodb TABLE --endpoint URL (needs boto3, which
moto brings into .venv). Every ledger in the store is tampered with; with --toolset why,
every decision chain instead (snapshot and restore only make sense there: its records'
hashes are not re-sealed by edit).
"""

import argparse
import base64
import json
import sqlite3
import sys

LEDGER_SUFFIX = "/countersign"


def edit_body(body):
    entry = json.loads(body)
    entry["total_cents"] = 1
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def tamper_sqlite(path, action, seq):
    db = sqlite3.connect(path)
    with db:
        heads = db.execute(
            "SELECT scope, name, last_seq FROM chain_heads WHERE scope LIKE ?", (f"%{LEDGER_SUFFIX}",)
        ).fetchall()
        for scope, name, last_seq in heads:
            if action == "delete-newest":
                db.execute("DELETE FROM chain_records WHERE scope=? AND name=? AND seq=?", (scope, name, last_seq))
                (prev_hash,) = db.execute(
                    "SELECT hash FROM chain_records WHERE scope=? AND name=? AND seq=?", (scope, name, last_seq - 1)
                ).fetchone()
                db.execute(
                    "UPDATE chain_heads SET last_seq=?, last_hash=? WHERE scope=? AND name=?",
                    (last_seq - 1, prev_hash, scope, name),
                )
            else:
                (body,) = db.execute(
                    "SELECT body FROM chain_records WHERE scope=? AND name=? AND seq=?", (scope, name, seq)
                ).fetchone()
                db.execute(
                    "UPDATE chain_records SET body=? WHERE scope=? AND name=? AND seq=?",
                    (edit_body(body), scope, name, seq),
                )
    return len(heads)


def tamper_dynamodb(table, endpoint, action, seq):
    import os

    import boto3

    # The AWS SDKs for Rust read AWS_REGION; botocore reads AWS_DEFAULT_REGION. Honour both.
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name=region)
    heads = [
        item
        for page in client.get_paginator("scan").paginate(TableName=table)
        for item in page["Items"]
        if item["sk"]["S"] == "head" and item["pk"]["S"].split("#")[1].endswith(LEDGER_SUFFIX)
    ]
    for head in heads:
        pk = head["pk"]["S"]
        last_seq = int(head["last_seq"]["N"])
        if action == "delete-newest":
            client.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": f"rec#{last_seq:010}"}})
            prev = client.get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": f"rec#{last_seq - 1:010}"}})
            client.update_item(
                TableName=table,
                Key={"pk": {"S": pk}, "sk": {"S": "head"}},
                UpdateExpression="SET last_seq = :seq, last_hash = :hash",
                ExpressionAttributeValues={":seq": {"N": str(last_seq - 1)}, ":hash": prev["Item"]["hash"]},
            )
        else:
            key = {"pk": {"S": pk}, "sk": {"S": f"rec#{seq:010}"}}
            record = client.get_item(TableName=table, Key=key)["Item"]
            client.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="SET body = :body",
                ExpressionAttributeValues={":body": {"S": edit_body(record["body"]["S"])}},
            )
    return len(heads)


SQLITE_TABLES = ("chain_heads", "chain_records", "chain_logs", "log_hashes")


def snapshot_sqlite(path, file):
    db = sqlite3.connect(path)
    saved = {}
    for table in SQLITE_TABLES:
        cursor = db.execute(f"SELECT * FROM {table} WHERE scope LIKE ?", (f"%{LEDGER_SUFFIX}",))
        columns = [column[0] for column in cursor.description]
        saved[table] = [
            {name: (value.hex() if isinstance(value, bytes) else value) for name, value in zip(columns, row)}
            for row in cursor.fetchall()
        ]
    with open(file, "w") as handle:
        json.dump(saved, handle)
    return len(saved["chain_heads"])


def restore_sqlite(path, file):
    with open(file) as handle:
        saved = json.load(handle)
    blobs = {"chain_heads": {"log_base"}, "chain_logs": {"frontier"}, "log_hashes": {"hashes"}}
    db = sqlite3.connect(path)
    with db:
        for table in SQLITE_TABLES:
            db.execute(f"DELETE FROM {table} WHERE scope LIKE ?", (f"%{LEDGER_SUFFIX}",))
            for row in saved[table]:
                values = [bytes.fromhex(v) if k in blobs.get(table, ()) else v for k, v in row.items()]
                db.execute(
                    f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", values
                )
    return len(saved["chain_heads"])


def _ledger_items(client, table):
    return [
        item
        for page in client.get_paginator("scan").paginate(TableName=table)
        for item in page["Items"]
        if item["pk"]["S"].startswith("chain#") and item["pk"]["S"].split("#")[1].endswith(LEDGER_SUFFIX)
    ]


def _dynamodb(endpoint):
    import os

    import boto3

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name=region)


def snapshot_dynamodb(table, endpoint, file):
    items = _ledger_items(_dynamodb(endpoint), table)
    # Binary attributes (a head item's frontiers) come from boto3 as bytes: kept as base64.
    kept = [
        {name: ({"B": base64.b64encode(value["B"]).decode()} if "B" in value else value) for name, value in item.items()}
        for item in items
    ]
    with open(file, "w") as handle:
        json.dump(kept, handle)
    return sum(1 for item in items if item["sk"]["S"] == "head")


def restore_dynamodb(table, endpoint, file):
    client = _dynamodb(endpoint)
    with open(file) as handle:
        saved = json.load(handle)
    for item in _ledger_items(client, table):
        client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
    for item in saved:
        item = {name: ({"B": base64.b64decode(value["B"])} if "B" in value else value) for name, value in item.items()}
        client.put_item(TableName=table, Item=item)
    return sum(1 for item in saved if item["sk"]["S"] == "head")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["delete-newest", "edit", "snapshot", "restore"])
    parser.add_argument("seq", nargs="?", help="the entry to edit, or the snapshot FILE")
    parser.add_argument("--sqlite")
    parser.add_argument("--dynamodb")
    parser.add_argument("--endpoint")
    parser.add_argument("--toolset", choices=["countersign", "why"], default="countersign")
    args = parser.parse_args()
    global LEDGER_SUFFIX
    LEDGER_SUFFIX = "/" + args.toolset
    if args.action == "edit" and not (args.seq or "").isdigit():
        parser.error("edit needs the entry's SEQ")
    if args.action in ("snapshot", "restore") and not args.seq:
        parser.error(f"{args.action} needs a FILE")
    if bool(args.sqlite) == bool(args.dynamodb):
        parser.error("give exactly one of --sqlite and --dynamodb")
    if args.action == "snapshot":
        count = snapshot_sqlite(args.sqlite, args.seq) if args.sqlite else snapshot_dynamodb(args.dynamodb, args.endpoint, args.seq)
    elif args.action == "restore":
        count = restore_sqlite(args.sqlite, args.seq) if args.sqlite else restore_dynamodb(args.dynamodb, args.endpoint, args.seq)
    elif args.sqlite:
        count = tamper_sqlite(args.sqlite, args.action, int(args.seq or 0))
    else:
        count = tamper_dynamodb(args.dynamodb, args.endpoint, args.action, int(args.seq or 0))
    if count == 0:
        print("no ledger found", file=sys.stderr)
        return 1
    print(f"tampered with {count} ledger(s): {args.action}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
