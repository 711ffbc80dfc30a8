#!/usr/bin/env python3
"""Queued appends through one server: W writers each send N `record_decision` calls to one
household, one after another, through one local `hearth` on DynamoDB, and this counts how
many were accepted, how long the accepted and the refused ones ("busy") took, and, from the
server's debug log, how many store steps landed them (appends queued behind one in flight land
together) and how long those took. Issue 48's item 4 names this
run against stock moto (`.venv/bin/moto_server`, what a user's own test setup runs: slower
than the project's emulator, `scripts/moto_server.py`, which `--emulator project` uses).

    scripts/queued_appends.py --hearth target/release/hearth [--writers 8] [--appends 40]
        [--emulator stock|project] [--runs 1]
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, what):
    for _ in range(300):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not start")


def one_run(hearth, writers, appends, emulator):
    moto_port, port = free_port(), free_port()
    command = ([str(ROOT / ".venv/bin/moto_server"), "-p", str(moto_port)] if emulator == "stock"
               else [str(ROOT / ".venv/bin/python"), str(ROOT / "scripts/moto_server.py"), str(moto_port)])
    moto = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    token = "judge-" + os.urandom(16).hex()
    data = tempfile.mkdtemp(prefix="hearth-queued-")
    env = {"PATH": os.environ["PATH"], "HEARTH_ADDR": f"127.0.0.1:{port}", "HEARTH_DATA_DIR": data,
           "HEARTH_TABLE": "queued-" + os.urandom(4).hex(), "AWS_ENDPOINT_URL": f"http://127.0.0.1:{moto_port}",
           "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "MCP_JUDGE_TOKEN_HASHES": hashlib.sha256(token.encode()).hexdigest(),
           # The limits are not what is measured.
           "HEARTH_RATE_LIMIT_PER_SUBJECT": "1000000", "HEARTH_RATE_LIMIT_PER_IP": "1000000",
           "RUST_LOG": "info,hearth::why::commit=debug"}
    server = None
    try:
        wait_for(f"http://127.0.0.1:{moto_port}/moto-api/", "the emulator")
        with open(Path(data) / "server.log", "wb") as log:
            server = subprocess.Popen([hearth, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=log)
        wait_for(f"http://127.0.0.1:{port}/healthz", "hearth")
        results, lock = [], threading.Lock()

        def decide(writer, n):
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "record_decision", "arguments": {"household_id": "home", "action": f"step {n} of {writer}",
                                                         "reason": "queued", "inputs": {}, "approver": "Dana"}}})
            request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body.encode(), headers={
                "Authorization": f"Bearer {token}", "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"})
            started = time.perf_counter()
            answer = json.loads(urllib.request.urlopen(request, timeout=30).read())
            took = (time.perf_counter() - started) * 1000
            with lock:
                results.append((answer["result"].get("isError") is False, took, time.perf_counter()))

        decide("warm-up", 0)
        results.clear()
        began = time.perf_counter()
        threads = [threading.Thread(target=lambda w=w: [decide(w, n) for n in range(appends)])
                   for w in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        ended = time.perf_counter()
        # When each call ended, as a share of the run: where in the run the refused ones fall.
        return [(ok, took, (at - began) / (ended - began)) for ok, took, at in results], data
    finally:
        for process in (server, moto):
            if process:
                process.terminate()
                process.wait()


def landings(data):
    """The server's landings ("decisions landed together", logged at debug level): how many
    decisions each landed and how long its store step took."""
    found = []
    with open(Path(data) / "server.log", encoding="utf-8") as log:
        for line in log:
            if '"decisions landed together"' in line:
                event = json.loads(line)
                found.append((event["decisions"], event["landing_ms"]))
    shutil.rmtree(data, ignore_errors=True)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hearth", required=True)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--appends", type=int, default=40)
    parser.add_argument("--emulator", choices=("stock", "project"), default="stock")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.runs):
        results, data = one_run(args.hearth, args.writers, args.appends, args.emulator)
        landed = landings(data)
        accepted = sorted(took for ok, took, _ in results if ok)
        refused = sorted(took for ok, took, _ in results if not ok)
        line = (f"{args.writers} writers x {args.appends} on {args.emulator} moto: {len(accepted)} of {len(results)} "
                f"accepted, {len(accepted) / args.writers:.1f} of {args.appends} a writer")
        if accepted:
            line += (f"; accepted in {accepted[len(accepted) // 2]:.0f} ms at the median, "
                     f"{accepted[min(len(accepted) - 1, len(accepted) * 99 // 100)]:.0f} ms at p99")
        if refused:
            when = sorted(share for ok, _, share in results if not ok)
            line += (f"; the refused answered busy after {refused[0]:.0f}-{refused[-1]:.0f} ms, "
                     f"{when[0]:.0%}-{when[-1]:.0%} of the way through the run")
        if landed:
            steps = sorted(ms for _, ms in landed)
            line += (f"; {len(landed)} store steps of 1-{max(n for n, _ in landed)} decisions, "
                     f"{steps[len(steps) // 2]} ms at the median, {steps[-1]} ms at most")
        print(line)


if __name__ == "__main__":
    main()
