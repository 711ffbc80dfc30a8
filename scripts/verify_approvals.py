#!/usr/bin/env python3
"""Checks every passkey approval in a Hearth ledger export offline, with nothing but Python's
standard library.

    verify_approvals.py EXPORT PASSKEYS --rp-id ID --origin ORIGIN [--household HOUSEHOLD]

EXPORT is what `hearth admin ledger export HOUSEHOLD --json` printed ({"entries": [...]}),
PASSKEYS what `hearth admin passkey list HOUSEHOLD --json` printed ({"passkeys": [...]}), ID
the deployment's WebAuthn relying party id (HEARTH_PASSKEY_RP_ID) and ORIGIN the origin its
pages are served on (for example https://hearth.example, or http://localhost:8790 locally).

Every `passkey_decision` and `household_action` entry must carry an `approval` ({statement,
credential_id, authenticator_data, client_data_json, signature}, every field but the statement
base64url), and for each:

* every entry's `entry_hash` is the SHA-256 of its canonical JSON without that field (as
  verify_chain.py computes it), so the hashes the statements name mean something;
* the statement is six lines, each ending in a newline: `hearth-approval/v1`, the household
  id (the same in every statement, and HOUSEHOLD when given), the entry's request id, the hash
  of that request's one proposal entry, earlier in the export, the entry's decision (`approve`
  or `decline`), and a nonce used by no other approval;
* an entry that placed an order (`result` `placed`, or an `order_id`) was an approval, and a
  decline declined;
* a guardian's action on the household's page is six lines too: `hearth-household-action/v1`,
  the entry's action, the household id, the entry's target, the time the page asked (RFC 3339,
  at most five minutes before the entry) and a nonce used by no other statement;
* the client data is a `webauthn.get` for exactly ORIGIN, not cross-origin, whose challenge is
  the base64url SHA-256 of the statement;
* the authenticator data names ID (its first 32 bytes are SHA-256 of ID) and has the user
  present (UP) and user verified (UV) flags;
* the passkey is listed, belongs to the entry's member, is not pending a guardian, was made
  before the entry and, if it was revoked or marked suspect, only after it;
* the signature over authenticatorData || SHA-256(clientDataJSON) verifies under the listed
  public key (DER SubjectPublicKeyInfo): ECDSA P-256 with SHA-256 (a DER signature, as
  WebAuthn returns it) or Ed25519.

Prints `OK`, or `FAIL <what>` and exits 1; input that cannot be read at all exits 2 with one
line on stderr. P-256 is verified here from SEC 1 section 4.1.4 and FIPS 186 (the curve's
published constants, affine arithmetic with modular inverses); Ed25519 comes from
verify_log.py beside this file.
"""

import argparse
import base64
import datetime
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verify_log import ed25519_verify  # noqa: E402  (a sibling script, standard library only)

# ---- P-256 (FIPS 186-5 / SEC 2 secp256r1) ---------------------------------------------------

P256_P = 2**256 - 2**224 + 2**192 + 2**96 - 1
P256_A = P256_P - 3
P256_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
P256_G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)

# DER SubjectPublicKeyInfo up to the key: RFC 5480 (P-256, uncompressed point) and RFC 8410.
P256_SPKI_PREFIX = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200")
ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")


def _on_curve(point):
    x, y = point
    return (y * y - (x * x * x + P256_A * x + P256_B)) % P256_P == 0


def _p256_add(p, q):
    if p is None:
        return q
    if q is None:
        return p
    if p[0] == q[0] and (p[1] + q[1]) % P256_P == 0:
        return None
    if p == q:
        slope = (3 * p[0] * p[0] + P256_A) * pow(2 * p[1], -1, P256_P) % P256_P
    else:
        slope = (q[1] - p[1]) * pow(q[0] - p[0], -1, P256_P) % P256_P
    x = (slope * slope - p[0] - q[0]) % P256_P
    return (x, (slope * (p[0] - x) - p[1]) % P256_P)


def _p256_multiply(scalar, point):
    result = None
    while scalar:
        if scalar & 1:
            result = _p256_add(result, point)
        point = _p256_add(point, point)
        scalar >>= 1
    return result


def _der_signature(signature):
    """(r, s) from a strict DER ECDSA signature, or None."""

    def integer(data, at):
        if at + 2 > len(data) or data[at] != 0x02:
            return None
        length = data[at + 1]
        start, end = at + 2, at + 2 + length
        if length == 0 or length > 33 or end > len(data):
            return None
        body = data[start:end]
        if body[0] & 0x80 or (length > 1 and body[0] == 0 and not body[1] & 0x80):
            return None  # negative, or not minimally encoded
        return int.from_bytes(body, "big"), end

    if len(signature) < 8 or signature[0] != 0x30 or signature[1] != len(signature) - 2:
        return None
    first = integer(signature, 2)
    if first is None:
        return None
    second = integer(signature, first[1])
    if second is None or second[1] != len(signature):
        return None
    return first[0], second[0]


def p256_verify(point, message, signature):
    """Whether DER `signature` is an ECDSA P-256 SHA-256 signature of `message` by `point`."""
    parsed = _der_signature(signature)
    if parsed is None:
        return False
    r, s = parsed
    if not (1 <= r < P256_N and 1 <= s < P256_N):
        return False
    e = int.from_bytes(hashlib.sha256(message).digest(), "big")
    w = pow(s, -1, P256_N)
    total = _p256_add(_p256_multiply(e * w % P256_N, P256_G), _p256_multiply(r * w % P256_N, point))
    return total is not None and total[0] % P256_N == r


# ---- the checks ------------------------------------------------------------------------------


class Fail(Exception):
    """A check failed: the message names what."""


class Unreadable(Exception):
    """The input cannot be read at all."""


def b64url(text, what):
    if not isinstance(text, str):
        raise Fail(f"{what} is not a string")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise Fail(f"{what} is not base64url") from None


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def entry_hash(entry):
    body = {key: value for key, value in entry.items() if key != "entry_hash"}
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def instant(text, what):
    """An RFC 3339 UTC time as Hearth writes it (`Z`, any number of fraction digits)."""
    if not isinstance(text, str):
        raise Fail(f"{what} is not a time")
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Fail(f"{what} is not a time") from None


def public_key(passkey):
    spki = b64url(passkey.get("public_key_spki"), "a passkey's public_key_spki")
    if passkey.get("algorithm") == "ES256":
        if not spki.startswith(P256_SPKI_PREFIX) or len(spki) != len(P256_SPKI_PREFIX) + 65:
            raise Fail(f"passkey {passkey.get('credential_id')}: not a P-256 SubjectPublicKeyInfo")
        raw = spki[len(P256_SPKI_PREFIX):]
        point = (int.from_bytes(raw[1:33], "big"), int.from_bytes(raw[33:], "big"))
        if raw[0] != 4 or not _on_curve(point):
            raise Fail(f"passkey {passkey.get('credential_id')}: the key is not a P-256 point")
        return lambda message, signature: p256_verify(point, message, signature)
    if passkey.get("algorithm") == "Ed25519":
        if not spki.startswith(ED25519_SPKI_PREFIX) or len(spki) != len(ED25519_SPKI_PREFIX) + 32:
            raise Fail(f"passkey {passkey.get('credential_id')}: not an Ed25519 SubjectPublicKeyInfo")
        raw = spki[len(ED25519_SPKI_PREFIX):]
        return lambda message, signature: ed25519_verify(raw, message, signature)
    raise Fail(f"passkey {passkey.get('credential_id')}: unknown algorithm {passkey.get('algorithm')!r}")


def approval_of_request(entry, lines, proposals, where):
    """A `hearth-approval/v1` statement checked against its passkey decision entry: the
    statement's household and nonce."""
    if len(lines) != 6 or lines[0] != "hearth-approval/v1":
        raise Fail(f"{where}: the statement is not six lines of hearth-approval/v1")
    _, household, request_id, proposal_hash, decision, nonce = lines
    if request_id != entry.get("request_id"):
        raise Fail(f"{where}: the statement names another request")
    if proposals.get(request_id) is None:
        raise Fail(f"{where}: the proposal of {request_id} is not earlier in the export")
    if proposal_hash != proposals[request_id]:
        raise Fail(f"{where}: the statement names another proposal entry")
    if decision != entry.get("decision"):
        raise Fail(f"{where}: the statement decides {decision!r}, the entry {entry.get('decision')!r}")
    placed = entry.get("result") == "placed" or entry.get("order_id") is not None
    if placed and decision != "approve":
        raise Fail(f"{where}: an order placed on a {decision}")
    if decision == "decline" and entry.get("result") != "declined":
        raise Fail(f"{where}: a decline that did not decline")
    return household, nonce


# How long a household action's statement may have been waiting for its signature: the
# ceremony's five minutes.
ACTION_WINDOW = datetime.timedelta(minutes=5)


def household_action(entry, lines, where):
    """A `hearth-household-action/v1` statement checked against its household action entry:
    the statement's household and nonce."""
    if len(lines) != 6 or lines[0] != "hearth-household-action/v1":
        raise Fail(f"{where}: the statement is not six lines of hearth-household-action/v1")
    _, action, household, target, asked_at, nonce = lines
    if action != entry.get("action"):
        raise Fail(f"{where}: the statement does {action!r}, the entry {entry.get('action')!r}")
    if target != entry.get("target"):
        raise Fail(f"{where}: the statement names another target")
    asked = instant(asked_at, f"{where}: the statement's time")
    at = instant(entry.get("at"), f"{where}: at")
    if not asked <= at <= asked + ACTION_WINDOW:
        raise Fail(f"{where}: the action was kept more than five minutes after it was asked, or before")
    return household, nonce


def check(export, passkeys, rp_id, origin, household_id=None):
    entries = export.get("entries") if isinstance(export, dict) else None
    listed = passkeys.get("passkeys") if isinstance(passkeys, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise Unreadable('the export is not {"entries": [...]}')
    if not isinstance(listed, list) or not all(isinstance(p, dict) for p in listed):
        raise Unreadable('the passkeys are not {"passkeys": [...]}')
    by_id = {passkey.get("credential_id"): passkey for passkey in listed}
    for number, entry in enumerate(entries, 1):
        if entry.get("entry_hash") != entry_hash(entry):
            raise Fail(f"entry {number}: its entry_hash is not the hash of its contents")
    proposals, households, nonces, checked = {}, set(), set(), 0
    for number, entry in enumerate(entries, 1):
        where = f"entry {number}"
        if entry.get("kind") == "proposal":
            if entry.get("request_id") in proposals:
                raise Fail(f"{where}: a second proposal of {entry.get('request_id')}")
            proposals[entry.get("request_id")] = entry["entry_hash"]
        approval = entry.get("approval")
        if approval is None:
            if entry.get("kind") == "passkey_decision":
                raise Fail(f"{where}: a passkey decision without its approval")
            if entry.get("kind") == "household_action":
                raise Fail(f"{where}: a household action without its signed statement")
            continue
        if not isinstance(approval, dict):
            raise Fail(f"{where}: the approval is not an object")
        statement = approval.get("statement")
        if not isinstance(statement, str) or not statement.endswith("\n"):
            raise Fail(f"{where}: the statement does not end in a newline")
        lines = statement[:-1].split("\n")
        if entry.get("kind") == "household_action":
            household, nonce = household_action(entry, lines, where)
        else:
            household, nonce = approval_of_request(entry, lines, proposals, where)
        households.add(household)
        if len(households) > 1 or (household_id is not None and household != household_id):
            raise Fail(f"{where}: the statement names another household")
        if nonce in nonces:
            raise Fail(f"{where}: the statement's nonce was used before")
        nonces.add(nonce)

        client_data_bytes = b64url(approval.get("client_data_json"), f"{where}: client_data_json")
        try:
            client_data = json.loads(client_data_bytes)
        except ValueError:
            raise Fail(f"{where}: the client data is not JSON") from None
        if not isinstance(client_data, dict) or client_data.get("type") != "webauthn.get":
            raise Fail(f"{where}: the client data is not a webauthn.get")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(statement.encode()).digest()).rstrip(b"=").decode()
        if client_data.get("challenge") != challenge:
            raise Fail(f"{where}: the challenge is not the statement's hash")
        if client_data.get("origin") != origin:
            raise Fail(f"{where}: signed for origin {client_data.get('origin')!r}")
        if client_data.get("crossOrigin") is True:
            raise Fail(f"{where}: signed cross-origin")

        authenticator_data = b64url(approval.get("authenticator_data"), f"{where}: authenticator_data")
        if len(authenticator_data) < 37:
            raise Fail(f"{where}: the authenticator data is too short")
        if authenticator_data[:32] != hashlib.sha256(rp_id.encode()).digest():
            raise Fail(f"{where}: signed for another relying party")
        flags = authenticator_data[32]
        if not flags & 0x01:
            raise Fail(f"{where}: the user was not present (UP)")
        if not flags & 0x04:
            raise Fail(f"{where}: the user was not verified (UV)")

        passkey = by_id.get(approval.get("credential_id"))
        if passkey is None:
            raise Fail(f"{where}: passkey {approval.get('credential_id')} is not listed")
        if passkey.get("member_id") != entry.get("member_id"):
            raise Fail(f"{where}: the passkey is {passkey.get('member_id')}'s, the entry names {entry.get('member_id')}")
        if passkey.get("pending"):
            raise Fail(f"{where}: the passkey still waits for a guardian's approval")
        at = instant(entry.get("at"), f"{where}: at")
        suspect = passkey.get("suspect_at")
        if suspect is not None and instant(suspect, "a passkey's suspect_at") <= at:
            raise Fail(f"{where}: the passkey was marked suspect (copied) before the approval")
        if instant(passkey.get("created_at"), "a passkey's created_at") > at:
            raise Fail(f"{where}: the passkey was made after the approval")
        revoked = passkey.get("revoked_at")
        if revoked is not None and instant(revoked, "a passkey's revoked_at") <= at:
            raise Fail(f"{where}: the passkey was revoked before the approval")
        signature = b64url(approval.get("signature"), f"{where}: signature")
        signed = authenticator_data + hashlib.sha256(client_data_bytes).digest()
        if not public_key(passkey)(signed, signature):
            raise Fail(f"{where}: the signature does not verify under passkey {approval.get('credential_id')}")
        checked += 1
    return checked


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export", help="hearth admin ledger export HOUSEHOLD --json")
    parser.add_argument("passkeys", help="hearth admin passkey list HOUSEHOLD --json")
    parser.add_argument("--rp-id", required=True)
    parser.add_argument("--origin", required=True)
    parser.add_argument("--household", help="the household every statement must name")
    args = parser.parse_args(argv)
    try:
        documents = []
        for path in (args.export, args.passkeys):
            try:
                with open(path, encoding="utf-8") as file:
                    documents.append(json.load(file))
            except (OSError, ValueError) as error:
                raise Unreadable(f"{path}: {error}") from None
        check(documents[0], documents[1], args.rp_id, args.origin, args.household)
    except Unreadable as error:
        print(f"unreadable: {error}", file=sys.stderr)
        return 2
    except Fail as error:
        print(f"FAIL {error}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
