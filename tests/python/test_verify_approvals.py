"""scripts/verify_approvals.py, the offline approval verifier: its P-256 (written from the
curve's published constants) cross-checked against `cryptography`, and an export's approvals
made here as a phone would make them, then forged: a wrong key, a flipped byte, another
challenge, another origin, the UV flag missing, and the rest of what it checks."""

import base64
import copy
import hashlib
import json
import random
import subprocess
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import verify_approvals  # noqa: E402

SCRIPT = ROOT / "scripts" / "verify_approvals.py"
RP_ID = "hearth.example"
ORIGIN = "https://hearth.example"
HOUSEHOLD = "hh-0123456789abcdef0123456789abcdef"


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sealed(entry):
    entry = dict(entry)
    entry["entry_hash"] = verify_approvals.entry_hash(entry)
    return entry


def spki(key):
    return b64u(key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))


class Phone:
    """One passkey: signs a statement as navigator.credentials.get would."""

    def __init__(self, algorithm, member, credential_id):
        self.algorithm = algorithm
        self.key = ec.generate_private_key(ec.SECP256R1()) if algorithm == "ES256" else ed25519.Ed25519PrivateKey.generate()
        self.member = member
        self.credential_id = credential_id

    def listed(self, created_at="2026-12-02T08:00:00Z", revoked_at=None):
        return {"credential_id": self.credential_id, "member_id": self.member, "algorithm": self.algorithm,
                "public_key_spki": spki(self.key), "created_at": created_at, "last_used_at": None,
                "revoked_at": revoked_at, "pending": False}

    def approve(self, statement, origin=ORIGIN, rp_id=RP_ID, flags=0x05, challenge=None):
        authenticator_data = hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + (7).to_bytes(4, "big")
        client_data = json.dumps({"type": "webauthn.get", "origin": origin, "crossOrigin": False,
                                  "challenge": challenge or b64u(hashlib.sha256(statement.encode()).digest())}).encode()
        signed = authenticator_data + hashlib.sha256(client_data).digest()
        if self.algorithm == "ES256":
            signature = self.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        else:
            signature = self.key.sign(signed)
        return {"statement": statement, "credential_id": self.credential_id,
                "authenticator_data": b64u(authenticator_data), "client_data_json": b64u(client_data),
                "signature": b64u(signature)}


def ledger(phone, decision="approve", nonce="bm9uY2UtMQ"):
    proposal = sealed({"format": "countersign-ledger/1", "seq": 1, "prev": None, "at": "2026-12-02T09:00:00.120Z",
                       "request_id": "REQ-0A1B2C3D4E", "member_id": "unattested", "turn_id": "call-0A1B2C3D4E",
                       "kind": "proposal", "words": [], "product_id": "aa-batteries", "total_cents": 549})
    statement = f"hearth-approval/v1\n{HOUSEHOLD}\nREQ-0A1B2C3D4E\n{proposal['entry_hash']}\n{decision}\n{nonce}\n"
    decided = {"format": "countersign-ledger/1", "seq": 2, "prev": proposal["entry_hash"], "at": "2026-12-02T09:01:00.5Z",
               "request_id": "REQ-0A1B2C3D4E", "member_id": phone.member, "turn_id": f"passkey-{nonce}",
               "kind": "passkey_decision", "decision": decision, "result": "placed" if decision == "approve" else "declined",
               "reasons": [], "order_id": None, "approval": phone.approve(statement)}
    return {"entries": [proposal, sealed(decided)]}, statement


def verdict(export, passkeys, origin=ORIGIN, rp_id=RP_ID, household=None):
    try:
        verify_approvals.check(export, passkeys, rp_id, origin, household)
        return "OK"
    except verify_approvals.Fail as failure:
        return f"FAIL {failure}"


def resealed(export, change):
    export = copy.deepcopy(export)
    change(export["entries"][1])
    export["entries"][1] = sealed({k: v for k, v in export["entries"][1].items() if k != "entry_hash"})
    return export


def test_p256_agrees_with_a_second_implementation_on_random_keys_messages_and_forgeries():
    rng = random.Random(20261202)
    for round_ in range(12):
        key = ec.generate_private_key(ec.SECP256R1())
        numbers = key.public_key().public_numbers()
        message = rng.randbytes(rng.randrange(0, 100))
        signature = key.sign(message, ec.ECDSA(hashes.SHA256()))
        point = (numbers.x, numbers.y)
        assert verify_approvals.p256_verify(point, message, signature), round_
        assert not verify_approvals.p256_verify(point, message + b"x", signature)
        flipped = bytearray(signature)
        flipped[-1] ^= 1
        assert not verify_approvals.p256_verify(point, message, bytes(flipped))
        other = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
        assert not verify_approvals.p256_verify((other.x, other.y), message, signature)


def test_approvals_by_es256_and_ed25519_passkeys_check_and_forgeries_fail():
    for algorithm in ("ES256", "Ed25519"):
        phone = Phone(algorithm, "dana", f"Y3JlZC0{algorithm}")
        export, statement = ledger(phone)
        passkeys = {"passkeys": [phone.listed()]}
        assert verdict(export, passkeys) == "OK", algorithm

        # A wrong key: the listed passkey holds another key.
        impostor = Phone(algorithm, "dana", phone.credential_id)
        assert "does not verify" in verdict(export, {"passkeys": [impostor.listed()]})
        # A flipped byte in the signature.
        def flip(entry):
            raw = bytearray(base64.urlsafe_b64decode(entry["approval"]["signature"] + "=="))
            raw[len(raw) // 2] ^= 0x01
            entry["approval"]["signature"] = b64u(bytes(raw))
        assert "does not verify" in verdict(resealed(export, flip), passkeys)
        # Another challenge: a signature over another statement's hash.
        def other_challenge(entry):
            entry["approval"] = phone.approve(statement, challenge=b64u(hashlib.sha256(b"another").digest()))
        assert "challenge is not the statement's hash" in verdict(resealed(export, other_challenge), passkeys)
        # Another origin.
        def other_origin(entry):
            entry["approval"] = phone.approve(statement, origin="https://evil.example")
        assert "origin" in verdict(resealed(export, other_origin), passkeys)
        assert "origin" in verdict(export, passkeys, origin="https://evil.example")
        # The UV flag missing (user present only).
        def unverified(entry):
            entry["approval"] = phone.approve(statement, flags=0x01)
        assert "not verified (UV)" in verdict(resealed(export, unverified), passkeys)
        # Another relying party.
        assert "another relying party" in verdict(export, passkeys, rp_id="evil.example")


def test_what_else_an_approval_must_agree_with():
    phone = Phone("ES256", "dana", "Y3JlZA")
    export, statement = ledger(phone)
    passkeys = {"passkeys": [phone.listed()]}
    # An edited entry no longer hashes to its entry_hash.
    edited = copy.deepcopy(export)
    edited["entries"][1]["result"] = "declined"
    assert "entry_hash" in verdict(edited, passkeys)
    # The entry says decline, the signed statement approve.
    assert "decides" in verdict(resealed(export, lambda e: e.update(decision="decline")), passkeys)
    # Another member's entry, the passkey's list entry, revoked before, made after.
    assert "the entry names" in verdict(resealed(export, lambda e: e.update(member_id="mia")), passkeys)
    assert "revoked before" in verdict(export, {"passkeys": [phone.listed(revoked_at="2026-12-02T09:00:30Z")]})
    assert verdict(export, {"passkeys": [phone.listed(revoked_at="2026-12-02T10:00:00Z")]}) == "OK"
    assert "made after" in verdict(export, {"passkeys": [phone.listed(created_at="2026-12-02T09:30:00Z")]})
    assert "not listed" in verdict(export, {"passkeys": []})
    # The proposal missing from the export, or after the approval, or twice.
    assert "not earlier in the export" in verdict({"entries": export["entries"][1:]}, passkeys)
    assert "not earlier in the export" in verdict({"entries": export["entries"][::-1]}, passkeys)
    twice = {"entries": [export["entries"][0], export["entries"][0], export["entries"][1]]}
    assert "a second proposal" in verdict(twice, passkeys)
    # A decision entry without its approval; an order placed on a signed decline.
    assert "without its approval" in verdict(resealed(export, lambda e: e.pop("approval")), passkeys)
    declined, declining = ledger(phone, decision="decline")
    assert verdict(declined, passkeys) == "OK"
    assert "placed on a decline" in verdict(resealed(declined, lambda e: e.update(result="placed")), passkeys)
    assert "placed on a decline" in verdict(resealed(declined, lambda e: e.update(order_id="SIM-1")), passkeys)
    # A passkey still pending, or marked suspect before the approval.
    assert "waits for a guardian" in verdict(export, {"passkeys": [dict(phone.listed(), pending=True)]})
    suspect = dict(phone.listed(), suspect_at="2026-12-02T09:00:59Z")
    assert "suspect" in verdict(export, {"passkeys": [suspect]})
    # The household given on the command line.
    assert verdict(export, passkeys, household=HOUSEHOLD) == "OK"
    assert "another household" in verdict(export, passkeys, household="hh-ffffffffffffffffffffffffffffffff")


def action_ledger(phone, action="revoke-passkey", target="Y3JlZC1vbGQ", asked="2026-12-02T09:00:00.000Z",
                  at="2026-12-02T09:01:00.500Z", nonce="bm9uY2UtYQ"):
    statement = f"hearth-household-action/v1\n{action}\n{HOUSEHOLD}\n{target}\n{asked}\n{nonce}\n"
    entry = {"format": "countersign-ledger/1", "seq": 1, "prev": None, "at": at, "request_id": "ACT-0A1B2C3D4E",
             "member_id": phone.member, "turn_id": f"passkey-{nonce}", "kind": "household_action",
             "action": action, "target": target, "approval": phone.approve(statement)}
    return {"entries": [sealed(entry)]}


def test_a_guardians_household_action_checks_and_what_it_must_agree_with():
    phone = Phone("ES256", "dana", "Y3JlZA")
    passkeys = {"passkeys": [phone.listed()]}
    export = action_ledger(phone)
    assert verdict(export, passkeys) == "OK"
    # The entry's action or target is not the statement's.
    assert "does 'revoke-passkey'" in verdict(
        {"entries": [sealed({k: v for k, v in dict(export["entries"][0], action="add-device-key").items()
                             if k != "entry_hash"})]}, passkeys)
    assert "another target" in verdict(
        {"entries": [sealed({k: v for k, v in dict(export["entries"][0], target="other").items()
                             if k != "entry_hash"})]}, passkeys)
    # Kept five minutes after it was asked is in time; a moment later, or before it was asked, is not.
    assert verdict(action_ledger(phone, at="2026-12-02T09:05:00.000Z"), passkeys) == "OK"
    assert "five minutes" in verdict(action_ledger(phone, at="2026-12-02T09:05:00.001Z"), passkeys)
    assert "five minutes" in verdict(action_ledger(phone, at="2026-12-02T08:59:59.999Z"), passkeys)
    # Without its statement; another household; a nonce used twice; a forged signature.
    assert "without its signed statement" in verdict(
        {"entries": [sealed({k: v for k, v in export["entries"][0].items() if k not in ("entry_hash", "approval")})]},
        passkeys)
    assert "another household" in verdict(export, passkeys, household="hh-ffffffffffffffffffffffffffffffff")
    twice = {"entries": [export["entries"][0], sealed(dict({k: v for k, v in export["entries"][0].items()
                                                          if k != "entry_hash"}, seq=2))]}
    assert "nonce was used before" in verdict(twice, passkeys)
    impostor = Phone("ES256", "dana", phone.credential_id)
    assert "does not verify" in verdict(export, {"passkeys": [impostor.listed()]})
    # A statement of another kind under a household action entry.
    approval_statement = ledger(phone)[1]
    wrong_kind = dict({k: v for k, v in export["entries"][0].items() if k != "entry_hash"},
                      approval=phone.approve(approval_statement))
    assert "hearth-household-action/v1" in verdict({"entries": [sealed(wrong_kind)]}, passkeys)


def test_the_command_prints_ok_or_fail_and_exits_0_1_or_2(tmp_path):
    phone = Phone("Ed25519", "dana", "Y3JlZA")
    export, _ = ledger(phone)
    (tmp_path / "export.json").write_text(json.dumps(export))
    (tmp_path / "passkeys.json").write_text(json.dumps({"passkeys": [phone.listed()]}))
    (tmp_path / "nobody.json").write_text(json.dumps({"passkeys": []}))
    (tmp_path / "broken.json").write_text("{")

    def run(*args):
        return subprocess.run([sys.executable, str(SCRIPT), *map(str, args), "--rp-id", RP_ID, "--origin", ORIGIN],
                              capture_output=True, text=True)

    ok = run(tmp_path / "export.json", tmp_path / "passkeys.json")
    assert (ok.returncode, ok.stdout) == (0, "OK\n")
    failed = run(tmp_path / "export.json", tmp_path / "nobody.json")
    assert failed.returncode == 1 and failed.stdout.startswith("FAIL ")
    unreadable = run(tmp_path / "broken.json", tmp_path / "passkeys.json")
    assert unreadable.returncode == 2 and unreadable.stdout == ""
