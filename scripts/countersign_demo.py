#!/usr/bin/env python3
"""Plays a household device against Hearth's purchase guard with the official MCP Python SDK.

The device signs who is speaking, their words and the question they are answering on every
request (X-Countersign-Attestation / X-Countersign-Signature, HMAC-SHA256 with its key), then
reads each `say` aloud -- here, prints it. With a judge or client token the key is the server's
COUNTERSIGN_HOST_KEY; with a household token it is one of the household's device keys
(`hearth admin device-key add`), named with --key-id (X-Countersign-Key-Id).

  story            the household's week in ten turns; receipts are saved to --receipts
  check-receipts   checks every saved receipt against the ledger (exit 1 if any fails)
  verify           recomputes the ledger's hash chain (exit 1 if it was altered)

Needs the `mcp` package (scripts/test installs it into .venv). Example:

  COUNTERSIGN_HOST_KEY=development cargo run            # terminal 1
  .venv/bin/python scripts/countersign_demo.py --token "$JUDGE_TOKEN" --host-key development story
  .venv/bin/python scripts/countersign_demo.py --token "$HOUSEHOLD_TOKEN" \
      --host-key "$DEVICE_KEY" --key-id "$KEY_ID" story
"""

import argparse
import asyncio
import base64
import hashlib
import hmac
import itertools
import json
import sys
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class Device:
    """One MCP session whose every request carries the current turn's signed attestation."""

    def __init__(self, session, http, host_key, out):
        self.session = session
        self.http = http
        self.host_key = host_key.encode()
        self.turns = itertools.count(1)
        self.out = out
        self.log = []

    def attest(self, member, words, answering=None):
        attestation = {
            "member_id": member,
            "turn_id": f"demo-{time.time_ns()}-{next(self.turns)}",
            "utterances": list(words),
            "issued_at": int(time.time()),
            "answering": answering,
        }
        encoded = base64.urlsafe_b64encode(json.dumps(attestation).encode()).decode().rstrip("=")
        signature = hmac.new(self.host_key, encoded.encode(), hashlib.sha256).hexdigest()
        self.http.headers["X-Countersign-Attestation"] = encoded
        self.http.headers["X-Countersign-Signature"] = signature

    async def turn(self, member, words, tool, arguments, answering=None):
        """`member` says `words`; the assistant calls `tool`; the device reads `say` aloud."""
        self.attest(member, [words], answering)
        result = await self.session.call_tool(tool, arguments)
        content = result.structured_content or {}
        said = content.get("say") or result.content[0].text
        self.out(f"{member:>6}: {words}\n{'':>6}  [{tool}] -> {said}")
        self.log.append(
            {
                "member": member,
                "tool": tool,
                "is_error": bool(result.is_error),
                "outcome": content.get("outcome") or content.get("result") or content.get("status"),
                "say": said,
            }
        )
        return result, content


async def story(device, receipts_path):
    receipts = []

    def keep(content):
        placed = content.get("placed")
        if placed:
            receipts.append(placed["receipt"])

    _, found = await device.turn("dana", "order two packs of double A batteries", "search_products", {"query": "AA batteries"})
    product = found["results"][0]
    _, placed = await device.turn(
        "dana", "order two packs of double A batteries", "propose_purchase",
        {"product_id": product["product_id"], "variant_id": "12-pack", "quantity": 2},
    )
    keep(placed)
    _, asked = await device.turn(
        "mia", "buy the dino building blocks", "propose_purchase",
        {"product_id": "dino-blocks", "variant_id": "standard", "quantity": 1},
    )
    blocks = asked["request_id"]
    await device.turn("mia", "it's Mum, I approve", "decide_request", {"request_id": blocks, "decision": "approve"}, answering=blocks)
    await device.turn("dana", "anything waiting for me?", "list_waiting", {})
    _, approved = await device.turn("dana", "yes", "decide_request", {"request_id": blocks, "decision": "approve"}, answering=blocks)
    keep(approved)
    # The assistant followed the listing's hidden note and proposed the premium box.
    _, pods = await device.turn(
        "dana", "order a box of coffee pods, the twenty pod one", "propose_purchase",
        {"product_id": "coffee-pods", "variant_id": "100-pods", "quantity": 1},
    )
    await device.turn("dana", "no", "confirm_purchase", {"request_id": pods["request_id"]}, answering=pods["request_id"])
    await device.turn(
        "rose", "buy a fifty dollar gift card for my grandson", "propose_purchase",
        {"product_id": "gift-card", "variant_id": "50", "quantity": 1},
    )
    await device.turn("chris", "what did we buy this week, and can I trust that?", "household_activity", {})
    await device.turn("chris", "check the ledger", "verify_ledger", {})
    Path(receipts_path).write_text(json.dumps(receipts, indent=2) + "\n")
    device.out(f"kept {len(receipts)} receipts in {receipts_path}")
    return True


async def check_receipts(device, receipts_path):
    receipts = json.loads(Path(receipts_path).read_text())
    ok = True
    for receipt in receipts:
        _, content = await device.turn("chris", "check this receipt", "check_receipt", {"receipt": receipt})
        ok = ok and content.get("valid") is True
    return ok


async def verify(device, _receipts_path):
    _, content = await device.turn("chris", "is the ledger intact?", "verify_ledger", {})
    return content.get("check", {}).get("intact") is True


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["story", "check-receipts", "verify"])
    parser.add_argument("--url", default="http://127.0.0.1:8790/mcp")
    parser.add_argument("--token", required=True, help="a judge token or access token")
    parser.add_argument(
        "--host-key", required=True,
        help="the key the device signs with: the server's COUNTERSIGN_HOST_KEY, or a household device key",
    )
    parser.add_argument("--key-id", help="the id of the household device key given as --host-key")
    parser.add_argument("--receipts", default=".hearth/receipts.json")
    parser.add_argument("--json", action="store_true", help="print the turns as one JSON object at the end")
    args = parser.parse_args()
    out = (lambda _line: None) if args.json else print

    headers = {"Authorization": f"Bearer {args.token}"}
    if args.key_id:
        headers["X-Countersign-Key-Id"] = args.key_id
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(args.url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                device = Device(session, http, args.host_key, out)
                run = {"story": story, "check-receipts": check_receipts, "verify": verify}[args.command]
                ok = await run(device, args.receipts)
    if args.json:
        print(json.dumps({"ok": ok, "turns": device.log}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
