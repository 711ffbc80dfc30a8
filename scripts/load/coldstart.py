#!/usr/bin/env python3
"""Cold start of each Lambda function binary, measured against a loopback Lambda runtime API.

For every start, this script serves the Lambda runtime API (the `next` / `response` calls a
custom runtime makes) on 127.0.0.1, starts the function binary with AWS_LAMBDA_RUNTIME_API
pointing at it, hands it one API Gateway (v2) event from events/, and records the time from
process start to the function's response (init plus first invocation, as Lambda's "Init
Duration" plus "Duration" of a cold request), then the process's peak RSS (VmHWM).

The credentials come from Secrets Manager secrets split as infra/template.yaml splits them
(each function reads its own: mcp and oauth two, tts one) and the rate counters from a
DynamoDB table on moto_server (loopback), so a start does what it does on AWS: read the
secrets, check the limiter, answer. Usage (scripts/test runs it after `cargo lambda build --release`):

  scripts/load/coldstart.py --moto http://127.0.0.1:PORT [--runs 20] [--bin-dir target/lambda]

Prints one JSON object: per function, the median and max milliseconds and the peak RSS MiB.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# One realistic first request per function: authenticated where the route needs it.
EVENTS = {
    "hearth-mcp": "events/mcp/v2-tools-list.json",
    "hearth-oauth": "events/oauth/v2-token.json",
    "hearth-tts": "events/tts/v2-tts-empty.json",
}


class RuntimeApi(ThreadingHTTPServer):
    """The three runtime API calls a function makes for one invocation."""

    daemon_threads = True

    def __init__(self, event):
        super().__init__(("127.0.0.1", 0), RuntimeHandler)
        self.event = event
        self.handed_out = False
        self.answered = threading.Event()
        self.response = None
        self.answered_at = None


def hand_out(handler, event, request_id=None, deadline_ms=30_000):
    """Answers a function's `next` poll on the runtime API with `event` (bytes), as Lambda
    does: the invocation's headers, then the event. Returns the request id."""
    request_id = request_id or str(uuid.uuid4())
    handler.send_response(200)
    handler.send_header("Lambda-Runtime-Aws-Request-Id", request_id)
    handler.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + deadline_ms))
    handler.send_header("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:hearth")
    handler.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(event)))
    handler.end_headers()
    handler.wfile.write(event)
    handler.wfile.flush()
    return request_id


class RuntimeHandler(BaseHTTPRequestHandler):
    def log_message(self, *_args):
        pass

    def do_GET(self):
        if not self.path.endswith("/runtime/invocation/next"):
            return self.send_error(404)
        if self.server.handed_out:
            # One invocation per start; hold the next poll until the process is stopped.
            self.server.answered.wait(30)
            time.sleep(30)
            return self.send_error(500)
        self.server.handed_out = True
        hand_out(self, json.dumps(self.server.event).encode())

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        payload = self.rfile.read(length)
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()
        if "/response" in self.path or "/error" in self.path:
            self.server.answered_at = time.perf_counter()
            self.server.response = (self.path, payload)
            self.server.answered.set()


def peak_rss_mib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_start(binary, event, environment):
    api = RuntimeApi(event)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    env = dict(environment, AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{api.server_address[1]}")
    started = time.perf_counter()
    process = subprocess.Popen([str(binary)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not api.answered.wait(30):
            raise RuntimeError(f"{binary.name} did not answer: {process.stderr.read1().decode(errors='replace')}")
        elapsed_ms = (api.answered_at - started) * 1000
        rss = peak_rss_mib(process.pid)
    finally:
        process.kill()
        process.wait()
        api.shutdown()
    path, payload = api.response
    if "/response" not in path:
        raise RuntimeError(f"{binary.name} reported an error: {payload[:300]!r}")
    status = json.loads(payload).get("statusCode")
    return elapsed_ms, rss, status


# The credentials split as infra/template.yaml splits them, and which secrets each function
# reads (its HEARTH_SECRET_ARN there).
SECRETS = {
    "token": ["MCP_CLIENT_ID", "MCP_JWT_SECRET", "MCP_JUDGE_TOKEN_HASHES"],
    "client": ["MCP_CLIENT_SECRET"],
    "device": ["COUNTERSIGN_HOST_KEY", "AION_BACKEND_API_KEY"],
    "log": ["HEARTH_LOG_KEY", "HEARTH_LOG_KEY_PREVIOUS"],
}
READS = {"hearth-mcp": ["token", "device", "log"], "hearth-oauth": ["token", "client"], "hearth-tts": ["token"]}


def make_secrets_and_table(moto):
    """The credentials secrets and the table, created on moto with boto3 (moto brings it)."""
    import boto3

    credentials = json.loads((ROOT / "events" / "credentials.json").read_text())
    kwargs = {
        "endpoint_url": moto,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    secrets = boto3.client("secretsmanager", **kwargs)
    arns = {}
    for part, names in SECRETS.items():
        # A secret the fixture leaves out is empty, as the template creates it.
        value = json.dumps({name: credentials.get(name, "") for name in names})
        name = f"hearth-coldstart-{part}-{uuid.uuid4().hex[:8]}"
        arns[part] = secrets.create_secret(Name=name, SecretString=value)["ARN"]
    table = f"hearth-coldstart-{uuid.uuid4().hex[:8]}"
    dynamodb = boto3.client("dynamodb", **kwargs)
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return arns, table


def function_environment(moto, table):
    """What a deployed MCP, OAuth or speech function's environment holds, but its secrets'
    ARNs, with the AWS endpoints on `moto`."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": moto,
        "AWS_LAMBDA_FUNCTION_NAME": "hearth",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_STREAM_NAME": "coldstart",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/hearth/coldstart",
        # As infra/template.yaml sets them for the deployed functions.
        "AWS_LC_SYS_NO_JITTER_ENTROPY": "1",
        "MIMALLOC_ARENA_EAGER_COMMIT": "0",
        "HEARTH_TABLE": table,
        "MCP_RESOURCE_URL": "https://abc123xyz.execute-api.us-east-1.amazonaws.com/mcp",
        "COUNTERSIGN_JUDGE": "bedrock",
        # The template sets this while AionBackendUrl is empty.
        "MOCK_AION_BACKEND": "true",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moto", required=True, help="moto_server URL")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--bin-dir", default=str(ROOT / "target" / "lambda"))
    args = parser.parse_args()

    secret_arns, table = make_secrets_and_table(args.moto)
    environment = function_environment(args.moto, table)
    results = {}
    for name, event_file in EVENTS.items():
        binary = Path(args.bin_dir) / name / "bootstrap"
        event = json.loads((ROOT / event_file).read_text())
        times, peaks, statuses = [], [], set()
        reads = ",".join(secret_arns[part] for part in READS[name])
        for _ in range(args.runs):
            elapsed, rss, status = one_start(binary, event, dict(environment, HEARTH_SECRET_ARN=reads))
            times.append(elapsed)
            peaks.append(rss)
            statuses.add(status)
        results[name] = {
            "event": event_file,
            "statuses": sorted(statuses),
            "starts": args.runs,
            "cold_ms_median": round(statistics.median(times), 1),
            "cold_ms_max": round(max(times), 1),
            "peak_rss_mib": round(max(peaks), 1),
            "bootstrap_mib": round(binary.stat().st_size / 2**20, 2),
        }
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
