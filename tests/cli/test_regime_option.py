"""``--regime-policy FILE`` (store/cli/regime_option.py) on ``explain`` and ``lookup``
(``tensorcast``: tests/tensorcast/test_summary.py): the nearest regime of the per-tensor
float16 DynamicQuant miss, the stated equivalence answering it, a bad policy as one line.

DynamicQuant.csv of v0.18 (perfdb/.../vllm0.18.0_torch2.9.0_cann8.5), line 1367 (header =
line 1): ``12,2048`` DT_FLOAT16 per-token, Average Duration 5.617396 us; its regime holds
476 points (every DT_FLOAT16 -> INT8;FLOAT row of the file, counted by hand with csv).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from profstore.cli.main import main

from tests.support.regimes import LEAF, SYM

pytestmark = pytest.mark.requires_perfdb


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def policy_file(tmp_path: Path, document: dict, name: str = "policy.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def test_explain_names_the_nearest_regime_of_the_miss(perfdb_path, capsys):
    code, out, _ = run(capsys, "explain", "--db", perfdb_path, "--version", "v0.18", LEAF)
    assert code == 0
    section = out.split("\nnearest measured regimes\n")[1]
    first = section.splitlines()[0]
    assert first.strip() == ("DynamicQuant: differs in scale_mode per_tensor → per_token; "
                             "476 points; at the target: 5.617396 us MEASURED "
                             "(exact_coordinate)")
    assert "reason: regime_mismatch" in out and "latency: -" in out


def test_explain_with_the_policy_answers_and_says_so(perfdb_path, tmp_path, capsys):
    policy = policy_file(tmp_path, {"ops": {SYM: {"scale_mode": {"per_tensor": "per_token"}}}})
    code, out, _ = run(capsys, "explain", "--db", perfdb_path, "--version", "v0.18",
                       "--regime-policy", policy, LEAF)
    assert code == 0
    assert "latency: 5.617396 us" in out and "source: MEASURED" in out
    assert ("scale_mode: target per_tensor read as per_token (stated by the caller's regime "
            "policy)") in out
    assert "DynamicQuant.csv  1367" in out


def test_lookup_reads_a_yaml_policy(perfdb_path, tmp_path, capsys, monkeypatch):
    path = tmp_path / "policy.yaml"
    path.write_text("kernels:\n  DynamicQuant:\n    scale_mode:\n      per_tensor: per_token\n")
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(LEAF + "\n"))
    code, out, _ = run(capsys, "lookup", "--db", perfdb_path, "--version", "v0.18",
                       "--regime-policy", str(path))
    answer = json.loads(out)
    assert (code, answer["latency_us"], answer["source"]) == (0, 5.617396, "MEASURED")
    assert answer["details"]["regime_equivalences"] == [
        {"field": "scale_mode", "target": "per_tensor", "used": "per_token"}]


@pytest.mark.parametrize(("verb", "document", "message"), [
    ("explain", {"ops": {SYM: {"scale_mod": {"per_tensor": "per_token"}}}},
     "unknown regime field 'scale_mod'"),
    ("explain", {"ops": {SYM: {"scale_mode": {"per_tensor": "per_tokn"}}}},
     "unknown value 'per_tokn'"),
    ("lookup", {"opz": {}}, "unknown key 'opz'"),
])
def test_a_bad_policy_is_one_line_and_a_non_zero_exit(perfdb_path, tmp_path, capsys, verb,
                                                       document, message):
    words = [verb, "--db", perfdb_path, "--version", "v0.18", "--regime-policy",
             policy_file(tmp_path, document)]
    leaves = tmp_path / "leaves.jsonl"
    leaves.write_text(LEAF + "\n")
    code, out, err = run(capsys, *words, LEAF if verb == "explain" else str(leaves))
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err
    assert err.startswith("profstore: error: --regime-policy: ")


def test_a_missing_policy_file_is_one_line(perfdb_path, tmp_path, capsys):
    code, _, err = run(capsys, "explain", "--db", perfdb_path, "--version", "v0.18",
                       "--regime-policy", str(tmp_path / "absent.json"), LEAF)
    assert code != 0 and len(err.strip().splitlines()) == 1 and "cannot read" in err
