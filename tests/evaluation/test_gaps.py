"""``gaps``: gap ranking, the bracketing plan, the budget, and the measured coverage gain.

The fixture is the linear RmsNorm regime (hidden 7168; tokens 10·x → 2x + 3 us, tokens
10…50) plus a second op mapped to RmsNorm whose hidden size (4096) no row has. The trace:

- rms_norm, 6 calls over tokens 20 / 25 / 100 (2 each): 20 is measured (7.0), 25
  interpolates (8.0), 100 is past the range: a miss whose nearest coordinate (50) says
  13.0 per call → 26 us;
- other_norm, 3 calls at tokens 25 and hidden 4096: a new regime, no nearest; the trace
  says 300 us for 3 calls → 100 per call → 300 us.

The grid of axis 0 is {10, 20, 30, 40, 50}. Tokens 100 is bracketed by 50 (measured) and
the next power of two, 128; tokens 25 in the new regime by 20 and 30 (both new). Greedy:
the new regime gives 300 us for 2 shapes (150 / shape), the range miss 26 us for 1.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from profstore.api import Store
from profstore.cli.insight import plan_csv
from profstore.cli.main import main
from profstore.evaluation.gaps import plan_gaps
from profstore.evaluation.workload import load_workload

from tests.support.evaluation import LINEAR, RMS_OP, write_rms
from tests.support.perfdb import build_database

OTHER_OP = "tensor_cast.other_norm.default"


def variant(tokens: int, hidden: int = 7168) -> dict:
    return {"input_shapes": [f"({tokens}, {hidden})", f"({hidden})"],
            "input_dtypes": ["float16", "float16"],
            "output_shapes": [f"({tokens}, {hidden})"], "output_dtypes": ["float16"]}


TRACE = {"model": "fixture", "scenario": "decode", "ops": [
    {"op_name": RMS_OP, "count": 6, "total_duration_us": 1.0,
     "shape_variants": [variant(20), variant(25), variant(100)]},
    {"op_name": OTHER_OP, "count": 3, "total_duration_us": 300.0,
     "shape_variants": [variant(25, 4096)]},
]}


@pytest.fixture()
def gap_db(tmp_path: Path) -> str:
    write_rms(tmp_path / "data", LINEAR, **{OTHER_OP: {"kernel_type": "RmsNorm"}})
    return build_database(tmp_path)


@pytest.fixture()
def gap_store(gap_db: str):
    with Store.open(gap_db) as store:
        yield store


def test_gaps_with_their_estimates_and_ranked_groups(gap_store):
    report = plan_gaps(gap_store, load_workload(TRACE), "v0.18")
    rows = [(g.op, g.calls, g.source, g.axes, g.estimate, g.latency_us, g.time_us)
            for g in report.gaps]
    assert rows == [
        (RMS_OP, 2, "INTERPOLATED", [25.0], "interpolated", pytest.approx(8.0),
         pytest.approx(16.0)),
        (RMS_OP, 2, "miss", [100.0], "nearest", 13.0, 26.0),
        (OTHER_OP, 3, "miss", [25.0], "trace", 100.0, 300.0)]
    assert [(g.opens_new_regime, g.calls, g.time_us) for g in report.groups] == [
        (True, 3, 300.0), (False, 4, pytest.approx(42.0))]
    assert report.groups[0].share == pytest.approx(300 / 342)


def test_plan_brackets_targets_and_marks_the_new_regime(gap_store):
    report = plan_gaps(gap_store, load_workload(TRACE), "v0.18")
    plan = [(p.axes, p.role, p.opens_new_regime, p.cells["Input Shapes"]) for p in report.plan]
    assert plan == [([20.0], "low", True, "20,4096;4096"),
                    ([30.0], "high", True, "30,4096;4096"),
                    ([128.0], "high", False, "128,7168;7168")]
    assert report.gaps[0].points == []  # 25 in the old regime is already bracketed by 20, 30
    assert all(p.cells["Input Data Types"] == "DT_BF16;DT_BF16" for p in report.plan)


def test_coverage_before_and_after_the_whole_plan(gap_store):
    report = plan_gaps(gap_store, load_workload(TRACE), "v0.18")
    before, after = report.before, report.after
    assert (before.calls, before.measured_calls) == (pytest.approx(4 / 9), pytest.approx(2 / 9))
    assert before.total_time_us == pytest.approx(14 + 16 + 26 + 300)
    assert before.time == pytest.approx(30 / 356)
    assert after.calls == 1.0
    assert after.time == pytest.approx(1.0)
    assert after.measured_calls == pytest.approx(2 / 9)
    assert report.covered_after == 3
    assert report.accepted_rows == {"RmsNorm": 3}


def test_budget_is_greedy_by_time_per_shape(gap_store):
    two = plan_gaps(gap_store, load_workload(TRACE), "v0.18", budget=2)
    assert [p.axes for p in two.plan] == [[20.0], [30.0]]
    assert two.after.calls == pytest.approx(7 / 9)
    assert two.after.time == pytest.approx(330 / 356)
    one = plan_gaps(gap_store, load_workload(TRACE), "v0.18", budget=1)
    assert [p.axes for p in one.plan] == [[128.0]]  # the new regime needs two: skipped
    assert one.after.calls == pytest.approx(6 / 9)
    assert one.after.time == pytest.approx(56 / 356)


def test_plan_csv_in_the_profiler_columns(gap_store):
    report = plan_gaps(gap_store, load_workload(TRACE), "v0.18", budget=1)
    rows = list(csv.reader(io.StringIO(plan_csv(report))))
    assert rows[0][:7] == ["Type", "Input Shapes", "Input Data Types", "Input Formats",
                           "Output Shapes", "Output Data Types", "Output Formats"]
    assert rows[1][:7] == ["RmsNorm", '"128,7168;7168"', "DT_BF16;DT_BF16", "ND;ND",
                           '"128,7168"', "DT_BF16", "ND"]
    assert rows[1][7:10] == ["1", "high", "no"]


def test_jsonl_workload_and_cli(gap_db, tmp_path, capsys):
    leaves = tmp_path / "leaves.jsonl"
    leaf = {"op": RMS_OP, "args": [{"shape": [100, 7168], "dtype": "float16"},
                                   {"shape": [7168], "dtype": "float16"}],
            "outputs": [{"shape": [100, 7168], "dtype": "float16"}]}
    leaves.write_text(json.dumps({**leaf, "calls": 5}) + "\n\n")
    out = tmp_path / "plan.csv"
    assert main(["gaps", str(leaves), "--db", gap_db, "--version", "v0.18", "-o", str(out),
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(g["calls"], g["estimate"], g["time_us"]) for g in data["gaps"]] == [
        (5, "nearest", 65.0)]
    assert data["after"]["calls"] == 1.0
    assert out.read_text().count("\n") == 2


@pytest.mark.parametrize("argv, message", [
    (["--version", "v9.9"], "unknown version 'v9.9'"),
    (["--version", "v0.18", "--budget", "0"], "--budget must be a positive number"),
])
def test_bad_options(gap_db, tmp_path, capsys, argv, message):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(TRACE))
    assert main(["gaps", str(trace), "--db", gap_db, *argv]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text", ['{"model": "x"}', "[1, 2]", "not json", ""])
def test_workload_that_is_not_a_trace(gap_db, tmp_path, capsys, text):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    assert main(["gaps", str(bad), "--db", gap_db, "--version", "v0.18"]) == 1
    err = capsys.readouterr().err
    assert "not a workload: neither a TensorCast trace" in err
    assert err.count("\n") == 1


def test_library_budget_error(gap_store):
    with pytest.raises(ValueError, match="budget must be a positive"):
        plan_gaps(gap_store, load_workload(TRACE), "v0.18", budget=-1)


def test_a_new_regime_gap_is_priced_against_its_nearest_regime(gap_store):
    """other_norm (hidden 4096) has no regime of its own; the nearest is the measured hidden
    7168 regime, which interpolates tokens 25 to 2 · 2.5 + 3 = 8.0 us per call (the linear
    fixture); the gap's own estimate is the trace's 100 us per call."""
    report = plan_gaps(gap_store, load_workload(TRACE), "v0.18")
    [price] = [p for p in report.fallback_prices if p["op"] == OTHER_OP]
    assert (price["calls"], price["time_us"]) == (3, 300.0)
    assert price["nearest_time_us"] == pytest.approx(24.0)
    assert price["difference_us"] == pytest.approx(-276.0)
    assert "4096" in price["differs"] and "7168" in price["differs"]
    [gap] = [g for g in report.gaps if g.op == OTHER_OP]
    assert gap.nearest_latency_us == pytest.approx(8.0)
    # the range miss of rms_norm is no regime miss: no nearest regime, no nearest time
    [rms] = [p for p in report.fallback_prices if p["op"] == RMS_OP]
    assert (rms["calls"], rms["nearest_time_us"], rms["differs"]) == (2, None, "")
