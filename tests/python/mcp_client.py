"""Drives Hearth with the official MCP Python SDK client over Streamable HTTP."""

import uuid
from urllib.parse import urlsplit

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def _client(token, headers=None):
    return create_mcp_http_client(headers={"Authorization": f"Bearer {token}", **(headers or {})})


def _origin(url):
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def discover_token_endpoint(url):
    """Follows the discovery chain a host uses: protected-resource metadata names the
    authorization server, whose metadata names the token endpoint."""
    async with httpx2.AsyncClient() as http:
        resource = (await http.get(_origin(url) + "/.well-known/oauth-protected-resource/mcp")).json()
        assert resource["resource"] == url, resource
        issuer = resource["authorization_servers"][0]
        server = (await http.get(issuer + "/.well-known/oauth-authorization-server")).json()
        assert server["issuer"] == issuer
        assert "S256" in server["code_challenge_methods_supported"]
        return server["token_endpoint"]


async def client_credentials_token(url, client_id, client_secret, scope=None):
    """POSTs the client-credentials grant with HTTP Basic authentication, as Alexa+ does."""
    endpoint = await discover_token_endpoint(url)
    form = {"grant_type": "client_credentials", "resource": url}
    if scope:
        form["scope"] = scope
    async with httpx2.AsyncClient() as http:
        response = await http.post(endpoint, data=form, auth=(client_id, client_secret))
        response.raise_for_status()
        assert response.headers["cache-control"] == "no-store"
        return response.json()


async def judge_exchange(url, judge_token):
    async with httpx2.AsyncClient() as http:
        response = await http.post(_origin(url) + "/oauth/judge", data={"judge_token": judge_token})
        response.raise_for_status()
        return response.json()


async def session_flow(url, token, steps, headers=None):
    """Opens an initialized session, sending `headers` on every request too, and runs
    `steps(session, init_result)`."""
    async with _client(token, headers) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                return await steps(session, init)


DECISIONS = [
    ("dim lights", "Movie time requested by the user", {"brightness": 20}),
    ("lock front door", "Everyone left the house; caf\u00e9 trip \U0001F600", {"door": "front", "ratio": 0.25}),
    ("set thermostat", "Cold evening forecast", {"celsius": 21.5, "tags": ["evening", "comfort"]}),
]


async def record_and_trace(url, token):
    household = "py-" + uuid.uuid4().hex[:12]

    async def steps(session, _init):
        trace_id = None
        for action, reason, inputs in DECISIONS:
            result = await session.call_tool(
                "record_decision",
                {"household_id": household, "action": action, "reason": reason, "inputs": inputs, "approver": "Test parent"},
            )
            assert not result.is_error, result
            trace_id = result.structured_content["trace_id"]
        trace = await session.call_tool("get_trace", {"household_id": household, "trace_id": trace_id[:8]})
        assert not trace.is_error, trace
        return trace.structured_content

    return await session_flow(url, token, steps)
