"""Hand-computable checks of 1-D interpolation (store/geometry/line.py) and the outcome it
reports (store/geometry/outcome.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from profstore.geometry.line import interpolate_1d
from profstore.geometry.outcome import Diagnostic

REL = 1e-12

XS = [1.0, 2.0, 4.0, 8.0]
YS = [10.0, 20.0, 40.0, 80.0]


def test_1d_midpoint_interpolates_between_neighbours() -> None:
    r = interpolate_1d(XS, YS, 3.0)
    assert r.diagnostic is Diagnostic.INTERPOLATED and r.ok
    assert r.value == pytest.approx(30.0, rel=REL)
    assert r.vertices == (1, 2)
    assert r.weights == pytest.approx((0.5, 0.5), rel=REL)
    assert r.boundary == {"lower": 2.0, "upper": 4.0, "min": 1.0, "max": 8.0}


def test_1d_uneven_weights() -> None:
    r = interpolate_1d(XS, YS, 5.0)
    assert r.value == pytest.approx(50.0, rel=REL)
    assert r.vertices == (2, 3)
    assert r.weights == pytest.approx((0.75, 0.25), rel=REL)
    assert sum(r.weights) == pytest.approx(1.0, rel=REL)


def test_1d_exact_point() -> None:
    r = interpolate_1d(XS, YS, 4.0)
    assert r.diagnostic is Diagnostic.EXACT and r.ok
    assert r.value == 40.0
    assert r.vertices == (2,) and r.weights == (1.0,)


def test_1d_exact_within_tolerance() -> None:
    r = interpolate_1d(XS, YS, 4.0 * (1 + 1e-12))
    assert r.diagnostic is Diagnostic.EXACT and r.value == 40.0


@pytest.mark.parametrize(("x", "word", "bound"), [(0.5, "below", "1"), (9.0, "above", "8")])
def test_1d_outside_range(x: float, word: str, bound: str) -> None:
    r = interpolate_1d(XS, YS, x, axis_name="tokens")
    assert r.diagnostic is Diagnostic.OUTSIDE_RANGE and not r.ok
    assert r.value is None
    assert "tokens" in r.message and word in r.message and bound in r.message


def test_1d_message_names_axis_and_bound() -> None:
    r = interpolate_1d([1024.0, 4096.0], [1.0, 2.0], 5000.0, axis_name="tokens")
    assert r.message == "target tokens 5000 above the largest measured tokens 4096"
    assert r.boundary == {"lower": 4096.0, "upper": None, "min": 1024.0, "max": 4096.0}


def test_1d_unsorted_input_same_answer_original_indices() -> None:
    order = [3, 0, 2, 1]
    xs = np.array(XS)[order]
    ys = np.array(YS)[order]
    r = interpolate_1d(xs, ys, 3.0)
    assert r.value == pytest.approx(30.0, rel=REL)
    assert (xs[r.vertices[0]], xs[r.vertices[1]]) == (2.0, 4.0)
    assert r.weights == pytest.approx((0.5, 0.5), rel=REL)


def test_1d_single_point_is_insufficient() -> None:
    for x in (0.5, 3.0):
        r = interpolate_1d([2.0], [20.0], x)
        assert r.diagnostic is Diagnostic.INSUFFICIENT and r.value is None
        assert "one" in r.message


def test_1d_single_point_exact_is_exact() -> None:
    r = interpolate_1d([2.0], [20.0], 2.0)
    assert r.diagnostic is Diagnostic.EXACT and r.value == 20.0


def test_1d_no_points_is_insufficient() -> None:
    r = interpolate_1d([], [], 1.0)
    assert r.diagnostic is Diagnostic.INSUFFICIENT and r.value is None


def test_1d_duplicates_raise() -> None:
    with pytest.raises(ValueError):
        interpolate_1d([1.0, 2.0, 2.0], [1.0, 2.0, 3.0], 1.5)


def test_1d_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError):
        interpolate_1d([1.0, 2.0], [1.0], 1.5)


LONG = [64.0 * k for k in range(1, 101)]
"""100 token counts 64, 128, …, 6400: above 64 points a line is checked with numpy."""


@pytest.mark.parametrize("shuffled", [False, True])
def test_1d_long_axis_interpolates_in_either_order(shuffled: bool) -> None:
    xs, ys = list(LONG), [2.0 * x + 1.0 for x in LONG]
    if shuffled:
        xs, ys = xs[::-1], ys[::-1]
    r = interpolate_1d(xs, ys, 1000.0, axis_name="tokens")
    # between 960 (1921 us) and 1024 (2049 us): 40/64 of the way, 2 * 1000 + 1
    assert r.diagnostic is Diagnostic.INTERPOLATED and r.value == pytest.approx(2001.0, rel=REL)
    assert (r.boundary["lower"], r.boundary["upper"]) == (960.0, 1024.0)
    assert (r.boundary["min"], r.boundary["max"]) == (64.0, 6400.0)
    assert r.weights == pytest.approx((0.375, 0.625), rel=REL)


@pytest.mark.parametrize("step", [0.0, 6400.0 * 1e-10])
def test_1d_long_axis_duplicates_raise(step: float) -> None:
    """A repeated last coordinate, exactly or within EXACT_RTOL (1e-9 of 6400)."""
    xs = [*LONG, 6400.0 + step]
    with pytest.raises(ValueError, match="duplicate"):
        interpolate_1d(xs, [1.0] * len(xs), 100.0)


@pytest.mark.parametrize(("xs", "target"), [
    ([*LONG, 6400.0 + 6.4e-5], 6400.0 + 3.2e-5),  # 10x the tolerance at 6400 (6.4e-6)
    ([64.0, 64.0 + 1e-6, *LONG[1:]], 64.0 + 5e-7),  # below 6400's tolerance, above 64's
])
def test_1d_long_axis_close_but_distinct_points_interpolate(xs: list[float],
                                                            target: float) -> None:
    """Two points closer than the largest coordinate's tolerance (1e-9 x 6400) but not
    their own are distinct: the target halfway between them is answered, 1 + 2 / 2."""
    ys = [1.0] * len(xs)
    hi = xs.index(min(x for x in xs if x > target))
    ys[hi] = 3.0
    r = interpolate_1d(xs, ys, target)
    assert r.diagnostic is Diagnostic.INTERPOLATED and r.value == pytest.approx(2.0, rel=1e-6)


@pytest.mark.parametrize("where", [0, 50, 99])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_1d_long_axis_non_finite_coordinate_raises(where: int, bad: float) -> None:
    xs = list(LONG)
    xs[where] = bad
    with pytest.raises(ValueError, match="finite"):
        interpolate_1d(xs, [1.0] * len(xs), 100.0)


@pytest.mark.parametrize("bad", [0.0, -5.0, math.nan, math.inf])
def test_1d_latency_guard(bad: float) -> None:
    r = interpolate_1d([1.0, 2.0, 4.0], [10.0, bad, 40.0], 3.0)
    assert r.diagnostic is Diagnostic.LATENCY_GUARD and not r.ok
    assert r.value is None
    assert r.vertices == (1, 2)


def test_1d_guard_ignores_corrupt_values_not_used() -> None:
    r = interpolate_1d([1.0, 2.0, 4.0], [math.nan, 20.0, 40.0], 3.0)
    assert r.diagnostic is Diagnostic.INTERPOLATED and r.value == pytest.approx(30.0, rel=REL)
