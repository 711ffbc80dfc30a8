#!/usr/bin/env python3
"""Instructions per request by layer, from `callgrind_annotate --inclusive=yes` output (for
scripts/bench/profile). A layer's figure is the inclusive count of its entry functions, the
largest one found for each pattern, divided by the number of requests."""

import re
import sys

# (layer, the symbol its cost is read from). Async functions are their `{{closure}}`s.
LAYERS = [
    ("whole request: axum/hyper serving one connection's request", r"hyper::proto::h1::dispatch::Dispatcher<.*>::poll_loop"),
    ("/mcp handler (everything below)", r"hearth_core::mcp::http::handle::\{\{closure\}\}"),
    ("  bearer check (authenticate)", r"hearth_core::auth::Authenticator::authenticate"),
    ("  rate limiter (admit: in-memory SQLite counters)", r"hearth_core::gate::Gate::admit::\{\{closure\}\}"),
    ("  body checks (nesting depth, integer sizes)", r"hearth_core::mcp::body::nesting_depth"),
    ("  rmcp service (JSON-RPC, dispatch, response)", r"rmcp::transport::streamable_http_server::tower::StreamableHttpService<.*>::handle::\{\{closure\}\}"),
    ("    the tool (HearthServer::call)", r"hearth_core::mcp::handler::HearthServer::call::\{\{closure\}\}"),
    ("      the chain read (SQLite)", r"<hearth_core::store::sqlite::SqliteStore as hearth_core::store::ChainStore>::load::\{\{closure\}\}"),
    ("      chain verification (SHA-256 of the window)", r"hearth_core::chain::verify"),
    ("      matching the question", r"hearth_core::why::matching::"),
    ("  the log line (format, EMF, queue)", r"hearth_core::telemetry::RequestLog::finish"),
    ("allocation (malloc and free, all layers)", r"mi_(malloc|free)$|^_mi_malloc_generic"),
]


def main(path, requests):
    costs = []
    for line in open(path, encoding="utf-8", errors="replace"):
        match = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\*?\s*(\S.*)$", line)
        if match:
            costs.append((int(match.group(1).replace(",", "")), match.group(2)))
    total = max((c for c, _ in costs), default=0)
    print(f"callgrind, {requests} sequential explain_why requests over a 25-decision window")
    print("| layer | instructions per request |")
    print("| --- | ---: |")
    for layer, pattern in LAYERS:
        found = [c for c, symbol in costs if re.search(pattern, symbol)]
        value = max(found) if found else 0
        print(f"| {layer} | {value / requests:,.0f} |")
    print(f"| (the whole program while counting) | {total / requests:,.0f} |")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
