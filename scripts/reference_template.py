#!/usr/bin/env python3
"""Generates the parameters and outputs tables of the manual's Template page
(docs/src/reference/template.md) from infra/template.yaml, between the page's
`<!-- generated:parameters:... -->` and `<!-- generated:outputs:... -->` markers.

    reference_template.py            prints the page as it should be
    reference_template.py --update   rewrites the page

tests/infra/test_template.py fails when the page differs. Needs cfn-lint (its YAML loader reads
the template's intrinsic tags): run it with .venv-infra/bin/python.
"""

import sys
from pathlib import Path

from cfnlint.decode import cfn_yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "src" / "reference" / "template.md"


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


def splice(page, name, generated):
    begin, end = f"<!-- generated:{name}:begin -->\n", f"<!-- generated:{name}:end -->"
    start = page.index(begin) + len(begin)
    stop = start + page[start:].index(end)
    return page[:start] + generated + page[stop:]


def page():
    template = cfn_yaml.load(str(ROOT / "infra" / "template.yaml"))
    text = PAGE.read_text()
    text = splice(text, "parameters", parameters_table(template))
    return splice(text, "outputs", outputs_table(template))


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        PAGE.write_text(page())
        print(f"wrote {PAGE.relative_to(ROOT)}")
    elif not sys.argv[1:]:
        sys.stdout.write(page())
    else:
        sys.exit(__doc__)
