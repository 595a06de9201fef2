"""The insight verbs on the real corpus and the DeepSeek-V3 decode trace (concrete counts).

Counts are cross-checked against what the replay itself reports and against the corpus
files: the gaps are the replay's missed and interpolated shapes; the plan closes exactly
the regime_mismatch misses (the only plannable misses of this trace); kernels present in
one version only are the CSV files one version directory has and the other lacks.
"""

from __future__ import annotations

import pytest
from profstore.evaluation.diff import diff_versions
from profstore.evaluation.gaps import plan_gaps
from profstore.evaluation.uncertainty import ErrorModel, interval, op_errors
from profstore.evaluation.workload import load_workload, run_workload

from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB, WORKLOADS

pytestmark = requires_perfdb
VLLM = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend"


@pytest.fixture(scope="module")
def dsv3_decode():
    return load_workload(WORKLOADS / "dsv3_decode.json")


def test_dsv3_decode_gap_plan(perfdb_store, dsv3_decode):
    run = run_workload(perfdb_store, dsv3_decode, "v0.18")
    report = plan_gaps(perfdb_store, dsv3_decode, "v0.18")
    shapes = run.report.source_by_shapes
    assert len(report.gaps) == shapes["miss"] + shapes["INTERPOLATED"] == 17
    assert len(report.groups) == 9
    assert len(report.plan) == 7
    assert sum(p.opens_new_regime for p in report.plan) == 6
    assert sum(1 for g in report.gaps if g.not_planned) == 8  # communication, MLA composites
    covered_before = report.before.calls * report.before.total_calls
    covered_after = report.after.calls * report.after.total_calls
    assert covered_before == pytest.approx(14965)
    assert covered_after - covered_before == pytest.approx(
        run.report.miss_reasons_by_calls["regime_mismatch"]) == pytest.approx(249)
    assert report.covered_after == 9
    budget = plan_gaps(perfdb_store, dsv3_decode, "v0.18", budget=2)
    assert len(budget.plan) == 2
    assert budget.before.time < budget.after.time < report.after.time


def test_v015_to_v018_diff(perfdb_store, dsv3_decode):
    report = diff_versions(perfdb_store, "v0.15", perfdb_store, "v0.18", [dsv3_decode])
    stems = {d: {p.stem for p in (VLLM / d).glob("*.csv")}
             for d in ("vllm0.15.0_torch2.9.0_cann8.5", "vllm0.18.0_torch2.9.0_cann8.5")}
    old, new = stems.values()
    assert {k.kernel for k in report.kernels if k.presence == "from"} == old - new
    assert {k.kernel for k in report.kernels if k.presence == "to"} == new - old
    assert sum(1 for k in report.kernels if k.presence == "both") == len(old & new) == 67
    # 966 since the output_numel regime frees the index length (issue #10): all 25 v0.15
    # GatherV2 and 58 Index coordinates now meet their v0.18 regimes
    assert report.overall.coordinates == 966
    assert len(report.mapping_changes) == 50
    (w,) = report.workloads
    assert w.total_to_us == pytest.approx(run_workload(
        perfdb_store, dsv3_decode, "v0.18").report.total_latency_us)
    assert w.ops[0]["op"] == "tensor_cast.static_quant_linear.default"


def test_dsv3_decode_interval(perfdb_store, dsv3_decode):
    run = run_workload(perfdb_store, dsv3_decode, "v0.18")
    errors = op_errors(run.answers, ErrorModel(perfdb_store, "v0.18"))
    kinds = {k: sum(1 for e in errors if e.kind == k)
             for k in ("interpolation", "duplicates", "repeatability", "none")}
    assert kinds == {"interpolation": 4, "duplicates": 3, "repeatability": 20, "none": 61}
    assert kinds["interpolation"] == run.report.source_by_shapes["INTERPOLATED"]
    found = interval(errors)
    assert found.total_us == pytest.approx(run.report.total_latency_us)
    assert found.correlated.p10 < found.independent.p10 < found.total_us
    assert found.total_us < found.independent.p90 < found.correlated.p90
