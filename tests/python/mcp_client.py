"""Drives Hearth with the official MCP Python SDK client over Streamable HTTP."""

import uuid

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def _client(token):
    return create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})


async def session_flow(url, token, steps):
    """Opens an initialized session and runs `steps(session, init_result)`."""
    async with _client(token) as http:
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
