"""What every interpolation shares, in any dimension: tolerances, outcome codes, the result,
and the latency guard a non-exact answer must pass (``line`` and ``simplex`` build on it).

Interpolation is strictly linear and never extrapolates: every answer is either a measured
value, a convex combination of measured values, or a diagnostic saying why not.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Relative tolerance for "the same coordinate": |a - b| <= EXACT_RTOL * max(1, |b|).
EXACT_RTOL = 1e-9
#: Barycentric slack (in normalised coordinates) so points on the hull boundary count as inside.
BARY_TOL = 1e-9
#: Relative slack when checking that a result lies within its vertices' values.
GUARD_RTOL = 1e-9
#: Singular values below RANK_RTOL * largest (on normalised axes) count as zero.
RANK_RTOL = 1e-9


class Diagnostic(str, enum.Enum):
    """Stable snake_case outcome codes; the failure values match the store's miss reasons."""

    EXACT = "exact"
    INTERPOLATED = "interpolated"
    INSUFFICIENT = "insufficient_candidates"
    DEGENERATE = "degenerate_candidates"
    OUTSIDE_RANGE = "outside_range"
    OUTSIDE_HULL = "outside_convex_hull"
    LATENCY_GUARD = "latency_invalid"


@dataclass(frozen=True)
class GeometryResult:
    """Outcome of one interpolation. ``value`` is None exactly when ``ok`` is False."""

    diagnostic: Diagnostic
    value: float | None
    vertices: tuple[int, ...]
    weights: tuple[float, ...]
    boundary: dict[str, Any]
    message: str

    @property
    def ok(self) -> bool:
        return self.diagnostic in (Diagnostic.EXACT, Diagnostic.INTERPOLATED)


def tolerance(x: float | np.ndarray) -> float | np.ndarray:
    return EXACT_RTOL * np.maximum(1.0, np.abs(x))


def human_number(v: float) -> str:
    """Human number: integers without a trailing '.0', others with 6 significant digits."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


def beyond(name: str, value: float, bound: float, *, above: bool) -> str:
    where = "above the largest" if above else "below the smallest"
    return f"target {name} {human_number(value)} {where} measured {name} {human_number(bound)}"


def failure(diag: Diagnostic, message: str, boundary: dict[str, Any],
          vertices: tuple[int, ...] = (), weights: tuple[float, ...] = ()) -> GeometryResult:
    return GeometryResult(diag, None, vertices, weights, boundary, message)


def guard_message(vertex_values: list[float], value: float) -> str | None:
    """Why a non-exact result is not a trustworthy latency, or None when it is."""
    for v in vertex_values:
        if not 0 < v < math.inf:  # NaN fails both comparisons
            return f"a vertex latency is non-finite or non-positive ({vertex_values})"
    if not math.isfinite(value) or value <= 0:
        return f"interpolated latency {value!r} is non-finite or non-positive"
    lo, hi = min(vertex_values), max(vertex_values)
    if value < lo - GUARD_RTOL * abs(lo) or value > hi + GUARD_RTOL * abs(hi):
        return (f"interpolated latency {human_number(value)} outside its vertices' range "
                f"[{human_number(lo)}, {human_number(hi)}]")
    return None


def finish(vertices: tuple[int, ...], weights: np.ndarray, vertex_values: np.ndarray,
            boundary: dict[str, Any], message: str) -> GeometryResult:
    """Combine weights and values (numpy's dot), then apply the latency guard."""
    return combine(vertices, weights, vertex_values, tuple(weights.tolist()),
                     vertex_values.tolist(), boundary, message)


def combine(vertices: tuple[int, ...], weights: np.ndarray, vertex_values: np.ndarray,
              w: tuple[float, ...], values: list[float], boundary: dict[str, Any],
              message: str) -> GeometryResult:
    """``finish`` given the weights and values also as Python floats (``w``, ``values``):
    the guard reads those, as on two to four vertices numpy's per-call cost would dominate."""
    moderate = True  # no dot product of these can warn
    for x in (*w, *values):
        if not -1e150 < x < 1e150:
            moderate = False
            break
    if moderate:
        value = float(np.dot(weights, vertex_values))
    else:  # an infinite, NaN or huge input: the guard reports it, numpy must not warn
        with np.errstate(invalid="ignore", over="ignore"):
            value = float(np.dot(weights, vertex_values))
    problem = guard_message(values, value)
    if problem is not None:
        return failure(Diagnostic.LATENCY_GUARD, problem, boundary, vertices, w)
    return GeometryResult(Diagnostic.INTERPOLATED, value, vertices, w, boundary, message)
