"""``bound_breakdown``: the op-bound breakdown reckoned once per distinct result is
upstream's own breakdown, float for float, on hand-made events and on a real step."""

from __future__ import annotations

import shutil

import pytest
from profstore.tensorcast import install, uninstall
from profstore.tensorcast.bound_breakdown import distinct_result_classifiers
from profstore.tensorcast.stores import close_shared

from tests.tensorcast.simulation import DEVICE, copy_model, require_tensor_cast


def _result(seconds: float, statistics: dict) -> object:
    from tensor_cast.performance_model.base import PerformanceModel

    return PerformanceModel.Result(execution_time_s=seconds, statistics=statistics)


def test_repeated_results_are_counted_per_event_as_upstream_does():
    require_tensor_cast()
    from tensor_cast.performance_model.analytic import OpBoundClassifier
    from tensor_cast.performance_model.bound_analyzer import StatsKey

    memory = _result(3e-6, {StatsKey.MEMORY_ACCESS: 3e-6, StatsKey.COMPUTE: 1e-6,
                            StatsKey.MMA_OPS: 0, StatsKey.GP_OPS: 1e-6})
    matmul = _result(5e-6, {StatsKey.MEMORY_ACCESS: 2e-6, StatsKey.COMPUTE: 5e-6,
                            StatsKey.MMA_OPS: 4e-6, StatsKey.GP_OPS: 1e-6})
    answered = _result(7e-6, {"source": "MEASURED", "confidence": 1.0, "kernel_type": "Mul",
                              "kernel_shapes": "[[8, 16]]", "shape_match_rule": "base_exact"})
    events = [(None, r) for r in (memory, matmul, memory, answered, matmul, memory)]
    (ours,) = distinct_result_classifiers([OpBoundClassifier()])
    assert type(ours) is not OpBoundClassifier and ours.name == "OpBound"
    breakdown = ours.classify(events)
    # By hand: three memory-bound events of 3 µs; two compute events split 4 µs MMA + 1 µs
    # GP; an answer with no time statistics is unknown-bound and adds nothing.
    assert breakdown == pytest.approx({"memory_bound": 9e-6, "communication_bound": 0,
                                       "compute_bound_mma": 8e-6, "compute_bound_gp": 2e-6},
                                      rel=1e-15)
    assert breakdown == OpBoundClassifier().classify(events)  # exactly upstream's floats


def test_other_classifiers_are_passed_through():
    require_tensor_cast()
    other = object()
    assert distinct_result_classifiers([other]) == [other]


@pytest.mark.requires_perfdb
@pytest.mark.sqlite_only
def test_a_real_step_reports_upstreams_breakdown(perfdb_path, tmp_path, monkeypatch):
    require_tensor_cast()
    from cli.inference.text_generate import arg_parse
    from tensor_cast.core.input_generator import generate_inputs
    from tensor_cast.core.model_runner import ModelRunner
    from tensor_cast.core.user_config import UserInputConfig
    from tensor_cast.performance_model.analytic import OpBoundClassifier
    from tensor_cast.runtime import Runtime

    database = tmp_path / "perf.db"
    shutil.copyfile(perfdb_path, database)
    model = copy_model("qwen3_dense_32b", tmp_path / "models")
    runtimes: list[Runtime] = []
    upstream_breakdowns = Runtime.get_breakdowns

    def seen(runtime: Runtime) -> dict:
        runtimes.append(runtime)
        return upstream_breakdowns(runtime)

    monkeypatch.setattr(Runtime, "get_breakdowns", seen)
    install(database, "v0.18")
    try:
        args = arg_parse([str(model), "--num-queries", "16", "--query-length", "1",
                          "--context-length", "4096", "--decode", "--device", DEVICE,
                          "--tp-size", "8", "--num-devices", "8", "--performance-model",
                          "profiling", "--profiling-database-path", "unused"])
        metrics = ModelRunner(UserInputConfig.from_args(args)).run_inference(
            generate_inputs_func=generate_inputs)
    finally:
        uninstall()
        close_shared()
    (runtime,) = runtimes
    (model_pm,) = runtime.perf_models
    assert [type(c).__name__ for c in model_pm.get_classifiers()] == ["DistinctResultClassifier"]
    events = [(e.op_invoke_info, e.perf_results["empirical"]) for e in runtime.event_list]
    distinct = {id(result) for _, result in events}
    assert len(events) > 5 * len(distinct)  # one object per op, many calls each
    assert metrics.breakdowns["empirical_OpBound"] == OpBoundClassifier().classify(events)
