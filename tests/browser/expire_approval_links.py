"""Moves every approval link of one household to just past its end, in the store itself, so
the browser test can open an expired link without waiting 30 minutes. The product has no
clock to wind forward; the store is the one place the link's end lives.

Usage: expire_approval_links.py HOUSEHOLD_ID
  with HEARTH_DB (SQLite), or HEARTH_TABLE and AWS_ENDPOINT_URL (DynamoDB), as the server.
Prints how many links it moved."""

import json
import os
import sqlite3
import sys
import time


def expire(body):
    account = json.loads(body)
    past = int(time.time() * 1000) - 1
    for link in account["approval_links"]:
        link["expires_at_ms"] = past
    return json.dumps(account), len(account["approval_links"])


def main(household_id):
    if os.environ.get("HEARTH_TABLE"):
        import boto3

        dynamodb = boto3.resource(
            "dynamodb",
            endpoint_url=os.environ["AWS_ENDPOINT_URL"],
            region_name=os.environ.get("AWS_REGION", "us-east-1"),
        )
        table = dynamodb.Table(os.environ["HEARTH_TABLE"])
        key = {"pk": f"account#{household_id}", "sk": "account"}
        item = table.get_item(Key=key, ConsistentRead=True)["Item"]
        item["body"], moved = expire(item["body"])
        table.put_item(Item=item)
    else:
        with sqlite3.connect(os.environ["HEARTH_DB"]) as db:
            (body,) = db.execute(
                "SELECT body FROM accounts WHERE household_id = ?", (household_id,)
            ).fetchone()
            body, moved = expire(body)
            db.execute("UPDATE accounts SET body = ? WHERE household_id = ?", (body, household_id))
    print(moved)


if __name__ == "__main__":
    main(sys.argv[1])
