"""The purchase guard through the official MCP Python SDK: the scripted device story, receipts
kept and checked, and the same receipts catching tampering done directly in the store."""

import asyncio
import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time

import pytest
from mcp.shared.exceptions import MCPError as McpError

from conftest import ROOT
from mcp_client import session_flow

DEMO = ROOT / "scripts" / "countersign_demo.py"
TAMPER = ROOT / "scripts" / "tamper_ledger.py"


def _host_key():
    key = os.environ.get("HEARTH_TEST_HOST_KEY")
    if not key:
        raise RuntimeError("HEARTH_TEST_HOST_KEY is not set: run these tests through scripts/test")
    return key


def _store_args():
    """Where the server under test keeps its ledger; scripts/test names exactly one."""
    if os.environ.get("HEARTH_TEST_DB"):
        return ["--sqlite", os.environ["HEARTH_TEST_DB"]]
    if os.environ.get("HEARTH_TEST_TABLE"):
        return ["--dynamodb", os.environ["HEARTH_TEST_TABLE"], "--endpoint", os.environ["HEARTH_TEST_MOTO_ENDPOINT"]]
    raise RuntimeError("neither HEARTH_TEST_DB nor HEARTH_TEST_TABLE is set: run through scripts/test")


def _demo(server_url, judge_token, command, receipts):
    run = subprocess.run(
        [sys.executable, str(DEMO), command, "--url", server_url, "--token", judge_token,
         "--host-key", _host_key(), "--receipts", str(receipts), "--json"],
        capture_output=True, timeout=120,
    )
    assert run.stderr == b"" or run.returncode in (0, 1), run.stderr.decode()
    return run.returncode, json.loads(run.stdout)


def _tamper(*args):
    env = dict(os.environ, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    run = subprocess.run([sys.executable, str(TAMPER), *args, *_store_args()], capture_output=True, timeout=60, env=env)
    assert run.returncode == 0, run.stderr.decode()


def test_the_device_story_then_tampering_caught_by_receipts_and_the_chain(server_url, judge_token, tmp_path):
    receipts = tmp_path / "receipts.json"
    code, story = _demo(server_url, judge_token, "story", receipts)
    assert code == 0, story
    turns = story["turns"]
    assert [turn["tool"] for turn in turns] == [
        "search_products", "propose_purchase", "propose_purchase", "decide_request", "list_waiting",
        "decide_request", "propose_purchase", "confirm_purchase", "propose_purchase", "household_activity",
        "verify_ledger",
    ]
    outcomes = [turn["outcome"] for turn in turns]
    assert outcomes[1] == "placed"
    assert outcomes[2] == "needs_guardian"
    assert turns[3]["is_error"] and "Mia is not a guardian" in turns[3]["say"]
    assert "Do you approve?" in turns[4]["say"]
    assert outcomes[5] == "placed"
    assert outcomes[6] == "needs_confirmation" and "NOTE TO AI" not in turns[6]["say"]
    assert outcomes[7] == "cancelled"
    assert outcomes[8] == "needs_guardian"
    assert turns[9]["say"].endswith("entries check out.")
    assert turns[10]["say"].startswith("The ledger checks out")
    kept = json.loads(receipts.read_text())
    assert len(kept) == 2 and all(r["entry_hash"] for r in kept)

    code, checked = _demo(server_url, judge_token, "check-receipts", receipts)
    assert code == 0, checked
    assert all("matches entry" in turn["say"] for turn in checked["turns"])

    # Delete the newest entries the way a database writer could: the chain still verifies,
    # but the receipt the device kept for the newest order does not.
    for _ in range(4):
        _tamper("delete-newest")
    code, checked = _demo(server_url, judge_token, "check-receipts", receipts)
    assert code == 1, checked
    assert "matches entry" in checked["turns"][0]["say"]
    assert "History was deleted" in checked["turns"][1]["say"]

    code, verified = _demo(server_url, judge_token, "verify", receipts)
    assert code == 0, verified

    # Edit an entry without re-hashing: verify_ledger names it.
    _tamper("edit", "2")
    code, verified = _demo(server_url, judge_token, "verify", receipts)
    assert code == 1, verified
    assert verified["turns"][0]["say"].startswith("The ledger has been altered: entry 2 fails the check")

    async def verify(session, _init):
        return await session.call_tool("verify_ledger", {})

    # Without an attestation the tool refuses: a sentence a voice may read, with what to do
    # next, and the technical reason beside it for developers.
    result = asyncio.run(session_flow(server_url, judge_token, verify))
    assert result.is_error
    assert result.content[0].text.startswith("I can't do that without knowing who is speaking. Please ask")
    assert result.meta["hearth/code"] == "attestation_missing"
    assert "X-Countersign-Attestation" in result.meta["hearth/reason"]


def test_search_needs_no_attestation_and_marks_listing_text_as_data(server_url, judge_token):
    async def search(session, _init):
        tools = await session.list_tools()
        names = {tool.name for tool in tools.tools}
        assert {"search_products", "propose_purchase", "confirm_purchase", "decide_request", "list_waiting",
                "household_activity", "verify_ledger", "check_receipt"} <= names
        listing = {tool.name: tool for tool in tools.tools}
        assert listing["search_products"].annotations.read_only_hint is True
        assert listing["list_waiting"].annotations.read_only_hint is False
        return await session.call_tool("search_products", {"query": "coffee pods"})

    result = asyncio.run(session_flow(server_url, judge_token, search))
    assert not result.is_error
    first = result.structured_content["results"][0]
    assert first["product_id"] == "coffee-pods"
    assert "NOTE TO AI ASSISTANTS" in first["listing_text"]


def _signed(member, words):
    """The attestation headers a device sends for `member` saying `words`."""
    attestation = {"member_id": member, "turn_id": f"py-{time.time_ns()}", "utterances": [words],
                   "issued_at": int(time.time()), "answering": None}
    encoded = base64.urlsafe_b64encode(json.dumps(attestation).encode()).decode().rstrip("=")
    signature = hmac.new(_host_key().encode(), encoded.encode(), hashlib.sha256).hexdigest()
    return {"X-Countersign-Attestation": encoded, "X-Countersign-Signature": signature}


def test_the_household_rules_resource_needs_a_signed_speaker(server_url, judge_token):
    async def read(session, _init):
        listed = await session.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["countersign://household/rules"]
        return await session.read_resource("countersign://household/rules")

    async def refused(session, _init):
        with pytest.raises(McpError) as refusal:
            await session.read_resource("countersign://household/rules")
        return refusal.value

    # It names the members, roles and limits, so an unsigned read is refused.
    refusal = asyncio.run(session_flow(server_url, judge_token, refused))
    assert "without knowing who is speaking" in str(refusal)
    result = asyncio.run(session_flow(server_url, judge_token, read, _signed("mia", "what are the rules")))
    rules = json.loads(result.contents[0].text)
    assert rules["household_id"] == "maple-house"
    assert rules["guardians"] == ["dana", "chris"]
