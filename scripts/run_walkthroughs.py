#!/usr/bin/env python3
"""Runs every shell block the manual marks as a walkthrough, as a newcomer would paste it, so the
commands on those pages stay true. A block is marked by an HTML comment that starts with
`<!-- walkthrough` on the line before its ```sh fence.

Each block runs in a fresh temporary directory with `bash -euo pipefail`, against a fresh local
server with no credentials configured (so it makes the development credentials the page
describes). Only what cannot be the same on a shared test machine is substituted:
- `cargo run` becomes the built binary (no rebuild);
- the default address 127.0.0.1:8790 becomes a free loopback port;
- `.hearth/` (the default data directory) becomes the block's own;
- `scripts/` becomes the repository's scripts folder.

Usage: run_walkthroughs.py HEARTH_BINARY        (scripts/test runs it)
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = re.compile(r"^<!-- walkthrough")


def blocks():
    for page in sorted((ROOT / "docs" / "src").rglob("*.md")):
        lines = page.read_text().split("\n")
        for index, line in enumerate(lines):
            if MARK.match(line) and index + 1 < len(lines) and lines[index + 1].startswith("```sh"):
                end = lines.index("```", index + 2)
                yield page.relative_to(ROOT), index + 2, "\n".join(lines[index + 2 : end])


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(binary, page, line, script):
    with tempfile.TemporaryDirectory(prefix="hearth-walkthrough-") as scratch:
        port = free_port()
        data = Path(scratch) / ".hearth"
        text = (
            script.replace("cargo run", f'HEARTH_ADDR=127.0.0.1:{port} HEARTH_DATA_DIR="{data}" "{binary}"')
            .replace("127.0.0.1:8790", f"127.0.0.1:{port}")
            .replace(".hearth/", f"{data}/")
            .replace("scripts/", f"{ROOT}/scripts/")
        )
        # Only the server's own settings: nothing from the test run's servers leaks in.
        env = {key: value for key, value in os.environ.items() if not key.startswith(("HEARTH_", "MCP_", "COUNTERSIGN_"))}
        # Its own process group, so a server the block started is stopped whatever happens.
        process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", text], cwd=scratch, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            stdout, stderr = "", "timed out after 120 s"
        finally:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            process.wait()
        result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
        if result.returncode != 0:
            print(f"walkthrough {page}:{line} failed (exit {result.returncode})")
            print(result.stdout[-3000:])
            print(result.stderr[-3000:])
            return False
        print(f"walkthrough {page}:{line}: ran {len(script.splitlines())} lines")
        return True


def main(arguments):
    if len(arguments) != 1:
        print(__doc__.strip().splitlines()[-1])
        return 2
    binary = Path(arguments[0]).resolve()
    found = list(blocks())
    if not found:
        print("no walkthrough blocks found in docs/src")
        return 1
    failed = [block for block in found if not run(binary, *block)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
