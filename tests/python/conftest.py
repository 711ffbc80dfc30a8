"""Shared fixtures: the server under test is started by scripts/test, which exports its URL
and a bearer token. Running these tests without a server is an error, never a skip."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "scripts" / "verify_chain.py"


def _required(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through scripts/test")
    return value


@pytest.fixture(scope="session")
def server_url():
    return _required("HEARTH_TEST_URL")


@pytest.fixture(scope="session")
def token():
    return _required("HEARTH_TEST_TOKEN")


def run_verifier(payload, *, raw=None):
    """Runs scripts/verify_chain.py with the Python running the tests (stdlib only)."""
    text = raw if raw is not None else json.dumps(payload)
    return subprocess.run(
        [sys.executable, str(VERIFIER)], input=text.encode("utf-8"), capture_output=True, timeout=30
    )


@pytest.fixture(scope="session")
def recorded_trace(server_url, token):
    """A real get_trace structuredContent with several records, made through the SDK client."""
    from mcp_client import record_and_trace

    return asyncio.run(record_and_trace(server_url, token))
