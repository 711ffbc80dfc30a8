#!/usr/bin/env python3
"""Writes the passkey routes' and the household page's API Gateway fixtures
(events/mcp/v2-passkey-*.json) and the household account they are replayed against
(events/passkey-household.json): its passkeys, a sign-in challenge, and a signed-in session
with a guardian's action waiting to be signed.

The WebAuthn answers are made here with fixed keys, as an authenticator would: a registration
with `none` attestation (ES256) for the invite's challenge, and an Ed25519 assertion by the
guardian's passkey over the pending enrolment's statement (Ed25519 signatures are
deterministic, so the files do not change between runs). tests/lambda_events.rs seeds the
account, with its challenge and nonce dated at replay time, before replaying each fixture.

Run with the test virtualenv: .venv/bin/python scripts/passkey_fixtures.py
"""

import base64
import hashlib
import json
import pathlib

from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives import serialization

ROOT = pathlib.Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"
HOST = "abc123xyz.execute-api.us-east-1.amazonaws.com"
ORIGIN = f"https://{HOST}"
HOUSEHOLD = "hh-0123456789abcdef0123456789abcdef"


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


INVITE = f"{HOUSEHOLD}.{b64u(sha('fixture invite'))}"
APPROVAL = f"{HOUSEHOLD}.{b64u(sha('fixture approval'))}"
APPROVE = f"{HOUSEHOLD}.{b64u(sha('fixture order approval'))}"
PUSH = f"{HOUSEHOLD}.{b64u(sha('fixture push grant'))}"
PHONE = ec.derive_private_key(int.from_bytes(sha("fixture phone push key"), "big") % (2**255), ec.SECP256R1())
REQUEST_ID = "REQ-F1X7URE001"
APPROVAL_NONCE = b64u(sha("fixture approval nonce")[:16])
CHALLENGE = sha("fixture registration challenge")
NONCE = b64u(sha("fixture nonce")[:16])

GUARDIAN = ed25519.Ed25519PrivateKey.from_private_bytes(sha("fixture guardian key"))
GUARDIAN_ID = sha("fixture guardian credential")[:16]
PENDING_ID = sha("fixture pending credential")[:16]
NEW_KEY = ec.derive_private_key(int.from_bytes(sha("fixture new key"), "big") % (2**255), ec.SECP256R1())
NEW_ID = sha("fixture new credential")[:16]
SIGN_IN_CHALLENGE = sha("fixture sign-in challenge")
SESSION_ID = b64u(sha("fixture session"))
CSRF = b64u(sha("fixture csrf"))
ACTION_STATEMENT = (f"hearth-household-action/v1\nadd-device-key\n{HOUSEHOLD}\nnew\n2026-12-02T08:00:00.000Z\n"
                    f"{b64u(sha('fixture action nonce')[:16])}\n")


def spki(public_key) -> str:
    return b64u(public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))


def cbor_head(major: int, value: int) -> bytes:
    if value < 24:
        return bytes([major << 5 | value])
    if value < 256:
        return bytes([major << 5 | 24, value])
    return bytes([major << 5 | 25]) + value.to_bytes(2, "big")


def cbor(item) -> bytes:
    """The little CBOR an attestation object needs: ints, byte and text strings, maps."""
    if isinstance(item, bool):
        raise TypeError("no booleans here")
    if isinstance(item, int):
        return cbor_head(0, item) if item >= 0 else cbor_head(1, -1 - item)
    if isinstance(item, bytes):
        return cbor_head(2, len(item)) + item
    if isinstance(item, str):
        return cbor_head(3, len(item.encode())) + item.encode()
    if isinstance(item, dict):
        return cbor_head(5, len(item)) + b"".join(cbor(k) + cbor(v) for k, v in item.items())
    raise TypeError(type(item))


def client_data(kind: str, challenge: bytes) -> bytes:
    return json.dumps({"type": kind, "challenge": b64u(challenge), "origin": ORIGIN, "crossOrigin": False},
                      separators=(",", ":")).encode()


def registration() -> dict:
    numbers = NEW_KEY.public_key().public_numbers()
    cose = {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
    # rpIdHash, flags UP|UV|AT, counter 0, an all-zero AAGUID, the credential id, its key.
    auth = sha(HOST) + bytes([0x45]) + (0).to_bytes(4, "big") + bytes(16) + len(NEW_ID).to_bytes(2, "big") + NEW_ID + cbor(cose)
    attestation = cbor({"fmt": "none", "attStmt": {}, "authData": auth})
    return {"id": b64u(NEW_ID), "rawId": b64u(NEW_ID), "type": "public-key",
            "response": {"clientDataJSON": b64u(client_data("webauthn.create", CHALLENGE)),
                         "attestationObject": b64u(attestation)}}


def enrolment_statement() -> str:
    return f"hearth-enrolment/v1\n{HOUSEHOLD}\nrose\n{b64u(PENDING_ID)}\napprove\n{NONCE}\n"


def assertion(statement: str) -> dict:
    return assertion_over(hashlib.sha256(statement.encode()).digest())


def assertion_over(challenge: bytes) -> dict:
    """The guardian's passkey answering `challenge` (a statement's hash, or a sign-in's)."""
    auth = sha(HOST) + bytes([0x05]) + (0).to_bytes(4, "big")
    data = client_data("webauthn.get", challenge)
    signature = GUARDIAN.sign(auth + hashlib.sha256(data).digest())
    return {"id": b64u(GUARDIAN_ID), "rawId": b64u(GUARDIAN_ID), "type": "public-key",
            "response": {"clientDataJSON": b64u(data), "authenticatorData": b64u(auth),
                         "signature": b64u(signature), "userHandle": None}}


def account() -> dict:
    pending_key = ed25519.Ed25519PrivateKey.from_private_bytes(sha("fixture pending key"))
    return {
        "household_id": HOUSEHOLD,
        "guardian": {"credential_id": b64u(GUARDIAN_ID), "member_id": "dana", "algorithm": "Ed25519",
                     "public_key_spki": spki(GUARDIAN.public_key())},
        "pending": {"credential_id": b64u(PENDING_ID), "member_id": "rose", "algorithm": "Ed25519",
                    "public_key_spki": spki(pending_key.public_key()), "approval_token": APPROVAL, "nonce": NONCE},
        "invite": {"token_sha256": hashlib.sha256(INVITE.encode()).hexdigest(), "member_id": "mia",
                   "challenge": b64u(CHALLENGE)},
        # A request proposed without a device, its approval page given a nonce. The decision's
        # statement names the proposal entry's hash, which depends on when the replay seeds
        # it, so v2-passkey-approve-ok.json carries placeholders the replay fills by signing
        # with the guardian's key: sha256("fixture guardian key") as an Ed25519 seed.
        "approval": {"token": APPROVE, "request_id": REQUEST_ID, "nonce": APPROVAL_NONCE},
        # The guardian's enrolment answered this push token; the phone subscribes with it.
        "push_grant": {"token_sha256": hashlib.sha256(PUSH.encode()).hexdigest()},
        # The household page: a sign-in challenge given out, and the guardian's session, whose
        # page asked to sign a new device key.
        "sign_in": {"challenge": b64u(SIGN_IN_CHALLENGE)},
        "session": {"id": SESSION_ID, "csrf": CSRF, "asked": ACTION_STATEMENT},
    }


def event(name: str, method: str, path: str, body=None, signed_in=False, query="") -> dict:
    headers = {"host": HOST, "user-agent": "Mozilla/5.0 (Linux; Android 14) Mobile", "x-forwarded-proto": "https",
               "x-forwarded-for": "203.0.113.7", "accept": "text/html" if method == "GET" else "application/json"}
    if signed_in:
        headers["cookie"] = f"__Host-hearth_session={SESSION_ID}"
        headers["x-hearth-csrf"] = CSRF
    if body is not None:
        headers["content-type"] = "application/json"
        headers["origin"] = ORIGIN
    fixture = {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query, "headers": headers,
        "requestContext": {"accountId": "123456789012", "apiId": "abc123xyz", "domainName": HOST, "domainPrefix": "abc123xyz",
                           "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7",
                                    "userAgent": headers["user-agent"]},
                           "requestId": f"fixture-{name}", "routeKey": "$default", "stage": "$default",
                           "time": "02/Dec/2026:08:00:00 +0000", "timeEpoch": 1796198400000},
        "isBase64Encoded": False,
    }
    if body is not None:
        fixture["body"] = json.dumps(body)
    return fixture


def main():
    write = lambda path, value: path.write_text(json.dumps(value, indent=2) + "\n")
    write(EVENTS / "passkey-household.json", account())
    statement = enrolment_statement()
    fixtures = {
        "v2-passkey-enrol-page-ok": event("v2-passkey-enrol-page-ok", "GET", f"/passkeys/enrol/{INVITE}"),
        "v2-passkey-options-ok": event("v2-passkey-options-ok", "POST", f"/passkeys/enrol/{INVITE}/options", {}),
        "v2-passkey-enrol-ok": event("v2-passkey-enrol-ok", "POST", f"/passkeys/enrol/{INVITE}", {"credential": registration()}),
        "v2-passkey-confirm-page-ok": event("v2-passkey-confirm-page-ok", "GET", f"/passkeys/confirm/{APPROVAL}"),
        "v2-passkey-confirm-challenge-ok": event("v2-passkey-confirm-challenge-ok", "POST",
                                                 f"/passkeys/confirm/{APPROVAL}/challenge", {"decision": "approve"}),
        "v2-passkey-approve-page-ok": event("v2-passkey-approve-page-ok", "GET", f"/passkeys/approve/{APPROVE}"),
        "v2-passkey-approve-challenge-ok": event("v2-passkey-approve-challenge-ok", "POST",
                                                 f"/passkeys/approve/{APPROVE}/challenge", {"decision": "approve"}),
        "v2-passkey-approve-ok": event("v2-passkey-approve-ok", "POST", f"/passkeys/approve/{APPROVE}",
                                       {"decision": "approve", "statement": "{{statement}}", "credential": "{{credential}}"}),
        "v2-passkey-approve-page": event("v2-passkey-approve-page", "GET",
                                         f"/passkeys/approve/{HOUSEHOLD}.{b64u(sha('no such approval'))}"),
        "v2-passkey-sw": event("v2-passkey-sw", "GET", "/passkeys/sw.js"),
        "v2-passkey-push-ok": event("v2-passkey-push-ok", "POST", f"/passkeys/push/{PUSH}", {
            "endpoint": "https://push.example.net/send/fixture-subscription",
            "expirationTime": None,
            "keys": {"p256dh": b64u(PHONE.public_key().public_bytes(serialization.Encoding.X962,
                                                                     serialization.PublicFormat.UncompressedPoint)),
                     "auth": b64u(sha("fixture phone auth")[:16])}}),
        "v2-passkey-confirm-ok": event("v2-passkey-confirm-ok", "POST", f"/passkeys/confirm/{APPROVAL}",
                                       {"decision": "approve", "statement": statement, "credential": assertion(statement)}),
    }
    decide = f"/household/decide/{REQUEST_ID}"
    fixtures.update({
        "v2-passkey-household-page": event("v2-passkey-household-page", "GET", "/household"),
        "v2-passkey-household-today": event("v2-passkey-household-today", "GET", "/household", signed_in=True),
        "v2-passkey-household-script": event("v2-passkey-household-script", "GET", "/household/page.js"),
        "v2-passkey-household-check-script": event("v2-passkey-household-check-script", "GET", "/household/check.js"),
        "v2-passkey-household-log-ok": event("v2-passkey-household-log-ok", "GET", "/household/log/ledger", signed_in=True),
        "v2-passkey-household-log-history-ok": event("v2-passkey-household-log-history-ok", "GET",
                                                     "/household/log/ledger/history", signed_in=True,
                                                     query="from_size=0"),
        "v2-passkey-household-manifest": event("v2-passkey-household-manifest", "GET", "/household/manifest.webmanifest"),
        "v2-passkey-household-icon": event("v2-passkey-household-icon", "GET", "/household/icon.svg"),
        "v2-passkey-household-push-ok": event("v2-passkey-household-push-ok", "POST", "/household/push", {
            "endpoint": "https://push.example.net/send/fixture-household-subscription",
            "expirationTime": None,
            "keys": {"p256dh": b64u(PHONE.public_key().public_bytes(serialization.Encoding.X962,
                                                                     serialization.PublicFormat.UncompressedPoint)),
                     "auth": b64u(sha("fixture phone auth")[:16])}}, signed_in=True),
        "v2-passkey-household-sign-in-options": event("v2-passkey-household-sign-in-options", "POST",
                                                      "/household/sign-in/options", {}),
        "v2-passkey-household-sign-in-ok": event("v2-passkey-household-sign-in-ok", "POST", "/household/sign-in",
                                                 {"credential": assertion_over(SIGN_IN_CHALLENGE)}),
        "v2-passkey-household-sign-out-ok": event("v2-passkey-household-sign-out-ok", "POST", "/household/sign-out",
                                                  {}, signed_in=True),
        "v2-passkey-household-decide-challenge-ok": event("v2-passkey-household-decide-challenge-ok", "POST",
                                                          f"{decide}/challenge", {"decision": "approve"}, signed_in=True),
        "v2-passkey-household-decide-ok": event("v2-passkey-household-decide-ok", "POST", decide,
                                                {"decision": "approve", "statement": "{{statement}}",
                                                 "credential": "{{credential}}"}, signed_in=True),
        "v2-passkey-household-act-challenge-ok": event("v2-passkey-household-act-challenge-ok", "POST",
                                                       "/household/act/challenge",
                                                       {"action": "add-device-key", "target": "new"}, signed_in=True),
        "v2-passkey-household-act-ok": event("v2-passkey-household-act-ok", "POST", "/household/act",
                                             {"statement": ACTION_STATEMENT, "credential": assertion(ACTION_STATEMENT)},
                                             signed_in=True),
    })
    for name, value in fixtures.items():
        write(EVENTS / "mcp" / f"{name}.json", value)


if __name__ == "__main__":
    main()
