"""The ``regimes`` and ``duplicates`` views read for one version, on the readers' fixture
(tests/storage/conftest.py): RmsNorm hidden 4096 at tokens 8 and 32, hidden 7168 at 8, 16
and 64 (three rows at 64: 30.0, 34.0, 32.5 on CSV lines 4, 5, 6)."""

from __future__ import annotations

import json

from profstore.storage.views import AxisRange, duplicate_coordinates, regime_summaries


def test_regime_summaries_with_axis_ranges(conn):
    found = regime_summaries(conn, "v0.18", "RmsNorm", "generic")
    assert [(json.loads(r.regime_key)["shape_signature"], r.points, r.latency_columns, r.axes)
            for r in found] == [
        ("T,4096;4096", 2, 1, (AxisRange(8.0, 32.0), None, None)),
        ("T,7168;7168", 5, 1, (AxisRange(8.0, 64.0), None, None))]
    assert {r.kernel_type for r in regime_summaries(conn, "v0.18")} == {"Add", "RmsNorm"}
    assert regime_summaries(conn, "v0.18", "RmsNorm", "no_such_path") == []
    assert regime_summaries(conn, "v9.9") == []


def test_the_duplicate_coordinate(conn):
    [found] = duplicate_coordinates(conn, "v0.18", "RmsNorm")
    assert (found.path, found.coordinate, found.latency_column, found.rows_at_coordinate,
            found.latency_min, found.latency_median, found.latency_max, found.first_line) == (
        "generic", (64.0,), "Average Duration(us)", 3, 30.0, 32.5, 34.0, 4)
    assert json.loads(found.regime_key)["shape_signature"] == "T,7168;7168"
    assert duplicate_coordinates(conn, "v0.18", "Add") == []
