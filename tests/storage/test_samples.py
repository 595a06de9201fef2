"""The samples of the readers' fixture (tests/storage/conftest.py): 10 accepted rows
(RmsNorm 7, Add 2, Range 1), one call measured three times (RmsNorm, tokens 64 of hidden
7168: 30.0, 34.0, 32.5)."""

from __future__ import annotations

from profstore.storage.provenance import stored_row
from profstore.storage.samples import duplicate_groups, sample_ids

ACCEPTED = {"RmsNorm.csv": (2, 3, 4, 5, 6, 8, 9), "Add.csv": (2, 3), "Range.csv": (2,)}


def test_sample_ids_are_every_accepted_row_ascending(conn, v18):
    ids = sample_ids(conn, v18)
    stored = {stored_row(conn, v18, f, line) for f, lines in ACCEPTED.items() for line in lines}
    assert {s.table for s in stored if s is not None} == {"sample"}
    assert ids == sorted(s.id for s in stored if s is not None)
    assert len(ids) == 10


def test_the_duplicate_group(conn, v18):
    [group] = duplicate_groups(conn, v18)
    assert (group.kernel, sorted(group.latencies_us)) == ("RmsNorm", [30.0, 32.5, 34.0])
