"""A lookup's connection (store/storage/pinned.py): the transaction a snapshot holds, the
lone statement that holds none, and on PostgreSQL the round trips they cost
(docs/adr/0124-postgresql-round-trips.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from profstore.storage import schema as t
from profstore.storage.engines import make_engine
from profstore.storage.pinned import BEGIN_POSTGRESQL
from profstore.storage.provenance import row_input_shapes_cell
from profstore.storage.snapshot import SnapshotEngine
from profstore.storage.statements import Statement
from sqlalchemy import bindparam, select

from tests.support.perfdb import build_database, on_postgresql
from tests.support.recorded_sql import Recorder
from tests.support.rms_versions import CSV_LATENCY, write

_ALIAS = Statement(select(t.profile_set.c.id).where(t.profile_set.c.alias == bindparam("alias")))


@pytest.fixture()
def snapshots(tmp_path: Path) -> Any:
    engine = make_engine(build_database(tmp_path, write(tmp_path / "data", CSV_LATENCY)))
    found = SnapshotEngine(engine)
    yield found
    found.close()
    engine.dispose()


def in_transaction(snapshots: SnapshotEngine) -> bool:
    """Whether the thread's lookup connection is inside a transaction, as its driver says."""
    pinned = snapshots._local.pinned
    assert pinned is not None
    if pinned.sqlite:
        return bool(pinned.raw.in_transaction)
    from psycopg.pq import TransactionStatus

    return bool(pinned.raw.info.transaction_status is TransactionStatus.INTRANS)


def test_a_snapshot_holds_one_transaction_from_its_state_to_its_end(snapshots):
    with snapshots.snapshot():
        state = snapshots.fingerprint()
        assert in_transaction(snapshots)
        assert _ALIAS.rows(snapshots, alias="v0.18") == [(state[0][0],)]
        pinned = snapshots._local.pinned
        if not pinned.sqlite:
            pinned.cursor.execute("SELECT current_setting('transaction_isolation')")
            assert pinned.cursor.fetchall() == [("repeatable read",)]
    assert [alias for _, alias, _ in state] == ["v0.18"]
    assert not pinned.sqlite or not pinned.raw.in_transaction
    if not pinned.sqlite:
        from psycopg.pq import TransactionStatus

        assert pinned.raw.info.transaction_status is TransactionStatus.IDLE


def test_a_lone_statement_runs_outside_a_transaction(snapshots):
    """RmsNorm.csv's first data row (line 2) was measured at input shapes "4,7168;7168"."""
    with snapshots.snapshot():
        profile = snapshots.fingerprint()[0][0]
    with snapshots.lone():
        text = row_input_shapes_cell(snapshots, profile, "RmsNorm.csv", 2)
        assert not in_transaction(snapshots)
    assert text is not None and text.strip('"') == "4,7168;7168"


@pytest.mark.postgresql_only
def test_postgresql_sends_begin_with_the_state_and_keeps_prepared_statements(snapshots):
    """The BEGIN goes in the state query's message; eight lookups that each run the same
    statement leave it prepared (psycopg prepares at its sixth run, and drops every
    prepared statement at a ROLLBACK: a lookup ends with COMMIT)."""
    assert on_postgresql()
    with snapshots.snapshot():
        snapshots.fingerprint()
    pinned = snapshots._idle[0]
    seen: list[str] = []
    pinned.cursor = Recorder(pinned.cursor, seen)
    with snapshots.snapshot():
        snapshots.fingerprint()
        _ALIAS.rows(snapshots, alias="v0.18")
    assert seen[0].startswith(f"{BEGIN_POSTGRESQL}; SELECT") and "profile_set" in seen[0]
    assert not any(sql.strip().upper() == "BEGIN" for sql in seen)
    for _ in range(8):
        with snapshots.snapshot():
            _ALIAS.rows(snapshots, alias="v0.18")
    with snapshots.lone():
        assert _ALIAS.rows(snapshots, alias="v0.18")
        pinned.cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        assert pinned.cursor.fetchall()[0][0] >= 1
