"""Barycentric interpolation over a Delaunay simplex in 2-D/3-D (the 1-D case and the
shared outcome types are ``profstore.geometry.line``).

scipy is imported on the first triangulation, so a process that only answers exact and
1-D lookups never loads it. No BLAS thread limit is set around the small solves: the limit
cost more than the solve it wrapped (docs/adr/0123-no-blas-thread-limit.md).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from profstore.geometry.outcome import (
    BARY_TOL,
    RANK_RTOL,
    Diagnostic,
    GeometryResult,
    beyond,
    failure,
    finish,
    human_number,
    tolerance,
)
from profstore.model.clock_cache import ClockCache

if TYPE_CHECKING:
    from scipy.spatial import Delaunay


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
            return failure(Diagnostic.INSUFFICIENT,
                         f"{n} measured point(s); {d}-D interpolation needs at least {d + 1}",
                         _boundary_nd(pts))
        if affine_rank(pts) < d:
            shape = "collinear" if d == 2 else "coplanar"
            return failure(Diagnostic.DEGENERATE,
                         f"the {n} measured points are {shape}; they span no {d}-D region",
                         _boundary_nd(pts))
        from scipy.spatial import Delaunay, QhullError

        lo, hi = pts.min(axis=0), pts.max(axis=0)
        try:
            delaunay = Delaunay((pts - lo) / (hi - lo))
            _set_transforms(delaunay)
        except QhullError as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else "QhullError"
            return failure(Diagnostic.DEGENERATE, f"Delaunay triangulation failed: {first_line}",
                         _boundary_nd(pts))
        return cls(_frozen(pts), delaunay, lo, hi)

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
    """Bounded ClockCache of triangulations keyed by any hashable (e.g. an operator/hardware key).

    A build that fails (too few or degenerate points) is kept too, with the points it was
    tried on: a search asks the same degenerate candidate set at every new target of a
    regime (its nearest regimes' answers on every miss), and a failed build costs as much
    as a good one. If a key comes back with different points (new measurements were
    ingested) the entry is rebuilt rather than served stale.
    """

    def __init__(self, maxsize: int = 256) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self._entries: ClockCache[Hashable, tuple[np.ndarray, Triangulation | GeometryResult]] = (
            ClockCache(maxsize))

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_build(self, key: Hashable, points: np.ndarray) -> Triangulation | GeometryResult:
        pts = _as_points(points)
        cached = self._entries.get(key)
        if cached is not None and np.array_equal(cached[0], pts):
            return cached[1]
        built = Triangulation.build(pts)
        kept = built.points if isinstance(built, Triangulation) else _frozen(pts)
        self._entries.put(key, (kept, built))
        return built


def _frozen(points: np.ndarray) -> np.ndarray:
    copy = points.copy()
    copy.flags.writeable = False
    return copy


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
    return ", ".join(f"{n}={human_number(v)}" for n, v in zip(names, target, strict=True))


def _outside_axis(target: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  names: Sequence[str]) -> str | None:
    """Message for the first axis on which the target leaves the measured range, else None."""
    for i, name in enumerate(names):
        if target[i] < lo[i] - tolerance(lo[i]):
            return beyond(name, target[i], lo[i], above=False)
        if target[i] > hi[i] + tolerance(hi[i]):
            return beyond(name, target[i], hi[i], above=True)
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
    hits = np.flatnonzero(np.all(np.abs(pts - t) <= tolerance(t), axis=1))
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
        return failure(Diagnostic.OUTSIDE_HULL, outside, _boundary_nd(pts, tri.hull_vertices))
    found = tri.locate(t)
    if found is None:
        return failure(Diagnostic.OUTSIDE_HULL,
                     f"target ({_describe(t, names)}) lies outside the convex hull of the "
                     f"{pts.shape[0]} measured points", _boundary_nd(pts, tri.hull_vertices))
    s, w = found
    simplex = tuple(int(i) for i in tri.delaunay.simplices[s])
    return finish(simplex, w, vals[list(simplex)], _boundary_nd(pts, tri.hull_vertices, simplex),
                   f"target ({_describe(t, names)}) interpolated inside a simplex of "
                   f"{len(simplex)} measured points")
