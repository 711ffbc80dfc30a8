"""Hosts that link a household without an operator configuring them, driven by independent
client libraries against the linked server (both stores):

- Dynamic Client Registration through the official MCP Python SDK's own OAuth client
  (`OAuthClientProvider`): it meets the 401, discovers both metadata documents, registers,
  sends the person to the consent page and exchanges the code, then lists and calls tools;
- a Client ID Metadata Document served from this machine (the server runs with
  HEARTH_CIMD_ALLOW_HTTP_LOOPBACK=true), driven by Authlib: the SDK only accepts https
  document URLs, which a loopback test cannot serve;
- a public client an operator adds with `hearth admin client add --public`, driven by Authlib.
"""

import asyncio
import http.server
import json
import re
import threading
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientMetadata

from test_households import _admin
from test_linking import SCOPE, _authorize, _consent, _explain, _record, linked_url, metadata  # noqa: F401

HOST_REDIRECT = "https://host.example/oauth/callback"


class _Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class _Person:
    """Plays the person at the browser: opens the authorization URL the SDK hands over, enters
    the household's link code, allows, and hands the redirect's parameters back."""

    def __init__(self, link_code):
        self.link_code = link_code
        self.page = None
        self.result = None

    async def redirect(self, authorization_url):
        page, fields, browser = _consent(authorization_url)
        self.page = page.text
        endpoint = authorization_url.split("?", 1)[0]
        answer = browser.post(
            endpoint, data={**fields, "link_code": self.link_code, "decision": "allow"},
            allow_redirects=False, timeout=10,
        )
        assert answer.status_code == 303, answer.text
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        self.result = AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query["iss"][0])

    async def callback(self):
        return self.result


def test_the_official_sdk_registers_itself_links_a_household_and_calls_a_tool(linked_url):
    household = _admin(linked_url, "household", "create", "SDK Registered Home")["household_id"]
    person = _Person(_admin(linked_url, "link-code", household)["code"])
    storage = _Memory()
    provider = OAuthClientProvider(
        server_url=linked_url,
        client_metadata=OAuthClientMetadata(
            client_name="Python SDK host",
            redirect_uris=["http://localhost:3030/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope=SCOPE,
        ),
        storage=storage,
        redirect_handler=person.redirect,
        callback_handler=person.callback,
    )

    async def flow():
        async with create_mcp_http_client(auth=provider) as http:
            async with streamable_http_client(linked_url, http_client=http, terminate_on_close=False) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    recorded = await session.call_tool(
                        "record_decision",
                        {"action": "aired the spare room", "reason": "guests coming", "approver": "SDK"},
                    )
                    return tools, recorded

    tools, recorded = asyncio.run(flow())
    assert any(tool.name == "record_decision" for tool in tools.tools)
    assert not recorded.is_error, recorded
    # The SDK registered a public client: no secret came back, and the page said who asked.
    info = storage.client_info
    assert info.client_id.startswith("hc_") and info.client_secret is None
    assert "Python SDK host" in person.page and "unverified" in person.page
    assert storage.tokens.refresh_token.startswith("hrt3.")
    listed = {client["client_id"]: client for client in _admin(linked_url, "client", "list")["clients"]}
    assert listed[info.client_id]["created_by"] == "registration"
    assert listed[info.client_id]["public"] is True
    shown = _explain(linked_url, storage.tokens.access_token, "aired the spare room")
    assert "guests coming" in str(shown.structured_content)


class _DocumentHost:
    """The host's website on loopback, serving its metadata document and counting fetches."""

    def __init__(self):
        host = self
        self.fetches = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                host.fetches += 1
                body = json.dumps({
                    "client_id": host.url,
                    "client_name": "Document Host",
                    "redirect_uris": [HOST_REDIRECT],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "token_endpoint_auth_method": "none",
                }).encode()
                if self.path != "/oauth/client.json":
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", "max-age=300")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/oauth/client.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def _public_client(client_id, redirect_uri):
    return OAuth2Session(
        client_id, None, scope=SCOPE, redirect_uri=redirect_uri,
        code_challenge_method="S256", token_endpoint_auth_method="none",
    )


def _link_public(metadata, linked_url, client, link_code):  # noqa: F811
    location, verifier = _authorize(metadata, client, linked_url, link_code)
    return client.fetch_token(
        metadata["token_endpoint"], authorization_response=location, code_verifier=verifier, resource=linked_url
    )


def test_a_host_named_by_its_metadata_document_links_with_authlib(linked_url, metadata):  # noqa: F811
    assert metadata["client_id_metadata_document_supported"] is True
    assert "none" in metadata["token_endpoint_auth_methods_supported"]
    host = _DocumentHost()
    try:
        household = _admin(linked_url, "household", "create", "Document Home")["household_id"]
        code = _admin(linked_url, "link-code", household)["code"]
        client = _public_client(host.url, HOST_REDIRECT)
        page, _fields, _browser = _consent(client.create_authorization_url(
            metadata["authorization_endpoint"], code_verifier="v" * 43, resource=linked_url)[0])
        assert "Document Host" in page.text and "unverified" in page.text
        assert "<strong><bdi>host.example</bdi></strong>" in page.text
        token = _link_public(metadata, linked_url, client, code)
        assert not _record(linked_url, token["access_token"], "fed the cat", "away for the day").is_error
        rotated = client.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])
        assert rotated["refresh_token"] != token["refresh_token"]
        client.refresh_token(metadata["token_endpoint"], refresh_token=rotated["refresh_token"])
        # Kept as its cache headers allow: one fetch for the pages, the exchange and the refreshes.
        assert host.fetches == 1
        # Reuse of a token two rotations back ends the family.
        with pytest.raises(OAuthError) as reused:
            client.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])
        assert reused.value.error == "invalid_grant"
    finally:
        host.close()
    # A document URL that is not https is refused on the page, and nothing redirects.
    refused = requests.get(
        metadata["authorization_endpoint"],
        params={"response_type": "code", "client_id": "http://host.example/oauth/client.json",
                "redirect_uri": HOST_REDIRECT, "state": "s", "code_challenge": "c" * 43,
                "code_challenge_method": "S256", "resource": linked_url},
        allow_redirects=False, timeout=10,
    )
    assert refused.status_code == 400 and "location" not in refused.headers
    assert "must use https" in refused.text


def test_an_operator_adds_a_public_client_with_hearth_admin(linked_url, metadata):  # noqa: F811
    added = _admin(linked_url, "client", "add", "Kitchen Tablet", "--redirect-uri", HOST_REDIRECT,
                   "--redirect-uri", "http://127.0.0.1/callback", "--public")
    assert set(added) == {"client_id"}
    household = _admin(linked_url, "household", "create", "Tablet Home")["household_id"]
    code = _admin(linked_url, "link-code", household)["code"]
    client = _public_client(added["client_id"], "http://127.0.0.1:40123/callback")
    token = _link_public(metadata, linked_url, client, code)
    assert re.fullmatch(r"hrt3\.[^.]+\.hh-[0-9a-f]+\.\d+\.[A-Za-z0-9_-]+", token["refresh_token"]), token["refresh_token"]
    listed = {client["client_id"]: client for client in _admin(linked_url, "client", "list")["clients"]}
    assert listed[added["client_id"]]["created_by"] == "operator"
    assert listed[added["client_id"]]["name"] == "Kitchen Tablet"
    _admin(linked_url, "client", "delete", added["client_id"])
    with pytest.raises(OAuthError) as deleted:
        client.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])
    assert deleted.value.error == "invalid_client"
