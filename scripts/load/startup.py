"""Measures process start to the first answered `initialize`, and peak RSS after a load.

usage: startup.py BINARY DATA_DIR PORT TOKEN  (prints `startup_ms=…`, then waits for stdin
EOF, then prints `peak_rss_mib=…` and stops the server)."""

import http.client
import json
import os
import subprocess
import sys
import time

binary, data_dir, port, token = sys.argv[1:5]
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}})
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream"}
env = dict(os.environ, HEARTH_ADDR="127.0.0.1:" + port, HEARTH_DATA_DIR=data_dir,
           MCP_JUDGE_TOKEN_HASHES=os.environ["HEARTH_TOKEN_HASH"], RUST_LOG="warn")
started = time.perf_counter()
server = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = started + 10
while True:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=1)
        connection.request("POST", "/mcp", body, headers)
        if connection.getresponse().status == 200:
            break
    except OSError:
        if time.perf_counter() > deadline:
            server.kill()
            sys.exit("server did not answer initialize within 10 s")
print("startup_ms=%.1f" % ((time.perf_counter() - started) * 1000), flush=True)
sys.stdin.read()
with open("/proc/%d/status" % server.pid) as status:
    peak = next(line for line in status if line.startswith("VmHWM:"))
print("peak_rss_mib=%.1f" % (int(peak.split()[1]) / 1024), flush=True)
server.terminate()
server.wait(timeout=10)
