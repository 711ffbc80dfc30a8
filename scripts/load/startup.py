"""Process start to the first answered `initialize`, over several fresh starts.

usage: startup.py BINARY PORT TOKEN RUNS  (HEARTH_TOKEN_HASH in the environment)
Prints `startup_ms median=… max=…`. Each run uses a new data directory; the poll sleeps
0.2 ms between attempts so it does not steal the CPU the server is starting on."""

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

binary, port, token, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}})
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream"}


def one_start():
    with tempfile.TemporaryDirectory() as data_dir:
        env = dict(os.environ, HEARTH_ADDR="127.0.0.1:" + port, HEARTH_DATA_DIR=data_dir,
                   MCP_JUDGE_TOKEN_HASHES=os.environ["HEARTH_TOKEN_HASH"], RUST_LOG="warn")
        started = time.perf_counter()
        server = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while True:
                try:
                    connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=1)
                    connection.request("POST", "/mcp", body, headers)
                    if connection.getresponse().status == 200:
                        return (time.perf_counter() - started) * 1000
                except OSError:
                    if time.perf_counter() - started > 10:
                        sys.exit("server did not answer initialize within 10 s")
                    time.sleep(0.0002)
        finally:
            server.terminate()
            server.wait(timeout=10)


times = [one_start() for _ in range(runs)]
print("startup_ms median=%.1f max=%.1f (%d starts)" % (statistics.median(times), max(times), runs))
