"""The error an analytic fallback draws (``--draws``) and a calibrated fallback's answer,
from the analytic check of a class worked out by hand (tests/tensorcast/
test_analytic_check.py: ratios 1, 2, 2, 2, 4; leave-one-out multipliers 0.5, 1, 1, 1, 2)."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from profstore.model.result import QuerySource, Reason
from profstore.tensorcast import calibrated, draws
from profstore.tensorcast.analytic_check import Observation, check
from profstore.tensorcast.draw_spec import DrawSpec, FallbackErrors
from profstore.tensorcast.ledger import Kind, PricedOp

SEED = 7
MUL = [Observation(f"op{i}", "Mul", "measured", m, a) for i, (a, m) in enumerate(
    zip([1.0, 1.5, 2.0, 2.5, 3.0], [1.0, 3.0, 4.0, 5.0, 12.0]))]
FEW = [Observation("few", "Few", "measured", 9.0, 3.0)]  # one op of its own: ratio 3
CHECK = check([*MUL, *FEW])


def pick(index: int, key: str, size: int) -> int:
    text = json.dumps([SEED, index, ["fallback", key]], separators=(",", ":"))
    number = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return int(np.random.default_rng(number).integers(0, size))


def test_raw_fallbacks_draw_their_class_ratios_else_the_pool():
    errors = draws.errors_from_check(CHECK, calibrated=set())
    assert errors.classes == {"Mul": (1.0, 2.0, 2.0, 2.0, 4.0)}  # Few: 1 op < 5
    assert errors.pooled == (1.0, 2.0, 2.0, 2.0, 3.0, 4.0)
    for index in range(4):
        spec = DrawSpec(SEED, index, errors)
        expected = errors.classes["Mul"][pick(index, "mul|key", 5)]
        assert draws.fallback_multiplier(spec, "mul|key", "Mul") == expected
        pooled = errors.pooled[pick(index, "pow|key", 6)]
        assert draws.fallback_multiplier(spec, "pow|key", "aten.pow.Tensor_Scalar") == pooled
    # Var of 1, 2, 2, 2, 4: mean 2.2, squared deviations 1.44 + 3 x 0.04 + 3.24 = 4.8 → 0.96
    assert draws.fallback_error(errors, "Mul") == ("class", pytest.approx(0.96))
    assert draws.fallback_error(errors, "Few")[0] == "pooled"


def test_calibrated_fallbacks_draw_their_leave_one_out_multipliers():
    errors = draws.errors_from_check(CHECK, calibrated={"Mul"})
    assert errors.classes["Mul"] == (0.5, 1.0, 1.0, 1.0, 2.0)


def test_the_nominal_search_and_a_stated_zero_draw_nothing():
    errors = draws.errors_from_check(CHECK, calibrated=set())
    assert draws.fallback_multiplier(DrawSpec(SEED, None, errors), "k", "Mul") == 1.0
    none = FallbackErrors.of(0.0)
    assert none.source == "none"
    assert draws.fallback_multiplier(DrawSpec(SEED, 2, none), "k", "Mul") == 1.0
    assert draws.fallback_error(none, "Mul") == ("none", 0.0)
    assert FallbackErrors.of(None).source == "calibration"
    assert FallbackErrors.of(0.2) == FallbackErrors("stated", 0.2)


def test_the_errors_travel_to_workers_as_json():
    errors = draws.errors_from_check(CHECK, calibrated=set())
    spec = DrawSpec(SEED, 3, errors)
    text = json.loads(json.dumps({"seed": SEED, "index": 3, "fallback": {
        "source": "calibration", "stated": None, "classes": {"Mul": [1, 2, 2, 2, 4]},
        "pooled": [1, 2, 2, 2, 3, 4]}}))
    assert DrawSpec.from_json(text) == spec


@pytest.mark.parametrize("bad", [-0.2, math.nan, math.inf])
def test_a_bad_stated_error_is_refused(bad):
    with pytest.raises(ValueError, match="--fallback-error"):
        FallbackErrors.of(bad)


def test_a_calibrated_answer_is_analytic_times_the_calibration():
    usable = calibrated.usable_calibrations(CHECK)
    assert list(usable) == ["Mul"]
    miss = PricedOp("aten.mul.Tensor", "Mul", Kind.FALLBACK, 10.0, 10.0, "regime_mismatch")
    found = calibrated.answer(miss, usable["Mul"], miss.reason)
    assert (found.latency_us, found.source, found.reason) == (
        pytest.approx(20.0), QuerySource.CALIBRATED, Reason.REGIME_MISMATCH)
    assert found.details["calibration_factor"] == pytest.approx(2.0)
    assert found.details["loo_ape_calibrated"] == 0.0  # test_analytic_check: median 0
    assert found.details["measured_ops"] == 5


def test_a_calibrated_fallback_is_counted_apart_from_the_analytic_ones():
    from dataclasses import dataclass, field

    @dataclass(frozen=True)
    class Result:  # the two fields of TensorCast's PerformanceModel.Result it reads
        execution_time_s: float
        statistics: dict = field(default_factory=dict)

    usable = calibrated.usable_calibrations(CHECK)
    miss = PricedOp("aten.mul.Tensor", "Mul", Kind.FALLBACK, 10.0, 10.0, "regime_mismatch",
                    calls=0)
    result, entry = calibrated.apply(Result(10e-6, {"shape_match_rule": "analytic"}), miss,
                                     usable["Mul"])
    assert result.execution_time_s == pytest.approx(20e-6)
    assert result.statistics["source"] == "CALIBRATED"
    assert result.statistics["shape_match_rule"] == "calibrated"
    assert (entry.kind, entry.latency_us, entry.reason) == (
        Kind.CALIBRATED, pytest.approx(20.0), "regime_mismatch")


def test_a_saved_run_that_is_not_one_is_refused(tmp_path):
    path = tmp_path / "stats.json"
    path.write_text(json.dumps({"lookups": 3}))
    with pytest.raises(ValueError, match="not a profstore tensorcast --stats-json file"):
        calibrated.read_saved(str(path))
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps({"analytic_check": CHECK.to_json()}))
    assert calibrated.read_saved(str(saved))["Mul"].calibration.predict(3.0) == \
        pytest.approx(6.0)
