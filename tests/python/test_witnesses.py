"""Witnesses, as a newcomer pairs them and as a second implementation reads them:

- `hearth witness serve` checked from outside with Python `cryptography`: its vkey and
  cosignatures are C2SP tlog-cosignature v1, each add-checkpoint status sits at its edge, and
  `verify_log.py --policy` accepts exactly what a quorum cosigned (forgeries refused);
- the story the manual tells: two witnesses, a Hearth pointed at them with a policy, receipts
  that `verify_log.py --policy` accepts; then an old backup of the database restored, and the
  next receipt refused while the witnesses keep the evidence.

Each test starts its own witnesses (and Hearth) from HEARTH_TEST_BINARY on free loopback
ports, and stops them."""

import asyncio
import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from conftest import ROOT, _required

SCRIPT = ROOT / "scripts" / "verify_log.py"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url, process, log):
    for _ in range(300):
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited: {log.read_text()}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not start: {log.read_text()}")


def witness_command(directory, *args):
    env = {**os.environ, "HEARTH_WITNESS_DIR": str(directory)}
    run = subprocess.run([_required("HEARTH_TEST_BINARY"), "witness", *args], capture_output=True, timeout=60, env=env)
    return run


@contextmanager
def running_witness(directory):
    port = free_port()
    log = directory.parent / f"{directory.name}.log"
    env = {**os.environ, "HEARTH_WITNESS_DIR": str(directory), "HEARTH_WITNESS_ADDR": f"127.0.0.1:{port}"}
    with open(log, "w") as sink:
        process = subprocess.Popen([_required("HEARTH_TEST_BINARY"), "witness", "serve"], stdout=sink, stderr=sink, env=env)
    try:
        wait_for(f"http://127.0.0.1:{port}/events", process, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def post(url, body):
    request = urllib.request.Request(url + "/add-checkpoint", data=body.encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode()


def verify(kind, *files, policy):
    run = subprocess.run([sys.executable, str(SCRIPT), kind, *map(str, files), "--policy", str(policy)], capture_output=True, timeout=60)
    return run.returncode, run.stdout.decode().strip()


# ---- RFC 6962 trees, written here from the RFC, independent of Hearth's -----------------------


def leaf(data):
    return hashlib.sha256(b"\x00" + data).digest()


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def root(leaves):
    if len(leaves) == 0:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node(root(leaves[:k]), root(leaves[k:]))


def subproof(m, leaves, complete):
    """RFC 6962 section 2.1.2, SUBPROOF(m, D[n], b)."""
    n = len(leaves)
    if m == n:
        return [] if complete else [root(leaves)]
    k = 1 << ((n - 1).bit_length() - 1)
    if m <= k:
        return subproof(m, leaves[:k], complete) + [root(leaves[k:])]
    return subproof(m - k, leaves[k:], False) + [root(leaves[:k])]


def consistency(m, leaves):
    return [] if m in (0, len(leaves)) else subproof(m, leaves, True)


# ---- Keys and notes, per C2SP signed-note and tlog-cosignature --------------------------------


def vkey(name, key_type, public):
    key_id = hashlib.sha256(name.encode() + b"\n" + bytes([key_type]) + public).digest()[:4]
    return f"{name}+{key_id.hex()}+{base64.b64encode(bytes([key_type]) + public).decode()}"


class Log:
    def __init__(self, name, origin, seed):
        self.name, self.origin = name, origin
        self.key = Ed25519PrivateKey.from_private_bytes(seed)
        self.public = self.key.public_key().public_bytes_raw()
        self.vkey = vkey(name, 0x01, self.public)
        self.key_id = bytes.fromhex(self.vkey.split("+")[1])
        self.leaves = []

    def body(self, size, leaves=None):
        return f"{self.origin}\n{size}\n{base64.b64encode(root((leaves or self.leaves)[:size])).decode()}\n"

    def note(self, size, leaves=None):
        body = self.body(size, leaves)
        signature = base64.b64encode(self.key_id + self.key.sign(body.encode())).decode()
        return f"{body}\n\u2014 {self.name} {signature}\n"

    def request(self, old, size, leaves=None):
        proof = consistency(old, (leaves or self.leaves)[:size])
        lines = "".join(base64.b64encode(h).decode() + "\n" for h in proof)
        return f"old {old}\n{lines}\n{self.note(size, leaves)}"


def check_cosignature(line, witness_key, body):
    """A cosignature line checked with `cryptography` alone: its timestamp."""
    name, blob = line.removeprefix("\u2014 ").split(" ")
    blob = base64.b64decode(blob)
    assert blob[:4] == hashlib.sha256(name.encode() + b"\n\x04" + witness_key).digest()[:4]
    timestamp = int.from_bytes(blob[4:12], "big")
    message = f"cosignature/v1\ntime {timestamp}\n{body}".encode()
    Ed25519PublicKey.from_public_bytes(witness_key).verify(blob[12:], message)  # raises if forged
    return timestamp


def test_a_witness_cosigns_as_tlog_cosignature_v1_and_answers_each_status_at_its_edge(tmp_path):
    directory = tmp_path / "w"
    key = witness_command(directory, "key", "--json")
    assert key.returncode == 0, key.stderr
    key = json.loads(key.stdout)
    public = base64.b64decode(key["public_key"])
    assert len(public) == 32 and key["vkey"] == vkey(key["name"], 0x04, public)

    log = Log("py.example/log", "py.example/hearth/abc/decisions/1", bytes(range(32)))
    log.leaves = [leaf(bytes([n])) for n in range(8)]
    trusted = witness_command(directory, "trust", log.vkey, "--origin-prefix", "py.example/hearth/", "--json")
    assert trusted.returncode == 0 and json.loads(trusted.stdout)["trusted"]["origin_prefix"] == "py.example/hearth/"
    assert witness_command(directory, "trust", "not-a-key", "--origin-prefix", "x").returncode == 2
    assert witness_command(directory, "trust", log.vkey).returncode == 2

    with running_witness(directory) as url:
        status, _, line = post(url, log.request(0, 3))
        assert status == 200, line
        assert check_cosignature(line.strip(), public, log.body(3)) > 1_700_000_000
        status, _, line = post(url, log.request(3, 5))
        assert status == 200, line
        # Stale: 409, text/x.tlog.size, the size cosigned.
        assert post(url, log.request(3, 6)) == (409, "text/x.tlog.size", "5\n")
        # 404: an origin under no trusted prefix; 403: signed by another key.
        stranger = Log("py.example/log", "elsewhere.example/x/1", bytes(range(32)))
        stranger.leaves = log.leaves
        assert post(url, stranger.request(0, 1))[0] == 404
        impostor = Log("py.example/log", log.origin, bytes(range(1, 33)))
        impostor.leaves = log.leaves
        assert post(url, impostor.request(5, 6))[0] == 403
        # 400: an old size past the checkpoint's; 422: a proof that does not verify.
        assert post(url, log.request(0, 2).replace("old 0", "old 5", 1))[0] == 400
        forked = [leaf(b"other")] + log.leaves[1:]
        assert post(url, log.request(5, 7, forked))[0] == 422
        # Monitors read the cosigned checkpoint back, with both signatures.
        origin_hash = hashlib.sha256(log.origin.encode()).hexdigest()
        with urllib.request.urlopen(f"{url}/{origin_hash}/checkpoint") as response:
            served = response.read().decode()
        assert served.startswith(log.body(5)) and f"\u2014 {key['name']} " in served

        # verify_log.py --policy: the log's signature and a quorum of cosignatures.
        policy = tmp_path / "policy"
        policy.write_text(f"log {log.vkey}\nwitness home {key['vkey']} {url}\nquorum home\n")
        cosigned = tmp_path / "cosigned"
        cosigned.write_text(served)
        assert verify("checkpoint", cosigned, policy=policy) == (0, "OK")
        uncosigned = tmp_path / "uncosigned"
        uncosigned.write_text(log.note(5))
        assert verify("checkpoint", uncosigned, policy=policy) == (1, "FAIL quorum not met: cosigned by no known witness")
        # Forgeries: a flipped byte; a cosignature of another checkpoint; a stranger's key
        # under the witness's name (ignored, not counted).
        cosignature = served.strip().split("\n")[-1]
        name, blob = cosignature.removeprefix("\u2014 ").split(" ")
        raw = bytearray(base64.b64decode(blob))
        raw[-1] ^= 1
        flipped = tmp_path / "flipped"
        flipped.write_text(log.note(5) + f"\u2014 {name} {base64.b64encode(bytes(raw)).decode()}\n")
        assert verify("checkpoint", flipped, policy=policy)[0] == 1
        other = tmp_path / "other"
        other.write_text(log.note(4) + cosignature + "\n")
        assert verify("checkpoint", other, policy=policy)[0] == 1
        # A policy with a stranger under the same name: its line is not the witness's key.
        stranger_key = Ed25519PrivateKey.from_private_bytes(bytes(32)).public_key().public_bytes_raw()
        policy.write_text(f"log {log.vkey}\nwitness home {vkey(name, 0x04, stranger_key)}\nquorum home\n")
        assert verify("checkpoint", cosigned, policy=policy) == (1, "FAIL quorum not met: cosigned by no known witness")


def test_policies_nest_k_of_n_groups_and_refuse_bad_grammar(tmp_path):
    log = Log("py.example/log", "py.example/hearth/g/decisions/1", bytes(range(32)))
    log.leaves = [leaf(b"a")]
    body = log.body(1)
    witnesses = {}
    for index, name in enumerate(["x1", "x2", "x3", "y1", "y2"]):
        key = Ed25519PrivateKey.from_private_bytes(bytes([index + 40]) * 32)
        witnesses[name] = (key, vkey(f"w.example/{name}", 0x04, key.public_key().public_bytes_raw()))

    def cosign(names):
        note = log.note(1)
        for name in names:
            key, key_vkey = witnesses[name]
            key_name, key_id = key_vkey.split("+")[0], bytes.fromhex(key_vkey.split("+")[1])
            timestamp = 1_800_000_000
            signature = key.sign(f"cosignature/v1\ntime {timestamp}\n{body}".encode())
            blob = key_id + timestamp.to_bytes(8, "big") + signature
            note += f"\u2014 {key_name} {base64.b64encode(blob).decode()}\n"
        path = tmp_path / ("note-" + "-".join(names))
        path.write_text(note)
        return path

    policy = tmp_path / "policy"
    lines = [f"log {log.vkey}"] + [f"witness {name} {key_vkey}" for name, (_, key_vkey) in witnesses.items()]
    lines += ["group X 2 x1 x2 x3", "group Y any y1 y2", "group XY all X Y", "quorum XY"]
    policy.write_text("\n".join(lines) + "\n")
    assert verify("checkpoint", cosign(["x1", "x3", "y2"]), policy=policy) == (0, "OK")
    assert verify("checkpoint", cosign(["x1", "y1", "y2"]), policy=policy) == (1, "FAIL quorum not met: cosigned by x1, y1, y2")
    assert verify("checkpoint", cosign(["x1", "x2"]), policy=policy)[0] == 1
    for bad in ["group X 4 x1 x2 x3", "group X 2 x1 x1 x3", "group X 2 x1 x2 XY", "quorum none\nquorum XY"]:
        policy.write_text("\n".join(lines).replace("group X 2 x1 x2 x3", bad) + "\n")
        code, output = verify("checkpoint", cosign(["x1"]), policy=policy)
        assert code == 2 and output.startswith("unreadable: policy line"), (bad, output)


# ---- The story: two witnesses, a Hearth, a restored backup ------------------------------------


@contextmanager
def running_hearth(data_dir, policy, store):
    port = free_port()
    log = data_dir.parent / f"hearth-{port}.log"
    env = {
        **os.environ,
        "HEARTH_ADDR": f"127.0.0.1:{port}",
        "HEARTH_DATA_DIR": str(data_dir),
        "HEARTH_WITNESS_POLICY_FILE": str(policy),
        "HEARTH_WITNESS_TIMEOUT_MS": "2000",
        **store,
    }
    with open(log, "w") as sink:
        process = subprocess.Popen([_required("HEARTH_TEST_BINARY")], stdout=sink, stderr=sink, env=env)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", process, log)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        process.terminate()
        process.wait(timeout=10)


def record(url, token, household, action):
    from mcp_client import session_flow

    async def steps(session, _init):
        result = await session.call_tool(
            "record_decision",
            {"household_id": household, "action": action, "reason": "a witnessed step", "inputs": {}, "approver": "Dana"},
        )
        assert not result.is_error, result
        return result.structured_content

    return asyncio.run(session_flow(url, token, steps))


def log_vkey(data_dir, store):
    env = {**os.environ, "HEARTH_DATA_DIR": str(data_dir), **store}
    run = subprocess.run([_required("HEARTH_TEST_BINARY"), "admin", "log-key", "--json"], capture_output=True, timeout=60, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout)["vkey"]


def test_a_restored_backup_is_refused_by_the_witnesses_and_by_verify_log(tmp_path):
    data_dir = tmp_path / "hearth"
    data_dir.mkdir()
    store = {"HEARTH_DB": str(data_dir / "hearth.db")}
    # The first start creates the development credentials and the log key.
    with _started(data_dir, store):
        pass
    vkey_of_log = log_vkey(data_dir, store)
    witnesses = {}
    for name in ["home-hub", "neighbour"]:
        directory = tmp_path / name
        assert witness_command(directory, "trust", vkey_of_log, "--origin-prefix", "127.0.0.1/hearth/").returncode == 0
        witnesses[name] = directory
    with running_witness(witnesses["home-hub"]) as hub_url, running_witness(witnesses["neighbour"]) as neighbour_url:
        policy = tmp_path / "policy"
        lines = [f"log {vkey_of_log}"]
        for name, url in [("home-hub", hub_url), ("neighbour", neighbour_url)]:
            key = json.loads(witness_command(witnesses[name], "key", "--json").stdout)
            lines.append(f"witness {name} {key['vkey']} {url}")
        policy.write_text("\n".join(lines + ["group both all home-hub neighbour", "quorum both"]) + "\n")
        token = json.loads((data_dir / "dev-credentials.json").read_text())["judge_token"]

        with running_hearth(data_dir, policy, store) as (url, _):
            with urllib.request.urlopen(url.removesuffix("/mcp") + "/.well-known/hearth/witness-policy") as response:
                assert response.read().decode() == policy.read_text()
            for step in range(2):
                recorded = record(url, token, "home", f"step {step}")
                receipt = tmp_path / f"receipt-{step}"
                receipt.write_text(recorded["tlog_proof"])
                code, output = verify("inclusion", receipt, "--entry", recorded["trace_id"], policy=policy)
                assert (code, output) == (0, "OK")
        backup = tmp_path / "backup"
        copy_database(data_dir, backup)
        with running_hearth(data_dir, policy, store) as (url, _):
            recorded = record(url, token, "home", "step 2")
            receipt = tmp_path / "receipt-2"
            receipt.write_text(recorded["tlog_proof"])
            assert verify("inclusion", receipt, "--entry", recorded["trace_id"], policy=policy) == (0, "OK")

        # Whoever holds the database puts the old backup back.
        copy_database(backup, data_dir)
        with running_hearth(data_dir, policy, store) as (url, log):
            recorded = record(url, token, "home", "another step 2")
            receipt = tmp_path / "receipt-forked"
            receipt.write_text(recorded["tlog_proof"])
            code, output = verify("inclusion", receipt, "--entry", recorded["trace_id"], policy=policy)
            assert (code, output) == (1, "FAIL quorum not met: cosigned by no known witness")
        # Hearth logged each refusal, and each witness kept the forked checkpoint as evidence.
        refusals = [json.loads(line) for line in log.read_text().splitlines() if '"hearth::witness"' in line]
        assert {line["witness"] for line in refusals if line["level"] == "ERROR"} == {"home-hub", "neighbour"}
        assert all(line.get("WitnessRefusals") == 1 for line in refusals if line["level"] == "ERROR")
    for directory in witnesses.values():
        listed = json.loads(witness_command(directory, "list", "--json").stdout)
        assert len(listed["logs"]) == 1 and listed["logs"][0]["evidence"] >= 1, listed


def copy_database(source, target):
    """The SQLite file with its write-ahead log, as a backup of a stopped server holds it."""
    target.mkdir(exist_ok=True)
    for suffix in ["", "-wal", "-shm"]:
        (target / f"hearth.db{suffix}").unlink(missing_ok=True)
        if (source / f"hearth.db{suffix}").exists():
            shutil.copy(source / f"hearth.db{suffix}", target / f"hearth.db{suffix}")


@contextmanager
def _started(data_dir, store):
    """Hearth once without witnesses: it creates its development credentials and log key."""
    port = free_port()
    log = data_dir.parent / "hearth-first.log"
    env = {**os.environ, "HEARTH_ADDR": f"127.0.0.1:{port}", "HEARTH_DATA_DIR": str(data_dir), **store}
    with open(log, "w") as sink:
        process = subprocess.Popen([_required("HEARTH_TEST_BINARY")], stdout=sink, stderr=sink, env=env)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", process, log)
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)
