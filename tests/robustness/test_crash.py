"""An ingest killed with SIGKILL at any point leaves a database that opens, passes an
integrity check and still holds the previous version complete; re-running the ingest
finishes the job.

The ingest runs in a subprocess (``python -c``) that writes a marker file at the chosen
point; the test kills it as soon as the marker appears. Points: right after the ingest
starts, after N rows (a ``row_hook`` that then sleeps, inside the open transaction), and
at the commit (an engine ``commit`` listener that fires just before the driver commits,
then sleeps). ``commit_race`` does not sleep: the kill lands during or just after the
commit, so the database must hold exactly one complete version, old or new.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from profstore.api import Store
from profstore.storage import schema as t
from profstore.storage.engines import is_sqlite
from profstore.storage.urls import normalize_url
from sqlalchemy import func, select

from tests.support.paths import REPO
from tests.support.replacement import (
    GRID,
    Replacement,
    classify,
    ingest,
    rms_leaf,
    rows_per_version,
)

SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from sqlalchemy import event
    from profstore.ingest.loader import ingest_path
    from profstore.storage.engines import make_engine

    url, root, point, rows, marker = sys.argv[1:6]
    engine = make_engine(url)

    def reached(pause):
        Path(marker).write_text(point)
        time.sleep(pause)

    def row_hook(done):
        if point == "rows" and done >= int(rows):
            reached(600)

    if point in ("commit", "commit_race"):
        @event.listens_for(engine, "commit")
        def _before_commit(conn):
            reached(600 if point == "commit" else 0)

    if point == "start":
        reached(0)
    ingest_path(engine, root, row_hook=row_hook)
""")
TIMEOUT = 120.0


def kill_ingest_at(replacement: Replacement, point: str, tmp_path: Path, rows: int = 0) -> int:
    """Run the v2 ingest in a subprocess and SIGKILL it at ``point``; its return code."""
    marker = tmp_path / f"reached-{point}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, replacement.url, str(replacement.v2), point, str(rows),
         str(marker)], cwd=REPO, env=env, stderr=subprocess.PIPE)
    ends = time.monotonic() + TIMEOUT
    while not marker.exists() and process.poll() is None and time.monotonic() < ends:
        time.sleep(0.001)
    process.send_signal(signal.SIGKILL)
    _, err = process.communicate(timeout=TIMEOUT)
    assert marker.exists(), err.decode()
    return process.returncode


def integrity(url: str) -> str:
    """SQLite's own check (PostgreSQL rolls back a dead client's transaction itself)."""
    url = normalize_url(url)
    if not is_sqlite(url):
        return "ok"
    with sqlite3.connect(url.split("///", 1)[1]) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def held_version(url: str, replacement: Replacement) -> str:
    """``old`` or ``new``: which v0.18 the database holds, checked to be complete."""
    with Store.open(url) as store:
        assert sorted(store.versions()) == ["v0.13", "v0.18"]
        profile = store.profile("v0.18")
        with store.engine.connect() as conn:
            row = conn.execute(select(t.profile_set).where(t.profile_set.c.id == profile.id)).one()
            samples = conn.execute(select(func.count()).select_from(t.sample).where(
                t.sample.c.profile_id == profile.id)).scalar()
            orphans = conn.execute(select(func.count()).select_from(t.sample).where(
                t.sample.c.profile_id.not_in(select(t.profile_set.c.id)))).scalar()
        kinds = {classify(n, store.lookup(rms_leaf(n), "v0.18").latency_us)
                 for n in (GRID[0], GRID[0] + 4, GRID[-1] - 3)}
    assert (samples, row.rows_read, orphans) == (rows_per_version(), rows_per_version(), 0)
    [kind] = kinds
    source = replacement.v1 if kind == "old" else replacement.v2
    assert row.content_hash == replacement.version_hash(source)
    return kind


def assert_reingest_finishes(replacement: Replacement, status: str = "ingested") -> None:
    [summary] = [s for s in ingest(replacement.url, replacement.v2) if s.alias == "v0.18"]
    assert summary.status == status
    assert held_version(replacement.url, replacement) == "new"
    assert integrity(replacement.url) == "ok"


@pytest.mark.parametrize(("point", "rows"), [
    ("start", 0),
    ("rows", rows_per_version() // 2),
    ("commit", 0),
])
def test_a_killed_ingest_leaves_the_previous_version_complete(replacement, tmp_path, point,
                                                              rows):
    assert kill_ingest_at(replacement, point, tmp_path, rows) == -signal.SIGKILL
    assert integrity(replacement.url) == "ok"
    assert held_version(replacement.url, replacement) == "old"
    assert_reingest_finishes(replacement)


def test_a_kill_racing_the_commit_leaves_one_complete_version(replacement, tmp_path):
    code = kill_ingest_at(replacement, "commit_race", tmp_path)
    assert code in (-signal.SIGKILL, 0)
    assert integrity(replacement.url) == "ok"
    held = held_version(replacement.url, replacement)
    assert_reingest_finishes(replacement, "ingested" if held == "old" else "unchanged")

