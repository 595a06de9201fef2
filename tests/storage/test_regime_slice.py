"""The columnar regime slice and the candidates built on it, on hand-written point rows.

A fetched point row is (sample id, latency, latency column, line, kernel file name, axis 0,
axis 1, axis 2, semantic key, point id), in any order; every expectation below is read off
the rows by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from profstore.lookup.prepared_candidates import Candidates, merge_points
from profstore.model.mapping import KernelPolicy
from profstore.storage.regime_slice import MeasuredRow, build_slice

AVG, TOTAL = "Average Duration(us)", "Total Duration(us)"


def _rows():
    return [  # deliberately not in point order
        (11, 5.0, AVG, 20, "Mul.csv", 64.0, 2.0, None, None, 105),
        (12, 3.0, AVG, 21, "Mul.csv", 32.0, 2.0, None, None, 104),
        (13, 4.0, TOTAL, 22, "Mul_more.csv", 32.0, 2.0, None, None, 103),
        (14, 2.0, AVG, 23, "Mul.csv", 32.0, 1.0, None, None, 102),
        (15, 2.5, AVG, 24, "Mul.csv", 32.0, 1.0, None, None, 101),
        (16, 9.0, AVG, 25, "Mul.csv", 128.0, 2.0, None, "kv=1", 100),
    ]


def test_points_sorted_by_axes_then_column_latency_and_point_id():
    s = build_slice(_rows())
    assert [s.row(i).sample_id for i in range(len(s))] == [14, 15, 12, 13, 11, 16]
    assert s.axes.tolist() == [[32, 1], [32, 1], [32, 2], [32, 2], [64, 2], [128, 2]]
    assert s.latency.tolist() == [2.0, 2.5, 3.0, 4.0, 5.0, 9.0]
    assert s.column_names == (AVG, TOTAL)


def test_a_row_carries_its_provenance_as_stored():
    row = build_slice(_rows()).row(3)
    assert row == MeasuredRow(13, 4.0, TOTAL, 22, "Mul_more.csv", (32.0, 2.0), None)
    assert row.provenance() == {"file": "Mul_more.csv", "line": 22, "latency_us": 4.0,
                                "latency_column": TOTAL, "axes": [32.0, 2.0]}


def test_points_without_axes_sort_by_column_latency_and_point_id():
    rows = [(1, 2.0, AVG, 3, "Mul.csv", None, None, None, None, 2),
            (2, 2.0, AVG, 4, "Mul.csv", None, None, None, None, 1),
            (3, 1.0, TOTAL, 5, "Mul.csv", None, None, None, None, 0)]
    s = build_slice(rows)
    assert [s.row(i).sample_id for i in range(3)] == [2, 1, 3]
    assert s.axes.shape == (3, 0) and s.row(0).axes == ()
    assert [r.sample_id for r in s.rows_at((), frozenset())] == [2, 1, 3]


def test_rows_at_a_full_coordinate_a_leading_axis_and_with_exclusions():
    s = build_slice(_rows())
    assert [r.sample_id for r in s.rows_at((32.0, 2.0), frozenset())] == [12, 13]
    assert [r.sample_id for r in s.rows_at((32.0,), frozenset())] == [14, 15, 12, 13]
    assert [r.sample_id for r in s.rows_at((32.0, 1.0), frozenset({14}))] == [15]
    assert s.rows_at((32.0, 2.0, 0.0), frozenset()) == []
    assert s.rows_at((48.0, 2.0), frozenset()) == []


def test_without_leaves_out_the_samples_and_keeps_the_order():
    s = build_slice(_rows()).without(frozenset({12, 16}))
    assert [r.sample_id for r in s.rows] == [14, 15, 13, 11]
    assert s.latency.tolist() == [2.0, 2.5, 4.0, 5.0]
    assert s.sample_ids.tolist() == [14, 15, 13, 11]


def test_an_empty_slice():
    s = build_slice([])
    assert len(s) == 0 and s.rows == () and s.rows_at((1.0,), frozenset()) == []


def test_duplicates_merge_by_median_and_the_first_row_represents_them():
    s = build_slice(_rows())
    avg = np.flatnonzero(s.column_codes == s.column_names.index(AVG))
    points, values, representatives, counts, ambiguous = merge_points(
        s, avg, (0,), None, {AVG: 0}, unique_required=False)
    # AVG rows on axis 0: 32 -> 2.0, 2.5, 3.0 (median 2.5, sample 14 first); 64 -> 5.0;
    # 128 -> 9.0
    assert points.tolist() == [[32.0], [64.0], [128.0]]
    assert values.tolist() == [2.5, 5.0, 9.0]
    assert [s.row(i).sample_id for i in representatives] == [14, 11, 16]
    assert counts == [3, 1, 1] and ambiguous == 0


def test_disagreeing_duplicates_are_left_out_when_rows_must_be_unique():
    s = build_slice(_rows())
    avg = np.flatnonzero(s.column_codes == s.column_names.index(AVG))
    points, values, _, counts, ambiguous = merge_points(
        s, avg, (0,), None, {AVG: 0}, unique_required=True)
    assert points.tolist() == [[64.0], [128.0]] and values.tolist() == [5.0, 9.0]
    assert counts == [1, 1] and ambiguous == 3


def test_a_semantic_keeps_only_its_rows():
    s = build_slice(_rows())
    every = np.arange(len(s))
    points, values, representatives, _, _ = merge_points(
        s, every, (0, 1), "kv=1", {AVG: 0, TOTAL: 1}, unique_required=False)
    assert points.tolist() == [[128.0, 2.0]] and values.tolist() == [9.0]
    assert s.row(representatives[0]).sample_id == 16


@pytest.mark.parametrize("fixed, expected", [
    ((), {AVG: [14, 15, 12, 11, 16], TOTAL: [13]}),
    (((1, 2.0),), {AVG: [12, 11, 16], TOTAL: [13]}),
    (((1, 3.0),), {}),
])
def test_candidates_share_the_fixed_axes_and_split_by_column(fixed, expected):
    s = build_slice(_rows())
    candidates = Candidates.of(s, (0,), fixed, None, KernelPolicy())
    assert {c: [s.row(i).sample_id for i in idx.tolist()]
            for c, idx in candidates._points.items()} == expected


def test_columns_of_equal_rank_keep_the_order_they_are_first_seen():
    rows = [(1, 2.0, "b", 1, "Mul.csv", 1.0, None, None, None, 1),
            (2, 2.0, "a", 2, "Mul.csv", 2.0, None, None, None, 2)]
    s = build_slice(rows)
    assert Candidates.of(s, (0,), (), None, KernelPolicy()).columns == ["b", "a"]
