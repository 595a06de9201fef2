"""``read_statement``, the read-only SQL door's one entry, on the readers' fixture
(tests/storage/conftest.py: RmsNorm's accepted rows are CSV lines 2–6, 8 and 9); the
door's refusals themselves are tests/cli/test_cli_inspect.py's and test_sql_door.py's."""

from __future__ import annotations

import pytest
from profstore.storage.sql_door import Limits, ReadOnlyViolation, read_statement

LINES = "SELECT line_no FROM sample WHERE kernel_type = :kernel ORDER BY line_no"


def test_rows_up_to_the_limit_and_whether_there_were_more(conn):
    found = read_statement(conn, LINES, {"kernel": "RmsNorm"}, Limits(), max_rows=3)
    assert (found.columns, found.rows, found.more) == (["line_no"], [(2,), (3,), (4,)], True)
    every = read_statement(conn, LINES, {"kernel": "RmsNorm"}, Limits(), max_rows=7)
    assert (every.rows, every.more) == ([(2,), (3,), (4,), (5,), (6,), (8,), (9,)], False)


def test_a_write_is_refused_before_it_runs(conn):
    with pytest.raises(ReadOnlyViolation):
        read_statement(conn, "DELETE FROM rejected_row", {}, Limits(), max_rows=10)
    conn.rollback()
    assert read_statement(conn, "SELECT count(*) AS n FROM rejected_row", {}, Limits(),
                          max_rows=10).rows == [(2,)]
