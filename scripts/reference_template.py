#!/usr/bin/env python3
"""Generates, from infra/template.yaml, the parameters and outputs tables of the manual's
Template page (docs/src/reference/template.md) and the table access table of its DynamoDB page
(docs/src/reference/dynamodb.md), between each page's `<!-- generated:NAME:... -->` markers.

    reference_template.py            prints the pages as they should be
    reference_template.py --update   rewrites them

tests/infra/test_template.py fails when the page differs. Needs cfn-lint (its YAML loader reads
the template's intrinsic tags): run it with .venv-infra/bin/python.
"""

import sys
from pathlib import Path

from cfnlint.decode import cfn_yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "src" / "reference" / "template.md"
ACCESS_PAGE = ROOT / "docs" / "src" / "reference" / "dynamodb.md"


def references(value, name):
    """Whether a template value refers to parameter `name` (Ref, or ${name} in a Sub)."""
    if isinstance(value, dict):
        if value.get("Ref") == name:
            return True
        return any(references(item, name) for item in value.values())
    if isinstance(value, list):
        return any(references(item, name) for item in value)
    if isinstance(value, str):
        return "${" + name + "}" in value
    return False


def environments(template):
    """Every function's environment variables, the globals first."""
    found = [template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})]
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            found.append(resource["Properties"].get("Environment", {}).get("Variables", {}))
    return found


def one_line(text):
    """The text on one line, with < and > escaped so a placeholder like <host> stays visible."""
    return " ".join(str(text).split()).replace("<", "&lt;").replace(">", "&gt;")


def parameters_table(template):
    rows = ["| Parameter | Default | Allowed | Sets | Meaning |", "| --- | --- | --- | --- | --- |"]
    for name, parameter in template["Parameters"].items():
        default = parameter.get("Default")
        default = "empty" if default == "" else f"`{default}`"
        if "AllowedValues" in parameter:
            allowed = ", ".join(f"`{value}`" for value in parameter["AllowedValues"])
        elif "ConstraintDescription" in parameter:
            allowed = one_line(parameter["ConstraintDescription"])
        elif "MinValue" in parameter:
            allowed = f"{parameter['MinValue']}–{parameter.get('MaxValue', '')}".rstrip("–")
            allowed = allowed if "MaxValue" in parameter else f"≥ {parameter['MinValue']}"
        else:
            allowed = "any"
        sets = sorted({
            variable
            for environment in environments(template)
            for variable, value in environment.items()
            if references(value, name)
        })
        sets = ", ".join(f"`{variable}`" for variable in sets) or "–"
        rows.append(f"| `{name}` | {default} | {allowed} | {sets} | {one_line(parameter['Description'])} |")
    return "\n".join(rows) + "\n"


def outputs_table(template):
    rows = ["| Output | What it is |", "| --- | --- |"]
    for name, output in template["Outputs"].items():
        rows.append(f"| `{name}` | {one_line(output['Description'])} |")
    return "\n".join(rows) + "\n"


ROLES = {"McpRole": "mcp", "OAuthRole": "oauth", "TtsRole": "tts"}


def statements(role):
    """A role's policy statements, a conditional statement (Fn::If) by its first branch."""
    for policy in role["Properties"].get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            if "Fn::If" in statement:
                statement = statement["Fn::If"][1]
            if isinstance(statement, dict) and "Action" in statement:
                yield statement


def iam_table(template):
    """Each function's access to the table: its statements on the table's ARN."""
    rows = ["| Function | Statement | Actions on the table | Partitions (`dynamodb:LeadingKeys`) |",
            "| --- | --- | --- | --- |"]
    for role_name, function in ROLES.items():
        for statement in statements(template["Resources"][role_name]):
            resource = statement.get("Resource")
            if resource != {"Fn::GetAtt": ["Table", "Arn"]}:
                continue
            actions = statement["Action"]
            actions = [actions] if isinstance(actions, str) else list(actions)
            actions = ", ".join(f"`{action.removeprefix('dynamodb:')}`" for action in actions)
            keys = (statement.get("Condition", {}).get("ForAllValues:StringLike", {})
                    .get("dynamodb:LeadingKeys"))
            keys = ", ".join(f"`{key}`" for key in keys) if keys else "any"
            rows.append(f"| `{function}` | {statement.get('Sid', '–')} | {actions} | {keys} |")
    return "\n".join(rows) + "\n"


def splice(page, name, generated):
    begin, end = f"<!-- generated:{name}:begin -->\n", f"<!-- generated:{name}:end -->"
    start = page.index(begin) + len(begin)
    stop = start + page[start:].index(end)
    return page[:start] + generated + page[stop:]


def pages():
    """Each generated page as it should be: {path: text}."""
    template = cfn_yaml.load(str(ROOT / "infra" / "template.yaml"))
    text = PAGE.read_text()
    text = splice(text, "parameters", parameters_table(template))
    text = splice(text, "outputs", outputs_table(template))
    access = splice(ACCESS_PAGE.read_text(), "iam", iam_table(template))
    return {PAGE: text, ACCESS_PAGE: access}


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        for path, text in pages().items():
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    elif not sys.argv[1:]:
        for text in pages().values():
            sys.stdout.write(text)
    else:
        sys.exit(__doc__)
