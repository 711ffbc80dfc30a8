"""The official MCP Python SDK client drives the local server end to end, and the trace it
gets back verifies with the stdlib script."""

import asyncio
import uuid

from conftest import run_verifier
from mcp_client import session_flow

WHY_TOOLS = {"record_decision", "explain_why", "whats_changed", "get_trace"}


def test_initialize_and_list_tools(server_url, token):
    async def steps(session, init):
        tools = await session.list_tools()
        return init, tools

    init, tools = asyncio.run(session_flow(server_url, token, steps))
    assert init.server_info.name == "hearth"
    assert init.protocol_version in {"2025-03-26", "2025-06-18", "2025-11-25"}
    by_name = {tool.name: tool for tool in tools.tools}
    assert WHY_TOOLS <= set(by_name)
    for name in WHY_TOOLS:
        tool = by_name[name]
        assert tool.output_schema is not None, name
        assert tool.annotations is not None, name
        assert tool.input_schema["additionalProperties"] is False, name
        for prop, schema in tool.input_schema["properties"].items():
            if schema.get("type") == "string":
                assert "maxLength" in schema, (name, prop)
    assert by_name["explain_why"].annotations.read_only_hint is True
    assert by_name["record_decision"].annotations.read_only_hint is False


def test_record_explain_trace_and_verify(server_url, token):
    household = "flow-" + uuid.uuid4().hex[:10]

    async def steps(session, _init):
        first = await session.call_tool(
            "record_decision",
            {"household_id": household, "action": "dim lights", "reason": "Movie time requested by the user",
             "inputs": {"brightness": 20}, "approver": "Demo user"},
        )
        second = await session.call_tool(
            "record_decision",
            {"household_id": household, "action": "lock front door", "reason": "Everyone left for school",
             "inputs": {}, "approver": "Parent"},
        )
        why = await session.call_tool("explain_why", {"household_id": household, "question": "Why are the lights dim?"})
        changed = await session.call_tool(
            "whats_changed", {"household_id": household, "since": first.structured_content["recorded_at"]}
        )
        trace = await session.call_tool(
            "get_trace", {"household_id": household, "trace_id": second.structured_content["trace_id"]}
        )
        naive = await session.call_tool("whats_changed", {"household_id": household, "since": "2026-11-30T08:00:00"})
        return first, second, why, changed, trace, naive

    first, second, why, changed, trace, naive = asyncio.run(session_flow(server_url, token, steps))
    assert not first.is_error and not second.is_error
    assert second.structured_content["prev"] == first.structured_content["trace_id"]
    assert second.structured_content["seq"] == 2

    assert not why.is_error
    answer = why.content[0].text
    assert "Movie time requested by the user" in answer
    assert first.structured_content["trace_id"][:8] in answer
    assert "Demo user" in answer
    assert answer.count(". ") <= 2
    assert why.structured_content["record"]["trace_id"] == first.structured_content["trace_id"]

    assert [d["action"] for d in changed.structured_content["decisions"]] == ["lock front door"]

    content = trace.structured_content
    assert content["household_id"] == household and content["anchor"] is None
    assert [r["seq"] for r in content["records"]] == [1, 2]
    verdict = run_verifier(content)
    assert verdict.returncode == 0 and verdict.stdout.decode().strip() == "OK", verdict

    assert naive.is_error
    assert "timezone" in naive.content[0].text
