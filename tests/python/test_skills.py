"""The Agent Skills in skills/ as a host sees them: each file's front matter is valid YAML in
the Agent Skills format, the server serves each as a prompt through the official MCP Python
SDK, and every tool or field a skill names exists on the server."""

import asyncio
import re

import yaml

from conftest import ROOT
from mcp_client import session_flow

SKILLS = ROOT / "skills"

# Each skill must teach every tool of its toolset.
TOOLSETS = {
    "hearth-why": ["record_decision", "explain_why", "whats_changed", "get_trace", "prove_history",
                   "scholia_catalog", "scholia_lookup", "scholia_lint_snippet", "scholia_lint_trace"],
    "hearth-aion": ["ask_aion"],
    "hearth-countersign": ["search_products", "propose_purchase", "confirm_purchase", "decide_request",
                           "list_waiting", "household_activity", "verify_ledger", "check_receipt"],
}


def read_skill(name):
    text = (SKILLS / name / "SKILL.md").read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert match, f"{name}: no front matter"
    return yaml.safe_load(match.group(1)), match.group(2).strip()


def test_every_skill_folder_is_a_valid_agent_skill():
    assert sorted(p.name for p in SKILLS.iterdir() if p.is_dir()) == sorted(TOOLSETS)
    for name in TOOLSETS:
        front, body = read_skill(name)
        assert set(front) == {"name", "description"}, front
        # The format: lowercase letters, digits and hyphens, at most 64, named like the folder;
        # a description of at most 1,024 characters.
        assert front["name"] == name and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) and len(name) <= 64
        assert isinstance(front["description"], str) and 40 < len(front["description"]) <= 1024
        assert body.startswith("# ")


def schema_names(schema, found):
    """Every property name and enumerated string value in a schema."""
    if isinstance(schema, dict):
        found.update(schema.get("properties", {}))
        found.update(v for v in schema.get("enum", []) if isinstance(v, str))
        if isinstance(schema.get("const"), str):
            found.add(schema["const"])
        for value in schema.values():
            schema_names(value, found)
    elif isinstance(schema, list):
        for value in schema:
            schema_names(value, found)
    return found


def test_the_server_serves_each_skill_as_a_prompt_naming_only_what_exists(server_url, judge_token):
    async def steps(session, init):
        assert init.capabilities.prompts is not None
        prompts = (await session.list_prompts()).prompts
        tools = (await session.list_tools()).tools
        fetched = {p.name: await session.get_prompt(p.name) for p in prompts}
        return prompts, tools, fetched

    prompts, tools, fetched = asyncio.run(session_flow(server_url, judge_token, steps))
    assert [p.name for p in prompts] == ["hearth-why", "hearth-aion", "hearth-countersign"]
    tool_names = {tool.name for tool in tools}
    fields = set()
    for tool in tools:
        schema_names(tool.input_schema, fields)
        schema_names(tool.output_schema, fields)
    for prompt in prompts:
        front, body = read_skill(prompt.name)
        assert prompt.description == front["description"]
        text = fetched[prompt.name].messages[0].content.text
        assert text == f"{front['description']}\n\n{body}"
        # Every snake_case name in backticks is a tool, a field of one or one of a field's
        # values: a renamed tool or field fails here, before a host learns the wrong name.
        named = set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", body))
        unknown = named - tool_names - fields
        assert not unknown, f"{prompt.name} names what the server does not have: {sorted(unknown)}"
        missing = [tool for tool in TOOLSETS[prompt.name] if f"`{tool}`" not in body]
        assert not missing, f"{prompt.name} does not teach {missing}"
        assert set(TOOLSETS[prompt.name]) <= tool_names
