#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/<target>/: valid and nearly valid inputs for each
target, so the fuzzer starts past authentication, signatures and parsing. The constants are
those of hearth_core::fuzzing. Run again after changing them; the files are committed."""

import base64
import hashlib
import hmac
import json
from urllib.parse import urlencode
from pathlib import Path

JUDGE_TOKEN = "fuzz-judge-token"
CLIENT = ("fuzz-client", "fuzz-client-secret-0123456789")
HOST_KEY = "fuzz-host-key"
REDIRECT = "https://alexa.example/api/skill/link/FUZZ"
# RFC 7636 Appendix B.
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
NOW = 1_796_000_000
ROOT = Path(__file__).resolve().parent / "corpus"


def attestation(member="dana", words=("buy a 4 pack of AA batteries",), answering=None, issued_at=NOW, turn="t-1"):
    body = {"member_id": member, "turn_id": turn, "utterances": list(words), "issued_at": issued_at, "answering": answering}
    encoded = base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")
    return encoded, hmac.new(HOST_KEY.encode(), encoded.encode(), hashlib.sha256).hexdigest()


def http(method, path, headers, body=b""):
    head = "\n".join([f"{method} {path}"] + [f"{k}: {v}" for k, v in headers])
    return head.encode() + b"\n\n" + (body if isinstance(body, bytes) else body.encode())


def mcp(payload, extra=()):
    headers = [("authorization", f"Bearer {JUDGE_TOKEN}"), ("content-type", "application/json"),
               ("accept", "application/json, text/event-stream"), *extra]
    return http("POST", "/mcp", headers, json.dumps(payload))


def call(name, arguments, extra=()):
    return mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}, extra)


def signed(words=("buy a 4 pack of AA batteries",), member="dana", answering=None):
    encoded, signature = attestation(member, words, answering)
    return [("x-countersign-attestation", encoded), ("x-countersign-signature", signature)]


TOOL_ARGUMENTS = {
    "record_decision": {"household_id": "home", "action": "dim lights", "reason": "Movie time", "inputs": {"brightness": 20, "ratio": 0.25}, "approver": "Dana"},
    "explain_why": {"household_id": "home", "question": "why are the lights dim?"},
    "whats_changed": {"household_id": "home", "since": "2026-11-30T08:00:00Z"},
    "get_trace": {"household_id": "home", "trace_id": "0123456789abcdef", "scholia": True},
    "scholia_catalog": {},
    "scholia_lookup": {"name": "Step"},
    "scholia_lint_snippet": {"snippet": "<Step id=\"S_1\"><Action id=\"A_1\">dim lights</Action></Step>"},
    "scholia_lint_trace": {"trace": "<Trace><Step id=\"S_1\"></Step></Trace>"},
    "ask_aion": {"question": "what should I cook tonight?"},
    "search_products": {"query": "AA batteries", "max_results": 3},
    "propose_purchase": {"product_id": "aa-batteries", "variant_id": "4-pack", "quantity": 1},
    "confirm_purchase": {"request_id": "REQ-0123456789"},
    "decide_request": {"request_id": "REQ-0123456789", "decision": "approve"},
    "list_waiting": {},
    "household_activity": {},
    "verify_ledger": {},
    "check_receipt": {"receipt": {"household_id": "maple-house", "window": "2026-11-30T08:00:00.000Z", "seq": 1, "entry_hash": "00" * 32}},
}


def tlog_seeds():
    """A signed checkpoint and a proof file from the fuzz log key (hearth_core::fuzzing::LOG_SEED),
    and near misses. Signing needs `cryptography` (in .venv)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.from_private_bytes(bytes([9] * 32))
    name = "fuzz.example/hearth-log/v1"
    public = key.public_key().public_bytes_raw()
    key_id = hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4]
    leaf = hashlib.sha256(b"\x00" + bytes(32)).digest()
    sibling = hashlib.sha256(b"\x00" + bytes([1] * 32)).digest()
    root = hashlib.sha256(b"\x01" + leaf + sibling).digest()
    text = f"fuzz.example/hearth/00112233445566778899aabbccddeeff/decisions/1\n2\n{base64.b64encode(root).decode()}\n"
    note = text + "\n\u2014 " + name + " " + base64.b64encode(key_id + key.sign(text.encode())).decode() + "\n"
    proof = "c2sp.org/tlog-proof@v1\nindex 0\n" + base64.b64encode(sibling).decode() + "\n\n" + note
    return [note.encode(), proof.encode(), text.encode(), proof.replace("index 0", "index 1").encode(),
            proof.replace("index 0", "extra AAAA\nindex 0").encode(), b"c2sp.org/tlog-proof@v1\nindex 18446744073709551615\n\n"]


def witness_seeds():
    """add-checkpoint bodies (first byte even) signed by the fuzz log key, and witness policies
    (first byte odd)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.from_private_bytes(bytes([9] * 32))
    name = "fuzz.example/hearth-log/v1"
    public = key.public_key().public_bytes_raw()
    key_id = hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4]
    vkey = name + "+" + key_id.hex() + "+" + base64.b64encode(b"\x01" + public).decode()
    leaf = hashlib.sha256(b"\x00" + bytes(32)).digest()
    sibling = hashlib.sha256(b"\x00" + bytes([1] * 32)).digest()
    root = hashlib.sha256(b"\x01" + leaf + sibling).digest()

    def note(size, tree_root, origin="fuzz.example/hearth/00112233445566778899aabbccddeeff/decisions/1"):
        text = f"{origin}\n{size}\n{base64.b64encode(tree_root).decode()}\n"
        return text + "\n\u2014 " + name + " " + base64.b64encode(key_id + key.sign(text.encode())).decode() + "\n"

    body = lambda old, proof, checkpoint: (f"old {old}\n" + "".join(base64.b64encode(h).decode() + "\n" for h in proof) + "\n" + checkpoint)
    witness_key = Ed25519PrivateKey.from_private_bytes(bytes([5] * 32)).public_key().public_bytes_raw()
    witness_id = hashlib.sha256(b"w\n\x04" + witness_key).digest()[:4]
    witness_vkey = "w+" + witness_id.hex() + "+" + base64.b64encode(b"\x04" + witness_key).decode()
    policy = f"log {vkey}\nwitness w {witness_vkey} http://127.0.0.1:9\ngroup g any w\nquorum g\n"
    return [
        b"\x00" + body(0, [], note(2, root)).encode(),
        b"\x00" + body(1, [sibling], note(2, root)).encode(),
        b"\x00" + body(0, [leaf], note(2, root)).encode(),
        b"\x00" + body(3, [], note(2, root)).encode(),
        b"\x00" + body(0, [], note(0, hashlib.sha256(b"").digest())).encode(),
        b"\x00" + body(0, [], note(1, leaf, "elsewhere.example/x/1")).encode(),
        b"\x01" + policy.encode(),
        b"\x01" + policy.replace("quorum g", "quorum none").encode(),
        b"\x01group g 2 a b\nquorum g\n",
    ]


def write(target, seeds):
    directory = ROOT / target
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    for index, seed in enumerate(seeds):
        (directory / f"seed-{index:03}").write_bytes(seed)


def main():
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}
    http_seeds = [
        mcp(init),
        mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        mcp({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}),
        mcp({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "countersign://household/rules"}}, signed()),
        mcp({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        call("propose_purchase", TOOL_ARGUMENTS["propose_purchase"], signed()),
        call("list_waiting", {}, signed(("what is waiting",), "chris")),
        call("confirm_purchase", {"request_id": "REQ-0123456789"}, signed(("yes",), "dana", "REQ-0123456789")),
        http("POST", "/mcp", [("authorization", f"Bearer {JUDGE_TOKEN}"), ("content-type", "application/json")], b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"record_decision","arguments":{"inputs":{"n":18446744073709551616}}}}'),
        http("POST", "/mcp", [("authorization", f"Bearer {JUDGE_TOKEN}"), ("content-type", "application/json")], b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[[[[[[]]]]]]}}'),
        http("POST", "/mcp", [("authorization", f"Bearer {JUDGE_TOKEN}"), ("content-type", "application/json")], b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"caf\xc3\x28"}}'),
        http("POST", "/oauth/token", [("authorization", "Basic " + base64.b64encode(":".join(CLIENT).encode()).decode()), ("content-type", "application/x-www-form-urlencoded")],
             "grant_type=client_credentials&resource=http%3A%2F%2F127.0.0.1%3A8790%2Fmcp&scope=mcp%3Atools"),
        http("POST", "/oauth/judge", [("content-type", "application/x-www-form-urlencoded")], f"judge_token={JUDGE_TOKEN}"),
        http("GET", "/.well-known/oauth-authorization-server", []),
        http("GET", "/.well-known/oauth-protected-resource/mcp", []),
        http("GET", "/healthz", []),
        http("POST", "/demo/device", [("authorization", f"Bearer {JUDGE_TOKEN}"), ("content-type", "application/json")], json.dumps({"member_id": "mia", "utterances": ["buy dino blocks"]})),
        http("GET", "/demo/device", [("authorization", f"Bearer {JUDGE_TOKEN}")]),
        http("GET", "/mcp?access_token=x", []),
        http("GET", "/oauth/authorize?" + urlencode({"response_type": "code", "client_id": CLIENT[0], "redirect_uri": REDIRECT, "state": "s",
             "code_challenge": CHALLENGE, "code_challenge_method": "S256", "resource": "http://127.0.0.1:8790/mcp", "scope": "mcp:service"}), []),
        http("POST", "/oauth/authorize", [("content-type", "application/x-www-form-urlencoded"), ("cookie", "hearth_consent=AAAAAAAAAAAAAAAAAAAAAA")],
             urlencode({"response_type": "code", "client_id": CLIENT[0], "redirect_uri": REDIRECT, "code_challenge": CHALLENGE,
                        "code_challenge_method": "S256", "resource": "http://127.0.0.1:8790/mcp", "csrf": "AAAA", "decision": "allow", "link_code": "AAAA-BBBB-CCCC"})),
        http("POST", "/oauth/token", [("authorization", "Basic " + base64.b64encode(":".join(CLIENT).encode()).decode()), ("content-type", "application/x-www-form-urlencoded")],
             urlencode({"grant_type": "authorization_code", "code": "A" * 43, "redirect_uri": REDIRECT, "code_verifier": VERIFIER, "resource": "http://127.0.0.1:8790/mcp"})),
        http("POST", "/oauth/token", [("content-type", "application/x-www-form-urlencoded")],
             urlencode({"grant_type": "refresh_token", "refresh_token": "hrt1." + "0" * 32 + "." + "A" * 43, "client_id": CLIENT[0], "client_secret": CLIENT[1]})),
        http("POST", "/oauth/revoke", [("authorization", "Basic " + base64.b64encode(":".join(CLIENT).encode()).decode()), ("content-type", "application/x-www-form-urlencoded")],
             "token=hrt1." + "0" * 32 + "." + "A" * 43),
    ]
    write("http_request", http_seeds)
    names = list(TOOL_ARGUMENTS)
    write("tool_call", [name.encode() + b"\n" + bytes([member]) + json.dumps(TOOL_ARGUMENTS[name]).encode()
                        for name in names for member in (0, 2)])
    scholia = [
        b'<Trace><Step id="S_1" title="dim"><Action id="A_1">dim lights</Action><Finding id="F_1">REFER:A_1 movie time</Finding></Step></Trace>',
        b'<Step id="S_1"><Claim id="C_1" confidence="0.8">the door is locked</Claim></Step>',
        b'<Step id="S_1"><Action id="A_1">x</Step>',
        b'<Step id="S_&amp;1">&lt;&#x41;&#65;&bogus;</Step>',
        b"",
    ]
    write("scholia", scholia)
    encoded, _ = attestation()
    now = NOW.to_bytes(8, "little", signed=True)
    write("attestation", [
        b"\x01" + now + encoded.encode(),
        b"\x00" + now + encoded.encode(),
        b"\x01" + (NOW + 301).to_bytes(8, "little", signed=True) + encoded.encode(),
        b"\x01" + now + attestation(issued_at=-(2**63))[0].encode(),
        b"\x01" + now + attestation(words=("a" * 501,))[0].encode(),
        b"\x01" + now + base64.urlsafe_b64encode(b'{"member_id":"dana"}').decode().rstrip("=").encode(),
    ])
    write("tlog", tlog_seeds())
    write("witness", witness_seeds())
    write("oauth", [
        ("Basic " + base64.b64encode(":".join(CLIENT).encode()).decode() + "\ngrant_type=client_credentials&resource=x").encode(),
        b"Basic Zm9vOmJhcg==\ngrant_type=client_credentials&grant_type=client_credentials",
        b"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJoaC0wIn0.c2lnbmF0dXJl\nscope=mcp%3Aservice",
        b"Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.\n",
        b"Basic %%%\n%zz=%",
        ("Basic " + base64.b64encode(":".join(CLIENT).encode()).decode() + "\ngrant_type=refresh_token&refresh_token=hrt1." + "0" * 32 + "." + "A" * 43).encode(),
        ("Bearer x\ncode_verifier=" + VERIFIER + "&code_challenge=" + CHALLENGE + "&link_code=oil0-OIL0-abcd").encode(),
    ])


if __name__ == "__main__":
    main()
