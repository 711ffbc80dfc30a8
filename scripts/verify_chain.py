#!/usr/bin/env python3
"""Verify a Hearth decision trace with nothing but the Python standard library.

Reads the structuredContent of a get_trace result on standard input (a whole tools/call
result with a "structuredContent" member is accepted too) and checks every record:

* its trace_id is the SHA-256 of the canonical JSON of the record without trace_id,
  where canonical JSON is json.dumps(sort_keys=True, separators=(",", ":"),
  ensure_ascii=True, allow_nan=False);
* its prev is the previous record's trace_id, or the trace's anchor for the first record;
* its seq is one more than the previous record's.

Prints "OK" and exits 0 when all hold, or "FAIL <n>" (n is the 1-based position of the first
bad record in the retained chain) and exits 1. Unreadable input is reported on stderr with
exit status 2. This proves the retained chain is internally consistent and links to its
anchor; it cannot prove that the newest records were not dropped, or that someone able to
recompute every hash did not rewrite the whole chain.
"""

import hashlib
import json
import sys


class Unreadable(Exception):
    """The input is not a trace this script can check."""


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def record_hash(record):
    body = {key: value for key, value in record.items() if key != "trace_id"}
    return hashlib.sha256(canonical(body).encode("ascii")).hexdigest()


def load_trace(text):
    try:
        data = json.loads(text)
    except ValueError as error:
        raise Unreadable("input is not JSON: %s" % error)
    if isinstance(data, dict) and isinstance(data.get("structuredContent"), dict):
        data = data["structuredContent"]
    if not isinstance(data, dict) or not isinstance(data.get("records"), list):
        raise Unreadable("input has no 'records' list; pass get_trace's structuredContent")
    if not data["records"]:
        raise Unreadable("the trace has no records")
    anchor = data.get("anchor")
    if anchor is not None and not isinstance(anchor, str):
        raise Unreadable("'anchor' must be a string or null")
    return data


def first_failure(trace):
    """The 1-based position of the first bad record, or None if the chain verifies."""
    expected_prev = trace.get("anchor")
    expected_seq = None
    for position, record in enumerate(trace["records"], start=1):
        if not isinstance(record, dict) or not isinstance(record.get("trace_id"), str):
            return position
        try:
            if record_hash(record) != record["trace_id"]:
                return position
        except ValueError:  # NaN or infinity cannot be canonical JSON
            return position
        if record.get("prev") != expected_prev:
            return position
        seq = record.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            return position
        if expected_seq is not None and seq != expected_seq:
            return position
        expected_prev = record["trace_id"]
        expected_seq = seq + 1
    return None


def main():
    try:
        trace = load_trace(sys.stdin.read())
    except Unreadable as error:
        print("verify_chain: %s" % error, file=sys.stderr)
        return 2
    except UnicodeDecodeError:
        print("verify_chain: input is not UTF-8 text", file=sys.stderr)
        return 2
    failure = first_failure(trace)
    if failure is None:
        print("OK")
        return 0
    print("FAIL %d" % failure)
    return 1


if __name__ == "__main__":
    sys.exit(main())
