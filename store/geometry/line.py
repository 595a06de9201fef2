"""Linear interpolation in 1-D: between the two measured neighbours of the target, never
beyond the measured range. The 2-D/3-D simplex lives in ``profstore.geometry.simplex``.

Kept apart from I/O on purpose (no database) so that it can be tested with hand-computable
numbers.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from profstore.geometry.outcome import (
    EXACT_RTOL,
    Diagnostic,
    GeometryResult,
    beyond,
    combine,
    failure,
    human_number,
    tolerance,
)


def _as_1d(xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Both as float arrays of one dimension and equal length (finiteness is checked
    where the order is found: ``_sorted_1d``)."""
    xa = np.asarray(xs, dtype=float)
    ya = np.asarray(ys, dtype=float)
    if xa.ndim != 1 or ya.shape != xa.shape:
        raise ValueError(f"xs and ys must be 1-D of equal length, got {xa.shape} and {ya.shape}")
    return xa, ya


def _boundary_1d(lower: float | None, upper: float | None,
                 sx: np.ndarray | Sequence[float]) -> dict[str, Any]:
    return {
        "lower": None if lower is None else float(lower),
        "upper": None if upper is None else float(upper),
        "min": float(sx[0]) if len(sx) else None,
        "max": float(sx[-1]) if len(sx) else None,
    }


def interpolate_1d(xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray,
                   x: float, *, axis_name: str = "x") -> GeometryResult:
    """Linear interpolation of ``ys`` at ``x`` between the nearest points strictly either side.

    Raises ValueError for programming errors: mismatched shapes, non-finite coordinates, or two
    measured points at the same ``x`` (the caller is expected to have aggregated duplicates).
    """
    return Line(xs, ys).at(x, axis_name)


class Line:
    """The measured points of one axis, sorted once: each target is then a bisect. A
    lookup keeps the line of a regime's candidates, so a regime with many points costs
    its sort once, not per target (the outcome is ``interpolate_1d``'s)."""

    def __init__(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray) -> None:
        self.xa, self.ya = _as_1d(xs, ys)
        self.xl: list[float] = self.xa.tolist()
        self.order, self.sx, self.duplicates = _sorted_1d(self.xa, self.xl)
        self._between: dict[int, _Interval] = {}
        """What targets between sorted points ``k - 1`` and ``k`` share, by ``k``, made
        when first reached."""

    def _interval(self, k: int) -> _Interval:
        found = self._between.get(k)
        if found is None:
            lo, hi = self.order[k - 1], self.order[k]
            values = [float(self.ya[lo]), float(self.ya[hi])]
            found = self._between[k] = _Interval(
                lo, hi, values, np.array(values),
                f"interpolated between {human_number(self.sx[k - 1])} and "
                f"{human_number(self.sx[k])}")
        return found

    def at(self, x: float, axis_name: str = "x") -> GeometryResult:
        """Interpolate at ``x`` (see ``interpolate_1d``). A target within ``EXACT_RTOL`` of
        a neighbour in sorted order is a measured point, its index (the first of equals)
        found by a full scan; any other target is not, so the bisect alone places it."""
        if not (math.isfinite(x) if type(x) is float else np.isfinite(x)):
            raise ValueError("coordinates and target must be finite")
        x, xl, sx = float(x), self.xl, self.sx
        if self.duplicates:
            raise ValueError(f"duplicate measured {axis_name} values; aggregate them first")
        if not sx:
            return failure(Diagnostic.INSUFFICIENT,
                         f"no measured {axis_name} points to interpolate from",
                         _boundary_1d(None, None, sx))
        k = bisect_right(sx, x)
        below = x - sx[k - 1] if k > 0 else math.inf  # sx[k - 1] <= x < sx[k]
        above = sx[k] - x if k < len(sx) else math.inf
        if min(below, above) <= EXACT_RTOL * max(1.0, abs(x)):
            nearest = _nearest_scan(self.xa, xl, x)
            bnd = _boundary_1d(xl[nearest], xl[nearest], sx)
            return GeometryResult(Diagnostic.EXACT, float(self.ya[nearest]), (nearest,), (1.0,),
                                  bnd, f"{axis_name} {human_number(x)} is a measured point")
        if len(sx) == 1:
            side: tuple[float | None, float | None] = (None, sx[0]) if x < sx[0] else (sx[0], None)
            return failure(Diagnostic.INSUFFICIENT,
                           f"only one measured {axis_name} ({human_number(sx[0])}); cannot "
                           f"interpolate at {human_number(x)}", _boundary_1d(*side, sx))
        if k == 0:
            return failure(Diagnostic.OUTSIDE_RANGE, beyond(axis_name, x, sx[0], above=False),
                         _boundary_1d(None, sx[0], sx))
        if k == len(sx):
            return failure(Diagnostic.OUTSIDE_RANGE, beyond(axis_name, x, sx[-1], above=True),
                         _boundary_1d(sx[-1], None, sx))
        span = self._interval(k)
        x0, x1 = xl[span.lo], xl[span.hi]
        w_hi = (x - x0) / (x1 - x0)
        w = (1.0 - w_hi, w_hi)
        return combine((span.lo, span.hi), np.array(w), span.array, w, span.values,
                         {"lower": x0, "upper": x1, "min": sx[0], "max": sx[-1]},
                         f"{axis_name} {human_number(x)} {span.text}")


class _Interval(NamedTuple):
    """Two neighbouring measured points of a ``Line`` (indices into its points), their
    latencies (a list, and an array for numpy's dot) and the end of a target's message."""

    lo: int
    hi: int
    values: list[float]
    array: np.ndarray
    text: str


def _sorted_1d(xa: np.ndarray, xl: list[float]) -> tuple[Sequence[int], list[float], bool]:
    """The stable ascending order, the sorted coordinates, and whether two of them are
    the same within ``EXACT_RTOL``; raises ValueError for a non-finite coordinate (the
    target is checked where it is given: ``Line.at``).

    A long axis already ascending between finite ends, as a regime's candidates come, is
    finite throughout and keeps its order; its smallest step settles the duplicate check
    unless it is within the largest tolerance (then every step is compared with its own)."""
    n = len(xl)
    if n > 64 and math.isfinite(xl[0]) and math.isfinite(xl[-1]):
        later, earlier = xa[1:], xa[:-1]
        if (later >= earlier).all():  # NaN compares False: such an axis is not ascending
            steps = later - earlier
            least = float(steps.min())
            if least > EXACT_RTOL * max(1.0, abs(xl[0]), abs(xl[-1])):
                return range(n), xl, False
            return range(n), xl, bool((steps <= tolerance(later)).any())
    if not np.isfinite(xa).all():
        raise ValueError("coordinates and target must be finite")
    if n > 64:
        order = np.argsort(xa, kind="stable").tolist()
    else:
        order = sorted(range(n), key=xl.__getitem__)
    sx = [xl[i] for i in order]
    return order, sx, _has_duplicates(sx)


def _nearest_scan(xa: np.ndarray, xl: list[float], x: float) -> int:
    """The index nearest ``x``, the first of equals, by a full scan."""
    if len(xl) > 64:
        return int(np.argmin(np.abs(xa - x)))
    return min(range(len(xl)), key=lambda i: abs(xl[i] - x))


def _has_duplicates(sx: list[float]) -> bool:
    """Whether two sorted coordinates are the same within ``EXACT_RTOL``."""
    if len(sx) > 64:
        a = np.asarray(sx)
        return bool(np.any(np.diff(a) <= tolerance(a[1:])))
    return any(b - a <= EXACT_RTOL * max(1.0, abs(b)) for a, b in zip(sx, sx[1:]))
