"""The SAM template against the code: it routes exactly the routes the local server serves,
to the function that serves each, and every environment variable Hearth reads is set in the
template, held in the credentials secret, or documented in the README as local only.

Run by scripts/test with the infra venv (cfn-lint's YAML loader reads the intrinsic tags)
after `cargo build --bin hearth`."""

import json
import re
import subprocess
from pathlib import Path

from cfnlint.decode import cfn_yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = cfn_yaml.load(str(ROOT / "infra" / "template.yaml"))
RESOURCES = TEMPLATE["Resources"]
HEARTH = ROOT / "target" / "debug" / "hearth"

# Read by the code but provided by the platform, not configured.
PLATFORM = {"AWS_LAMBDA_RUNTIME_API"}


def served_routes():
    listed = json.loads(subprocess.run([str(HEARTH), "routes"], capture_output=True, check=True).stdout)
    return {(r["function"], r["method"], r["path"]) for r in listed}


def function_of_integration(name):
    uri = RESOURCES[name]["Properties"]["IntegrationUri"]
    function = RESOURCES[uri["Fn::GetAtt"][0]]
    binary = function["Metadata"]["BuildProperties"]["Binary"]
    return binary.removeprefix("hearth-")


def template_routes():
    routes = set()
    for resource in RESOURCES.values():
        if resource["Type"] != "AWS::ApiGatewayV2::Route":
            continue
        method, path = resource["Properties"]["RouteKey"].split(" ", 1)
        target = resource["Properties"]["Target"]["Fn::Sub"]
        integration = re.fullmatch(r"integrations/\$\{(\w+)\}", target).group(1)
        routes.add((function_of_integration(integration), method, path))
    return routes


def test_the_template_routes_exactly_what_the_local_server_serves():
    served, routed = served_routes(), template_routes()
    assert served - routed == set(), "served but not routed"
    assert routed - served == set(), "routed but not served"


def test_every_function_builds_with_cargo_lambda_on_provided_al2023():
    functions = [r for r in RESOURCES.values() if r["Type"] == "AWS::Serverless::Function"]
    assert sorted(f["Metadata"]["BuildProperties"]["Binary"] for f in functions) == ["hearth-mcp", "hearth-oauth", "hearth-tts"]
    assert all(f["Metadata"]["BuildMethod"] == "rust-cargolambda" for f in functions)
    globals_ = TEMPLATE["Globals"]["Function"]
    assert globals_["Runtime"] == "provided.al2023"
    assert TEMPLATE["Parameters"]["Architecture"]["Default"] == "arm64"


def read_names():
    """Environment variable names the product code reads: every string literal that is one."""
    pattern = re.compile(r'"((?:HEARTH|MCP|COUNTERSIGN|AION|POLLY|AWS|RUST)_[A-Z0-9_]+)"')
    names = {"RUST_LOG"}  # read by tracing's EnvFilter::try_from_default_env
    for folder in ["shared/src", "src", "functions"]:
        for path in (ROOT / folder).rglob("*.rs"):
            names |= set(pattern.findall(path.read_text()))
    return names


def template_environment():
    names = set(TEMPLATE["Globals"]["Function"]["Environment"]["Variables"])
    for resource in RESOURCES.values():
        if resource["Type"] == "AWS::Serverless::Function":
            names |= set(resource["Properties"].get("Environment", {}).get("Variables", {}))
    return names


def secret_keys():
    generated = RESOURCES["Credentials"]["Properties"]["GenerateSecretString"]
    template = generated["SecretStringTemplate"]["Fn::Sub"][0]
    return set(re.findall(r'"([A-Z0-9_]+)":', template)) | {generated["GenerateStringKey"]}


def local_only_names():
    names = set()
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("| `") and "local only" in line.lower():
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_every_variable_the_code_reads_is_set_in_the_template_or_documented_as_local_only():
    unplaced = read_names() - template_environment() - secret_keys() - local_only_names() - PLATFORM
    assert unplaced == set(), "set these in the template, the secret, or mark them local only in the README"


def test_no_secret_is_a_plain_template_value():
    environment = template_environment()
    assert environment & secret_keys() == set()
    for name in TEMPLATE["Parameters"]:
        assert not re.search(r"secret|password|token|key", name, re.IGNORECASE), name


def test_the_table_keeps_its_data():
    table = RESOURCES["Table"]
    assert table["DeletionPolicy"] == "Retain" and table["UpdateReplacePolicy"] == "Retain"
    properties = table["Properties"]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert properties["DeletionProtectionEnabled"] is True
