"""`cargo lambda watch` emulates the Lambda runtime APIs for all three functions on loopback,
each function's release bootstrap (`cargo lambda build --release`, which scripts/test runs
just before) runs its runtime loop against them, and every API Gateway (v2 and v1) fixture in
events/ is sent to the function it belongs to through the emulator's Invoke API, as `cargo
lambda invoke` sends it; each answer must match events/expectations.json, as in
tests/lambda_events.rs but through the real runtime loop of each binary.

The emulator only emulates (`--only-lambda-apis`): left to start the functions itself, it
builds each one alone with `cargo run`, whose features differ from the workspace's, and that
build took about 85 s of the test command's run.

The functions run as under Lambda: credentials from a Secrets Manager secret and chains and
rate counters in a DynamoDB table, both on the moto_server scripts/test started."""

import json
import os
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = {"mcp": "hearth-mcp", "oauth": "hearth-oauth", "tts": "hearth-tts"}


def _moto():
    url = os.environ.get("HEARTH_TEST_MOTO_ENDPOINT")
    if not url:
        raise RuntimeError("HEARTH_TEST_MOTO_ENDPOINT is not set: run through scripts/test")
    return url


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _aws(service):
    return boto3.client(service, endpoint_url=_moto(), region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture(scope="module")
def watch(tmp_path_factory):
    secret = _aws("secretsmanager").create_secret(
        Name=f"hearth-watch-{uuid.uuid4().hex[:8]}",
        SecretString=(ROOT / "events" / "credentials.json").read_text(),
    )["ARN"]
    table = f"hearth-watch-{uuid.uuid4().hex[:8]}"
    _aws("dynamodb").create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    env = dict(
        os.environ,
        AWS_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_ENDPOINT_URL=_moto(),
        HEARTH_SECRET_ARN=secret,
        HEARTH_TABLE=table,
        MCP_RESOURCE_URL="https://abc123xyz.execute-api.us-east-1.amazonaws.com/mcp",
        AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH="true",
        # As the template sets it while AionBackendUrl is empty: the fixtures list ask_aion.
        MOCK_AION_BACKEND="true",
        # As the template passes WitnessPolicy: published, and tried by every append.
        HEARTH_WITNESS_POLICY=(ROOT / "events" / "witness-policy.txt").read_text(),
    )
    logs = tmp_path_factory.mktemp("watch")
    # One emulator per function, each serving its one function under the name `_`.
    ports, processes, functions = {}, [], {}
    try:
        # All three start together: each emulator takes a few seconds to listen.
        for function in FUNCTIONS:
            ports[function] = _free_port()
            log = open(logs / f"{function}-emulator.log", "w")
            processes.append((subprocess.Popen(
                ["cargo", "lambda", "watch", "--only-lambda-apis", "--invoke-address", "127.0.0.1",
                 "--invoke-port", str(ports[function])],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            ), log))
        for (emulator, log), port in zip(list(processes), ports.values()):
            _wait_for(emulator, port, log)
        for function, binary in FUNCTIONS.items():
            log = open(logs / f"{function}.log", "w")
            function_log = Path(log.name)
            runtime = dict(
                function_env(env, function),
                AWS_LAMBDA_RUNTIME_API=f"http://127.0.0.1:{ports[function]}/.rt",
                AWS_LAMBDA_FUNCTION_NAME=binary,
                AWS_LAMBDA_FUNCTION_VERSION="1",
                AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256",
            )
            process = subprocess.Popen(
                [str(ROOT / "target" / "lambda" / binary / "bootstrap")],
                cwd=ROOT, env=runtime, stdout=log, stderr=subprocess.STDOUT,
            )
            processes.append((process, log))
            functions[function] = (ports[function], process, function_log)
        yield functions
    finally:
        for process, _ in processes:
            process.terminate()
        for process, log in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()


def function_env(env, function):
    # The consent page's fixtures need account linking configured; the MCP fixtures keep the
    # client-credentials token reaching every tool (as tests/lambda_events.rs does).
    if function == "oauth":
        return dict(env, MCP_REDIRECT_URIS="https://pitangui.amazon.com/api/skill/link/MFIXTURE")
    return env


def _wait_for(process, port, log):
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"cargo lambda watch exited: {Path(log.name).read_text()}")
            time.sleep(0.5)
    raise RuntimeError("cargo lambda watch did not start")


def _invoke(functions, function, fixture):
    """Lambda's Invoke request, as `cargo lambda invoke --data-file` sends it. A function that
    has exited, or does not answer, fails the test with its log: the emulator would hold the
    request for it."""
    port, process, log = functions[function]
    if process.poll() is not None:
        raise RuntimeError(f"{FUNCTIONS[function]} exited with {process.returncode}: {log.read_text()}")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/2015-03-31/functions/_/invocations",
        data=fixture.read_bytes(), method="POST", headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200, answer.status
            return json.loads(answer.read())
    except OSError as error:
        raise RuntimeError(f"{FUNCTIONS[function]} did not answer {fixture.name} ({error}): {log.read_text()}")


def test_every_fixture_through_each_functions_runtime_loop(watch):
    expectations = json.loads((ROOT / "events" / "expectations.json").read_text())
    expectations.pop("_comment")
    checked = 0
    for key, expected in sorted(expectations.items()):
        function = key.split("/")[0]
        response = _invoke(watch, function, ROOT / "events" / key)
        if "unseeded" in expected:
            # It acts on the passkey household only the Rust replay seeds: here the same
            # handler answers for a household that does not exist.
            assert response["statusCode"] == expected["unseeded"], (key, response)
            checked += 1
            continue
        assert response["statusCode"] == expected["status"], (key, response)
        body = response.get("body") or ""
        if expected.get("empty"):
            assert body == "", key
        if expected.get("content_type"):
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            multi = {k.lower(): v[0] for k, v in (response.get("multiValueHeaders") or {}).items()}
            assert (headers.get("content-type") or multi.get("content-type")) == expected["content_type"], key
        for pointer in expected.get("json", []):
            node = json.loads(body)
            for part in pointer.strip("/").split("/"):
                part = part.replace("~1", "/").replace("~0", "~")  # RFC 6901 escapes
                node = node[int(part)] if isinstance(node, list) else node[part]
        checked += 1
    assert checked == len(expectations) > 30
