#!/usr/bin/env python3
"""The side-by-side table from the drivers' JSON lines (load.py --json, coldstart.py --json):
per server the median over rounds with every round in brackets, then Hearth's ratios to the
TypeScript peer and to the floor, round by round, against the performance targets.

    python3 scripts/bench/table.py .test-output/bench/results.jsonl
"""

import json
import re
import statistics
import sys
from collections import defaultdict

ORDER = ["hearth", "floor", "ts", "py"]
NAMES = {"hearth": "Hearth", "floor": "floor (bare rmcp + axum)", "ts": "official TypeScript SDK",
         "py": "official Python SDK"}


def rounds(path):
    load, cold = defaultdict(dict), defaultdict(dict)
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        server = record["label"].split()[0]
        number = int(re.search(r"round(\d+)", record["label"]).group(1))
        if "ready_ms" in record:
            cold[server][number] = record
        else:
            load[(server, record["connections"])][number] = record
    return load, cold


def cell(values, fmt):
    if not values:
        return "–"
    return f"{fmt(statistics.median(values))} [{', '.join(fmt(v) for v in values)}]"


def main(path):
    load, cold = rounds(path)
    print("| server | c=32 req/s | c=32 p99 ms | c=1 p50 ms | start to first `initialize`, median ms | VmHWM after 1,000 calls, MiB | errors |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for server in [s for s in ORDER if (s, 32) in load]:
        busy = [load[(server, 32)][n] for n in sorted(load[(server, 32)])]
        single = [load[(server, 1)][n] for n in sorted(load.get((server, 1), {}))]
        starts = [cold[server][n] for n in sorted(cold.get(server, {}))]
        errors = sum(r["errors"] for r in busy + single)
        print(f"| {NAMES[server]} | {cell([r['rps'] for r in busy], lambda v: f'{v:,.0f}')} "
              f"| {cell([r['p99_ms'] for r in busy], lambda v: f'{v:.1f}')} "
              f"| {cell([r['p50_ms'] for r in single], lambda v: f'{v:.2f}')} "
              f"| {cell([r['ready_ms']['median'] for r in starts], lambda v: f'{v:.0f}')} "
              f"| {cell([r['vmhwm_mib']['median'] for r in starts], lambda v: f'{v:.1f}')} | {errors} |")
    hearth = load.get(("hearth", 32), {})
    print()
    print("| round | Hearth ÷ TypeScript (target ≥ 10×) | Hearth ÷ floor (target ≥ 70%) | Hearth c=32 p99 (≤ 5 ms) | Hearth c=1 p50 (≤ 0.15 ms) |")
    print("| --- | --- | --- | --- | --- |")
    for number in sorted(hearth):
        ts = load.get(("ts", 32), {}).get(number)
        floor = load.get(("floor", 32), {}).get(number)
        single = load.get(("hearth", 1), {}).get(number)
        rps = hearth[number]["rps"]
        versus_ts = f"{rps / ts['rps']:.1f}×" if ts else "–"
        versus_floor = f"{100 * rps / floor['rps']:.0f}%" if floor else "–"
        p50 = f"{single['p50_ms']:.2f} ms" if single else "–"
        print(f"| {number} | {versus_ts} | {versus_floor} | {hearth[number]['p99_ms']:.1f} ms | {p50} |")


if __name__ == "__main__":
    main(sys.argv[1])
