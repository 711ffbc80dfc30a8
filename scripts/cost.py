#!/usr/bin/env python3
"""What Hearth costs on AWS per month, from what each tool call was measured to use.

  measure  drives every tool a household uses on DynamoDB (moto on loopback, behind a
           recording proxy), one call at a time, and writes what each call cost: DynamoDB
           requests and their read and write request units (from the items each request
           carried, by DynamoDB's sizing rules), the table's growth, the log's bytes, and the
           time billed. With --lambda-bootstrap, the calls go to the MCP function's Lambda
           binary through a loopback API Gateway and Lambda runtime API (LambdaGateway), and
           the time billed is each invocation's Duration as Lambda measures it, rounded up to
           the millisecond: a lower bound, since a function gets a share of a CPU in
           proportion to its memory setting, where here it has a whole core. Without it, the
           calls go to the local server (`hearth`) and the time is the handler's, from the
           request log. Either way `hearth admin` (--hearth) sets the household up.
  model    prices a usage profile for N households from a measured file.

`scripts/cost` runs both, through the Lambda binary. Standard library only, but for the
official MCP Python SDK that `measure` drives the tools with, and boto3 (both in .venv, which
scripts/test installs).

    scripts/cost.py measure --hearth target/release/hearth --moto-port PORT --out FILE
        [--lambda-bootstrap target/lambda/hearth-mcp/bootstrap]
    scripts/cost.py model --measured FILE [--profile FILE] [--households 10 1000 100000]
"""

import argparse
import asyncio
import base64
import gzip
import http.client
import importlib.util
import json
import math
import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Prices, USD, US East (N. Virginia), on-demand and pay-as-you-go, as AWS's pricing pages list
# them (read 2026-12-02; DynamoDB's on-demand request prices are those of the November 2024
# reduction). Change them here for another region or a later price list.
PRICES = {
    "region": "us-east-1",
    "date": "2026-12-02",
    "dynamodb_write_request_unit": 0.625 / 1e6,
    "dynamodb_read_request_unit": 0.125 / 1e6,
    "dynamodb_storage_gb_month": 0.25,
    "lambda_request": 0.20 / 1e6,
    # x86_64; arm64 is 0.0000133334.
    "lambda_gb_second": 0.0000166667,
    "api_gateway_http_request": 1.00 / 1e6,
    "cloudwatch_logs_ingested_gb": 0.50,
    "cloudwatch_logs_stored_gb_month": 0.03,
    # Each metric the request lines' EMF records make (namespace, name and dimensions), a month.
    "cloudwatch_metric_month": 0.30,
    # Per alarm metric: an alarm over metric math pays for each metric it reads.
    "cloudwatch_alarm_month": 0.10,
    "secrets_manager_secret_month": 0.40,
}

# What every deployment pays whatever its traffic: the template's four secrets
# (docs/src/aws/secrets.md) and its alarms, and the custom metrics the log lines make, by
# HEARTH_METRICS (the template's MetricDetail):
# - function: two over the whole deployment (Throttled, WitnessRefusals), each written only
#   on a line that counts one, so billed only for the hours that have one: the model counts
#   both every hour, an upper bound (a tool error is marked on its line, no metric);
# - tool: those two and ToolErrors over the deployment, five per function (Requests, Errors,
#   Throttled, ToolErrors, Latency, by Function) for the three functions, five per tool a
#   profile calls (by Function and Tool), and WitnessRefusals by Function;
# - off: none, and no alarm that reads one (Condition: HasMetrics).
SECRETS = 4
FUNCTIONS = 3
METRICS_PER_DIMENSION = 5
DEPLOYMENT_WIDE_METRICS = {"function": 2, "tool": 3}
METRIC_DETAILS = ("function", "tool", "off")


def custom_metrics(detail, tools):
    """The custom metrics a deployment at `detail` makes when a profile calls `tools` tools."""
    return {"function": DEPLOYMENT_WIDE_METRICS["function"],
            "tool": DEPLOYMENT_WIDE_METRICS["tool"] + METRICS_PER_DIMENSION * (FUNCTIONS + tools) + 1,
            "off": 0}[detail]


def alarm_metrics_in_template(detail="function"):
    """The alarm metrics a deployment at `detail` pays for. CloudWatch bills an alarm by the
    metrics it reads (one over metric math pays for each metric in it), and the alarms that
    read a custom metric exist only while metrics are on (Condition: HasMetrics)."""
    text = (ROOT / "infra" / "template.yaml").read_text()
    # Each alarm's text runs from its Type line to the next resource (two spaces in).
    blocks = [re.split(r"\n  [A-Za-z0-9]+:\n", block)[0]
              for block in text.split("Type: AWS::CloudWatch::Alarm")[1:]]
    return sum(block.count("MetricName:") for block in blocks
               if not (detail == "off" and re.search(r"^ +Condition: HasMetrics$", block, re.M)))

# The functions' memory (infra/template.yaml, MemorySize) and how long logs are kept by
# default (LogRetentionDays, read from the template): a month's logs are stored for that
# share of a month.
LAMBDA_MEMORY_GB = 256 / 1024


def log_retention_days():
    text = (ROOT / "infra" / "template.yaml").read_text()
    return int(re.search(r"^  LogRetentionDays:\n(?:    .*\n)*?    Default: (\d+)$", text, re.M).group(1))


LOG_RETENTION_MONTHS = log_retention_days() / 30.4

# Lambda's own log records per invocation in the template's JSON log format (platform.start
# and platform.report; platform.runtimeDone too): not measured here, estimated from their
# documented shape.
PLATFORM_LOG_BYTES = 700

# A stated household profile: calls per household per day. An assistant records why it acts
# and answers "why" now and then; a household orders a few things a week, mostly through a
# host that signs nothing, so most orders wait for a phone's approval.
DEFAULT_PROFILE = {
    "tools/list": 10,
    "record_decision": 20,
    "explain_why": 3,
    "whats_changed": 2,
    "get_trace": 0.5,
    "scholia_lookup": 1,
    "search_products": 1,
    "propose_purchase": 0.5,
    "household_activity": 0.3,
    "list_waiting": 0.3,
    "verify_ledger": 0.1,
}

DAYS_PER_MONTH = 30.4

# How long a chain keeps its records, by the scope its key ends with (`chain#<scope>/why#...`):
# a window holds at most `capacity` records and lasts `window_days` from its first, and an
# append to a full window deletes the oldest record in its transaction (an eviction, billed as
# a write). The hashes a household's log keeps, and everything else, stay. From
# shared/src/why/limits.rs (WINDOW_CAPACITY, WINDOW_MS) and shared/src/countersign/ledger/mod.rs
# (CAPACITY, WINDOW_MS); tests/python/test_cost_model.py checks them against the code.
RETENTION = {
    "why": {"capacity": 25, "window_days": 3},
    "countersign": {"capacity": 1000, "window_days": 400},
}
# Which chain each appending call's records go to, and the name its appends to a full window
# were measured under.
APPENDS_TO = {"record_decision": "why", "propose_purchase": "countersign", "confirm_purchase": "countersign",
              "decide_request": "countersign", "list_waiting": "countersign"}
WINDOW_FULL = "{}, window full"
# And against a household's ledger holding a year of orders: about the default profile's 0.8
# ledger entries a day for 365 days (a proposal each, and the waiting ones' expiries).
LEDGER_YEAR = "{}, ledger of a year"
LEDGER_YEAR_ENTRIES = 290
# Each proposal's own words, as a person asks for each order anew: words that already backed a
# proposal of the product are set aside by the intent check (a device may carry recent words
# into later turns), and a proposal on them alone is judged unclear, after reading the ledger a
# second time. Every way here is judged a match for the four pack by the rules judge.
ORDER_WORDS = [f"{opener}{verb} a four pack of {batteries}{tail}"
               for opener in ("", "please ", "could you ", "go ahead and ", "can you ", "would you ",
                              "I'd like you to ", "let's ")
               for verb in ("order", "buy", "get")
               for batteries in ("double A batteries", "AA batteries")
               for tail in ("", " please", " today", " now", " thanks", " for me", " for us", " soon")]
# The calls that only bring the chains to the twelfth month's state: made, not measured.
UNMEASURED = object()
# AWS bills storage and log data by the binary gigabyte.
GIB = 2**30


# ---------------------------------------------------------------------------------------------
# DynamoDB request units, from the items a request and its answer carry.


def value_size(value):
    """An attribute value's size by DynamoDB's rules (numbers: one byte per two significant
    digits, plus one; maps and lists: three bytes, plus one per element)."""
    (kind, inner), = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        digits = inner.lstrip("-").replace(".", "").strip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        # Base64 on the wire; boto3 (which reads an updated item back) hands out the bytes.
        return len(inner) if isinstance(inner, bytes) else len(base64.b64decode(inner))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in inner)
    if kind == "NS":
        return sum(value_size({"N": n}) for n in inner)
    if kind == "BS":
        return sum(value_size({"B": b}) for b in inner)
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in inner)
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item):
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def units(size, per):
    return max(1, math.ceil(size / per))


def request_units(operation, request, answer, stored=lambda _key: 0):
    """(read units, write units) of one request: strongly consistent reads by 4 KB (a Query
    sums its items first; a batch rounds each key up, a missing one included), writes by 1 KB
    of the larger of the item before and after, transactional ones twice. `stored(key)` is the
    size of the item a key names, as it stood (before a write; after, for an update's new
    size, which the request does not carry); 0 when there is none."""
    consistent = 1 if request.get("ConsistentRead") else 0.5
    if operation == "GetItem":
        item = (answer or {}).get("Item")
        return units(item_size(item) if item else 0, 4096) * consistent, 0
    if operation == "Query":
        total = sum(item_size(item) for item in (answer or {}).get("Items", []))
        return units(total, 4096) * consistent, 0
    if operation == "BatchGetItem":
        read = 0
        for table, keys in request.get("RequestItems", {}).items():
            factor = 1 if keys.get("ConsistentRead") else 0.5
            found = (answer or {}).get("Responses", {}).get(table, [])
            read += sum(units(item_size(item), 4096) * factor for item in found)
            read += max(0, len(keys.get("Keys", [])) - len(found)) * factor
        return read, 0
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        return 0, units(write_size(operation.removesuffix("Item"), request, stored), 1024)
    if operation == "TransactWriteItems":
        write = 0
        for entry in request["TransactItems"]:
            (kind, body), = entry.items()
            write += 2 * units(write_size(kind, body, stored), 1024)
        return 0, write
    if operation == "TransactGetItems":
        return 2 * len(request["TransactItems"]), 0
    return 0, 0


def write_size(kind, body, stored):
    """What one write is billed by: the larger of the item before it and after it."""
    key = key_of(body)
    if kind == "Put":
        return max(item_size(body["Item"]), stored(key))
    return stored(key)


def key_of(body):
    """The primary key a write names (Hearth's table: `pk` and `sk`)."""
    attributes = body.get("Item") or body.get("Key") or {}
    return {name: attributes[name] for name in ("pk", "sk") if name in attributes}


class Recorder(ThreadingHTTPServer):
    """A loopback proxy in front of moto that keeps each DynamoDB request it forwards."""

    daemon_threads = True

    def __init__(self, moto_port, table):
        import boto3

        super().__init__(("127.0.0.1", 0), RecordingHandler)
        self.moto_port = moto_port
        self.table = table
        self.lock = threading.Condition()
        self.calls = []
        self.pending = 0
        # The size of every item, as the writes through this proxy left it (the table starts
        # empty and only the server and its admin commands write to it): a write is billed by
        # the larger of the item before and after it, and looking that up in moto before each
        # write would delay the server's call.
        self.sizes = {}
        # Straight to moto, not through the proxy: an update's new size, after its answer.
        self.moto = boto3.client(
            "dynamodb", endpoint_url=f"http://127.0.0.1:{moto_port}", region_name="us-east-1",
            aws_access_key_id="testing", aws_secret_access_key="testing",
        )

    def take(self):
        """The calls recorded since the last take, once every one under way is recorded."""
        with self.lock:
            self.lock.wait_for(lambda: self.pending == 0, timeout=10)
            calls, self.calls = self.calls, []
        return calls

    def stored(self, key):
        return self.sizes.get(json.dumps(key, sort_keys=True), 0)

    def written(self, operation, request):
        """Keeps the sizes a successful write left."""
        entries = request["TransactItems"] if operation == "TransactWriteItems" else [
            {operation.removesuffix("Item"): request}]
        for entry in entries:
            (kind, body), = entry.items()
            key = key_of(body)
            name = json.dumps(key, sort_keys=True)
            if kind == "Put":
                self.sizes[name] = item_size(body["Item"])
            elif kind == "Delete":
                self.sizes.pop(name, None)
            elif kind == "Update":
                item = self.moto.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
                self.sizes[name] = item_size(item) if item else 0


class RecordingHandler(BaseHTTPRequestHandler):
    def log_message(self, *_args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        target = self.headers.get("X-Amz-Target", "")
        operation = target.split(".", 1)[1] if target.startswith("DynamoDB_") else None
        if operation is not None:
            with self.server.lock:
                self.server.pending += 1
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "accept-encoding")}
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.moto_port, timeout=30)
        upstream.request("POST", self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        payload = answer.read()
        upstream.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        if operation is None:
            return
        # After the server has its answer, so that the accounting never delays it.
        try:
            text = gzip.decompress(payload) if answer.getheader("Content-Encoding") == "gzip" else payload
            request = json.loads(body)
            writes = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")
            with self.server.lock:
                before = dict(self.server.sizes)
            if answer.status == 200 and operation in writes:
                self.server.written(operation, request)

            def stored(key):
                name = json.dumps(key, sort_keys=True)
                return max(before.get(name, 0), self.server.sizes.get(name, 0))

            if answer.status == 200:
                read, write = request_units(operation, request, json.loads(text), stored)
            elif operation == "TransactWriteItems":
                # A cancelled transaction still consumes its write units.
                read, write = request_units(operation, request, None, stored)
            else:
                read, write = 0, 0
            with self.server.lock:
                self.server.calls.append({"operation": operation, "read": read, "write": write})
        finally:
            with self.server.lock:
                self.server.pending -= 1
                self.server.lock.notify_all()


class TableSize:
    """The table's stored bytes as DynamoDB bills them (each item's size plus 100 bytes), and
    of those the chain records', by the retention they are kept under (`RETENTION`): how
    many records and their bytes. Subtracting two gives what a call added."""

    def __init__(self, total=0, records=None):
        self.total = total
        self.records = records or {}

    def __sub__(self, before):
        return TableSize(self.total - before.total,
                         {scope: [self.records.get(scope, [0, 0])[0] - before.records.get(scope, [0, 0])[0],
                                  self.records.get(scope, [0, 0])[1] - before.records.get(scope, [0, 0])[1]]
                          for scope in self.records.keys() | before.records.keys()})

    def add(self, item, key):
        size = item_size(item) + 100
        self.total += size
        scope = record_scope(key)
        if scope:
            count, total = self.records.get(scope, [0, 0])
            self.records[scope] = [count + 1, total + size]


def record_scope(key):
    """The retention (a key of `RETENTION`) a chain record is kept under, from its item's
    key; None for every other item (kept for good, or for as long as something else says)."""
    pk, sk = key
    if not (pk.startswith("chain#") and sk.startswith("rec#")):
        return None
    # As the store reads a chain key back: the scope runs to the first `#`.
    scope = pk.removeprefix("chain#").split("#", 1)[0].rsplit("/", 1)[-1]
    return scope if scope in RETENTION else None


def table_size(moto_port, table):
    import boto3

    client = boto3.client(
        "dynamodb", endpoint_url=f"http://127.0.0.1:{moto_port}", region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )
    size, start = TableSize(), None
    while True:
        page = client.scan(TableName=table, **({"ExclusiveStartKey": start} if start else {}))
        for item in page["Items"]:
            size.add(item, (item["pk"]["S"], item["sk"]["S"]))
        start = page.get("LastEvaluatedKey")
        if not start:
            return size


# ---------------------------------------------------------------------------------------------
# The MCP function as Lambda runs it, on loopback


class Invocation:
    def __init__(self, event):
        self.event = json.dumps(event).encode()
        self.answered = threading.Event()
        self.response = None
        self.handed_at = None


class LambdaGateway:
    """API Gateway's HTTP API (payload format 2.0) and the Lambda runtime API on loopback, in
    front of one instance of a function: each HTTP request to `url` becomes an event the
    instance takes from `next`, and what it responds becomes the HTTP answer, one at a time as
    an instance serves them. Keeps each invocation's Duration: from handing the event out to
    the response, what Lambda measures and bills."""

    def __init__(self):
        self.pending = queue.Queue()
        self.handed = {}
        self.lock = threading.Lock()
        self.durations = []
        self.front = ThreadingHTTPServer(("127.0.0.1", 0), FrontHandler)
        self.runtime = ThreadingHTTPServer(("127.0.0.1", 0), RuntimeHandler)
        for server in (self.front, self.runtime):
            server.daemon_threads = True
            server.gateway = self
            threading.Thread(target=server.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.front.server_address[1]}"

    @property
    def runtime_api(self):
        return f"127.0.0.1:{self.runtime.server_address[1]}"

    def take(self):
        """The Durations (ms) of the invocations answered since the last take."""
        with self.lock:
            durations, self.durations = self.durations, []
        return durations

    def close(self):
        for server in (self.front, self.runtime):
            server.shutdown()
            server.server_close()


class FrontHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args):
        pass

    def do_GET(self):
        self.forward()

    def do_POST(self):
        self.forward()

    def do_DELETE(self):
        self.forward()

    def forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path, _, query = self.path.partition("?")
        headers = {}
        for name, value in self.headers.items():
            name = name.lower()
            headers[name] = f"{headers[name]},{value}" if name in headers else value
        now = time.time()
        event = {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": query,
            "headers": headers,
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "cost",
                "domainName": headers.get("host", "127.0.0.1"),
                "domainPrefix": "cost",
                "http": {"method": self.command, "path": path, "protocol": "HTTP/1.1",
                         "sourceIp": "127.0.0.1", "userAgent": headers.get("user-agent", "")},
                "requestId": str(uuid.uuid4()),
                "routeKey": "$default",
                "stage": "$default",
                "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
                "timeEpoch": int(now * 1000),
            },
            "isBase64Encoded": False,
        }
        if body:
            event["body"] = body.decode()
        invocation = Invocation(event)
        self.server.gateway.pending.put(invocation)
        if not invocation.answered.wait(30):
            return self.answer(504, {"content-type": "text/plain"}, b"the function did not answer")
        response = invocation.response
        payload = response.get("body") or ""
        payload = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode()
        headers = dict(response.get("headers") or {})
        self.answer(response.get("statusCode", 200), headers, payload, response.get("cookies") or [])

    def answer(self, status, headers, payload, cookies=()):
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        for cookie in cookies:
            self.send_header("Set-Cookie", cookie)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class RuntimeHandler(BaseHTTPRequestHandler):
    def log_message(self, *_args):
        pass

    def do_GET(self):
        if not self.path.endswith("/runtime/invocation/next"):
            return self.send_error(404)
        gateway = self.server.gateway
        invocation = gateway.pending.get()
        request_id = str(uuid.uuid4())
        # Stamped before the event is written: a fast function answers on another thread
        # before hand_out returns, and its Duration needs the stamp already there.
        invocation.handed_at = time.perf_counter()
        with gateway.lock:
            gateway.handed[request_id] = invocation
        coldstart.hand_out(self, invocation.event, request_id)

    def do_POST(self):
        payload = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        answered = time.perf_counter()
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()
        parts = self.path.split("/")
        if "invocation" not in parts:
            return  # an init error: the next request's 504 says the function did not answer
        gateway = self.server.gateway
        with gateway.lock:
            invocation = gateway.handed.pop(parts[parts.index("invocation") + 1], None)
        if invocation is None:
            return
        if parts[-1] == "response":
            invocation.response = json.loads(payload)
            with gateway.lock:
                gateway.durations.append((answered - invocation.handed_at) * 1000)
        else:
            invocation.response = {"statusCode": 502, "body": payload.decode(errors="replace")}
        invocation.answered.set()


# scripts/load/coldstart.py: the secrets and environment a deployed function has, and how the
# runtime API hands an event out.
_spec = importlib.util.spec_from_file_location("coldstart", ROOT / "scripts" / "load" / "coldstart.py")
coldstart = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coldstart)


# ---------------------------------------------------------------------------------------------
# measure


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerLog:
    """The server's stderr: each request's line (its bytes and handler time) as it is written."""

    def __init__(self, path):
        self.path = path
        self.offset = 0

    def since_last(self):
        """The lines written since the last call, waiting briefly for the request's own line."""
        deadline = time.monotonic() + 2
        while True:
            text = self.path.read_bytes()[self.offset:]
            lines = [line for line in text.split(b"\n") if line.strip()]
            if any(b'"latency_us"' in line for line in lines) or time.monotonic() > deadline:
                self.offset += len(text)
                return lines
            time.sleep(0.01)


async def drive(url, token, key, key_id, household, members, recorder, log, rounds, moto_port, table,
                durations=None):
    """Every tool, `rounds` times; `durations`, when the calls go to a Lambda instance, says how
    long each invocation since it was last asked took (ms)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from countersign_demo import Device  # noqa: E402  (the device that signs each turn)
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    measured = {}

    def keep(name, lines, calls, grew, invocations):
        request_lines = [line for line in lines if b'"latency_us"' in line]
        entry = measured.setdefault(name, {"calls": 0, "dynamodb_requests": {}, "read_units": 0,
                                           "write_units": 0, "log_bytes": 0, "handler_us": [],
                                           "stored_bytes": 0, "records": {}, "durations_ms": [],
                                           "billed_ms": 0})
        entry["calls"] += 1
        entry["durations_ms"].extend(invocations)
        # Lambda bills each invocation's Duration rounded up to the millisecond.
        entry["billed_ms"] += sum(math.ceil(duration) for duration in invocations)
        for call in calls:
            entry["dynamodb_requests"][call["operation"]] = entry["dynamodb_requests"].get(call["operation"], 0) + 1
            entry["read_units"] += call["read"]
            entry["write_units"] += call["write"]
        entry["log_bytes"] += sum(len(line) + 1 for line in lines)
        entry["stored_bytes"] += grew.total
        for scope, (count, size) in grew.records.items():
            kept = entry["records"].setdefault(scope, [0, 0])
            kept[0] += count
            kept[1] += size
        for line in request_lines:
            entry["handler_us"].append(json.loads(line)["latency_us"])

    headers = {"Authorization": f"Bearer {token}", "X-Countersign-Key-Id": key_id}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                device = Device(session, http, key, lambda _line: None)
                took = durations or (lambda: [])
                log.since_last()
                recorder.take()
                took()
                stored = table_size(moto_port, table)

                async def measure(name, call):
                    nonlocal stored
                    await call()
                    lines = log.since_last()
                    calls = recorder.take()
                    now = table_size(moto_port, table)
                    keep(name, lines, calls, now - stored, took())
                    stored = now

                async def tool(name, arguments, member="dana", words="do what I asked", kept_as=None):
                    async def call():
                        device.attest(member, [words])
                        result = await session.call_tool(name, arguments)
                        if result.is_error:
                            raise SystemExit(f"{name} failed: {result.content[0].text}")
                        # A proposal is priced as the order it models: its words judged a match.
                        if name == "propose_purchase" and result.structured_content["intent"]["verdict"] != "match":
                            raise SystemExit(f"the intent check did not match {words!r} to the order")
                        return result
                    if kept_as is UNMEASURED:
                        return await call()
                    await measure(kept_as or name, call)

                def forget_unmeasured():
                    nonlocal stored
                    log.since_last()
                    recorder.take()
                    took()
                    stored = table_size(moto_port, table)

                async def decide(n, kept_as=None):
                    await tool("record_decision", {"household_id": household, "action": f"dim the lights {n}",
                                                   "reason": "movie night was asked for",
                                                   "inputs": {"scene": "movie", "n": n}, "approver": "Dana"},
                               kept_as=kept_as)

                async def decision_reads(form="{}"):
                    await tool("explain_why", {"household_id": household, "question": "why are the lights dim?"},
                               kept_as=form.format("explain_why"))
                    await tool("whats_changed", {"household_id": household, "since": "2026-01-01T00:00:00Z"},
                               kept_as=form.format("whats_changed"))
                    trace = await tool("explain_why", {"household_id": household, "question": "why are the lights dim?"},
                                       kept_as=UNMEASURED)
                    forget_unmeasured()
                    await tool("get_trace", {"household_id": household, "trace_id": trace.structured_content["trace_id"]},
                               kept_as=form.format("get_trace"))

                asked = iter(ORDER_WORDS)

                async def propose(kept_as=None, member="dana"):
                    words = next(asked, None)
                    if words is None:
                        raise SystemExit("the run proposes more orders than ORDER_WORDS has ways to ask")
                    await tool("propose_purchase", {"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1},
                               member=member, words=words, kept_as=kept_as)

                # Each round's acting calls (a proposal and the waiting list) are one member's
                # 2 of the 20 a member may make in ten minutes: a phase of rounds by one member.
                async def ledger_calls(form="{}", member="dana"):
                    await propose(form.format("propose_purchase"), member)
                    await tool("household_activity", {}, member=member, words="what did we buy this week?",
                               kept_as=form.format("household_activity"))
                    await tool("list_waiting", {}, member=member, words="anything waiting for me?",
                               kept_as=form.format("list_waiting"))
                    await tool("verify_ledger", {}, member=member, words="check the ledger",
                               kept_as=form.format("verify_ledger"))

                for n in range(rounds):
                    await measure("tools/list", session.list_tools)
                    await decide(n)
                    await decision_reads()
                    await tool("scholia_lookup", {"term": "claim"})
                    await tool("search_products", {"query": "AA batteries"}, words="order batteries")
                    await ledger_calls()
                    stored = table_size(moto_port, table)

                # The twelfth month's chains. Past its capacity a decision window evicts its
                # oldest record with every append: fill it, unmeasured, then measure appends
                # to the full window and the calls that read it.
                for n in range(rounds, RETENTION["why"]["capacity"]):
                    await decide(n, UNMEASURED)
                forget_unmeasured()
                for n in range(rounds):
                    await decide(RETENTION["why"]["capacity"] + n, WINDOW_FULL.format("record_decision"))
                    await decision_reads(WINDOW_FULL)
                # A household's ledger keeps its year (its window is 400 days and 1,000
                # entries): fill it to a year of the default profile's orders, unmeasured, and
                # measure the calls that read or append to it there.
                held = stored.records.get("countersign", [0, 0])[0]
                fillers = [member for member in members if member not in ("dana", "chris")]
                for n in range(max(0, LEDGER_YEAR_ENTRIES - rounds - held)):
                    await propose(UNMEASURED, fillers[n % len(fillers)])
                forget_unmeasured()
                for _ in range(rounds):
                    await ledger_calls(LEDGER_YEAR, member="chris")
    for entry in measured.values():
        times = sorted(entry.pop("handler_us"))
        calls = entry["calls"]
        entry["handler_ms_median"] = times[len(times) // 2] / 1000 if times else 0
        entry["handler_ms_mean"] = sum(times) / len(times) / 1000 if times else 0
        invocations = sorted(entry.pop("durations_ms"))
        if invocations:
            entry["lambda_ms_median"] = round(invocations[len(invocations) // 2], 3)
            entry["lambda_billed_ms_mean"] = entry["billed_ms"] / calls
        del entry["billed_ms"]
        for field in ("read_units", "write_units", "log_bytes", "stored_bytes"):
            entry[field] = entry[field] / calls
        entry["records"] = {scope: [count / calls, size / calls] for scope, (count, size) in entry["records"].items()}
        entry["dynamodb_requests"] = {op: count / calls for op, count in sorted(entry["dynamodb_requests"].items())}
    return measured


def measure(args):
    # Past a window's capacity the rounds' decisions would evict; past 10, one member's
    # acting calls (two a round) would pass the 20 a member may make in ten minutes.
    most = min(RETENTION["why"]["capacity"], 10)
    if args.rounds > most:
        raise SystemExit(f"--rounds at most {most}: past that the decision window is full or the member's turns are spent")
    moto_port = args.moto_port
    moto = f"http://127.0.0.1:{moto_port}"
    gateway = None
    if args.lambda_bootstrap:
        # As the template deploys it: the table and the credentials secrets exist beforehand.
        secret_arns, table = coldstart.make_secrets_and_table(moto)
        jwt_secret = json.loads((ROOT / "events" / "credentials.json").read_text())["MCP_JWT_SECRET"]
        gateway = LambdaGateway()
        url = f"{gateway.url}/mcp"
    else:
        table = "hearth-cost"
        jwt_secret = base64.urlsafe_b64encode(os.urandom(32)).decode()
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
    recorder = Recorder(moto_port, table)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    proxy = f"http://127.0.0.1:{recorder.server_address[1]}"
    data = Path(tempfile.mkdtemp(prefix="hearth-cost-"))
    env = dict(os.environ, HEARTH_TABLE=table, AWS_ENDPOINT_URL=proxy, AWS_REGION="us-east-1",
               AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", HEARTH_DATA_DIR=str(data),
               MCP_JWT_SECRET=jwt_secret, MCP_RESOURCE_URL=url,
               HEARTH_RATE_LIMIT_PER_SUBJECT="100000", HEARTH_RATE_LIMIT_PER_IP="100000",
               MIMALLOC_ARENA_EAGER_COMMIT="0")
    # The default log filter, as deployed: RUST_LOG would change what a call logs.
    env.pop("RUST_LOG", None)

    def admin(*words):
        done = subprocess.run([args.hearth, "admin", *words, "--json"], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"hearth admin {words[0]}: {done.stdout.strip()} {done.stderr.strip()}")
        return json.loads(done.stdout)

    log_path = data / "server.log"
    with open(log_path, "wb") as log_file:
        if gateway:
            function_env = dict(
                coldstart.function_environment(proxy, table),
                HEARTH_SECRET_ARN=",".join(secret_arns[part] for part in coldstart.READS["hearth-mcp"]),
                AWS_LAMBDA_RUNTIME_API=gateway.runtime_api,
                AWS_LAMBDA_FUNCTION_NAME="hearth-mcp",
                MCP_RESOURCE_URL=url,
                # Bedrock is priced by the token, which this model leaves out: the rules judge.
                COUNTERSIGN_JUDGE="rules",
                HEARTH_RATE_LIMIT_PER_SUBJECT="100000",
                HEARTH_RATE_LIMIT_PER_IP="100000",
                HEARTH_METRICS=args.metrics,
            )
            server = subprocess.Popen([args.lambda_bootstrap], env=function_env, stdout=log_file, stderr=log_file)
        else:
            server = subprocess.Popen([args.hearth], env=dict(env, HEARTH_ADDR=f"127.0.0.1:{port}",
                                                          HEARTH_METRICS=args.metrics),
                                      stdout=subprocess.DEVNULL, stderr=log_file)
    try:
        if not gateway:
            for _ in range(200):
                try:
                    http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/healthz")
                    break
                except OSError:
                    time.sleep(0.05)
        # The demo household's rules, without its id (the server picks one).
        policy = json.loads((ROOT / "data/household.json").read_text())
        del policy["household_id"]
        policy["name"] = "Cost Home"
        # A year of orders (LEDGER_YEAR_ENTRIES) is more than the demo's weekly budget allows
        # in the minutes the measurement takes: the budget is still checked on every order.
        policy["weekly_budget_cents"] = 10_000_000
        # And more than one person may ask for in ten minutes (ACTING_CALLS_PER_MEMBER, 20):
        # the orders are spread over the most members a household may have (16), the
        # children's places given to grown-ups who need no guardian.
        policy["members"] = [member for member in policy["members"] if member["role"] != "child"]
        policy["members"] += [{"id": f"member{n}", "name": f"Member {n}", "role": "parent"}
                              for n in range(16 - len(policy["members"]))]
        (data / "policy.json").write_text(json.dumps(policy))
        household = admin("household", "create", "Cost Home", "--policy", str(data / "policy.json"))["household_id"]
        device = admin("device-key", "add", household)
        token = admin("token", household, "--days", "1")["access_token"]
        members = [member["id"] for member in policy["members"]]
        measured = asyncio.run(drive(url, token, device["key"], device["key_id"], household, members, recorder,
                                     ServerLog(log_path), args.rounds, moto_port, table,
                                     gateway.take if gateway else None))
    finally:
        server.terminate()
        server.wait()
        if gateway:
            gateway.close()
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "command": "scripts/cost",
        "store": "DynamoDB (moto on loopback, behind a recording proxy)",
        "served_by": ("the MCP function's Lambda binary through a loopback runtime API"
                      if gateway else "the local server"),
        "rounds": args.rounds,
        "metrics": args.metrics,
        "tools": measured,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"measured {len(measured)} kinds of call over {args.rounds} rounds into {args.out}")


# ---------------------------------------------------------------------------------------------
# model


# The calls that append to a chain, and so wait for the witnesses when a policy names some.
APPENDING = ("record_decision", "propose_purchase", "confirm_purchase", "decide_request", "list_waiting")


def metric_detail(measured):
    """The HEARTH_METRICS a measurement ran at: its log bytes are that level's lines.
    Measurements from before the setting carried every metric, as `tool` does now."""
    return measured.get("metrics", "tool")


def records_per_day(measured, profile):
    """What each retention's chains receive a day per household under `profile`: records, and
    their stored bytes (as measured while the window was filling)."""
    per_scope = {}
    for name, per_day in profile.items():
        for scope, (count, size) in measured["tools"].get(name, {}).get("records", {}).items():
            received = per_scope.setdefault(scope, [0.0, 0.0])
            received[0] += per_day * count
            received[1] += per_day * size
    return per_scope


def evicting_share(scope, records_a_day):
    """The share of a chain's appends that find its window full, and so also delete its oldest
    record: of the records a window receives in its days, all but the first `capacity`."""
    retention = RETENTION[scope]
    per_window = records_a_day * retention["window_days"]
    return max(0.0, 1 - retention["capacity"] / per_window) if per_window > 0 else 0.0


def retained_records(scope, records_a_day):
    """The records a chain holds at the twelfth month: what its window holds, at most."""
    retention = RETENTION[scope]
    return min(retention["capacity"], records_a_day * retention["window_days"], records_a_day * 365)


def monthly(measured, profile, households, prices=PRICES, witness_ms=0, alarm_metrics=None):
    """Dollars per month, by line, for `households` following `profile`; `witness_ms` is how
    long an append waits for its witnesses' cosignatures (the slowest one it needs).

    Steady state, not a fresh household: an appending call costs what it was measured to
    cost while its window filled, and, for the share of its appends that find the window full
    (`evicting_share`), what it cost against a full one. Storage is the twelfth month's: a
    year of what is kept for good (a household's log hashes, the registry, accounts), and of
    each chain's records only what its window holds (`retained_records`)."""
    detail = metric_detail(measured)
    alarm_metrics = alarm_metrics_in_template(detail) if alarm_metrics is None else alarm_metrics
    tools = [name for name in profile if name not in ("tools/list", "initialize")]
    lines = {"DynamoDB requests": 0.0, "DynamoDB storage": 0.0, "Lambda": 0.0,
             "API Gateway": 0.0, "CloudWatch Logs": 0.0,
             "Fixed (secrets, alarms, metrics)": SECRETS * prices["secrets_manager_secret_month"]
             + alarm_metrics * prices["cloudwatch_alarm_month"]
             + custom_metrics(detail, len(tools)) * prices["cloudwatch_metric_month"]}
    received = records_per_day(measured, profile)
    for name, per_day in profile.items():
        tool = measured["tools"].get(name)
        if tool is None:
            raise SystemExit(f"the profile names {name!r}, which was not measured")
        scope = APPENDS_TO.get(name)
        share = evicting_share(scope, received[scope][0]) if scope in received else 0.0
        full = measured["tools"].get(WINDOW_FULL.format(name))
        if share and full is None:
            raise SystemExit(f"the profile fills {scope} windows, and {name!r} was not measured against a full one")
        # A call measured against the twelfth month's chains costs that, an append to a why
        # window the mix of filling it and evicting from it.
        year = measured["tools"].get(LEDGER_YEAR.format(name))
        at_twelve_months = year or (full if name not in APPENDS_TO else None)

        def steady(field, tool=tool, full=full, share=share, settled=at_twelve_months):
            if settled is not None:
                return settled[field]
            return tool[field] if not share else (1 - share) * tool[field] + share * full[field]

        calls = per_day * DAYS_PER_MONTH * households
        lines["DynamoDB requests"] += calls * (steady("read_units") * prices["dynamodb_read_request_unit"]
                                               + steady("write_units") * prices["dynamodb_write_request_unit"])
        # A year of growth of what is kept for good, as a call adds it to chains already open
        # (a first call's head item and registry entry are not a call's growth); the records
        # are priced below.
        grown = year or full or tool
        kept = grown["stored_bytes"] - sum(size for _count, size in grown.get("records", {}).values())
        lines["DynamoDB storage"] += calls * 12 * kept / GIB * prices["dynamodb_storage_gb_month"]
        # Lambda's Duration where measured through the runtime API; else the handler's time.
        billed_ms = (steady("lambda_billed_ms_mean") if "lambda_billed_ms_mean" in tool
                     else math.ceil(steady("handler_ms_mean"))) + (witness_ms if name in APPENDING else 0)
        billed_ms = math.ceil(billed_ms)
        lines["Lambda"] += calls * (prices["lambda_request"]
                                    + billed_ms / 1000 * LAMBDA_MEMORY_GB * prices["lambda_gb_second"])
        lines["API Gateway"] += calls * prices["api_gateway_http_request"]
        log_gb = calls * (steady("log_bytes") + PLATFORM_LOG_BYTES) / GIB
        lines["CloudWatch Logs"] += log_gb * (prices["cloudwatch_logs_ingested_gb"]
                                              + LOG_RETENTION_MONTHS * prices["cloudwatch_logs_stored_gb_month"])
    for scope, (count, size) in received.items():
        if count > 0:
            held = households * retained_records(scope, count) * size / count
            lines["DynamoDB storage"] += held / GIB * prices["dynamodb_storage_gb_month"]
    return lines


def model(args):
    measured = json.loads(Path(args.measured).read_text())
    profile = json.loads(Path(args.profile).read_text()) if args.profile else DEFAULT_PROFILE
    calls_per_day = sum(profile.values())
    print(f"Prices: {PRICES['region']}, read {PRICES['date']}. Measured {measured['date']} ({measured['store']}).")
    print(f"Profile: {calls_per_day:g} calls per household per day; Lambda at {LAMBDA_MEMORY_GB * 1024:.0f} MB"
          f"; appends wait {args.witness_ms} ms for witnesses.")
    print()
    on_lambda = all("lambda_ms_median" in tool for tool in measured["tools"].values())
    time_column = "Lambda Duration ms (median; billed, mean)" if on_lambda else "handler ms (median)"
    print(f"Served by {measured.get('served_by', 'the local server')}, with HEARTH_METRICS={metric_detail(measured)}.")
    print()
    print(f"| Per call | DynamoDB requests | read units | write units | stored bytes | log bytes | {time_column} |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, tool in measured["tools"].items():
        requests = ", ".join(f"{op} {count:g}" for op, count in tool["dynamodb_requests"].items()) or "none"
        took = (f"{tool['lambda_ms_median']:.2f}; {tool['lambda_billed_ms_mean']:g}" if on_lambda
                else f"{tool['handler_ms_median']:.2f}")
        print(f"| `{name}` | {requests} | {tool['read_units']:g} | {tool['write_units']:g} | "
              f"{round(tool['stored_bytes']) or 0} | {tool['log_bytes']:.0f} | {took} |")
    print()
    header = "| Households | " + " | ".join(monthly(measured, profile, 1)) + " | Total per month | Per household |"
    cost = lambda households: monthly(measured, profile, households, witness_ms=args.witness_ms)  # noqa: E731
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    for households in args.households:
        lines = cost(households)
        total = sum(lines.values())
        print(f"| {households:,} | " + " | ".join(f"${value:,.2f}" for value in lines.values())
              + f" | **${total:,.2f}** | ${total / households:.4f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    m = commands.add_parser("measure")
    m.add_argument("--hearth", required=True)
    m.add_argument("--moto-port", type=int, required=True)
    m.add_argument("--rounds", type=int, default=10)
    m.add_argument("--out", required=True)
    m.add_argument("--metrics", choices=METRIC_DETAILS, default="function",
                   help="HEARTH_METRICS for the measured function (default function, as deployed)")
    m.add_argument("--lambda-bootstrap",
                   help="the MCP function's Lambda binary (target/lambda/hearth-mcp/bootstrap): serve the "
                        "calls through it, on a loopback runtime API, instead of the local server")
    p = commands.add_parser("model")
    p.add_argument("--measured", required=True)
    p.add_argument("--profile", help="JSON: calls per household per day, by tool or method")
    p.add_argument("--households", type=int, nargs="+", default=[10, 1000, 100000])
    p.add_argument("--witness-ms", type=float, default=0,
                   help="how long an append waits for its witnesses (default 0: no witness policy)")
    args = parser.parse_args()
    {"measure": measure, "model": model}[args.command](args)


if __name__ == "__main__":
    main()
