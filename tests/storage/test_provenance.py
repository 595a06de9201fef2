"""Rows read back by CSV file and line, on the readers' fixture (tests/storage/conftest.py)."""

from __future__ import annotations

from profstore.storage.catalog import hccl_profile_id
from profstore.storage.points import point_samples
from profstore.storage.provenance import stored_row

from tests.support.perfdb import DEVICE
from tests.support.readers_fixture import ALL_REDUCE


def test_a_sample_is_found_by_file_and_line(conn, v18):
    found = stored_row(conn, v18, "RmsNorm.csv", 4)
    assert found is not None and found.table == "sample"
    [line_4] = [p for p in point_samples(conn, v18, kernel="RmsNorm") if p.sample_id == found.id]
    assert line_4.axes == (64.0,)  # line 4 is the first of the three rows at tokens 64


def test_a_communication_row_is_found_in_its_own_profile(conn, v18):
    found = stored_row(conn, v18, f"{ALL_REDUCE}.csv", 3)
    assert found is not None and found.table == "comm_sample"
    hccl = hccl_profile_id(conn, DEVICE, "v8.5")
    assert stored_row(conn, hccl, f"{ALL_REDUCE}.csv", 3) == found  # type: ignore[arg-type]


def test_a_rejected_or_missing_line_is_not_stored(conn, v18):
    assert stored_row(conn, v18, "RmsNorm.csv", 7) is None  # the NaN latency
    assert stored_row(conn, v18, "RmsNorm.csv", 99) is None
    assert stored_row(conn, v18, "Nothing.csv", 2) is None
