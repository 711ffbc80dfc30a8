#!/usr/bin/env python3
"""Sends `tools/call explain_why` requests one after another over one keep-alive connection
(scripts/bench/profile seeds and warms up with it). With --seed it first records the 25
decisions they ask about."""

import argparse
import http.client
import json
import sys
from urllib.parse import urlsplit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("token")
    parser.add_argument("--seed", action="store_true")
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    parts = urlsplit(args.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = {"Authorization": f"Bearer {args.token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}

    def call(name, arguments):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        connection.request("POST", parts.path, json.dumps(body), headers)
        response = connection.getresponse()
        answer = json.loads(response.read())
        if response.status != 200 or answer.get("result", {}).get("isError"):
            sys.exit(f"{name} failed: {response.status} {answer}")

    if args.seed:
        for i in range(25):
            call("record_decision", {"household_id": "hh-000", "action": f"lower the heating {i}",
                                     "reason": "energy prices spike in the evening", "approver": "alex",
                                     "inputs": {"seq": i}})
    for _ in range(args.requests):
        call("explain_why", {"household_id": "hh-000", "question": "why did we lower the heating?"})


if __name__ == "__main__":
    main()
