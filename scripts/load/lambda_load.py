#!/usr/bin/env python3
"""The MCP function under load, as Lambda runs it: one process per instance, one invocation at
a time each, against a loopback Lambda runtime API that hands every instance its next event as
soon as it has answered the last.

Each instance is the release `bootstrap` that `cargo lambda build --release` makes, started
with AWS_LAMBDA_RUNTIME_API pointing at a runtime API of its own (see coldstart.py, whose
secrets, table and environment this reuses). After a warm-up (the cold start and a few
invocations) it runs for --seconds, then reports per instance count: invocations per second
per instance and in all, p50 and p99 per invocation (from handing the event out to the
function's response, what Lambda bills as Duration), and the peak RSS of the largest
instance. The store is DynamoDB on moto_server (loopback, one request at a time), so a tool
that reads or writes the store waits in moto's queue: the figures are moto's as much as
Hearth's, and the instances share that queue.

  scripts/load/lambda_load.py --moto http://127.0.0.1:PORT [--instances 1 2 4] [--seconds 5]
      [--event tools-list|explain-why] [--bin-dir target/lambda]

Prints one JSON object.
"""

import argparse
import copy
import importlib.util
import json
import statistics
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

spec = importlib.util.spec_from_file_location("coldstart", HERE / "coldstart.py")
coldstart = importlib.util.module_from_spec(spec)
spec.loader.exec_module(coldstart)

WARM_UP = 5


def explain_why_event():
    """The fixture's record_decision event, asking why instead (a read of the chain)."""
    event = json.loads((ROOT / "events/mcp/v2-record-decision.json").read_text())
    event["body"] = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "explain_why", "arguments": {"household_id": "demo", "question": "why are the lights dim?"}}})
    return event


EVENTS = {
    "tools-list": lambda: json.loads((ROOT / "events/mcp/v2-tools-list.json").read_text()),
    "explain-why": explain_why_event,
}


class StreamingRuntimeApi(ThreadingHTTPServer):
    """A runtime API that hands out `event` again as soon as the last one is answered, and
    keeps how long each invocation took."""

    daemon_threads = True

    def __init__(self, event):
        super().__init__(("127.0.0.1", 0), StreamingHandler)
        self.event = json.dumps(event).encode()
        self.handed_at = None
        self.durations = []
        self.statuses = []
        self.errors = 0
        self.stop = threading.Event()


class StreamingHandler(BaseHTTPRequestHandler):
    def log_message(self, *_args):
        pass

    def do_GET(self):
        if not self.path.endswith("/runtime/invocation/next"):
            return self.send_error(404)
        if self.server.stop.is_set():
            time.sleep(60)
            return self.send_error(500)
        # Stamped before the write, as scripts/cost does: the answer can arrive before it returns.
        self.server.handed_at = time.perf_counter()
        coldstart.hand_out(self, self.server.event, deadline_ms=15_000)

    def do_POST(self):
        payload = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        answered = time.perf_counter()
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()
        if "/response" in self.path:
            self.server.durations.append((answered - self.server.handed_at) * 1000)
            self.server.statuses.append(json.loads(payload).get("statusCode"))
        elif "/error" in self.path:
            self.server.errors += 1


def run(instances, seconds, binary, event, environment):
    """`instances` instances answering `event` for `seconds` after their warm-up (0: the
    warm-up only, and no figures)."""
    apis, processes = [], []
    for _ in range(instances):
        api = StreamingRuntimeApi(event)
        threading.Thread(target=api.serve_forever, daemon=True).start()
        env = dict(environment, AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{api.server_address[1]}")
        processes.append(subprocess.Popen([str(binary)], env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        apis.append(api)
    try:
        deadline = time.monotonic() + 30
        while any(len(api.durations) < WARM_UP for api in apis):
            if time.monotonic() > deadline:
                raise RuntimeError("an instance did not warm up (is moto running?)")
            time.sleep(0.01)
        counted_from = [len(api.durations) for api in apis]
        time.sleep(seconds)
        counts = [len(api.durations) for api in apis]
        rss = max(coldstart.peak_rss_mib(process.pid) for process in processes)
    finally:
        for api in apis:
            api.stop.set()
        for process in processes:
            process.kill()
            process.wait()
        for api in apis:
            api.shutdown()
    if seconds == 0:
        return None
    durations = sorted(d for api, start, end in zip(apis, counted_from, counts) for d in api.durations[start:end])
    statuses = sorted({s for api in apis for s in api.statuses})
    total = sum(end - start for start, end in zip(counted_from, counts))
    return {
        "instances": instances,
        "invocations": total,
        "per_second_per_instance": round(total / seconds / instances, 1),
        "per_second": round(total / seconds, 1),
        "p50_ms": round(statistics.median(durations), 2),
        "p99_ms": round(durations[min(len(durations) - 1, int(len(durations) * 0.99))], 2),
        "peak_rss_mib": round(rss, 1),
        "statuses": statuses,
        "errors": sum(api.errors for api in apis),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moto", required=True, help="moto_server URL")
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--event", choices=sorted(EVENTS), default="tools-list")
    parser.add_argument("--bin-dir", default=str(ROOT / "target" / "lambda"))
    args = parser.parse_args()

    arns, table = coldstart.make_secrets_and_table(args.moto)
    environment = dict(
        coldstart.function_environment(args.moto, table),
        HEARTH_SECRET_ARN=",".join(arns[part] for part in coldstart.READS["hearth-mcp"]),
        # Every invocation is served, so the figure is the function's, not the limiter's.
        HEARTH_RATE_LIMIT_PER_SUBJECT="1000000",
        HEARTH_RATE_LIMIT_PER_IP="1000000",
    )
    binary = Path(args.bin_dir) / "hearth-mcp" / "bootstrap"
    event = EVENTS[args.event]()
    if args.event == "explain-why":
        # One decision to explain, recorded through the function itself.
        seed = json.loads((ROOT / "events/mcp/v2-record-decision.json").read_text())
        run(1, 0, binary, seed, environment)
    rows = [run(n, args.seconds, binary, copy.deepcopy(event), environment) for n in args.instances]
    print(json.dumps({"event": args.event, "seconds": args.seconds, "bootstrap": str(binary), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
