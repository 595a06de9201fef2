"""Leave-one-out evaluation on fixtures with hand-computable errors."""

from __future__ import annotations

import numpy as np
import pytest
from profstore.evaluation.holdout import error_stats, hull_vertices, nearest, run_holdout
from profstore.model.result import Reason
from profstore.storage import schema as t
from sqlalchemy import func, select


def by_x(report):
    return {p.axes[0] / 10: p for p in report.points}


def test_linear_function_interior_errors_are_zero(linear_store):
    report = run_holdout(linear_store, "v0.18")
    points = by_x(report)
    for x in (2.0, 3.0, 4.0):
        assert points[x].predicted_us == pytest.approx(2 * x + 3, abs=1e-9)
        assert points[x].ape == pytest.approx(0.0, abs=1e-9)
        assert points[x].method == "linear_1d"
    (stats,) = report.paths
    assert (stats.path, stats.points, stats.eligible, stats.answered) == ("generic", 5, 3, 3)
    assert stats.ape == {"median": pytest.approx(0.0, abs=1e-9),
                         "p90": pytest.approx(0.0, abs=1e-9), "max": pytest.approx(0.0, abs=1e-9)}


def test_end_points_are_boundary_and_not_answerable(linear_store):
    report = run_holdout(linear_store, "v0.18")
    points = by_x(report)
    for x in (1.0, 5.0):
        assert points[x].boundary is True
        assert points[x].predicted_us is None
        assert points[x].reason == Reason.OUTSIDE_RANGE.value
    assert [p.boundary for p in report.points] == [True, False, False, False, True]
    (stats,) = report.paths
    assert (stats.boundary, stats.boundary_answered, stats.coverage) == (2, 0, 1.0)


def test_square_function_errors_match_hand_computation(square_store):
    points = by_x(run_holdout(square_store, "v0.18"))
    # x=2: (1+9)/2 = 5 vs 4; x=3: (4+16)/2 = 10 vs median(8, 10) = 9; x=4: (9+25)/2 = 17 vs 16
    assert points[2.0].predicted_us == pytest.approx(5.0)
    assert points[2.0].ape == pytest.approx(25.0)
    assert points[3.0].truth_us == 9.0
    assert points[3.0].predicted_us == pytest.approx(10.0)
    assert points[3.0].ape == pytest.approx(100 / 9)
    assert points[4.0].ape == pytest.approx(6.25)


def test_duplicate_twins_are_hidden_together(square_store):
    point = by_x(run_holdout(square_store, "v0.18"))[3.0]
    assert point.rows == 2
    assert point.method == "linear_1d"
    assert point.predicted_us != 9.0


def test_square_function_statistics_and_nearest_neighbour_baseline(square_store):
    report = run_holdout(square_store, "v0.18")
    (stats,) = report.paths
    assert stats.ape["median"] == pytest.approx(100 / 9)
    assert stats.ape["p90"] == pytest.approx(100 / 9 + 0.8 * (25 - 100 / 9))
    assert stats.ape["max"] == pytest.approx(25.0)
    points = by_x(report)
    # equidistant neighbours: the first in sorted order (the lower x) is copied
    assert (points[2.0].nn_axes, points[2.0].nn_us) == ([10.0], 1.0)
    assert points[2.0].nn_ape == pytest.approx(75.0)
    assert (points[3.0].nn_axes, points[3.0].nn_us) == ([20.0], 4.0)
    assert points[3.0].nn_ape == pytest.approx(500 / 9)
    assert points[4.0].nn_ape == pytest.approx(43.75)
    assert stats.nn_ape["median"] == pytest.approx(500 / 9)
    assert stats.nn_ape["max"] == pytest.approx(75.0)


def test_holdout_leaves_the_database_unchanged(square_store):
    def count():
        with square_store.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(t.sample_point)).scalar()

    before = count()
    run_holdout(square_store, "v0.18")
    assert count() == before
    assert square_store.lookup_many([], "v0.18") == []


def test_filters_select_nothing_for_an_unknown_kernel(square_store):
    report = run_holdout(square_store, "v0.18", kernel="NoSuchKernel")
    assert (report.points, report.paths, report.groups) == ([], [], [])


def test_error_stats_of_three_values():
    assert error_stats([25.0, 6.25, 100 / 9]) == {
        "median": pytest.approx(100 / 9), "p90": pytest.approx(100 / 9 + 0.8 * (25 - 100 / 9)),
        "max": 25.0}
    assert error_stats([]) == {"median": None, "p90": None, "max": None}


def test_hull_vertices_of_a_grid_are_its_corners():
    grid = np.array([[x, y] for x in (0, 1, 2) for y in (0, 10, 20)], dtype=float)
    assert hull_vertices(grid) == {0, 2, 6, 8}


def test_hull_vertices_of_collinear_3d_points_are_the_ends():
    line = np.array([[i, 2 * i, 5.0] for i in (3, 0, 1, 2)], dtype=float)
    assert hull_vertices(line) == {0, 1}


def test_hull_vertices_of_a_flat_3d_set_use_its_plane():
    plane = np.array([[x, y, 7.0] for x in (0, 1, 2) for y in (0, 1, 2)], dtype=float)
    assert hull_vertices(plane) == {0, 2, 6, 8}


def test_nearest_uses_normalised_axes():
    coords = np.array([[0.0, 0.0], [1.0, 100.0], [0.0, 30.0]])
    # unnormalised, (0, 30) is far from (0, 0); normalised by span it is the nearest
    assert nearest(coords, 0, [1, 2]) == 2
    assert nearest(coords, 0, []) is None
