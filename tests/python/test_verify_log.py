"""scripts/verify_log.py, the offline log verifier: its Ed25519 (written from RFC 8032's
mathematics) cross-checked against a second implementation (`cryptography`), the published
note and Merkle vectors, and each command's OK, FAIL and unreadable answers on files a
household would keep."""

import base64
import hashlib
import json
import random
import subprocess
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import verify_log  # noqa: E402

VECTORS = ROOT / "tests" / "vectors" / "tlog"
SCRIPT = ROOT / "scripts" / "verify_log.py"


def reference_verify(public, message, signature):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
        return True
    except (InvalidSignature, ValueError):
        return False


def test_ed25519_agrees_with_a_second_implementation_on_random_keys_messages_and_forgeries():
    rng = random.Random(20261201)
    for round_ in range(40):
        key = Ed25519PrivateKey.from_private_bytes(rng.randbytes(32))
        public = key.public_key().public_bytes_raw()
        message = rng.randbytes(rng.randrange(0, 200))
        signature = key.sign(message)
        assert verify_log.ed25519_verify(public, message, signature), round_
        forgeries = [
            signature[:-1] + bytes([signature[-1] ^ 1]),  # S changed
            bytes([signature[0] ^ 0x80]) + signature[1:],  # R changed
            signature[:32] + (int.from_bytes(signature[32:], "little") + verify_log.L).to_bytes(32, "little"),  # S + L
            rng.randbytes(64),
            signature[:63],
            signature,  # right signature, other message
        ]
        for index, forged in enumerate(forgeries):
            other = message + b"!" if index == 5 else message
            ours = verify_log.ed25519_verify(public, other, forged)
            theirs = reference_verify(public, other, forged) if len(forged) == 64 else False
            assert ours == theirs == False, (round_, index)  # noqa: E712
        # A public key that is not a point, and one of another key.
        assert not verify_log.ed25519_verify(b"\xff" * 32, message, signature)
        other_key = Ed25519PrivateKey.from_private_bytes(rng.randbytes(32)).public_key().public_bytes_raw()
        assert not verify_log.ed25519_verify(other_key, message, signature)


def test_published_notes_and_merkle_vectors_verify():
    notes = json.loads((VECTORS / "notes.json").read_text())["vectors"]
    for vector in notes:
        keys = [verify_log.parse_vkey(vector["vkey"])]
        assert vector["note"].startswith(verify_log.verify_note(vector["note"], keys))
    merkle = json.loads((VECTORS / "merkle.json").read_text())
    leaves = [bytes.fromhex(leaf) for leaf in merkle["leaves"]]
    for case in merkle["inclusion"]:
        path = [bytes.fromhex(p) for p in case["path"]]
        root = verify_log.root_from_inclusion(case["leaf_index"], case["tree_size"], verify_log.leaf_hash(leaves[case["leaf_index"]]), path)
        assert root.hex() == merkle["roots"][str(case["tree_size"])]
    for case in merkle["consistency"]:
        roots = [bytes.fromhex(merkle["roots"][str(case[k])]) for k in ("size1", "size2")]
        verify_log.check_consistency(case["size1"], roots[0], case["size2"], roots[1], [bytes.fromhex(p) for p in case["proof"]])


class Log:
    """A small log signed like Hearth's: the tree, its checkpoints and proofs."""

    def __init__(self, seed=b"\x07" * 32, name="hearth.example/hearth-log-1"):
        self.key = Ed25519PrivateKey.from_private_bytes(seed)
        public = self.key.public_key().public_bytes_raw()
        self.name = name
        self.key_id = hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4]
        self.vkey = f"{name}+{self.key_id.hex()}+{base64.b64encode(bytes([1]) + public).decode()}"
        self.entries = []

    def add(self, count):
        for _ in range(count):
            self.entries.append(hashlib.sha256(str(len(self.entries)).encode()).hexdigest())

    def leaves(self, size=None):
        return [verify_log.leaf_hash(bytes.fromhex(e)) for e in self.entries[: size if size is not None else len(self.entries)]]

    def root(self, size=None):
        return mth(self.leaves(size))

    def checkpoint(self, size=None, root=None, origin="hearth.example/hearth/0a1b/decisions/1"):
        size = len(self.entries) if size is None else size
        root = self.root(size) if root is None else root
        text = f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"
        signature = self.key.sign(text.encode())
        return text + "\n\u2014 " + self.name + " " + base64.b64encode(self.key_id + signature).decode() + "\n"

    def proof_file(self, index, size=None):
        size = len(self.entries) if size is None else size
        path = inclusion_path(index, self.leaves(size))
        lines = ["c2sp.org/tlog-proof@v1", f"index {index}"] + [base64.b64encode(h).decode() for h in path]
        return "\n".join(lines) + "\n\n" + self.checkpoint(size)

    def history(self, old, size=None):
        size = len(self.entries) if size is None else size
        proof = subproof(old, self.leaves(size), True) if 0 < old < size else []
        return {"checkpoint": self.checkpoint(size), "consistency": [base64.b64encode(h).decode() for h in proof]}


def split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves):
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = split(len(leaves))
    return verify_log.node_hash(mth(leaves[:k]), mth(leaves[k:]))


def inclusion_path(m, leaves):
    if len(leaves) <= 1:
        return []
    k = split(len(leaves))
    if m < k:
        return inclusion_path(m, leaves[:k]) + [mth(leaves[k:])]
    return inclusion_path(m - k, leaves[k:]) + [mth(leaves[:k])]


def subproof(m, leaves, complete):
    if m == len(leaves):
        return [] if complete else [mth(leaves)]
    k = split(len(leaves))
    if m <= k:
        return subproof(m, leaves[:k], complete) + [mth(leaves[k:])]
    return subproof(m - k, leaves[k:], False) + [mth(leaves[:k])]


def run(tmp_path, *arguments, files=None):
    for name, content in (files or {}).items():
        (tmp_path / name).write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    done = subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    return done.returncode, done.stdout.strip()


def test_each_command_says_ok_for_honest_files(tmp_path):
    log = Log()
    log.add(11)
    kept = log.checkpoint(7)
    log.add(5)
    files = {
        "vkey.txt": log.vkey,
        "log-keys.json": {"keys": [{"vkey": log.vkey}]},
        "checkpoint.txt": log.checkpoint(),
        "kept.txt": kept,
        "receipt.tlog-proof": log.proof_file(9),
        "history.json": log.history(7),
        "window.json": {"checkpoint": log.checkpoint(), "inclusion_proofs": [
            {"index": i, "entry": log.entries[i], "path": [base64.b64encode(h).decode() for h in inclusion_path(i, log.leaves())]}
            for i in range(10, 16)]},
    }
    for arguments in (
        ["note", "checkpoint.txt", "--vkey", log.vkey],
        ["checkpoint", "checkpoint.txt", "--vkey", "vkey.txt"],
        ["checkpoint", "checkpoint.txt", "--vkey", "log-keys.json"],
        ["inclusion", "receipt.tlog-proof", "--vkey", log.vkey, "--entry", log.entries[9]],
        ["consistency", "kept.txt", "history.json", "--vkey", log.vkey],
        ["window", "window.json", "--vkey", log.vkey],
    ):
        assert run(tmp_path, *arguments, files=files) == (0, "OK"), arguments


def test_every_tamper_is_named(tmp_path):
    log = Log()
    log.add(12)
    kept = log.checkpoint()
    honest_window = lambda entries, size: {  # noqa: E731
        "checkpoint": log.checkpoint(size),
        "inclusion_proofs": [{"index": i, "entry": entries[i], "path": [base64.b64encode(h).decode() for h in inclusion_path(i, log.leaves(size))]} for i in range(size - 4, size)],
    }
    # An edited leaf: the receipt's entry is not in the tree.
    code, out = run(tmp_path, "inclusion", "p", "--vkey", log.vkey, "--entry", "00" * 32, files={"p": log.proof_file(3)})
    assert (code, out.startswith("FAIL the entry is not leaf 3")) == (1, True), out
    # The newest entry deleted: a window whose last entry is not the signed tree's last leaf.
    window = honest_window(log.entries, 12)
    window["inclusion_proofs"].pop()
    code, out = run(tmp_path, "window", "w", "--vkey", log.vkey, files={"w": window})
    assert code == 1 and "entries were removed" in out, out
    # A truncated tree: a newer checkpoint smaller than the kept one.
    truncated = {"checkpoint": log.checkpoint(10), "consistency": []}
    code, out = run(tmp_path, "consistency", "kept", "h", "--vkey", log.vkey, files={"kept": kept, "h": truncated})
    assert code == 1 and "shrank from 12 to 10" in out, out
    # A rewritten middle entry with every hash recomputed and the note re-signed.
    rewritten = Log()
    rewritten.entries = list(log.entries)
    rewritten.entries[5] = "ab" * 32
    rewritten.add(3)
    code, out = run(tmp_path, "consistency", "kept", "h", "--vkey", log.vkey, files={"kept": kept, "h": rewritten.history(12)})
    assert code == 1 and "history was rewritten" in out, out
    # A fork: same size, another root.
    code, out = run(tmp_path, "consistency", "kept", "h", "--vkey", log.vkey, files={"kept": kept, "h": {"checkpoint": rewritten.checkpoint(12), "consistency": []}})
    assert code == 1 and "forked" in out, out
    # A signature by another key, and a checkpoint edited after signing.
    stranger = Log(seed=b"\x08" * 32)
    stranger.entries = list(log.entries)
    code, out = run(tmp_path, "checkpoint", "c", "--vkey", log.vkey, files={"c": stranger.checkpoint()})
    assert (code, out) == (1, "FAIL no signature by the verifier key")
    edited = kept.replace("\n12\n", "\n13\n")
    code, out = run(tmp_path, "checkpoint", "c", "--vkey", log.vkey, files={"c": edited})
    assert code == 1 and "does not verify" in out, out
    # Strict syntax: a leading zero in the size, even correctly signed.
    sloppy = log.checkpoint().replace("\n12\n", "\n012\n")
    text = sloppy.split("\n\n")[0] + "\n"
    signature = log.key.sign(text.encode())
    sloppy = text + "\n\u2014 " + log.name + " " + base64.b64encode(log.key_id + signature).decode() + "\n"
    code, out = run(tmp_path, "checkpoint", "c", "--vkey", log.vkey, files={"c": sloppy})
    assert code == 1 and "leading zeros" in out, out


def test_unreadable_input_exits_2_with_one_line(tmp_path):
    log = Log()
    log.add(2)
    for arguments, files in (
        (["checkpoint", "missing.txt", "--vkey", log.vkey], {}),
        (["checkpoint", "c", "--vkey", "not-a-key"], {"c": log.checkpoint()}),
        (["consistency", "c", "h", "--vkey", log.vkey], {"c": log.checkpoint(), "h": "not json"}),
        (["inclusion", "p", "--vkey", log.vkey, "--entry", "xyz"], {"p": log.proof_file(0)}),
        (["frobnicate", "--vkey", log.vkey], {}),
    ):
        code, out = run(tmp_path, *arguments, files=files)
        assert code == 2 and out.startswith("unreadable:") and "\n" not in out, (arguments, out)
