#!/usr/bin/env python3
"""Tampers with a Countersign ledger directly in its store, as someone with write access to
the database could, to show what verify_ledger and kept receipts catch. For demos and tests
only: it damages the ledger on purpose.

  delete-newest   removes the newest entry and points the chain head at the one before, so
                  the chain alone still verifies; a kept receipt for it does not
  edit SEQ        rewrites entry SEQ's total without re-hashing; verify_ledger names it

Stores: --sqlite PATH (stdlib only), or --dynamodb TABLE --endpoint URL (needs boto3, which
moto brings into .venv). Every ledger in the store is tampered with.
"""

import argparse
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["delete-newest", "edit"])
    parser.add_argument("seq", nargs="?", type=int, help="the entry to edit")
    parser.add_argument("--sqlite")
    parser.add_argument("--dynamodb")
    parser.add_argument("--endpoint")
    args = parser.parse_args()
    if args.action == "edit" and not args.seq:
        parser.error("edit needs the entry's SEQ")
    if bool(args.sqlite) == bool(args.dynamodb):
        parser.error("give exactly one of --sqlite and --dynamodb")
    if args.sqlite:
        count = tamper_sqlite(args.sqlite, args.action, args.seq)
    else:
        count = tamper_dynamodb(args.dynamodb, args.endpoint, args.action, args.seq)
    if count == 0:
        print("no ledger found", file=sys.stderr)
        return 1
    print(f"tampered with {count} ledger(s): {args.action}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
