"""The Scholialang reference tools through the official MCP Python SDK client, which validates
every structured result against the tool's output schema."""

import asyncio

from mcp_client import session_flow

VALID = (
    '<Step id="S_01" name="demo">'
    '<Action id="A_1">Dimmed the lights.</Action>'
    '<Finding id="F_1">REFER:A_1 The room is darker.</Finding>'
    "</Step>"
)


def test_catalog_lookup_and_lint_through_the_sdk(server_url, token):
    async def steps(session, _init):
        catalog = await session.call_tool("scholia_catalog", {})
        lookup = await session.call_tool("scholia_lookup", {"term": "hypothesis"})
        clean = await session.call_tool("scholia_lint_snippet", {"snippet": VALID})
        trace = await session.call_tool("scholia_lint_trace", {"snippet": VALID})
        broken = await session.call_tool("scholia_lint_snippet", {"snippet": "<Step id='S'><Action>x</Step>"})
        return catalog, lookup, clean, trace, broken

    catalog, lookup, clean, trace, broken = asyncio.run(session_flow(server_url, token, steps))
    assert not catalog.is_error and len(catalog.structured_content["atoms"]) == 32
    assert any(match["name"] == "Hypothesis" for match in lookup.structured_content["matches"])
    assert not clean.is_error and clean.structured_content["ok"] is True
    assert trace.structured_content["total_errors"] == 0 and len(trace.structured_content["rules"]) == 18
    assert broken.is_error
    assert broken.structured_content["errors"][0]["rule"] == "well_formed"
    assert broken.structured_content["errors"][0]["message"].startswith("line 1, column ")
