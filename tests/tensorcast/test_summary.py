"""The run summary's fallback prices (tensorcast/summary.py, evaluation/fallback_prices.py):
upstream's text-generate on the MoE model of its test assets (two layers), through the
``profstore`` CLI in a subprocess, without and with the stated scale-mode equivalence.

TensorCast quantizes the MoE model's activations per tensor (a scalar scale, float16
input); the corpus measures per-token scales only. Expected per-call figures read by hand
from perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5/
DynamicQuant.csv (header = line 1): line 1364, ``8,2048`` DT_FLOAT16 per-token,
Average Duration 5.581614 us; line 1358, ``2,2048``, 5.442086 us.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tensorcast.cli_runs import profstore
from tests.tensorcast.simulation import DEVICE, copy_model, require_tensor_cast

pytestmark = [pytest.mark.requires_perfdb, pytest.mark.sqlite_only]  # the CLI and
# TensorCast's runner; test_commands.py runs a search on PostgreSQL

SYM = "tensor_cast.dynamic_quantize_symmetric.default"
PER_TOKEN_US = {(8, 2048): 5.581614, (2, 2048): 5.442086}  # lines 1364 and 1358
STEP = ["--num-queries", "12", "--query-length", "1", "--context-length", "1024", "--decode",
        "--device", DEVICE, "--tp-size", "1", "--num-devices", "8",
        "--num-hidden-layers-override", "2"]


@pytest.fixture(scope="module")
def moe_dir(tmp_path_factory) -> Path:
    require_tensor_cast()
    return copy_model("qwen3_moe_30b_a3b", tmp_path_factory.mktemp("moe"))


def text_generate(db: str, model: Path, out: Path, *extra: str) -> tuple[str, dict]:
    stats = out / "stats.json"
    run = profstore("tensorcast", "text-generate", "--db", db, "--version", "v0.18",
                    "--stats-json", str(stats), *extra, "--", str(model), *STEP)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stderr, json.loads(stats.read_text())


@pytest.fixture(scope="module")
def runs(perfdb_path, moe_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("moe_runs")
    policy = out / "policy.yaml"
    policy.write_text(f"ops:\n  {SYM}:\n    scale_mode: {{per_tensor: per_token}}\n")
    (out / "plain").mkdir()
    (out / "stated").mkdir()
    return (text_generate(perfdb_path, moe_dir, out / "plain"),
            text_generate(perfdb_path, moe_dir, out / "stated", "--regime-policy", str(policy)))


def _shape(item: dict) -> tuple[int, ...]:
    return tuple(item["leaf"]["args"][0]["shape"])


def test_the_quantization_fallback_is_priced_first_with_scale_mode(runs):
    (stderr, stats), _ = runs
    top = stats["fallback_prices"][0]
    assert (top["op"], top["differs"]) == (SYM, "scale_mode per_tensor → per_token")
    priced = [f for f in stats["fallbacks"] if f["op"] == SYM and f["nearest_us"] is not None]
    for item in priced:
        assert item["differs"] == {"scale_mode": ["per_tensor", "per_token"]}
        if _shape(item) in PER_TOKEN_US:
            assert item["nearest_us"] == PER_TOKEN_US[_shape(item)]
    assert (8, 2048) in {_shape(f) for f in priced}
    listed = [f for f in stats["fallbacks"]
              if f["op"] == SYM and f["differs"] is not None]  # the top 20 by time
    assert top["calls"] >= sum(f["calls"] for f in listed)
    assert top["nearest_time_us"] > top["time_us"]  # the per-token rows cost more
    prices = stderr.split("fallback prices (analytic vs. the nearest measured regime)")[1]
    line = next(x for x in prices.splitlines() if x.strip().startswith(SYM) and "→" in x)
    assert line.split()[1] == str(top["calls"])


def test_the_stated_equivalence_answers_those_calls_and_is_counted(runs):
    (_, plain), (stderr, stated) = runs
    key = f"{SYM}: scale_mode per_tensor → per_token"
    assert stated["regime_equivalences"][key] >= 1
    assert "answers through stated regime equivalences" in stderr
    assert plain["regime_equivalences"] == {}
    assert not [f for f in stated["fallbacks"] if f["op"] == SYM and f["differs"]]
    assert stated["misses"]["regime_mismatch"]["count"] < \
        plain["misses"]["regime_mismatch"]["count"]
    assert stated["answers"]["MEASURED"] + stated["answers"].get("INTERPOLATED", 0) > \
        plain["answers"]["MEASURED"] + plain["answers"].get("INTERPOLATED", 0)


def test_a_bad_policy_stops_the_command_in_one_line(perfdb_path, moe_dir, tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"ops": {SYM: {"scale_mode": {"per_tensor": "per_tokn"}}}}))
    stats = tmp_path / "stats.json"
    run = profstore("tensorcast", "text-generate", "--db", perfdb_path, "--version", "v0.18",
                    "--stats-json", str(stats), "--regime-policy", str(policy), "--",
                    str(moe_dir), *STEP)
    assert run.returncode != 0 and not stats.exists()
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown value 'per_tokn'" in lines[0]
