"""``profstore analytic-check``: a saved run's time by source and analytic check, as text,
JSON and a figure, from a stats file built out of ledgers written by hand."""

from __future__ import annotations

import json
import subprocess
import sys

import matplotlib.image
import pytest
from profstore.tensorcast import analytic_check, time_split
from profstore.tensorcast.ledger import Kind, ModelLedger, PricedOp

TP4 = {"TP": 4, "PP": 1, "DP": 2, "EP": 1, "MOE-TP": 4, "MOE-DP": 1, "MTP": 0}
# Mul: ratios 1, 2, 2, 2, 4 over analytic 1 … 3 (tests/tensorcast/test_analytic_check.py:
# median 2, p10 1.4, p90 3.2, raw error 50 %, calibrated 0 %, usable)
MUL = [PricedOp(f"aten.mul.Tensor#{i}", "Mul", Kind.MEASURED, m, a, calls=2)
       for i, (a, m) in enumerate(zip([1.0, 1.5, 2.0, 2.5, 3.0], [1.0, 3.0, 4.0, 5.0, 12.0]))]
POW = PricedOp("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Scalar", Kind.FALLBACK, 5.0, 5.0,
               "unmapped", calls=5)


def stats_file(tmp_path):
    models = [ModelLedger(TP4, {f"k{i}": op for i, op in enumerate([*MUL, POW])})]
    split = time_split.split(time_split.all_ops(models)).to_json()
    data = {"time_by_source": split, "time_by_configuration": {
                time_split.config_label(TP4): split},
            "best_configuration": "TP=4 | PP=1 | DP=2", "best_time_by_source": split,
            "time_by_class": {k: v.to_json() for k, v in time_split.by_class(models).items()},
            "analytic_check": analytic_check.check(
                analytic_check.observations(models)).to_json()}
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(data))
    return path


def run(*words: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profstore", "analytic-check", *words],
                          capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_check_as_text_and_json(tmp_path):
    path = stats_file(tmp_path)
    text = run(str(path))
    assert text.returncode == 0, text.stderr
    # measured: 2 calls x (1 + 3 + 4 + 5 + 12) = 50 us; pow: 5 x 5 = 25 us; 75 us in all
    assert ("time by source: 75.0 us simulated; measured 66.7 %, interpolated 0.0 %, "
            "analytic fallback 33.3 % (unmapped 33.3 %)") in text.stdout
    row = next(line for line in text.stdout.splitlines() if line.strip().startswith("Mul"))
    assert row.split() == ["Mul", "5", "2.000", "1.400", "3.200", "50.0%", "0.0%", "yes"]
    data = json.loads(run(str(path), "--json").stdout)
    mul = data["analytic_check"]["classes"]["Mul"]
    assert (mul["ratio_median"], mul["loo_ape_analytic"], mul["usable"]) == (2.0, 0.5, True)
    assert data["time_by_source"]["total_us"] == 75.0


def test_the_figure_is_written(tmp_path):
    path = stats_file(tmp_path)
    found = run(str(path), "--plot", str(tmp_path / "check.png"))
    assert found.returncode == 0, found.stderr
    image = matplotlib.image.imread(tmp_path / "check.png")
    assert image.shape[0] > 300 and image.shape[1] > 1000  # two panels side by side


@pytest.mark.parametrize(("words", "message"), [
    (["missing.json"], "missing.json: not a profstore tensorcast --stats-json file"),
    (["other.json"], "other.json: not a profstore tensorcast --stats-json file"),
    (["stats.json", "--top", "0"], "--top must be a positive number"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, words, message):
    stats_file(tmp_path)
    (tmp_path / "other.json").write_text(json.dumps({"lookups": 3}))
    before = sorted(p.name for p in tmp_path.iterdir())
    found = run(*words, "--plot", "out.png", cwd=tmp_path)
    lines = found.stderr.strip().splitlines()
    assert found.returncode != 0
    assert len(lines) == 1 and lines[0].startswith("profstore: error: ") and message in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before
