#!/usr/bin/env python3
"""A fault soak, loopback only: writers and readers drive a DynamoDB-backed Hearth over MCP
while a proxy between the server and the emulator (moto) adds latency, resets connections,
stalls responses and refuses connections for whole outage periods. moto itself is never
restarted (it keeps everything in memory).

Afterwards every acknowledged append must be in its chain exactly once, every chain must
verify (scripts/verify_chain.py), the server must not have panicked, and its memory must not
have grown without bound. The time to recover after each outage is reported, not asserted.
Exit status 0 when every invariant held, 1 otherwise.

  scripts/soak [SECONDS]     (starts moto, the proxy and the server itself; default 60 s)
"""

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERIFIER = ROOT / "scripts" / "verify_chain.py"
HOUSEHOLDS_PER_TOKEN = 8
# A decision window keeps 25 records; each household gets fewer appends than that, so every
# acknowledged one must still be there to be counted.
APPENDS_PER_HOUSEHOLD = 24


class FaultProxy:
    """A TCP proxy whose behaviour the soak's schedule sets: normal, latency, resets, stalls,
    or outage (connections refused)."""

    def __init__(self, listen_port, target_port):
        self.listen_port = listen_port
        self.target_port = target_port
        self.mode = "normal"
        self.server = None
        self.connections = set()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()

    def start(self):
        threading.Thread(target=self._run, daemon=True).start()
        self.ready.wait()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._listen())
        self.ready.set()
        self.loop.run_forever()

    async def _listen(self):
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", self.listen_port, reuse_address=True)

    def set_mode(self, mode):
        """Switches behaviour; an outage closes the listening socket so connections are refused."""
        future = asyncio.run_coroutine_threadsafe(self._set_mode(mode), self.loop)
        future.result(timeout=10)

    async def _set_mode(self, mode):
        if mode == "outage" and self.server is not None:
            self.server.close()
            self.server = None
            # Pooled connections die too, as they would if the service went away.
            for transport in list(self.connections):
                transport.abort()
            self.connections.clear()
        elif mode != "outage" and self.server is None:
            await self._listen()
        self.mode = mode

    async def _handle(self, reader, writer):
        if self.mode == "outage":
            writer.close()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self.connections.add(writer.transport)
        self.connections.add(upstream_writer.transport)
        try:
            await asyncio.gather(
                self._pipe(reader, upstream_writer, upstream=True),
                self._pipe(upstream_reader, writer, upstream=False),
                return_exceptions=True,
            )
        finally:
            self.connections.discard(writer.transport)
            self.connections.discard(upstream_writer.transport)

    async def _pipe(self, reader, writer, upstream):
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                mode = self.mode
                if mode == "latency":
                    await asyncio.sleep(random.uniform(0.02, 0.15))
                elif mode == "stalls" and not upstream and random.random() < 0.3:
                    await asyncio.sleep(random.uniform(1.0, 3.0))
                elif mode == "resets" and random.random() < 0.25:
                    # An abrupt reset: SO_LINGER 0 makes close send RST.
                    sock = writer.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    writer.close()
                    return
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass


def rpc(url, token, body, timeout=15):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, None
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError):
        return None, None


def tool(name, arguments):
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Soak:
    def __init__(self, url, tokens, seconds):
        self.url = url
        self.tokens = tokens
        self.seconds = seconds
        self.lock = threading.Lock()
        self.acknowledged = {}  # (token, household) -> list of (seq, trace_id)
        self.attempts = {}  # (token, household) -> count
        self.stats = {"writes": 0, "acknowledged": 0, "refused": 0, "failed": 0, "reads": 0, "read_errors": 0}
        self.last_success = time.monotonic()
        self.errors = {}  # tool error text -> count
        self.stop = threading.Event()

    def slots(self):
        return [(token, f"soak-{index}") for token in self.tokens for index in range(HOUSEHOLDS_PER_TOKEN)]

    def next_slot(self):
        with self.lock:
            open_slots = [slot for slot in self.slots() if self.attempts.get(slot, 0) < APPENDS_PER_HOUSEHOLD]
            if not open_slots:
                return None
            slot = random.choice(open_slots)
            self.attempts[slot] = self.attempts.get(slot, 0) + 1
            return slot

    def writer(self, number):
        count = 0
        while not self.stop.is_set():
            slot = self.next_slot()
            if slot is None:
                time.sleep(0.1)
                continue
            token, household = slot
            count += 1
            arguments = {"household_id": household, "action": f"writer {number} step {count}",
                         "reason": "soak", "inputs": {"n": count}, "approver": "soak"}
            status, body = rpc(self.url, token, tool("record_decision", arguments))
            with self.lock:
                self.stats["writes"] += 1
                result = (body or {}).get("result") or {}
                if status == 200 and result and not result.get("isError"):
                    record = result["structuredContent"]
                    self.acknowledged.setdefault(slot, []).append((record["seq"], record["trace_id"]))
                    self.stats["acknowledged"] += 1
                    self.last_success = time.monotonic()
                elif status == 200 and result.get("isError"):
                    self.stats["refused"] += 1
                    text = result["content"][0]["text"]
                    self.errors[text] = self.errors.get(text, 0) + 1
                else:
                    self.stats["failed"] += 1
                succeeded = status == 200 and result and not result.get("isError")
            # A client that was told to try again waits a little first, as a device would.
            time.sleep(random.uniform(0.0, 0.05) if succeeded else 0.5)

    def reader(self):
        while not self.stop.is_set():
            token, household = random.choice(self.slots())
            status, body = rpc(self.url, token, tool("whats_changed", {"household_id": household, "since": "2000-01-01T00:00:00Z"}))
            with self.lock:
                self.stats["reads"] += 1
                if status != 200 or body is None:
                    self.stats["read_errors"] += 1
            time.sleep(random.uniform(0.05, 0.2))


def schedule(seconds):
    """Phases as (mode, duration), scaled to the run's length; every run has two outages."""
    unit = seconds / 10
    return [("normal", unit), ("latency", unit * 1.5), ("resets", unit * 1.5), ("normal", unit * 0.5),
            ("outage", unit), ("normal", unit), ("stalls", unit * 1.5), ("outage", unit), ("normal", unit)]


def verify(soak):
    """Every acknowledged append present exactly once, and every chain verifying."""
    problems = []
    for slot, acknowledged in sorted(soak.acknowledged.items()):
        token, household = slot
        seqs = [seq for seq, _ in acknowledged]
        if len(seqs) != len(set(seqs)):
            problems.append(f"{household}: one sequence number acknowledged twice")
        status, body = None, None
        for _ in range(20):
            status, body = rpc(soak.url, token, tool("get_trace", {"household_id": household, "trace_id": acknowledged[0][1]}))
            if status == 200 and body and not body["result"].get("isError"):
                break
            time.sleep(0.5)
        if not (status == 200 and body and not body["result"].get("isError")):
            problems.append(f"{household}: the chain could not be read back ({status}, {body})")
            continue
        trace = body["result"]["structuredContent"]
        verdict = subprocess.run([sys.executable, str(VERIFIER)], input=json.dumps(trace).encode(), capture_output=True)
        if verdict.stdout.decode().strip() != "OK":
            problems.append(f"{household}: the chain does not verify: {verdict.stdout.decode().strip()}")
        stored = {}
        for record in trace["records"]:
            stored.setdefault(record["trace_id"], []).append(record["seq"])
        for seq, trace_id in acknowledged:
            found = stored.get(trace_id, [])
            if found != [seq]:
                problems.append(f"{household}: acknowledged record {seq} is stored {len(found)} times")
    return problems


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url, what, log=None, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    raise SystemExit(f"{what} did not start" + (f"; see {log}" if log else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seconds", nargs="?", type=float, default=60)
    parser.add_argument("--binary", default=str(ROOT / "target" / "debug" / "hearth"))
    parser.add_argument("--out", default=str(ROOT / ".test-output" / "soak"))
    parser.add_argument("--writers", type=int, default=6)
    parser.add_argument("--readers", type=int, default=2)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    moto_port, proxy_port, server_port = free_port(), free_port(), free_port()
    moto = subprocess.Popen([str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "scripts" / "moto_server.py"), str(moto_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = None
    try:
        wait_for(f"http://127.0.0.1:{moto_port}/moto-api/", "moto")
        proxy = FaultProxy(proxy_port, moto_port)
        proxy.start()
        # Enough households that the writers never run out of them: about 30 writes a second
        # for six writers here, and 8 households of 24 appends per token.
        rate = 5 * args.writers
        count = 2 + -(-int(args.seconds * rate) // (HOUSEHOLDS_PER_TOKEN * APPENDS_PER_HOUSEHOLD))
        tokens = [f"soak-{os.urandom(12).hex()}" for _ in range(count)]
        import hashlib
        env = dict(os.environ,
                   HEARTH_ADDR=f"127.0.0.1:{server_port}", HEARTH_DATA_DIR=str(out / "data"),
                   HEARTH_TABLE=f"hearth-soak-{os.urandom(6).hex()}",
                   AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy_port}", AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                   MCP_JUDGE_TOKEN_HASHES=",".join(hashlib.sha256(t.encode()).hexdigest() for t in tokens),
                   HEARTH_RATE_LIMIT_PER_SUBJECT="1000000", HEARTH_RATE_LIMIT_PER_IP="1000000")
        log_path = out / "server.log"
        with open(log_path, "w") as log:
            server = subprocess.Popen([args.binary], env=env, stdout=subprocess.DEVNULL, stderr=log)
        wait_for(f"http://127.0.0.1:{server_port}/healthz", "the server", log_path)
        return soak_run(args, proxy, tokens, f"http://127.0.0.1:{server_port}/mcp", server, log_path)
    finally:
        for process in (server, moto):
            if process is None:
                continue
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                # moto serves one request at a time and may sit on a connection the proxy
                # left half open; it keeps nothing worth a clean exit.
                process.kill()
                process.wait(timeout=10)


def soak_run(args, proxy, tokens, url, server, log_path):
    soak = Soak(url, tokens, args.seconds)
    # Warm up: the server answers and each credential's households exist.
    for token, household in soak.slots():
        for _ in range(50):
            status, _ = rpc(url, token, tool("whats_changed", {"household_id": household, "since": "2000-01-01T00:00:00Z"}))
            if status == 200:
                break
            time.sleep(0.2)
    rss_before = rss_kib(server.pid)
    threads = [threading.Thread(target=soak.writer, args=(n,), daemon=True) for n in range(args.writers)]
    threads += [threading.Thread(target=soak.reader, daemon=True) for _ in range(args.readers)]
    for thread in threads:
        thread.start()
    recoveries = []
    phases = []
    for mode, duration in schedule(args.seconds):
        proxy.set_mode(mode)
        started = time.monotonic()
        before = soak.stats["acknowledged"]
        time.sleep(duration)
        phases.append((mode, round(time.monotonic() - started, 1), soak.stats["acknowledged"] - before))
        if mode == "outage":
            proxy.set_mode("normal")
            ended = time.monotonic()
            while time.monotonic() - ended < 30 and soak.last_success < ended:
                time.sleep(0.05)
            recoveries.append(round(soak.last_success - ended, 2) if soak.last_success >= ended else None)
    proxy.set_mode("normal")
    soak.stop.set()
    for thread in threads:
        thread.join(timeout=30)
    rss_after = rss_kib(server.pid)

    problems = verify(soak)
    if server.poll() is not None:
        problems.append("the server is no longer running")
    if "panicked" in Path(log_path).read_text(errors="replace"):
        problems.append(f"the server panicked (see {log_path})")
    growth_mib = (rss_after - rss_before) / 1024
    if growth_mib > 64:
        problems.append(f"the server's memory grew by {growth_mib:.1f} MiB")

    stats = soak.stats
    print(f"fault soak: {args.seconds:.0f} s, {args.writers} writers, {args.readers} readers, {len(soak.slots())} households")
    print("| measure | value |")
    print("| --- | --- |")
    print(f"| phases (acknowledged writes) | {', '.join(f'{mode} {duration} s ({acked})' for mode, duration, acked in phases)} |")
    print(f"| writes | {stats['writes']}: {stats['acknowledged']} acknowledged, {stats['refused']} answered as tool errors, {stats['failed']} failed at HTTP |")
    print(f"| reads | {stats['reads']}: {stats['read_errors']} failed at HTTP |")
    for text, count in sorted(soak.errors.items(), key=lambda item: -item[1]):
        print(f"| tool error | {count} × {text} |")
    print(f"| recovery after each outage | {', '.join('none within 30 s' if r is None else f'{r} s' for r in recoveries)} (to the first acknowledged write) |")
    print(f"| server RSS | {rss_before / 1024:.1f} MiB before, {rss_after / 1024:.1f} MiB after |")
    print(f"| acknowledged appends present exactly once, chains verify, no panic, bounded memory | {'yes' if not problems else 'NO'} |")
    for problem in problems:
        print(f"  - {problem}")
    if stats["acknowledged"] == 0:
        print("  - nothing was acknowledged: the soak tested nothing")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
