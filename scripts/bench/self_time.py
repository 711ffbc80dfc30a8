#!/usr/bin/env python3
"""Groups a flat `perf report --no-children --sort dso,symbol --stdio` by layer: where the
server's own CPU time goes, by the crate or subsystem each sampled symbol belongs to (self
time, so a layer counts only its own instructions, not what it calls).

    perf report -i perf.data --no-children --sort dso,symbol --stdio | python3 scripts/bench/self_time.py
"""

import re
import sys
from collections import defaultdict

# First match wins.
LAYERS = [
    ("kernel: scheduling, network, system calls", r"^\[kernel"),
    ("SHA-256 (verifying the window's 25 hashes)", r"sha2::|digest::"),
    ("SQLite (the chain read)", r"sqlite3|rusqlite"),
    ("JSON (serde_json: bodies, records, answers)", r"serde_json|serde_core|serde::"),
    ("allocation (mimalloc)", r"\bmi_|_mi_|mimalloc"),
    ("libc (memcpy, memcmp, locks)", r"__mem|pthread|GLIBC|libc"),
    ("Hearth: matching the question", r"hearth_core::why::matching"),
    ("Hearth: the why service and chain checks", r"hearth_core::(why|chain)::"),
    ("Hearth: /mcp checks, auth, limiter, logging", r"hearth_core::"),
    ("tracing (the log line)", r"tracing"),
    ("rmcp (JSON-RPC service)", r"rmcp::"),
    ("hyper, axum, tokio (HTTP and the runtime)", r"hyper|axum|tokio|tower|http::|mio::"),
    ("Rust core and std (formatting, collections, iterators)", r"core::|alloc::|std::|<&mut|<alloc|<core|<std"),
]


def main():
    shares = defaultdict(float)
    for line in sys.stdin:
        match = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*?)\s*(-\s+-\s*)?$", line)
        if not match:
            continue
        share, dso, symbol = float(match.group(1)), match.group(2), match.group(3)
        text = f"{dso} {symbol}" if dso.startswith("[") else symbol
        for layer, pattern in LAYERS:
            if re.search(pattern, text):
                shares[layer] += share
                break
        else:
            shares["other"] += share
    print("| layer (self time) | share of samples |")
    print("| --- | ---: |")
    for layer, share in sorted(shares.items(), key=lambda item: -item[1]):
        print(f"| {layer} | {share:.1f}% |")


if __name__ == "__main__":
    main()
