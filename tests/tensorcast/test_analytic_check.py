"""TensorCast's analytic model checked against the data (``profstore.tensorcast.
analytic_check``), on classes whose ratios and leave-one-out errors are worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from profstore.tensorcast.analytic_check import (
    Calibration,
    Observation,
    check,
    check_class,
    fit,
    observations,
)
from profstore.tensorcast.ledger import Kind, ModelLedger, PricedOp


def points(name: str, analytic: list[float], measured: list[float]) -> list[Observation]:
    return [Observation(f"op{i}", name, "measured", m, a)
            for i, (a, m) in enumerate(zip(analytic, measured))]


# analytic 1 … 3 spans less than 4x: a constant ratio (the median). Ratios 1, 2, 2, 2, 4.
MUL = points("Mul", [1.0, 1.5, 2.0, 2.5, 3.0], [1.0, 3.0, 4.0, 5.0, 12.0])
# measured = 2 + 1.5 · analytic exactly, over a span of 8x: overhead and scale
LINE = points("Line", [1.0, 2.0, 4.0, 8.0], [3.5, 5.0, 8.0, 14.0])


def test_a_class_within_a_narrow_size_range_calibrates_by_its_median_ratio():
    found = check_class(MUL)
    assert found.measured_ops == 5
    assert found.ratio_median == 2.0
    # numpy's linear percentiles of 1, 2, 2, 2, 4: p10 at 0.4 → 1.4, p90 at 3.6 → 3.2
    assert (found.ratio_p10, found.ratio_p90) == (pytest.approx(1.4), pytest.approx(3.2))
    # raw |a - m| / m: 0, 0.5, 0.5, 0.5, 0.75 → median 0.5
    assert found.loo_ape_analytic == 0.5
    # leave one out: the others' median ratio is 2 for every op; predictions 2, 3, 4, 5, 6
    # → errors 1, 0, 0, 0, 0.5 → median 0
    assert found.loo_ape_calibrated == 0.0
    assert found.usable is True
    assert found.loo_multipliers == (0.5, 1.0, 1.0, 1.0, 2.0)
    assert found.calibration == Calibration(0.0, 2.0)
    assert found.calibration.predict(10.0) == pytest.approx(20.0)


def test_a_class_over_a_wide_size_range_fits_overhead_and_scale_but_needs_five_ops():
    found = check_class(LINE)
    assert found.calibration.overhead_us == pytest.approx(2.0)
    assert found.calibration.scale == pytest.approx(1.5)
    assert found.calibration.predict(16.0) == pytest.approx(26.0)
    # every three of the four ops span 4x or more and lie on the line: exact predictions
    assert found.loo_ape_calibrated == pytest.approx(0.0, abs=1e-12)
    # raw |a - m| / m: 2.5/3.5, 3/5, 4/8, 6/14 → median (0.6 + 0.5) / 2
    assert found.loo_ape_analytic == pytest.approx(0.55)
    assert found.usable is False  # 4 ops < 5


def test_a_line_with_a_negative_overhead_falls_back_to_the_median_ratio():
    # measured = 2 · analytic - 1 exactly (span 8x): a negative overhead is not a cost
    found = check_class(points("Neg", [1.0, 2.0, 4.0, 8.0], [1.0, 3.0, 7.0, 15.0]))
    # ratios 1, 1.5, 1.75, 1.875 → median 1.625
    assert found.calibration == Calibration(0.0, 1.625)


def test_a_calibration_no_better_than_the_raw_answer_is_not_usable():
    exact = points("Exact", [1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0])
    found = check_class(exact)
    assert (found.loo_ape_analytic, found.loo_ape_calibrated) == (0.0, pytest.approx(0.0))
    assert found.usable is False


def test_the_check_groups_by_class_the_most_ops_first():
    found = check([*LINE, *MUL])
    assert list(found.classes) == ["Mul", "Line"]
    assert list(found.usable()) == ["Mul"]
    data = found.to_json()
    assert set(data["classes"]["Mul"]) >= {"measured_ops", "ratio_median", "ratio_p10",
                                           "ratio_p90", "loo_ape_analytic",
                                           "loo_ape_calibrated", "usable"}
    assert type(found).from_json(data) == found


def test_a_class_of_one_op_has_no_leave_one_out_error():
    found = check_class(points("One", [2.0], [3.0]))
    assert (found.loo_ape_calibrated, found.usable, found.loo_multipliers) == (None, False, ())


def test_fit_refuses_no_ops():
    with pytest.raises(ValueError, match="at least one"):
        fit([])


def test_observations_are_the_ops_answered_from_rows_once_each():
    shared = PricedOp("aten.mm.default", "MatMulV2", Kind.MEASURED, 10.0, 8.0, calls=3)
    models = [
        ModelLedger({"TP": 4}, {"k1": shared,
                                "k2": PricedOp("aten.view.default", "aten.view.default",
                                               Kind.ZERO_COST, 0.0, 0.0),
                                "k3": PricedOp("aten.pow.Tensor_Scalar", "x", Kind.FALLBACK,
                                               5.0, 5.0, "unmapped"),
                                "k4": PricedOp("aten.add.Tensor", "Add", Kind.INTERPOLATED,
                                               3.0, 1.5)}),
        ModelLedger({"TP": 8}, {"k1": shared,
                                "k5": PricedOp("aten.mm.default", "MatMulV2", Kind.PARTIAL,
                                               7.0, 8.0)}),
    ]
    found = observations(models)
    assert found == [Observation("aten.add.Tensor", "Add", "interpolated", 3.0, 1.5),
                     Observation("aten.mm.default", "MatMulV2", "measured", 10.0, 8.0)]
    assert np.isclose(found[0].ratio, 2.0)
