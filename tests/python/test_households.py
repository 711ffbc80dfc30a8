"""The manual's self-hosting walkthrough (docs/src/self-hosting/households.md), as a newcomer
follows it: `hearth admin` creates a household over the running server's store, mints its
token and adds a device key; the official MCP Python SDK then calls the tools with them, the
device story buys through Countersign, and a second household stays apart."""

import asyncio
import json
import os
import subprocess
import sys

from conftest import ROOT, run_verifier
from mcp_client import session_flow

DEMO = ROOT / "scripts" / "countersign_demo.py"


def _required(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through scripts/test")
    return value


def _admin(server_url, *args):
    """`hearth admin ... --json` over the server's own store, with its signing key and URL."""
    env = dict(os.environ, MCP_JWT_SECRET=_required("HEARTH_TEST_JWT_SECRET"), MCP_RESOURCE_URL=server_url)
    for name in ("HEARTH_DB", "HEARTH_TABLE", "HEARTH_DATA_DIR"):
        env.pop(name, None)
    if os.environ.get("HEARTH_TEST_DB"):
        env["HEARTH_DB"] = os.environ["HEARTH_TEST_DB"]
    else:
        env.update(
            HEARTH_TABLE=_required("HEARTH_TEST_TABLE"),
            AWS_ENDPOINT_URL=_required("HEARTH_TEST_MOTO_ENDPOINT"),
            AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
        )
    run = subprocess.run(
        [_required("HEARTH_TEST_BINARY"), "admin", *args, "--json"], capture_output=True, timeout=60, env=env
    )
    answer = json.loads(run.stdout)
    assert run.returncode == 0, answer
    return answer


def _household(server_url, tmp_path, name):
    """A household with the demo household's rules, its token and a device key."""
    policy = json.loads((ROOT / "data" / "household.json").read_text())
    del policy["household_id"], policy["name"]
    policy_file = tmp_path / f"{name}.json"
    policy_file.write_text(json.dumps(policy))
    created = _admin(server_url, "household", "create", name, "--policy", str(policy_file))
    household_id = created["household_id"]
    token = _admin(server_url, "token", household_id, "--days", "1")
    key = _admin(server_url, "device-key", "add", household_id)
    return household_id, token["access_token"], key


def test_a_household_made_with_hearth_admin_buys_and_remembers_through_the_sdk(server_url, tmp_path):
    household_id, token, key = _household(server_url, tmp_path, "Walkthrough Home")
    assert token.count(".") == 2 and key["key"] and key["key_id"].startswith("dk-")

    run = subprocess.run(
        [sys.executable, str(DEMO), "story", "--url", server_url, "--token", token,
         "--host-key", key["key"], "--key-id", key["key_id"], "--receipts", str(tmp_path / "r.json"), "--json"],
        capture_output=True, timeout=120,
    )
    story = json.loads(run.stdout)
    assert run.returncode == 0, story
    outcomes = [turn["outcome"] for turn in story["turns"]]
    assert outcomes[1] == "placed" and outcomes[2] == "needs_guardian", outcomes
    assert story["turns"][10]["say"].startswith("The ledger checks out")

    other_id, other_token, _ = _household(server_url, tmp_path, "Next Door")
    assert other_id != household_id

    async def remember(session, _init):
        recorded = await session.call_tool(
            "record_decision", {"action": "dim lights", "reason": "Movie time", "inputs": {}, "approver": "Dana"}
        )
        assert not recorded.is_error, recorded
        assert recorded.structured_content["household_id"] == household_id
        trace = await session.call_tool("get_trace", {"trace_id": recorded.structured_content["trace_id"]})
        return recorded.structured_content["trace_id"], trace.structured_content

    trace_id, trace = asyncio.run(session_flow(server_url, token, remember))
    verified = run_verifier(trace)
    assert verified.stdout.decode().strip() == "OK", verified

    async def pry(session, _init):
        theirs = await session.call_tool("get_trace", {"trace_id": trace_id})
        named = await session.call_tool("get_trace", {"household_id": household_id, "trace_id": trace_id})
        return theirs, named

    theirs, named = asyncio.run(session_flow(server_url, other_token, pry))
    assert theirs.is_error and "no decisions" in theirs.content[0].text
    assert named.is_error and "names another household" in named.content[0].text
