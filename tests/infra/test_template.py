"""The SAM template against the code: it routes exactly the routes the local server serves,
to the function that serves each, and every environment variable Hearth reads is set in the
template, held in the credentials secret, or documented as local only in the manual
(docs/src/reference/configuration.md).

Run by scripts/test with the infra venv (cfn-lint's YAML loader reads the intrinsic tags)
after `cargo build --bin hearth`."""

import json
import re
import subprocess
import sys
from pathlib import Path

from cfnlint.decode import cfn_yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = cfn_yaml.load(str(ROOT / "infra" / "template.yaml"))
RESOURCES = TEMPLATE["Resources"]
HEARTH = ROOT / "target" / "debug" / "hearth"
# The manual's pages these tests hold the template to.
CONFIGURATION_PAGE = ROOT / "docs" / "src" / "reference" / "configuration.md"
ALARM_RUNBOOK_PAGE = ROOT / "docs" / "src" / "aws" / "alarms.md"

# Read by the code but provided by the platform, not configured.
# Set by Lambda itself in every function.
PLATFORM = {"AWS_LAMBDA_RUNTIME_API", "AWS_LAMBDA_FUNCTION_NAME"}


def served_routes():
    listed = json.loads(subprocess.run([str(HEARTH), "routes"], capture_output=True, check=True).stdout)
    # The path-inserted metadata names are the local server's alone: under API Gateway they
    # would lie outside the API (see the manual's HTTP routes page).
    return {(r["function"], r["method"], r["path"]) for r in listed if not r["local_only"]}


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
    """Environment variable names the product code reads: every string literal that is one,
    but for `env!("…")`, which names a variable of the build (build.rs), not of the running
    function."""
    pattern = re.compile(r'(?<!env!\()"((?:HEARTH|MCP|COUNTERSIGN|AION|POLLY|AWS|RUST)_[A-Z0-9_]+)"')
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


def keys_of_secret(name):
    """The credential names a secret of the template holds."""
    properties = RESOURCES[name]["Properties"]
    generated = properties["GenerateSecretString"]
    template = generated.get("SecretStringTemplate", "{}")
    if isinstance(template, dict):  # !Sub 'text' or !Sub ['text', {variables}]
        template = template["Fn::Sub"]
        template = template if isinstance(template, str) else template[0]
    return set(re.findall(r'"([A-Z0-9_]+)":', template)) | {generated["GenerateStringKey"]}


def secret_resources():
    return [name for name, r in RESOURCES.items() if r["Type"] == "AWS::SecretsManager::Secret"]


def secret_keys():
    return set().union(*(keys_of_secret(name) for name in secret_resources()))


def readable_secrets(function):
    """The secrets a function's role may read."""
    role = RESOURCES[RESOURCES[function]["Properties"]["Role"]["Fn::GetAtt"][0]]
    readable = set()
    for policy in role["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            if isinstance(statement, dict) and statement.get("Action") == "secretsmanager:GetSecretValue":
                resources = statement["Resource"]
                for resource in resources if isinstance(resources, list) else [resources]:
                    readable.add(resource["Ref"])
    return readable


def secrets_named_to(function):
    """The secrets HEARTH_SECRET_ARN names to a function: a comma-separated !Join of !Refs."""
    variables = RESOURCES[function]["Properties"].get("Environment", {}).get("Variables", {})
    value = variables.get("HEARTH_SECRET_ARN") or TEMPLATE["Globals"]["Function"]["Environment"]["Variables"].get("HEARTH_SECRET_ARN")
    if isinstance(value, dict) and "Ref" in value:
        return {value["Ref"]}
    separator, parts = value["Fn::Join"]
    assert separator == ","
    return {part["Ref"] for part in parts}


# What each function's code uses (auth::credentials names): the token checks need the client
# id, the signing key and the judge hashes everywhere; only the token endpoint needs the client
# secret; only MCP checks device attestations, calls the guide and the judge's model server,
# signs guardian notifications and signs the households' log checkpoints.
USES = {
    "McpFunction": {"MCP_CLIENT_ID", "MCP_JWT_SECRET", "MCP_JUDGE_TOKEN_HASHES", "COUNTERSIGN_HOST_KEY",
                    "AION_BACKEND_API_KEY", "COUNTERSIGN_NOTIFY_KEY", "COUNTERSIGN_JUDGE_API_KEY",
                    "HEARTH_LOG_KEY", "HEARTH_LOG_KEY_PREVIOUS"},
    "OAuthFunction": {"MCP_CLIENT_ID", "MCP_CLIENT_SECRET", "MCP_JWT_SECRET", "MCP_JUDGE_TOKEN_HASHES"},
    "TtsFunction": {"MCP_CLIENT_ID", "MCP_JWT_SECRET", "MCP_JUDGE_TOKEN_HASHES"},
}


def test_each_function_can_read_only_the_secrets_it_uses():
    for function, uses in USES.items():
        readable = readable_secrets(function)
        keys = set().union(*(keys_of_secret(name) for name in readable))
        assert keys == uses, f"{function} can read {sorted(keys - uses)} it does not use, or lacks {sorted(uses - keys)}"
        assert secrets_named_to(function) == readable, function


def test_no_credential_is_held_in_two_secrets():
    names = [key for name in secret_resources() for key in keys_of_secret(name)]
    assert len(names) == len(set(names)), names


def local_only_names():
    names = set()
    for line in CONFIGURATION_PAGE.read_text().splitlines():
        if line.startswith("| `") and "local only" in line.lower():
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_every_variable_the_code_reads_is_set_in_the_template_or_documented_as_local_only():
    unplaced = read_names() - template_environment() - secret_keys() - local_only_names() - PLATFORM
    assert unplaced == set(), "set these in the template, the secret, or mark them local only in docs/src/reference/configuration.md"


def test_no_secret_is_a_plain_template_value():
    environment = template_environment()
    assert environment & secret_keys() == set()
    for name in TEMPLATE["Parameters"]:
        assert not re.search(r"secret|password|token|key", name, re.IGNORECASE), name


def table_access(function):
    """What a function's role may do to the table: (actions, leading-key patterns or None)."""
    role = RESOURCES[RESOURCES[function]["Properties"]["Role"]["Fn::GetAtt"][0]]
    access = []
    for policy in role["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            if not isinstance(statement, dict) or "Action" not in statement:
                continue  # an !If around an optional statement (the guardrail)
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(action.startswith("dynamodb:") for action in actions):
                keys = statement.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys")
                access.append((sorted(actions), keys))
    return access


def test_the_speech_function_reads_household_accounts_and_counts_rates_only():
    # /tts checks household tokens' generations (account items) and counts requests: with a
    # token, against the subject's counter, reading the address's; nothing else.
    assert sorted(table_access("TtsFunction"), key=str) == sorted([
        (["dynamodb:GetItem"], ["account#*"]),
        (["dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:UpdateItem"], ["rate#*"]),
    ], key=str)


def test_the_oauth_function_reaches_counters_linking_records_accounts_and_clients_only():
    # Tokens and codes live in grant# items of their own kinds (link codes, authorization
    # codes, refresh families, used assertion ids, failed document fetches, the consent page's
    # passkey challenges), and no other kind; a guardian's passkey's household is read;
    # a link or revoked family writes the account and its index entry (one transaction); a
    # registration or a kept metadata document (with a signing client's keys) writes the client
    # and its index entry (one transaction), never deletes one; counters as everywhere. No
    # chain, no scope registry, no turn bindings.
    assert sorted(table_access("OAuthFunction"), key=str) == sorted([
        (["dynamodb:ConditionCheckItem", "dynamodb:UpdateItem"], ["rate#*"]),
        (
            ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"],
            ["grant#link#*", "grant#code#*", "grant#family#*", "grant#jti#*", "grant#docfail#*",
             "grant#signin#*"],
        ),
        (["dynamodb:GetItem"], ["grant#passkey#*"]),
        (["dynamodb:GetItem", "dynamodb:PutItem"], ["account#*", "accounts"]),
        (["dynamodb:GetItem", "dynamodb:PutItem"], ["client#*", "clients"]),
    ], key=str)


def test_the_mcp_function_can_read_proofs_in_one_batch():
    # prove_history, get_trace and check_receipt read a log's stored hashes with BatchGetItem.
    actions = {action for actions, _ in table_access("McpFunction") for action in actions}
    assert "dynamodb:BatchGetItem" in actions


def test_browser_origins_are_a_list_of_https_or_loopback_origins():
    parameter = TEMPLATE["Parameters"]["AllowedOrigins"]
    assert parameter["Default"] == ""
    pattern = re.compile(parameter["AllowedPattern"])
    for good in ["", "https://app.example", "http://localhost:6274,http://127.0.0.1:6274",
                 "https://app.example:8443,http://localhost:6274"]:
        assert pattern.match(good), good
    for bad in ["http://app.example", "http://localhost", "https://a.example/path",
                "http://localhost:6274, http://127.0.0.1:6274", "https://a.example,", "http://127.0.0.2:80"]:
        assert not pattern.match(bad), bad
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["MCP_ALLOWED_ORIGINS"] == {"Ref": "AllowedOrigins"}
    assert RESOURCES["HttpApi"]["Properties"]["CorsConfiguration"]["Fn::If"][1]["AllowOrigins"] == {
        "Fn::Split": [",", {"Ref": "AllowedOrigins"}]}


def test_account_linking_is_off_until_redirect_uris_are_given():
    parameter = TEMPLATE["Parameters"]["RedirectUris"]
    assert parameter["Default"] == ""
    pattern = re.compile(parameter["AllowedPattern"])
    assert pattern.match("")
    assert pattern.match("https://pitangui.amazon.com/api/skill/link/M1,https://layla.amazon.com/api/skill/link/M1")
    for bad in ["http://pitangui.amazon.com/x", "https://a.example/x#frag", "https://a.example/x,"]:
        assert not pattern.match(bad), bad
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["MCP_REDIRECT_URIS"] == {"Ref": "RedirectUris"}


def test_the_table_keeps_its_data():
    table = RESOURCES["Table"]
    assert table["DeletionPolicy"] == "Retain" and table["UpdateReplacePolicy"] == "Retain"
    properties = table["Properties"]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert properties["DeletionProtectionEnabled"] is True


def test_the_guide_is_mocked_exactly_when_no_backend_is_given():
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["AION_BACKEND_URL"] == {"Ref": "AionBackendUrl"}
    assert variables["MOCK_AION_BACKEND"] == {"Fn::If": ["NoAionBackend", "true", "false"]}
    assert TEMPLATE["Conditions"]["NoAionBackend"] == {"Fn::Equals": [{"Ref": "AionBackendUrl"}, ""]}
    assert TEMPLATE["Parameters"]["AionBackendUrl"]["Default"] == ""


def test_api_access_logs_hold_only_the_request_id_route_status_and_latency():
    stage = RESOURCES["HttpApiStage"]["Properties"]
    settings = stage["AccessLogSettings"]
    assert settings["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    assert json.loads(settings["Format"]) == {
        "requestId": "$context.requestId", "routeKey": "$context.routeKey",
        "status": "$context.status", "responseLatency": "$context.responseLatency"}
    group = RESOURCES["ApiAccessLogGroup"]["Properties"]
    assert group["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_reserved_concurrency_is_optional_and_unset_by_default():
    for function, parameter in [("McpFunction", "McpReservedConcurrency"),
                                ("OAuthFunction", "OAuthReservedConcurrency"),
                                ("TtsFunction", "TtsReservedConcurrency")]:
        assert TEMPLATE["Parameters"][parameter]["Default"] == ""
        pattern = re.compile(TEMPLATE["Parameters"][parameter]["AllowedPattern"])
        assert pattern.match("") and pattern.match("25") and not pattern.match("0")
        reserved = RESOURCES[function]["Properties"]["ReservedConcurrentExecutions"]
        assert reserved["Fn::If"][1:] == [{"Ref": parameter}, {"Ref": "AWS::NoValue"}]


def alarm_metrics(alarm):
    """(namespace, metric name) of everything an alarm watches."""
    properties = RESOURCES[alarm]["Properties"]
    if "MetricName" in properties:
        return {(properties["Namespace"], properties["MetricName"])}
    return {(m["MetricStat"]["Metric"]["Namespace"], m["MetricStat"]["Metric"]["MetricName"])
            for m in properties["Metrics"] if "MetricStat" in m}


def test_alarms_cover_errors_throttles_latency_and_the_table():
    alarms = [name for name, r in RESOURCES.items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    watched = set().union(*(alarm_metrics(a) for a in alarms))
    for expected in [("AWS/ApiGateway", "5xx"), ("Hearth", "Throttled"), ("AWS/Lambda", "Errors"),
                     ("AWS/Lambda", "Throttles"), ("AWS/Lambda", "Duration"),
                     ("AWS/DynamoDB", "ReadThrottleEvents"), ("AWS/DynamoDB", "WriteThrottleEvents"),
                     ("AWS/DynamoDB", "ConditionalCheckFailedRequests")]:
        assert expected in watched, expected
    latency = {RESOURCES[a]["Properties"]["Dimensions"][0]["Value"]["Ref"]
               for a in alarms if alarm_metrics(a) == {("AWS/Lambda", "Duration")}}
    assert latency == {"McpFunction", "OAuthFunction", "TtsFunction"}
    for alarm in alarms:
        actions = RESOURCES[alarm]["Properties"]["AlarmActions"]
        assert actions["Fn::If"][0] == "HasAlarmTopic", alarm
    # Each alarm is explained to the operator, in the manual's alarm runbook.
    runbook = ALARM_RUNBOOK_PAGE.read_text()
    for alarm in alarms:
        assert f"`{alarm}`" in runbook, f"{alarm} has no entry in docs/src/aws/alarms.md"


def test_the_alarms_read_only_the_custom_metrics_the_default_metric_detail_writes():
    """At MetricDetail=function (the default) the functions write two custom metrics by
    Deployment alone, the stack's name (shared/src/telemetry/metrics.rs); an alarm that reads
    one exists only while metrics are on, and reads it as written."""
    parameter = TEMPLATE["Parameters"]["MetricDetail"]
    assert (parameter["Default"], parameter["AllowedValues"]) == ("function", ["function", "tool", "off"])
    environment = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert environment["HEARTH_METRICS"] == {"Ref": "MetricDetail"}
    assert environment["HEARTH_DEPLOYMENT"] == {"Ref": "AWS::StackName"}
    assert TEMPLATE["Conditions"]["HasMetrics"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "MetricDetail"}, "off"]}]}
    default_metrics = {"Throttled", "WitnessRefusals"}
    reading_custom = []
    for name, resource in RESOURCES.items():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        properties = resource["Properties"]
        stats = ([properties] if "MetricName" in properties
                 else [m["MetricStat"]["Metric"] for m in properties["Metrics"] if "MetricStat" in m])
        custom = [stat for stat in stats if stat["Namespace"] == "Hearth"]
        if custom:
            reading_custom.append(name)
            assert resource.get("Condition") == "HasMetrics", name
            for stat in custom:
                assert stat["MetricName"] in default_metrics, (name, stat)
                assert stat["Dimensions"] == [{"Name": "Deployment", "Value": {"Ref": "AWS::StackName"}}], name
        else:
            assert "Condition" not in resource, name
    assert sorted(reading_custom) == ["Api429RateAlarm", "WitnessRefusalsAlarm"]
    # The rate alarm's 429s are written only on a 429: a period without one counts as 0.
    rate = RESOURCES["Api429RateAlarm"]["Properties"]["Metrics"][0]["Expression"]
    assert "FILL(throttled, 0)" in rate


def test_the_dashboard_shows_every_function_the_api_the_table_and_the_tools():
    body = RESOURCES["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    names = set(re.findall(r"\$\{([A-Za-z:]+)\}", body))
    assert names == {"AWS::Region", "AWS::StackName", "HttpApi", "McpFunction", "McpLogGroup", "OAuthFunction",
                     "TtsFunction", "Table"}
    widgets = json.loads(re.sub(r"\$\{[A-Za-z:]+\}", "x", body))["widgets"]
    text = json.dumps(widgets)
    for metric in ["Duration", "Errors", "Throttles", "5xx", "Throttled",
                   "ConditionalCheckFailedRequests", "WriteThrottleEvents"]:
        assert f'"{metric}"' in text, metric
    assert "SEARCH('{Hearth,Function,Tool} MetricName=\\\"Latency\\\"" in text
    # The deployment-wide counts, as MetricDetail=function writes them: by the stack's name.
    hearth = [widget["properties"]["metrics"] for widget in widgets
              if any(metric[0] == "Hearth" for metric in widget["properties"].get("metrics", []))]
    assert hearth == [[["Hearth", "Throttled", "Deployment", "x"], [".", "WitnessRefusals", ".", "."]]], hearth
    # Tool errors are no metric at `function`: a Logs Insights widget counts the MCP log's
    # lines that mark one (`ToolErrors: 1`, or `tool_failed: true` at `off`, which Logs
    # Insights reads as 1), so the widget shows them at every MetricDetail.
    queries = [widget["properties"]["query"] for widget in widgets if widget["type"] == "log"]
    assert queries == ["SOURCE 'x' | filter ToolErrors = 1 or tool_failed = 1 | stats count(*) as tool_errors by bin(5m)"]
    assert "SOURCE '${McpLogGroup}'" in body


def test_the_manuals_template_and_table_access_tables_are_generated_from_the_template():
    sys.path.insert(0, str(ROOT / "scripts"))
    import reference_template

    for path, text in reference_template.pages().items():
        assert text == path.read_text(), (
            f"{path.relative_to(ROOT)} is out of date: "
            "run .venv-infra/bin/python scripts/reference_template.py --update"
        )
