#!/usr/bin/env python3
"""Checks Hearth's transparency-log files offline, with nothing but Python's standard library
and the operator's published verifier key, or a witness policy.

    verify_log.py note FILE --vkey VKEY
        a signed note (C2SP signed-note) carries a good Ed25519 signature by VKEY
    verify_log.py checkpoint FILE --vkey VKEY
        a checkpoint (C2SP tlog-checkpoint) is well formed, strictly, and signed by VKEY
    verify_log.py inclusion PROOF_FILE --vkey VKEY --entry HASH
        a tlog-proof file (c2sp.org/tlog-proof@v1) proves that the entry whose record hash is
        HASH (64 hex digits: a decision's trace_id, a ledger entry's entry_hash) is the leaf
        at its index in the signed tree
    verify_log.py consistency OLD_CHECKPOINT HISTORY_JSON --vkey VKEY
        HISTORY_JSON (what prove_history returned: {"checkpoint", "consistency"}) proves that
        the tree of OLD_CHECKPOINT, a checkpoint kept earlier, is a prefix of the newer one:
        nothing before it was changed or removed
    verify_log.py window TRACE_JSON --vkey VKEY
        a retained window ({"checkpoint", "inclusion_proofs": [{"index", "entry", "path"}]})
        is in the signed tree, and its newest entry is the tree's last leaf (no truncation)

VKEY is a verifier key (`name+hex id+base64`), a file holding one, or the JSON that
`GET /.well-known/hearth/log-keys` serves. Each check prints `OK`, or `FAIL <what>` and exits
1; input that cannot be read at all exits 2 with one line.

Every check takes `--policy POLICY` instead of `--vkey`: a C2SP tlog-policy file (what
`GET /.well-known/hearth/witness-policy` serves). Then every checkpoint must be signed by one
of its `log` keys and cosigned (C2SP tlog-cosignature v1: Ed25519, signature type 0x04) by a
quorum of its witnesses, groups nested with `k`-of-`n`; otherwise `FAIL quorum not met:
cosigned by ...` names who did. Cosignatures by keys the policy does not list are ignored, and
a bad cosignature by a listed key does not count. Hearth's deviation from tlog-policy: a `log`
line's key name is the deployment's (`<host>/hearth-log/v<N>`), not each log's origin.

Ed25519 is verified here from the mathematics of RFC 8032 section 5.1 (the curve, point
decoding, and the group equation [8][S]B = [8]R + [8][k]A), not from its sample code. It
takes a few milliseconds per signature. Merkle proofs follow RFC 9162 sections 2.1.3.2 and
2.1.4.2.
"""

import base64
import binascii
import hashlib
import json
import re
import sys

# ---- Ed25519 (RFC 8032 section 5.1) ---------------------------------------------------------

P = 2**255 - 19  # the field
L = 2**252 + 27742317777372353535851937790883648493  # the order of the base point
D = -121665 * pow(121666, P - 2, P) % P  # the curve constant d of -x^2 + y^2 = 1 + d x^2 y^2
SQRT_M1 = pow(2, (P - 1) // 4, P)  # a square root of -1


def _recover_x(y, sign):
    """The x with x^2 = (y^2 - 1) / (d y^2 + 1) and the given low bit, or None."""
    if y >= P:
        return None
    u = (y * y - 1) % P
    v = (D * y * y + 1) % P
    # x = (u/v)^((p+3)/8) = u v^3 (u v^7)^((p-5)/8): one exponentiation, no inversion.
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    if (v * x * x - u) % P != 0:
        if (v * x * x + u) % P != 0:
            return None
        x = x * SQRT_M1 % P
    if x == 0 and sign == 1:
        return None
    if x & 1 != sign:
        x = P - x
    return x


def _point(x, y):
    """Extended coordinates (X, Y, Z, T) with x = X/Z, y = Y/Z, x y = T/Z."""
    return (x, y, 1, x * y % P)


def _add(p, q):
    # The unified addition law of twisted Edwards curves with a = -1, in extended coordinates.
    a = (p[1] - p[0]) * (q[1] - q[0]) % P
    b = (p[1] + p[0]) * (q[1] + q[0]) % P
    c = 2 * D * p[3] * q[3] % P
    d = 2 * p[2] * q[2] % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _multiply(scalar, point):
    result = (0, 1, 1, 0)  # the neutral element
    while scalar:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _equal(p, q):
    return (p[0] * q[2] - q[0] * p[2]) % P == 0 and (p[1] * q[2] - q[1] * p[2]) % P == 0


BASE_Y = 4 * pow(5, P - 2, P) % P
BASE = _point(_recover_x(BASE_Y, 0), BASE_Y)


def _decode_point(encoded):
    if len(encoded) != 32:
        return None
    value = int.from_bytes(encoded, "little")
    y, sign = value & ((1 << 255) - 1), value >> 255
    x = _recover_x(y, sign)
    return None if x is None else _point(x, y)


def ed25519_verify(public_key, message, signature):
    """Whether `signature` is a valid Ed25519 signature of `message` by `public_key`."""
    if len(public_key) != 32 or len(signature) != 64:
        return False
    a = _decode_point(public_key)
    r = _decode_point(signature[:32])
    if a is None or r is None:
        return False
    s = int.from_bytes(signature[32:], "little")
    if s >= L:
        return False
    k = int.from_bytes(hashlib.sha512(signature[:32] + public_key + message).digest(), "little") % L
    left = _multiply(8 * s, BASE)
    right = _multiply(8, _add(r, _multiply(k, a)))
    return _equal(left, right)


# ---- Signed notes and verifier keys (C2SP signed-note) -------------------------------------


class Fail(Exception):
    """A check failed: the message names what."""


class Unreadable(Exception):
    """The input cannot be read at all."""


LOG_KEY_TYPE = 0x01  # a signed-note Ed25519 key
COSIGNATURE_KEY_TYPE = 0x04  # a tlog-cosignature v1 Ed25519 key


def parse_vkey(text, key_type=LOG_KEY_TYPE):
    """(name, key id, public key) of a verifier key `name+hex id+base64(type || key)`."""
    parts = text.strip().split("+", 2)
    if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{8}", parts[1]) or not parts[0]:
        raise Unreadable("the verifier key is not name+hex id+base64 key")
    name, key_id = parts[0], bytes.fromhex(parts[1])
    try:
        key = base64.b64decode(parts[2], validate=True)
    except binascii.Error:
        raise Unreadable("the verifier key's key is not base64") from None
    if len(key) != 33 or key[0] != key_type:
        raise Unreadable(f"the verifier key is not an Ed25519 key of type 0x{key_type:02x} and 32 bytes")
    if hashlib.sha256(name.encode() + b"\n" + key).digest()[:4] != key_id:
        raise Unreadable("the verifier key's id does not match its name and key")
    return name, key_id, key[1:]


def load_vkeys(argument):
    """The verifier keys an argument names: a key, a file holding one, or the log-keys JSON."""
    text = argument
    if "+" not in argument or argument.startswith(("/", ".")):
        try:
            with open(argument, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as error:
            raise Unreadable(f"{argument}: {error.strerror}") from None
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            keys = [entry["vkey"] for entry in json.loads(stripped)["keys"]]
        except (ValueError, KeyError, TypeError):
            raise Unreadable("the key file is JSON but not {\"keys\": [{\"vkey\"}]}") from None
    else:
        keys = [stripped]
    return [parse_vkey(key) for key in keys]


def verify_note(text, vkeys):
    """The note's text (what was signed) if a known key's signature on it verifies."""
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise Fail("the note holds a control character")
    split = text.rfind("\n\n")
    if split < 0 or not text.endswith("\n"):
        raise Fail("the note has no signature block")
    body, signatures = text[: split + 1], text[split + 2 :]
    known = {(name, key_id): key for name, key_id, key in vkeys}
    verified = False
    for line in signatures[:-1].split("\n"):
        match = re.fullmatch(r"\u2014 (\S+) ([A-Za-z0-9+/=]+)", line)
        if not match:
            raise Fail(f"a malformed signature line: {line[:40]!r}")
        try:
            blob = base64.b64decode(match.group(2), validate=True)
        except binascii.Error:
            raise Fail("a signature is not base64") from None
        key = known.get((match.group(1), blob[:4]))
        if key is None:
            continue  # another key's signature: not ours to judge
        if len(blob) != 68 or not ed25519_verify(key, body.encode(), blob[4:]):
            raise Fail(f"the signature by {match.group(1)} does not verify")
        verified = True
    if not verified:
        raise Fail("no signature by the verifier key")
    return body


# ---- Checkpoints (C2SP tlog-checkpoint) and proofs (c2sp.org/tlog-proof@v1) -----------------


def parse_checkpoint(body):
    """(origin, size, root) of a checkpoint's signed text, checked strictly."""
    lines = body.split("\n")
    if lines[-1] != "" or len(lines) < 4 or any(line == "" for line in lines[:-1]):
        raise Fail("the checkpoint is not at least three non-empty lines")
    origin, size, root = lines[0], lines[1], lines[2]
    if not re.fullmatch(r"0|[1-9][0-9]*", size) or int(size) >= 2**63:
        raise Fail(f"the tree size {size[:24]!r} is not a decimal without leading zeros")
    try:
        root_hash = base64.b64decode(root, validate=True)
    except binascii.Error:
        raise Fail("the root hash is not base64") from None
    if len(root_hash) != 32 or base64.b64encode(root_hash).decode() != root:
        raise Fail("the root hash is not the base64 of 32 bytes")
    return origin, int(size), root_hash


def read_checkpoint(text, trust):
    """(origin, size, root) of a signed checkpoint, checked against verifier keys or a policy."""
    if isinstance(trust, Policy):
        return parse_checkpoint(trust.check(text))
    return parse_checkpoint(verify_note(text, trust))


# ---- Witness policies (C2SP tlog-policy) and cosignatures (C2SP tlog-cosignature v1) --------


class Policy:
    """A parsed tlog-policy: the logs, the witnesses (policy name, key name, key id, key), the
    groups (name: (k, members)) and the quorum (a name, or None for `quorum none`)."""

    MAX_ENTRIES = 64

    def __init__(self, text):
        self.logs, self.witnesses, self.groups = [], {}, {}
        self.quorum, quorum_seen, names = None, False, set()
        for number, line in enumerate(text.split("\n"), 1):
            def refuse(reason):
                raise Unreadable(f"policy line {number}: {reason}")

            if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in line):
                refuse("only tab may stand among control characters")
            items = line.replace("\t", " ").split()
            if not items or items[0].startswith("#"):
                continue
            keyword, rest = items[0], items[1:]
            if keyword == "log":
                if len(rest) not in (1, 2):
                    refuse("a log line is: log <vkey> [<url>]")
                key = self._vkey(rest[0], LOG_KEY_TYPE, refuse)
                if any(known[2] == key[2] for known in self.logs):
                    refuse("this log's key is listed twice")
                self.logs.append(key)
            elif keyword == "witness":
                if len(rest) not in (2, 3):
                    refuse("a witness line is: witness <name> <vkey> [<url>]")
                self._define(names, rest[0], refuse)
                key = self._vkey(rest[1], COSIGNATURE_KEY_TYPE, refuse)
                if any(known[2] == key[2] for known in self.witnesses.values()):
                    refuse(f"witness {rest[0]}'s key is listed twice")
                self.witnesses[rest[0]] = key
            elif keyword == "group":
                if len(rest) < 3:
                    refuse("a group line is: group <name> all|any|<k> <name>...")
                name, threshold, members = rest[0], rest[1], rest[2:]
                for member in members:
                    if member not in self.witnesses and member not in self.groups:
                        refuse(f"group {name}: {member} is not a witness or group defined above")
                if len(set(members)) != len(members):
                    refuse(f"group {name} lists a member twice")
                if threshold == "all":
                    k = len(members)
                elif threshold == "any":
                    k = 1
                elif re.fullmatch(r"[1-9][0-9]*", threshold) and int(threshold) <= len(members):
                    k = int(threshold)
                else:
                    refuse(f"group {name}'s threshold is all, any, or a decimal k with 1 <= k <= {len(members)}")
                self._define(names, name, refuse)
                self.groups[name] = (k, members)
            elif keyword == "quorum":
                if len(rest) != 1:
                    refuse("a quorum line is: quorum <name>")
                if quorum_seen:
                    refuse("a policy has exactly one quorum line")
                quorum_seen = True
                if rest[0] != "none" and rest[0] not in self.witnesses and rest[0] not in self.groups:
                    refuse(f"the quorum names {rest[0]}, which is not a witness or group defined above")
                self.quorum = None if rest[0] == "none" else rest[0]
            else:
                refuse(f"{keyword!r} is not log, witness, group or quorum")
            if max(len(self.logs), len(self.witnesses), len(self.groups)) > self.MAX_ENTRIES:
                refuse(f"at most {self.MAX_ENTRIES} logs, witnesses and groups each")
        if not quorum_seen:
            raise Unreadable("the policy has no quorum line")
        if not self.logs:
            raise Unreadable("the policy names no log")

    @staticmethod
    def _vkey(text, key_type, refuse):
        try:
            return parse_vkey(text, key_type)
        except Unreadable as problem:
            refuse(str(problem))

    @staticmethod
    def _define(names, name, refuse):
        if name == "none":
            refuse("none is predefined and cannot name a witness or group")
        if name in names:
            refuse(f"{name} is defined twice")
        names.add(name)

    def cosigned_by(self, body, signatures):
        """The policy names of the witnesses whose cosignature among `signatures` verifies."""
        cosigned = set()
        for line in signatures:
            match = re.fullmatch(r"\u2014 (\S+) ([A-Za-z0-9+/=]+)", line)
            if not match:
                continue
            try:
                blob = base64.b64decode(match.group(2), validate=True)
            except binascii.Error:
                continue
            for policy_name, (name, key_id, key) in self.witnesses.items():
                if match.group(1) != name or blob[:4] != key_id or len(blob) != 76:
                    continue
                timestamp = int.from_bytes(blob[4:12], "big")
                if timestamp == 0 or timestamp >= 2**63:
                    continue
                message = f"cosignature/v1\ntime {timestamp}\n{body}".encode()
                if ed25519_verify(key, message, blob[12:]):
                    cosigned.add(policy_name)
        return cosigned

    def witnessed(self, name, cosigned):
        if name in self.witnesses:
            return name in cosigned
        k, members = self.groups[name]
        return sum(1 for member in members if self.witnessed(member, cosigned)) >= k

    def check(self, note):
        """The note's text, if one of the logs signed it and a quorum of witnesses cosigned it."""
        body = verify_note(note, self.logs)
        signatures = note[note.rfind("\n\n") + 2 : -1].split("\n")
        cosigned = self.cosigned_by(body, signatures)
        if self.quorum is not None and not self.witnessed(self.quorum, cosigned):
            who = ", ".join(sorted(cosigned)) or "no known witness"
            raise Fail(f"quorum not met: cosigned by {who}")
        return body


def load_policy(path):
    return Policy(read_text(path))


def parse_proof_file(text):
    """(index, path, checkpoint note) of a tlog-proof file."""
    head, separator, checkpoint = text.partition("\n\n")
    if not separator:
        raise Fail("the proof has no blank line before its checkpoint")
    lines = head.split("\n")
    if lines[0] != "c2sp.org/tlog-proof@v1":
        raise Fail("the proof does not start with c2sp.org/tlog-proof@v1")
    lines = lines[1:]
    if lines and lines[0].startswith("extra "):
        lines = lines[1:]
    if not lines or not re.fullmatch(r"index (0|[1-9][0-9]*)", lines[0]):
        raise Fail("the proof has no index line")
    index = int(lines[0][6:])
    return index, [decode_hash(line) for line in lines[1:]], checkpoint


def decode_hash(text):
    try:
        value = base64.b64decode(text, validate=True)
    except binascii.Error:
        raise Fail(f"{text[:20]!r} is not a base64 hash") from None
    if len(value) != 32:
        raise Fail(f"{text[:20]!r} is not a 32-byte hash")
    return value


# ---- Merkle trees (RFC 6962 hashing, RFC 9162 proofs) ---------------------------------------


def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_inclusion(index, size, leaf, path):
    """The root `path` leads to from `leaf` at `index` of a tree of `size` (RFC 9162 2.1.3.2)."""
    if index >= size:
        raise Fail(f"index {index} is not in a tree of {size}")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise Fail("the inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise Fail("the inclusion proof is shorter than the tree is deep")
    return r


def check_consistency(size1, root1, size2, root2, proof):
    """Raises Fail unless `proof` shows the tree (size1, root1) is a prefix of (size2, root2)."""
    if size2 < size1:
        raise Fail(f"the tree shrank from {size1} to {size2} entries")
    if size1 == size2:
        if proof or root1 != root2:
            raise Fail(f"two different trees of {size1} entries: the log forked")
        return
    if size1 == 0:
        if proof:
            raise Fail("a consistency proof from the empty tree must be empty")
        return
    if not proof:
        raise Fail("the consistency proof is empty")
    path = list(proof)
    if size1 & (size1 - 1) == 0:  # an exact power of two: the old root is a node of the new tree
        path.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Fail("the consistency proof is longer than the trees are deep")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise Fail("the consistency proof is shorter than the trees are deep")
    if fr != root1:
        raise Fail(f"the old tree of {size1} entries is not a prefix of the new one: history was rewritten")
    if sr != root2:
        raise Fail("the consistency proof does not lead to the new root")


# ---- The commands ----------------------------------------------------------------------------


def read_text(path):
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise Unreadable(f"{path}: {getattr(error, 'strerror', None) or error}") from None


def read_json(path):
    try:
        return json.loads(read_text(path))
    except ValueError:
        raise Unreadable(f"{path}: not JSON") from None


def entry_leaf(entry):
    if not re.fullmatch(r"[0-9a-f]{64}", entry or ""):
        raise Unreadable("an entry hash is 64 lowercase hex digits")
    return leaf_hash(bytes.fromhex(entry))


USAGE = "usage: verify_log.py note|checkpoint|inclusion|consistency|window FILE... (--vkey VKEY | --policy POLICY)"


def command(arguments):
    flags = [flag for flag in ("--vkey", "--policy") if flag in arguments]
    if len(arguments) < 2 or len(flags) != 1:
        raise Unreadable(USAGE)
    at = arguments.index(flags[0])
    if at + 1 >= len(arguments):
        raise Unreadable(f"{flags[0]} needs a value")
    if flags[0] == "--vkey":
        vkeys = load_vkeys(arguments[at + 1])
    else:
        vkeys = load_policy(arguments[at + 1])
    rest = arguments[:at] + arguments[at + 2 :]
    options = {}
    if "--entry" in rest:
        at = rest.index("--entry")
        if at + 1 >= len(rest):
            raise Unreadable("--entry needs a value")
        options["entry"] = rest[at + 1]
        rest = rest[:at] + rest[at + 2 :]
    kind, files = rest[0], rest[1:]
    if kind == "note" and len(files) == 1:
        note = read_text(files[0])
        vkeys.check(note) if isinstance(vkeys, Policy) else verify_note(note, vkeys)
    elif kind == "checkpoint" and len(files) == 1:
        read_checkpoint(read_text(files[0]), vkeys)
    elif kind == "inclusion" and len(files) == 1 and "entry" in options:
        index, path, note = parse_proof_file(read_text(files[0]))
        _, size, root = read_checkpoint(note, vkeys)
        if root_from_inclusion(index, size, entry_leaf(options["entry"]), path) != root:
            raise Fail(f"the entry is not leaf {index} of the signed tree of {size}")
    elif kind == "consistency" and len(files) == 2:
        origin1, size1, root1 = read_checkpoint(read_text(files[0]), vkeys)
        history = read_json(files[1])
        if not isinstance(history, dict) or not isinstance(history.get("checkpoint"), str):
            raise Unreadable(f"{files[1]}: not {{\"checkpoint\", \"consistency\"}}")
        origin2, size2, root2 = read_checkpoint(history["checkpoint"], vkeys)
        if origin1 != origin2:
            raise Fail(f"the checkpoints are of two logs: {origin1} and {origin2}")
        proof = [decode_hash(item) for item in history.get("consistency") or []]
        check_consistency(size1, root1, size2, root2, proof)
    elif kind == "window" and len(files) == 1:
        check_window(read_json(files[0]), vkeys)
    else:
        raise Unreadable(f"{kind}: unknown command, or the wrong files for it")


def check_window(trace, vkeys):
    if not isinstance(trace, dict) or not isinstance(trace.get("checkpoint"), str):
        raise Unreadable("the window is not {\"checkpoint\", \"inclusion_proofs\"}")
    _, size, root = read_checkpoint(trace["checkpoint"], vkeys)
    proofs = trace.get("inclusion_proofs")
    if not isinstance(proofs, list) or not proofs:
        raise Fail("the window carries no inclusion proofs")
    previous = None
    for proof in proofs:
        index = proof.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise Unreadable("an inclusion proof's index is not a number")
        if previous is not None and index != previous + 1:
            raise Fail(f"the window skips from leaf {previous} to leaf {index}")
        path = [decode_hash(item) for item in proof.get("path") or []]
        if root_from_inclusion(index, size, entry_leaf(proof.get("entry")), path) != root:
            raise Fail(f"entry {proof.get('entry', '')[:16]} is not leaf {index} of the signed tree")
        previous = index
    if previous != size - 1:
        raise Fail(f"the newest entry is leaf {previous}, but the signed tree has {size}: entries were removed")


def main(arguments):
    try:
        command(arguments)
    except Unreadable as problem:
        print(f"unreadable: {problem}")
        return 2
    except Fail as failure:
        print(f"FAIL {failure}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
