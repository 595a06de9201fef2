"""Pure interpolation geometry: linear in 1-D, barycentric over a Delaunay simplex in 2-D/3-D.

Kept apart from I/O on purpose (no database; the only project import is the shared LRU) so that
it can be tested with hand-computable numbers. scipy is imported on the first 2-D/3-D
triangulation, so a process that only answers exact and 1-D lookups never loads it.
Interpolation is strictly linear and never extrapolates: every answer is either a measured
value, a convex combination of measured values, or a diagnostic saying why not.
"""

from __future__ import annotations

import enum
from bisect import bisect_right
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from profstore.lru import LRU

if TYPE_CHECKING:
    from scipy.spatial import Delaunay
    from threadpoolctl import ThreadpoolController

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


def _tol(x: float | np.ndarray) -> float | np.ndarray:
    return EXACT_RTOL * np.maximum(1.0, np.abs(x))


def _fmt(v: float) -> str:
    """Human number: integers without a trailing '.0', others with 6 significant digits."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


def _beyond(name: str, value: float, bound: float, *, above: bool) -> str:
    where = "above the largest" if above else "below the smallest"
    return f"target {name} {_fmt(value)} {where} measured {name} {_fmt(bound)}"


def _fail(diag: Diagnostic, message: str, boundary: dict[str, Any],
          vertices: tuple[int, ...] = (), weights: tuple[float, ...] = ()) -> GeometryResult:
    return GeometryResult(diag, None, vertices, weights, boundary, message)


def _guard_message(vertex_values: np.ndarray, value: float) -> str | None:
    """Why a non-exact result is not a trustworthy latency, or None when it is."""
    if not np.all(np.isfinite(vertex_values)) or np.any(vertex_values <= 0):
        return f"a vertex latency is non-finite or non-positive ({vertex_values.tolist()})"
    if not np.isfinite(value) or value <= 0:
        return f"interpolated latency {value!r} is non-finite or non-positive"
    lo, hi = float(vertex_values.min()), float(vertex_values.max())
    if value < lo - GUARD_RTOL * abs(lo) or value > hi + GUARD_RTOL * abs(hi):
        return (f"interpolated latency {_fmt(value)} outside its vertices' range "
                f"[{_fmt(lo)}, {_fmt(hi)}]")
    return None


def _finish(vertices: tuple[int, ...], weights: np.ndarray, vertex_values: np.ndarray,
            boundary: dict[str, Any], message: str) -> GeometryResult:
    """Combine weights and values, then apply the latency guard."""
    w = tuple(float(v) for v in weights)
    with np.errstate(invalid="ignore", over="ignore"):
        value = float(np.dot(weights, vertex_values))
    problem = _guard_message(vertex_values, value)
    if problem is not None:
        return _fail(Diagnostic.LATENCY_GUARD, problem, boundary, vertices, w)
    return GeometryResult(Diagnostic.INTERPOLATED, value, vertices, w, boundary, message)


def _as_1d(xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray,
           x: float) -> tuple[np.ndarray, np.ndarray]:
    xa = np.asarray(xs, dtype=float)
    ya = np.asarray(ys, dtype=float)
    if xa.ndim != 1 or ya.shape != xa.shape:
        raise ValueError(f"xs and ys must be 1-D of equal length, got {xa.shape} and {ya.shape}")
    if not np.all(np.isfinite(xa)) or not np.isfinite(x):
        raise ValueError("coordinates and target must be finite")
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
    The points are handled as Python floats with ``bisect``: a regime has a handful of points,
    where numpy's per-call overhead would be most of the cost.
    """
    xa, ya = _as_1d(xs, ys, x)
    xl, x = xa.tolist(), float(x)
    order, sx, nearest = _order_1d(xa, xl, x)
    if _has_duplicates(sx):
        raise ValueError(f"duplicate measured {axis_name} values; aggregate them first")
    if not sx:
        return _fail(Diagnostic.INSUFFICIENT, f"no measured {axis_name} points to interpolate from",
                     _boundary_1d(None, None, sx))
    if abs(xl[nearest] - x) <= EXACT_RTOL * max(1.0, abs(x)):
        bnd = _boundary_1d(xl[nearest], xl[nearest], sx)
        return GeometryResult(Diagnostic.EXACT, float(ya[nearest]), (nearest,), (1.0,), bnd,
                              f"{axis_name} {_fmt(x)} is a measured point")
    if len(sx) == 1:
        side: tuple[float | None, float | None] = (None, sx[0]) if x < sx[0] else (sx[0], None)
        return _fail(Diagnostic.INSUFFICIENT,
                     f"only one measured {axis_name} ({_fmt(sx[0])}); cannot interpolate at "
                     f"{_fmt(x)}", _boundary_1d(*side, sx))
    if x < sx[0]:
        return _fail(Diagnostic.OUTSIDE_RANGE, _beyond(axis_name, x, sx[0], above=False),
                     _boundary_1d(None, sx[0], sx))
    if x > sx[-1]:
        return _fail(Diagnostic.OUTSIDE_RANGE, _beyond(axis_name, x, sx[-1], above=True),
                     _boundary_1d(sx[-1], None, sx))
    k = bisect_right(sx, x)
    lo, hi = order[k - 1], order[k]
    x0, x1 = xl[lo], xl[hi]
    w_hi = (x - x0) / (x1 - x0)
    weights = np.array([1.0 - w_hi, w_hi])
    return _finish((lo, hi), weights, ya[[lo, hi]], _boundary_1d(x0, x1, sx),
                   f"{axis_name} {_fmt(x)} interpolated between {_fmt(x0)} and {_fmt(x1)}")


def _order_1d(xa: np.ndarray, xl: list[float], x: float) -> tuple[list[int], list[float], int]:
    """The stable ascending order, the sorted coordinates and the index nearest ``x`` (the
    first of equals); numpy only for a long axis, where it is the cheaper."""
    if len(xl) > 64:
        order = np.argsort(xa, kind="stable").tolist()
        return order, [xl[i] for i in order], int(np.argmin(np.abs(xa - x)))
    order = sorted(range(len(xl)), key=xl.__getitem__)
    nearest = min(range(len(xl)), key=lambda i: abs(xl[i] - x)) if xl else -1
    return order, [xl[i] for i in order], nearest


def _has_duplicates(sx: list[float]) -> bool:
    """Whether two sorted coordinates are the same within ``EXACT_RTOL``."""
    if len(sx) > 64:
        a = np.asarray(sx)
        return bool(np.any(np.diff(a) <= _tol(a[1:])))
    return any(b - a <= EXACT_RTOL * max(1.0, abs(b)) for a, b in zip(sx, sx[1:]))


def _as_points(points: np.ndarray) -> np.ndarray:
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] not in (2, 3):
        raise ValueError(f"points must have shape (n, 2) or (n, 3), got {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ValueError("point coordinates must be finite")
    return pts


def _check_unique(pts: np.ndarray) -> None:
    if pts.shape[0] > 1 and np.unique(pts, axis=0).shape[0] != pts.shape[0]:
        raise ValueError("duplicate measured points; aggregate them first")


def _boundary_nd(pts: np.ndarray, hull_vertices: int | None = None,
                 simplex: Sequence[int] = ()) -> dict[str, Any]:
    """n-D boundary evidence; ``hull_vertices`` is None when no triangulation was needed."""
    empty = pts.shape[0] == 0
    return {
        "hull_vertices": hull_vertices,
        "simplex": [int(i) for i in simplex],
        "axis_min": [] if empty else pts.min(axis=0).tolist(),
        "axis_max": [] if empty else pts.max(axis=0).tolist(),
    }


def affine_rank(points: np.ndarray) -> int:
    """Dimension of the affine hull of ``points`` (0 for one point, 1 collinear, 2 coplanar, ...).

    Each axis is rescaled by its span first, so the answer does not depend on axis units
    (M up to 65536 next to a K of 8 must not look "flat").
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[0] < 2:
        return 0
    centred = pts - pts[0]
    span = np.ptp(pts, axis=0)
    centred = centred / np.where(span > 0, span, 1.0)
    s = np.linalg.svd(centred, compute_uv=False)
    if s.size == 0 or s[0] == 0:
        return 0
    return int(np.sum(s > RANK_RTOL * s[0]))


class Triangulation:
    """A Delaunay triangulation over per-axis normalised coordinates, reusable for many targets.

    Holds only the points (a read-only copy), never values: one triangulation serves every
    latency column measured on the same grid.
    """

    def __init__(self, points: np.ndarray, delaunay: Delaunay,
                 axis_min: np.ndarray, axis_max: np.ndarray) -> None:
        self.points = points
        self.delaunay = delaunay
        self.axis_min = axis_min
        self.axis_max = axis_max
        self.hull_vertices = int(np.unique(delaunay.convex_hull).size)

    @property
    def npoints(self) -> int:
        return int(self.points.shape[0])

    @classmethod
    def build(cls, points: np.ndarray) -> Triangulation | GeometryResult:
        """Triangulate, or explain (INSUFFICIENT / DEGENERATE) why the points cannot be."""
        pts = _as_points(points)
        _check_unique(pts)
        n, d = pts.shape
        if n < d + 1:
            return _fail(Diagnostic.INSUFFICIENT,
                         f"{n} measured point(s); {d}-D interpolation needs at least {d + 1}",
                         _boundary_nd(pts))
        if affine_rank(pts) < d:
            shape = "collinear" if d == 2 else "coplanar"
            return _fail(Diagnostic.DEGENERATE,
                         f"the {n} measured points are {shape}; they span no {d}-D region",
                         _boundary_nd(pts))
        from scipy.spatial import Delaunay, QhullError

        lo, hi = pts.min(axis=0), pts.max(axis=0)
        try:
            with one_blas_thread():
                delaunay = Delaunay((pts - lo) / (hi - lo))
                _set_transforms(delaunay)
        except QhullError as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else "QhullError"
            return _fail(Diagnostic.DEGENERATE, f"Delaunay triangulation failed: {first_line}",
                         _boundary_nd(pts))
        frozen = pts.copy()
        frozen.flags.writeable = False
        return cls(frozen, delaunay, lo, hi)

    def normalise(self, target: Sequence[float] | np.ndarray) -> np.ndarray:
        return (np.asarray(target, dtype=float) - self.axis_min) / (self.axis_max - self.axis_min)

    def _barycentric(self, simplices: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Barycentric coordinates of ``q`` in each listed simplex, shape (len, d+1)."""
        d = self.points.shape[1]
        tr = self.delaunay.transform[simplices]
        with np.errstate(invalid="ignore"):
            c = np.einsum("sij,sj->si", tr[:, :d, :], q - tr[:, d, :])
        return np.concatenate([c, 1.0 - c.sum(axis=1, keepdims=True)], axis=1)

    def _barycentric_one(self, simplex: int, q: np.ndarray) -> np.ndarray:
        """Barycentric coordinates of ``q`` in one simplex, by a (d × d) solve.

        Cheaper than ``Delaunay.transform``, which inverts every simplex on first use."""
        vertices = self.delaunay.points[self.delaunay.simplices[simplex]]
        edges = (vertices[:-1] - vertices[-1]).T
        try:
            c = np.linalg.solve(edges, q - vertices[-1])
        except np.linalg.LinAlgError:
            return np.full(len(vertices), np.nan)
        return np.concatenate([c, [1.0 - c.sum()]])

    def locate(self, target: Sequence[float] | np.ndarray) -> tuple[int, np.ndarray] | None:
        """The simplex containing ``target`` (original units) and its clipped weights, or None.

        Uses qhull's walk first; if that lands on a flat simplex (possible with co-spherical
        grids) it falls back to checking every simplex and keeps the most interior one.
        """
        q = self.normalise(target)
        with one_blas_thread():
            return self._locate(q)

    def _locate(self, q: np.ndarray) -> tuple[int, np.ndarray] | None:
        s = int(self.delaunay.find_simplex(q, tol=BARY_TOL))
        if s >= 0:
            w = _clip_weights(self._barycentric_one(s, q))
            if w is not None:
                return s, w
        all_w = self._barycentric(np.arange(self.delaunay.nsimplex), q)
        finite = np.all(np.isfinite(all_w), axis=1)
        worst = np.where(finite, all_w.min(axis=1), -np.inf)
        best = int(np.argmax(worst))
        if worst[best] < -BARY_TOL:
            return None
        w = _clip_weights(all_w[best])
        return None if w is None else (best, w)


def _clip_weights(w: np.ndarray) -> np.ndarray | None:
    """Zero tiny negatives from round-off and renormalise; None if genuinely outside or NaN."""
    if not np.all(np.isfinite(w)) or np.any(w < -BARY_TOL):
        return None
    w = np.where(w < 0, 0.0, w)
    total = w.sum()
    return None if total <= 0 else w / total


class TriangulationCache:
    """Bounded LRU of triangulations keyed by any hashable (e.g. an operator/hardware key).

    Only successful builds are cached. If a key comes back with different points (new
    measurements were ingested) the entry is rebuilt rather than served stale.
    """

    def __init__(self, maxsize: int = 256) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self._entries = LRU(maxsize)

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_build(self, key: Hashable, points: np.ndarray) -> Triangulation | GeometryResult:
        pts = _as_points(points)
        cached = self._entries.get(key)
        if cached is not None and np.array_equal(cached.points, pts):
            return cached
        built = Triangulation.build(pts)
        if isinstance(built, Triangulation):
            self._entries.put(key, built)
        return built


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread for the small solves of a triangulation: on a busy machine
    OpenBLAS's thread hand-off turns a few milliseconds into tens or hundreds."""
    with _controller().limit(limits=1, user_api="blas"):
        yield


def _set_transforms(delaunay: Delaunay) -> None:
    """Fill ``Delaunay.transform`` (what ``find_simplex`` locates with) with the inverse edge
    matrices by the adjugate formula, vectorised over simplices, instead of scipy's LAPACK
    solve and condition estimate per simplex (milliseconds for a thousand-point regime). A
    simplex whose edge matrix is singular or ill-conditioned (reciprocal 1-norm condition
    below 1000·eps, scipy's limit) is all NaN, as scipy makes it."""
    if getattr(delaunay, "_transform", False) is not None:
        return
    points, simplices = delaunay.points, delaunay.simplices
    d = points.shape[1]
    last = points[simplices[:, d]]
    edges = (points[simplices[:, :d]] - last[:, None, :]).transpose(0, 2, 1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inverse = _adjugate_inverse(edges)
        norm = np.abs(edges).sum(axis=1).max(axis=1) * np.abs(inverse).sum(axis=1).max(axis=1)
        bad = ~(1.0 / norm >= 1000 * np.finfo(float).eps)
    transform = np.empty((len(simplices), d + 1, d))
    transform[:, :d, :] = inverse
    transform[:, d, :] = last
    transform[bad] = np.nan
    delaunay._transform = transform


def _adjugate_inverse(m: np.ndarray) -> np.ndarray:
    """Inverses of a stack of 2×2 or 3×3 matrices (inf/NaN where singular)."""
    if m.shape[1] == 2:
        a, b, c, e = m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1]
        adj = np.stack([np.stack([e, -b], -1), np.stack([-c, a], -1)], 1)
        det = a * e - b * c
    else:
        c0, c1, c2 = m[:, :, 0], m[:, :, 1], m[:, :, 2]
        adj = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], 1)
        det = (c0 * adj[:, 0]).sum(axis=1)
    return adj / det[:, None, None]


def _describe(target: np.ndarray, names: Sequence[str]) -> str:
    return ", ".join(f"{n}={_fmt(v)}" for n, v in zip(names, target, strict=True))


def _outside_axis(target: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  names: Sequence[str]) -> str | None:
    """Message for the first axis on which the target leaves the measured range, else None."""
    for i, name in enumerate(names):
        if target[i] < lo[i] - _tol(lo[i]):
            return _beyond(name, target[i], lo[i], above=False)
        if target[i] > hi[i] + _tol(hi[i]):
            return _beyond(name, target[i], hi[i], above=True)
    return None


def _prepare_nd(points: np.ndarray, values: np.ndarray, target: Sequence[float] | np.ndarray,
                axis_names: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                           tuple[str, ...]]:
    pts = _as_points(points)
    vals = np.asarray(values, dtype=float)
    t = np.asarray(target, dtype=float)
    d = pts.shape[1]
    if vals.shape != (pts.shape[0],):
        raise ValueError(f"values must have shape ({pts.shape[0]},), got {vals.shape}")
    if t.shape != (d,) or not np.all(np.isfinite(t)):
        raise ValueError(f"target must be {d} finite coordinates, got {target!r}")
    names = tuple(axis_names) if axis_names is not None else ("x", "y", "z")[:d]
    if len(names) != d:
        raise ValueError(f"expected {d} axis names, got {len(names)}")
    return pts, vals, t, names


def interpolate_simplex(points: np.ndarray, values: np.ndarray,
                        target: Sequence[float] | np.ndarray, *,
                        triangulation: Triangulation | None = None,
                        axis_names: Sequence[str] | None = None) -> GeometryResult:
    """Barycentric interpolation of ``values`` at ``target`` over a Delaunay simplex (2-D/3-D).

    ``triangulation`` may be a prepared :class:`Triangulation` of exactly these ``points``; it is
    then reused instead of rebuilt. Raises ValueError on shape errors, duplicate points, or a
    triangulation built from other points.
    """
    pts, vals, t, names = _prepare_nd(points, values, target, axis_names)
    if triangulation is None:
        _check_unique(pts)
    elif triangulation.npoints != pts.shape[0] or not np.array_equal(triangulation.points, pts):
        raise ValueError("triangulation was built from different points")
    hits = np.flatnonzero(np.all(np.abs(pts - t) <= _tol(t), axis=1))
    if hits.size:
        i = int(hits[0])
        hull = triangulation.hull_vertices if triangulation is not None else None
        return GeometryResult(Diagnostic.EXACT, float(vals[i]), (i,), (1.0,),
                              _boundary_nd(pts, hull, (i,)),
                              f"target ({_describe(t, names)}) is a measured point")
    tri = triangulation if triangulation is not None else Triangulation.build(pts)
    if isinstance(tri, GeometryResult):
        return tri
    outside = _outside_axis(t, tri.axis_min, tri.axis_max, names)
    if outside is not None:
        return _fail(Diagnostic.OUTSIDE_HULL, outside, _boundary_nd(pts, tri.hull_vertices))
    found = tri.locate(t)
    if found is None:
        return _fail(Diagnostic.OUTSIDE_HULL,
                     f"target ({_describe(t, names)}) lies outside the convex hull of the "
                     f"{pts.shape[0]} measured points", _boundary_nd(pts, tri.hull_vertices))
    s, w = found
    simplex = tuple(int(i) for i in tri.delaunay.simplices[s])
    return _finish(simplex, w, vals[list(simplex)], _boundary_nd(pts, tri.hull_vertices, simplex),
                   f"target ({_describe(t, names)}) interpolated inside a simplex of "
                   f"{len(simplex)} measured points")
