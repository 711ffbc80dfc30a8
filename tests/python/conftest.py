"""Shared fixtures: the server under test is started by scripts/test, which exports its URL,
its OAuth client credentials and a judge token. Running these tests without a server is an
error, never a skip."""

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
def judge_token():
    return _required("HEARTH_TEST_TOKEN")


@pytest.fixture(scope="session")
def client_credentials():
    return _required("HEARTH_TEST_CLIENT_ID"), _required("HEARTH_TEST_CLIENT_SECRET")


@pytest.fixture(scope="session")
def token(server_url, client_credentials):
    """An access token from /oauth/token, obtained exactly as Alexa+ does."""
    from mcp_client import client_credentials_token

    client_id, client_secret = client_credentials
    return asyncio.run(client_credentials_token(server_url, client_id, client_secret))["access_token"]


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
