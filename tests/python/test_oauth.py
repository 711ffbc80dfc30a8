"""Authorization as a host meets it: discovery, the client-credentials grant, scopes and the
judge-token exchange, driven through the official MCP SDK client."""

import asyncio

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from mcp_client import client_credentials_token, judge_exchange, session_flow


def test_the_token_response_is_a_one_hour_bearer_token(server_url, client_credentials):
    issued = asyncio.run(client_credentials_token(server_url, *client_credentials))
    assert issued["token_type"] == "Bearer"
    assert issued["expires_in"] == 3600
    assert issued["scope"] == "mcp:service"


def test_a_resources_only_token_cannot_list_tools(server_url, client_credentials):
    issued = asyncio.run(client_credentials_token(server_url, *client_credentials, scope="mcp:resources"))

    async def steps(session, _init):
        return await session.list_tools()

    # The SDK surfaces the 403 insufficient_scope answer as an MCP error, never a tool list.
    with pytest.raises(ExceptionGroup) as refused:
        asyncio.run(session_flow(server_url, issued["access_token"], steps))
    matched, _rest = refused.value.split(MCPError)
    assert matched is not None, refused.value
    errors = []
    pending = [matched]
    while pending:
        group = pending.pop()
        for error in group.exceptions:
            (pending if isinstance(error, ExceptionGroup) else errors).append(error)
    assert any("needs the mcp:tools scope" in str(error) for error in errors), errors


def test_a_judge_token_works_directly_and_through_the_exchange(server_url, judge_token):
    exchanged = asyncio.run(judge_exchange(server_url, judge_token))["access_token"]

    async def steps(session, init):
        return init.server_info.name

    for bearer in (judge_token, exchanged):
        assert asyncio.run(session_flow(server_url, bearer, steps)) == "hearth"


def test_wrong_client_credentials_get_invalid_client(server_url, client_credentials):
    client_id, _ = client_credentials
    with pytest.raises(httpx2.HTTPStatusError) as refused:
        asyncio.run(client_credentials_token(server_url, client_id, "not-the-secret"))
    response = refused.value.response
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert response.headers["www-authenticate"].startswith("Basic")
