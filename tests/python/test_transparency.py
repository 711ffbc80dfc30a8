"""The household's side of the transparency log, through the official MCP Python SDK and
scripts/verify_log.py with nothing but the published key: receipts and a retained window
verify offline; then the store is restored from an old backup (scripts/tamper_ledger.py), a
rollback the server cannot see because the old checkpoint is genuinely signed, and the
checkpoint the device kept names it."""

import asyncio
import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
import urllib.request
import uuid
from urllib.parse import urlsplit

from conftest import ROOT
from mcp_client import session_flow
from test_countersign import _host_key, _tamper
from test_households import _household

VERIFY_LOG = ROOT / "scripts" / "verify_log.py"


def _attestation(member, words, device=None):
    """Signed with the server's host key, or with a household's device key (`device`)."""
    body = {"member_id": member, "turn_id": f"tlog-{uuid.uuid4().hex}", "utterances": [words],
            "issued_at": int(time.time()), "answering": None}
    encoded = base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
    key = device["key"] if device else _host_key()
    signature = hmac.new(key.encode(), encoded.encode(), hashlib.sha256).hexdigest()
    headers = {"X-Countersign-Attestation": encoded, "X-Countersign-Signature": signature}
    if device:
        headers["X-Countersign-Key-Id"] = device["key_id"]
    return headers


def _call(url, token, tool, arguments, words=None, device=None):
    headers = _attestation("dana", words, device) if words else None

    async def steps(session, _init):
        result = await session.call_tool(tool, arguments)
        assert not result.is_error, result
        return result.structured_content

    return asyncio.run(session_flow(url, token, steps, headers))


def _verify(*arguments):
    run = subprocess.run([sys.executable, str(VERIFY_LOG), *map(str, arguments)], capture_output=True, text=True, timeout=60)
    return run.returncode, run.stdout.strip()


def _log_keys(server_url, tmp_path):
    parts = urlsplit(server_url)
    with urllib.request.urlopen(f"{parts.scheme}://{parts.netloc}/.well-known/hearth/log-keys", timeout=10) as answer:
        keys = tmp_path / "log-keys.json"
        keys.write_bytes(answer.read())
    return keys


def test_decision_receipts_and_the_retained_window_verify_offline(server_url, judge_token, tmp_path):
    keys = _log_keys(server_url, tmp_path)
    household = "tlog-" + uuid.uuid4().hex[:10]
    records = [
        _call(server_url, judge_token, "record_decision",
              {"household_id": household, "action": f"step {n}", "reason": "kept", "inputs": {}, "approver": "Dana"})
        for n in range(3)
    ]
    receipt = tmp_path / "receipt.tlog-proof"
    receipt.write_text(records[-1]["tlog_proof"])
    assert _verify("inclusion", receipt, "--entry", records[-1]["trace_id"], "--vkey", keys) == (0, "OK")
    assert _verify("inclusion", receipt, "--entry", records[0]["trace_id"], "--vkey", keys)[0] == 1
    trace = _call(server_url, judge_token, "get_trace", {"household_id": household, "trace_id": records[0]["trace_id"]})
    window = tmp_path / "window.json"
    window.write_text(json.dumps(trace))
    assert _verify("window", window, "--vkey", keys) == (0, "OK")
    checkpoint = tmp_path / "checkpoint.txt"
    checkpoint.write_text(trace["checkpoint"])
    assert _verify("checkpoint", checkpoint, "--vkey", keys) == (0, "OK")


def test_a_kept_checkpoint_names_a_rolled_back_ledger_that_the_server_cannot_see(server_url, tmp_path):
    # A household of its own, so no other test's ledger (or its tampering) is in the way.
    _, token, device = _household(server_url, tmp_path, "Rollback Home")
    keys = _log_keys(server_url, tmp_path)
    order = {"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1}
    words = "order a 4 pack of AA batteries"
    _call(server_url, token, "propose_purchase", order, words=words, device=device)
    backup = tmp_path / "backup.json"
    _tamper("snapshot", str(backup))
    newest = _call(server_url, token, "propose_purchase", order, words=words, device=device)
    kept_proof = newest["tlog_proof"]
    kept = tmp_path / "kept-checkpoint.txt"
    kept.write_text(kept_proof.split("\n\n", 1)[1])
    assert _verify("checkpoint", kept, "--vkey", keys) == (0, "OK")

    _tamper("restore", str(backup))

    # The server holds a genuinely signed, older log: only the kept receipt shows the loss.
    checked = _call(server_url, token, "check_receipt", {"receipt": kept_proof}, words="check my receipt", device=device)
    assert checked["verdict"] == "history_deleted", checked
    # The ledger holds household data: its history, too, is for a signed speaker only.
    history = _call(server_url, token, "prove_history", {"log": "ledger", "from_size": 0},
                    words="show the purchase history", device=device)
    answer = tmp_path / "prove-history.json"
    answer.write_text(json.dumps(history))
    code, out = _verify("consistency", kept, answer, "--vkey", keys)
    assert code == 1 and out.startswith("FAIL the tree shrank"), out
