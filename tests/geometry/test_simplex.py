"""Hand-computable checks of barycentric interpolation over a Delaunay simplex in 2-D/3-D
(store/geometry/simplex.py), its triangulation cache, and results of both geometries as
JSON."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from profstore.geometry.line import interpolate_1d
from profstore.geometry.outcome import Diagnostic, GeometryResult
from profstore.geometry.simplex import (
    Triangulation,
    TriangulationCache,
    affine_rank,
    interpolate_simplex,
)

REL = 1e-12

XS = [1.0, 2.0, 4.0, 8.0]
YS = [10.0, 20.0, 40.0, 80.0]


def plane2(p: np.ndarray) -> np.ndarray:
    return 3 * p[..., 0] + 5 * p[..., 1] + 7


def plane3(p: np.ndarray) -> np.ndarray:
    return p[..., 0] + 2 * p[..., 1] + 3 * p[..., 2] + 1


@pytest.fixture
def grid2() -> np.ndarray:
    return np.array(list(itertools.product([0.0, 5.0, 10.0], [0.0, 50.0, 100.0])))


@pytest.fixture
def box3() -> np.ndarray:
    corners = np.array(list(itertools.product([0.0, 4.0], [0.0, 2.0], [0.0, 6.0])))
    return np.vstack([corners, [2.0, 1.0, 3.0]])


def test_2d_plane_interior(grid2: np.ndarray) -> None:
    r = interpolate_simplex(grid2, plane2(grid2), (2.5, 37.0))
    assert r.diagnostic is Diagnostic.INTERPOLATED
    assert r.value == pytest.approx(3 * 2.5 + 5 * 37 + 7, rel=REL)
    assert len(r.vertices) == 3 and len(r.weights) == 3
    assert sum(r.weights) == pytest.approx(1.0, rel=REL)
    assert all(w >= 0 for w in r.weights)
    # The weights reproduce the target itself.
    assert np.asarray(r.weights) @ grid2[list(r.vertices)] == pytest.approx([2.5, 37.0], rel=REL)
    assert r.boundary["simplex"] == list(r.vertices)
    assert r.boundary["axis_min"] == [0.0, 0.0] and r.boundary["axis_max"] == [10.0, 100.0]
    json.dumps(r.boundary)


def test_2d_grid_point_is_exact(grid2: np.ndarray) -> None:
    r = interpolate_simplex(grid2, plane2(grid2), (0.0, 50.0))
    assert r.diagnostic is Diagnostic.EXACT
    assert r.value == 3 * 0 + 5 * 50 + 7
    assert grid2[r.vertices[0]].tolist() == [0.0, 50.0]


@pytest.mark.parametrize("target", [(0.0, 25.0), (10.0, 75.0), (7.5, 100.0), (2.5, 0.0)])
def test_2d_hull_edge_counts_as_inside(grid2: np.ndarray, target: tuple[float, float]) -> None:
    r = interpolate_simplex(grid2, plane2(grid2), target)
    assert r.diagnostic is Diagnostic.INTERPOLATED
    assert r.value == pytest.approx(float(plane2(np.array(target))), rel=REL)


def test_2d_round_off_beyond_edge_still_inside(grid2: np.ndarray) -> None:
    r = interpolate_simplex(grid2, plane2(grid2), (10.0 * (1 + 1e-13), 75.0))
    assert r.diagnostic is Diagnostic.INTERPOLATED
    assert min(r.weights) >= 0.0


def test_2d_outside_axis_range(grid2: np.ndarray) -> None:
    r = interpolate_simplex(grid2, plane2(grid2), (11.0, 5.0), axis_names=("M", "K"))
    assert r.diagnostic is Diagnostic.OUTSIDE_HULL and r.value is None
    assert r.message == "target M 11 above the largest measured M 10"


def test_2d_outside_hull_inside_bounding_box() -> None:
    tri_pts = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    r = interpolate_simplex(tri_pts, plane2(tri_pts), (8.0, 8.0))
    assert r.diagnostic is Diagnostic.OUTSIDE_HULL
    assert "convex hull" in r.message


def test_2d_collinear_is_degenerate() -> None:
    pts = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    r = interpolate_simplex(pts, np.ones(4), (1.5, 3.0))
    assert r.diagnostic is Diagnostic.DEGENERATE
    assert "collinear" in r.message


def test_2d_two_points_insufficient() -> None:
    pts = np.array([[0.0, 0.0], [1.0, 1.0]])
    r = interpolate_simplex(pts, np.ones(2), (0.5, 0.5))
    assert r.diagnostic is Diagnostic.INSUFFICIENT and r.value is None


def test_2d_exact_even_with_too_few_points() -> None:
    pts = np.array([[0.0, 0.0], [1.0, 1.0]])
    r = interpolate_simplex(pts, np.array([3.0, 4.0]), (1.0, 1.0))
    assert r.diagnostic is Diagnostic.EXACT and r.value == 4.0 and r.vertices == (1,)


def test_2d_duplicate_points_raise() -> None:
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError):
        interpolate_simplex(pts, np.ones(4), (0.2, 0.2))


def test_2d_bad_shapes_raise(grid2: np.ndarray) -> None:
    with pytest.raises(ValueError):
        interpolate_simplex(grid2, np.ones(3), (1.0, 1.0))
    with pytest.raises(ValueError):
        interpolate_simplex(grid2, plane2(grid2), (1.0, 1.0, 1.0))
    with pytest.raises(ValueError):
        interpolate_simplex(grid2[:, :1], plane2(grid2), (1.0,))


@pytest.mark.parametrize("bad", [0.0, math.nan, -1.0])
def test_2d_latency_guard(bad: float) -> None:
    pts = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    vals = np.array([5.0, bad, 7.0])
    r = interpolate_simplex(pts, vals, (2.0, 2.0))
    assert r.diagnostic is Diagnostic.LATENCY_GUARD and not r.ok
    assert r.value is None
    assert 1 in r.vertices


def test_2d_scale_robustness() -> None:
    ms = [0.0, 1024.0, 16384.0, 65536.0]
    ks = [0.0, 0.25, 1.0]
    pts = np.array(list(itertools.product(ms, ks)))
    vals = 0.002 * pts[:, 0] + 900.0 * pts[:, 1] + 3.0
    for target in [(40000.0, 0.6), (1500.0, 0.1), (65000.0, 0.99), (100.0, 0.9)]:
        r = interpolate_simplex(pts, vals, target, axis_names=("M", "K"))
        assert r.diagnostic is Diagnostic.INTERPOLATED, r.message
        assert r.value == pytest.approx(0.002 * target[0] + 900.0 * target[1] + 3.0, rel=1e-10)


# ----------------------------------------------------------------------------- 3-D


@pytest.mark.parametrize(
    "target", [(1.0, 0.5, 1.0), (3.0, 1.5, 5.0), (0.1, 1.9, 5.9), (2.0, 1.0, 0.5)]
)
def test_3d_box_interior(box3: np.ndarray, target: tuple[float, float, float]) -> None:
    r = interpolate_simplex(box3, plane3(box3), target)
    assert r.diagnostic is Diagnostic.INTERPOLATED
    assert r.value == pytest.approx(float(plane3(np.array(target))), rel=REL)
    assert len(r.vertices) == 4 and sum(r.weights) == pytest.approx(1.0, rel=REL)


def test_3d_box_face_and_centre(box3: np.ndarray) -> None:
    face = interpolate_simplex(box3, plane3(box3), (4.0, 1.0, 2.0))
    assert face.diagnostic is Diagnostic.INTERPOLATED
    assert face.value == pytest.approx(4 + 2 + 6 + 1, rel=REL)
    centre = interpolate_simplex(box3, plane3(box3), (2.0, 1.0, 3.0))
    assert centre.diagnostic is Diagnostic.EXACT and centre.vertices == (8,)


@pytest.mark.parametrize("target", [(5.0, 1.0, 1.0), (2.0, -0.1, 3.0), (2.0, 1.0, 6.5)])
def test_3d_outside(box3: np.ndarray, target: tuple[float, float, float]) -> None:
    r = interpolate_simplex(box3, plane3(box3), target, axis_names=("M", "N", "K"))
    assert r.diagnostic is Diagnostic.OUTSIDE_HULL and r.value is None


def test_3d_outside_hull_inside_box() -> None:
    pts = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    r = interpolate_simplex(pts, plane3(pts), (0.9, 0.9, 0.9))
    assert r.diagnostic is Diagnostic.OUTSIDE_HULL


def test_3d_coplanar_is_degenerate() -> None:
    pts = np.array(list(itertools.product([0.0, 1.0, 2.0], [0.0, 1.0])))
    pts = np.column_stack([pts, pts[:, 0] + pts[:, 1]])  # all on the plane z = x + y
    r = interpolate_simplex(pts, np.ones(len(pts)), (0.5, 0.5, 1.0))
    assert r.diagnostic is Diagnostic.DEGENERATE
    assert "coplanar" in r.message


def test_3d_three_points_insufficient() -> None:
    pts = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    r = interpolate_simplex(pts, np.ones(3), (0.2, 0.2, 0.0))
    assert r.diagnostic is Diagnostic.INSUFFICIENT


def test_3d_scale_robustness() -> None:
    pts = np.array(list(itertools.product([1.0, 65536.0], [1.0, 7168.0], [0.0, 1.0])))
    vals = 1e-4 * pts[:, 0] + 3e-3 * pts[:, 1] + 50.0 * pts[:, 2] + 2.0
    target = (30000.0, 5000.0, 0.3)
    r = interpolate_simplex(pts, vals, target)
    assert r.value == pytest.approx(1e-4 * 30000 + 3e-3 * 5000 + 50 * 0.3 + 2, rel=1e-10)


# ----------------------------------------------------------------------------- affine rank


def test_affine_rank() -> None:
    assert affine_rank(np.zeros((0, 2))) == 0
    assert affine_rank(np.array([[1.0, 2.0]])) == 0
    assert affine_rank(np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 3.0]])) == 1
    assert affine_rank(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])) == 2
    # Axis scale must not matter: a tiny K range next to a huge M range is still 2-D.
    assert affine_rank(np.array([[0.0, 0.0], [65536.0, 0.0], [0.0, 1e-3]])) == 2


# ----------------------------------------------------------------------------- Triangulation


def test_triangulation_reused_for_several_value_columns(grid2: np.ndarray) -> None:
    tri = Triangulation.build(grid2)
    assert isinstance(tri, Triangulation) and tri.npoints == 9
    a = interpolate_simplex(grid2, plane2(grid2), (2.5, 37.0), triangulation=tri)
    b = interpolate_simplex(grid2, 2 * plane2(grid2), (2.5, 37.0), triangulation=tri)
    assert a.vertices == b.vertices and a.weights == b.weights
    assert b.value == pytest.approx(2 * a.value, rel=REL)
    assert not hasattr(tri, "values")


def test_triangulation_copies_points(grid2: np.ndarray) -> None:
    tri = Triangulation.build(grid2)
    assert isinstance(tri, Triangulation)
    grid2[0, 0] = -1.0
    assert tri.points[0, 0] == 0.0


def test_triangulation_for_other_points_rejected(grid2: np.ndarray) -> None:
    tri = Triangulation.build(grid2)
    assert isinstance(tri, Triangulation)
    with pytest.raises(ValueError):
        interpolate_simplex(grid2[:-1], plane2(grid2[:-1]), (2.5, 37.0), triangulation=tri)
    moved = grid2.copy()
    moved[4] += 1.0
    with pytest.raises(ValueError):
        interpolate_simplex(moved, plane2(moved), (2.5, 37.0), triangulation=tri)


def test_triangulation_build_failures() -> None:
    few = Triangulation.build(np.array([[0.0, 0.0], [1.0, 1.0]]))
    assert isinstance(few, GeometryResult) and few.diagnostic is Diagnostic.INSUFFICIENT
    flat = Triangulation.build(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))
    assert isinstance(flat, GeometryResult) and flat.diagnostic is Diagnostic.DEGENERATE


class _NoWalk:
    """Delegates to a Delaunay but pretends its walk found nothing, forcing the fallback."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def find_simplex(self, *args: object, **kwargs: object) -> int:
        return -1


def test_locate_fallback_matches_walk(box3: np.ndarray) -> None:
    tri = Triangulation.build(box3)
    assert isinstance(tri, Triangulation)
    target = (1.0, 0.5, 1.0)
    walked = interpolate_simplex(box3, plane3(box3), target, triangulation=tri)
    tri.delaunay = _NoWalk(tri.delaunay)
    brute = interpolate_simplex(box3, plane3(box3), target, triangulation=tri)
    assert brute.value == pytest.approx(walked.value, rel=REL)
    assert interpolate_simplex(box3, plane3(box3), (3.9, 1.9, 0.1), triangulation=tri).ok


def test_deterministic(box3: np.ndarray) -> None:
    runs = [interpolate_simplex(box3, plane3(box3), (3.0, 1.5, 5.0)) for _ in range(3)]
    assert len({(r.vertices, r.weights) for r in runs}) == 1


# ----------------------------------------------------------------------------- cache


def test_cache_returns_same_object(grid2: np.ndarray) -> None:
    cache = TriangulationCache(maxsize=4)
    first = cache.get_or_build("gemm", grid2)
    second = cache.get_or_build("gemm", grid2.copy())
    assert isinstance(first, Triangulation) and first is second
    assert len(cache) == 1


def test_cache_evicts_least_recently_used(grid2: np.ndarray) -> None:
    cache = TriangulationCache(maxsize=2)
    a = cache.get_or_build("a", grid2)
    b = cache.get_or_build("b", grid2)
    assert cache.get_or_build("a", grid2) is a  # "a" is now most recent
    cache.get_or_build("c", grid2)  # evicts "b"
    assert len(cache) == 2
    assert cache.get_or_build("a", grid2) is a
    assert cache.get_or_build("b", grid2) is not b


def test_cache_rebuilds_when_points_change(grid2: np.ndarray) -> None:
    cache = TriangulationCache()
    old = cache.get_or_build("k", grid2)
    grown = np.vstack([grid2, [[2.0, 20.0]]])
    new = cache.get_or_build("k", grown)
    assert isinstance(new, Triangulation) and new is not old and new.npoints == 10
    assert len(cache) == 1


def test_cache_keeps_a_failure_for_its_points_only(monkeypatch: pytest.MonkeyPatch) -> None:
    collinear = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    cache = TriangulationCache()
    first = cache.get_or_build("k", collinear)
    assert isinstance(first, GeometryResult) and first.diagnostic is Diagnostic.DEGENERATE
    assert first.message == "the 3 measured points are collinear; they span no 2-D region"
    builds = []
    real_build = Triangulation.build
    monkeypatch.setattr(Triangulation, "build",
                        lambda pts: builds.append(len(pts)) or real_build(pts))
    assert cache.get_or_build("k", collinear.copy()) is first  # served, not rebuilt
    assert builds == []
    grown = cache.get_or_build("k", np.vstack([collinear, [[0.0, 2.0]]]))
    assert isinstance(grown, Triangulation) and grown.npoints == 4  # new points: rebuilt
    assert builds == [4] and len(cache) == 1


def test_cache_rejects_nonpositive_maxsize() -> None:
    with pytest.raises(ValueError):
        TriangulationCache(maxsize=0)


def test_results_are_json_friendly(grid2: np.ndarray) -> None:
    results = [
        interpolate_1d(XS, YS, 3.0),
        interpolate_1d(XS, YS, 9.0),
        interpolate_1d([], [], 1.0),
        interpolate_simplex(grid2, plane2(grid2), (2.5, 37.0)),
        interpolate_simplex(grid2, plane2(grid2), (20.0, 37.0)),
    ]
    for r in results:
        json.dumps({"diagnostic": r.diagnostic.value, "boundary": r.boundary,
                    "vertices": r.vertices, "weights": r.weights})
        assert isinstance(r.message, str) and r.message
