"""Workload replay: weighting, distributions, unmapped ops, dtype filling."""

from __future__ import annotations

import json

import pytest
from profstore.evaluation.replay import SOURCES, apportion, replay_workload
from profstore.lookup.regime_policy import RegimePolicy

from tests.support.evaluation import RMS, TRACE, rms_variant
from tests.support.markers import requires_perfdb
from tests.support.paths import WORKLOADS


def test_calls_are_split_evenly_over_variants():
    assert apportion(5, 3) == [2, 2, 1]
    assert apportion(7, 1) == [7]
    assert apportion(2, 3) == [1, 1, 0]
    assert apportion(5, 0) == []


def test_fixture_replay_weights_latency_by_calls(linear_store):
    report = replay_workload(linear_store, TRACE, "v0.18")
    assert [(v.calls, v.latency_us, v.source) for v in report.variants] == [
        (2, 7.0, "MEASURED"), (2, pytest.approx(8.0), "INTERPOLATED"), (1, None, "miss"),
        (4, None, "miss")]
    assert report.total_latency_us == pytest.approx(2 * 7.0 + 2 * 8.0)
    assert report.calls == 9
    assert report.options["phase"] == "decode"


def test_fixture_distributions(linear_store):
    report = replay_workload(linear_store, TRACE, "v0.18")
    assert report.source_by_calls == {"MEASURED": 2, "INTERPOLATED": 2, "PARTIAL": 0, "miss": 5}
    assert report.source_by_shapes == {"MEASURED": 1, "INTERPOLATED": 1, "PARTIAL": 0,
                                       "miss": 2}
    assert report.miss_reasons_by_calls == {"unmapped": 4, "outside_range": 1}
    assert report.interpolation == [{"path": "generic", "kernel": "RmsNorm",
                                     "method": "linear_1d", "interpolation_dim": 1,
                                     "axes": ["axis_0"], "calls": 2, "unique_shapes": 1}]


def test_unmapped_op_is_listed_not_dropped(linear_store):
    report = replay_workload(linear_store, TRACE, "v0.18")
    assert report.unmapped_ops == [{"op": "aten.nothing.default", "calls": 4,
                                    "unique_shapes": 1}]
    row = next(r for r in report.ops if r.op == "aten.nothing.default")
    assert (row.calls, row.latency_us, row.source, row.reasons) == (4, 0.0, "miss",
                                                                    {"unmapped": 4})


def test_missing_dtypes_are_filled_and_counted(linear_store):
    report = replay_workload(linear_store, TRACE, "v0.18")
    assert report.filled_dtypes == {"dtype": "float16", "tensors": 3, "variants": 1, "calls": 2}
    assert report.variants[1].filled_dtypes == 3


def test_per_op_table(linear_store):
    report = replay_workload(linear_store, TRACE, "v0.18")
    rms = report.ops[0]
    assert (rms.op, rms.calls, rms.unique_shapes, rms.source) == (RMS, 5, 3, "mixed")
    assert rms.latency_us == pytest.approx(30.0)
    assert rms.sources == {"INTERPOLATED": 2, "MEASURED": 2, "miss": 1}


def test_trace_file_and_bad_trace(linear_store, tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    assert replay_workload(linear_store, path, "v0.18").trace == str(path)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="no 'ops' list"):
        replay_workload(linear_store, bad, "v0.18")


@requires_perfdb
@pytest.mark.parametrize("name", ["dsv3_decode", "dsv3_prefill", "qwen3_32b_decode",
                                  "qwen3_32b_prefill"])
def test_real_workloads_replay_consistently(perfdb_store, name):
    path = WORKLOADS / f"{name}.json"
    trace = json.loads(path.read_text())
    report = replay_workload(perfdb_store, path, "v0.18", num_devices=16, ep_size=16)
    assert report.calls == trace["total_ops"] == sum(op["count"] for op in trace["ops"])
    assert report.unique_shapes == sum(len(op["shape_variants"]) for op in trace["ops"])
    assert sum(report.source_by_calls[s] for s in SOURCES) == report.calls
    assert sum(report.source_by_shapes[s] for s in SOURCES) == report.unique_shapes
    assert sum(report.miss_reasons_by_calls.values()) == report.source_by_calls["miss"]
    assert report.total_latency_us == pytest.approx(sum(r.latency_us for r in report.ops))
    assert report.total_latency_us == pytest.approx(
        sum((v.latency_us or 0.0) * v.calls for v in report.variants))
    assert {r.op for r in report.ops} == {op["op_name"] for op in trace["ops"]}
    assert report.source_by_calls["MEASURED"] > 0


def test_a_variant_that_is_no_valid_descriptor_is_a_counted_miss(linear_store):
    trace = {"ops": [{"op_name": RMS, "count": 3, "shape_variants": [
        rms_variant(20), {"input_shapes": ["(2, -1)"], "input_dtypes": ["float16"],
                          "output_shapes": [], "output_dtypes": []}]}]}
    report = replay_workload(linear_store, trace, "v0.18")
    bad = report.variants[1]
    assert (bad.calls, bad.source, bad.reason) == (1, "miss", "invalid_descriptor")
    assert "'(2, -1)'" in bad.error
    assert report.total_latency_us == pytest.approx(2 * 7.0)
    assert report.miss_reasons_by_calls == {"invalid_descriptor": 1}


SYM = "tensor_cast.dynamic_quantize_symmetric.default"
PER_TENSOR_TRACE = {
    "model": "moe", "scenario": "decode", "total_ops": 7,
    "ops": [{"op_name": SYM, "count": 7, "total_duration_us": 14.0, "shape_variants": [
        {"input_shapes": ["(12, 2048)"], "input_dtypes": ["float16"],
         "output_shapes": ["(12, 2048)", "()"], "output_dtypes": ["int8", "float32"]}]}],
}
"""TensorCast's per-tensor activation quantization: one variant, 7 calls, the trace's own
figure 14.0 / 7 = 2.0 us per call. DynamicQuant.csv (v0.18) line 1367 (header = line 1)
measures the per-token ``12,2048`` float16 call at 5.617396 us; no per-tensor float16 row."""


@requires_perfdb
def test_replay_prices_a_regime_miss_against_its_nearest_regime(perfdb_store):
    report = replay_workload(perfdb_store, PER_TENSOR_TRACE, "v0.18")
    assert report.miss_reasons_by_calls == {"regime_mismatch": 7}
    assert report.total_latency_us == 0.0  # a miss adds nothing
    [price] = report.fallback_prices
    assert price == {"op": SYM, "calls": 7, "time_us": 14.0,
                     "nearest_time_us": pytest.approx(7 * 5.617396),
                     "difference_us": pytest.approx(7 * 5.617396 - 14.0),
                     "differs": "scale_mode per_tensor → per_token"}


@requires_perfdb
def test_replay_with_the_stated_equivalence_answers_the_calls(perfdb_store):
    policy = RegimePolicy.from_json({"ops": {SYM: {"scale_mode": {"per_tensor": "per_token"}}}})
    report = replay_workload(perfdb_store, PER_TENSOR_TRACE, "v0.18", regime_policy=policy)
    assert report.source_by_calls["MEASURED"] == 7
    assert report.total_latency_us == pytest.approx(7 * 5.617396)
    assert report.fallback_prices == []
