"""scripts/verify_chain.py: the shared vectors, and every kind of tampering it must catch."""

import copy
import hashlib
import json

import pytest

from conftest import ROOT, run_verifier

VECTORS = json.loads((ROOT / "tests" / "vectors" / "canonical.json").read_text(encoding="utf-8"))["vectors"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_python_canonical_json_matches_the_shared_vectors(vector):
    import importlib.util

    spec = importlib.util.spec_from_file_location("verify_chain", ROOT / "scripts" / "verify_chain.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    canonical = module.canonical(json.loads(vector["json"]))
    assert canonical == vector["canonical"]
    assert hashlib.sha256(canonical.encode("ascii")).hexdigest() == vector["sha256"]


def verdict(trace):
    result = run_verifier(trace)
    return result.returncode, result.stdout.decode().strip()


def test_an_untouched_trace_verifies(recorded_trace):
    assert len(recorded_trace["records"]) == 3
    assert verdict(recorded_trace) == (0, "OK")


def _changed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        return value + "x"
    if value is None:
        return "0" * 64
    if isinstance(value, list):
        return value + ["extra"]
    if isinstance(value, dict):
        return {**value, "extra": 1}
    raise AssertionError(type(value))


def test_every_single_field_edit_is_caught_at_its_record(recorded_trace):
    checked = 0
    for index, record in enumerate(recorded_trace["records"]):
        for field in record:
            tampered = copy.deepcopy(recorded_trace)
            tampered["records"][index][field] = _changed(record[field])
            assert verdict(tampered) == (1, f"FAIL {index + 1}"), (index, field)
            checked += 1
    assert checked >= 30


def test_nested_edits_are_caught(recorded_trace):
    tampered = copy.deepcopy(recorded_trace)
    tampered["records"][1]["atoms"][1]["content"] += " (edited)"
    assert verdict(tampered) == (1, "FAIL 2")
    tampered = copy.deepcopy(recorded_trace)
    tampered["records"][2]["inputs"]["celsius"] = 30
    assert verdict(tampered) == (1, "FAIL 3")


def test_deletion_reorder_and_relink_are_caught(recorded_trace):
    deleted = copy.deepcopy(recorded_trace)
    del deleted["records"][1]
    assert verdict(deleted) == (1, "FAIL 2")

    first_deleted = copy.deepcopy(recorded_trace)
    del first_deleted["records"][0]
    assert verdict(first_deleted) == (1, "FAIL 1")

    reordered = copy.deepcopy(recorded_trace)
    reordered["records"][1], reordered["records"][2] = reordered["records"][2], reordered["records"][1]
    assert verdict(reordered) == (1, "FAIL 2")

    # Rewrite record 2 and recompute its own hash: its successor no longer links to it.
    import importlib.util

    spec = importlib.util.spec_from_file_location("verify_chain", ROOT / "scripts" / "verify_chain.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    relinked = copy.deepcopy(recorded_trace)
    relinked["records"][1]["reason"] = "A different story"
    relinked["records"][1]["trace_id"] = module.record_hash(relinked["records"][1])
    assert verdict(relinked) == (1, "FAIL 3")

    anchored = copy.deepcopy(recorded_trace)
    anchored["anchor"] = "0" * 64
    assert verdict(anchored) == (1, "FAIL 1")


@pytest.mark.parametrize(
    "raw",
    ["", "not json", "[]", '{"records": "x"}', '{"records": []}', '{"records": [], "anchor": 5}', '{"anchor": null}'],
)
def test_unreadable_input_is_a_clear_message_not_a_traceback(raw):
    result = run_verifier(None, raw=raw)
    assert result.returncode == 2
    assert result.stderr.decode().startswith("verify_chain: ")
    assert "Traceback" not in result.stderr.decode()
    assert result.stdout == b""


def test_a_whole_tools_call_result_is_accepted(recorded_trace):
    assert verdict({"content": [], "structuredContent": recorded_trace}) == (0, "OK")
