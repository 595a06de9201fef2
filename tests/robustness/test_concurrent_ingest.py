"""Issue #16 item 2: two ingests of one database. The second waits (saying so) or, with
``--no-wait``, fails at once with one line naming since when the first holds it; it never
calls a version "unchanged" without comparing it with the committed state, and a version
that fails does not stop the ones after it."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from profstore.cli.main import main
from profstore.ingest.loader import ingest_path
from profstore.ingest.lock import IngestBusy, ingest_lock
from profstore.storage.engines import make_engine, upgrade

from tests.support.perfdb import Row, new_database, write_version

HOLDER = re.compile(r"another ingest holds the database since "
                    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 \(pid \d+\)")


def rms(latency: float) -> list[Row]:
    return [Row([[8, 7168], [7168]], ["DT_BF16"] * 2, [[8, 7168]], ["DT_BF16"], latency)]


def latencies(db: Path) -> list[float]:
    with sqlite3.connect(db) as conn:
        return [v for (v,) in conn.execute("SELECT latency_us FROM sample")]


@pytest.mark.sqlite_only
def test_no_wait_fails_at_once_with_one_line(tmp_path):
    root, db = tmp_path / "data", tmp_path / "s.db"
    write_version(root, {"RmsNorm": rms(10.0)})
    engine = make_engine(db)
    upgrade(engine)
    with ingest_lock(engine):
        done = subprocess.run([sys.executable, "-m", "profstore", "ingest", str(root), "--db",
                               str(db), "--no-wait"], capture_output=True, text=True,
                              timeout=120, check=False)
    engine.dispose()
    assert (done.returncode, done.stdout) == (1, "")
    assert re.fullmatch(f"profstore: error: ingest refused: {HOLDER.pattern}\n", done.stderr)
    assert latencies(db) == []


@pytest.mark.sqlite_only
def test_the_second_ingest_waits_visibly_then_compares_with_what_the_first_committed(tmp_path):
    """The database holds 10.0; ingest A (latency 20.0) is mid-transaction when ingest B
    (latency 10.0, the content already there) starts. B must wait for A and then load its
    own content: it is not "unchanged" against what A committed."""
    old, new, db = tmp_path / "old", tmp_path / "new", tmp_path / "s.db"
    write_version(old, {"RmsNorm": rms(10.0)})
    write_version(new, {"RmsNorm": rms(20.0)})
    engine = make_engine(db)
    upgrade(engine)
    ingest_path(engine, old)
    inside, release, messages = threading.Event(), threading.Event(), []

    def pause(_rows: int) -> None:
        inside.set()
        assert release.wait(60)

    first = threading.Thread(target=ingest_path, args=(engine, new), kwargs={"row_hook": pause})
    first.start()
    assert inside.wait(60)

    def waiting(message: str) -> None:
        messages.append(message)
        release.set()

    [summary] = ingest_path(make_engine(db), old, on_wait=waiting)
    first.join(60)
    assert len(messages) == 1
    assert HOLDER.match(messages[0])
    assert messages[0].endswith("; waiting for it to finish (--no-wait fails at once)")
    assert (summary.alias, summary.status) == ("v0.18", "ingested")
    assert latencies(db) == [10.0]
    engine.dispose()


@pytest.mark.sqlite_only
def test_a_failed_version_does_not_stop_the_ones_after_it(capsys, tmp_path):
    """Three v0.18 directories of one device: the third finds both its aliases taken."""
    root, db = tmp_path / "data", tmp_path / "s.db"
    for n, directory in enumerate(["vllm0.18.0_a", "vllm0.18.1_b", "vllm0.18.2_c",
                                   "vllm0.19.0_d"]):
        write_version(root, {"RmsNorm": rms(10.0 + n)}, directory=directory)
    assert main(["ingest", str(root), "--db", str(db)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["v0.18", "TEST_DEVICE/v0.18", "v0.18",
                                                      "v0.19"]
    assert lines[2] == (f"v0.18: not ingested: alias collision for "
                        f"{root / 'TEST_DEVICE' / 'vllm_ascend' / 'vllm0.18.2_c'}")
    assert sorted(latencies(db)) == [10.0, 11.0, 13.0]


def test_the_lock_holds_on_either_backend(tmp_path):
    """On PostgreSQL an advisory lock, its holder's start read from pg_stat_activity."""
    root = tmp_path / "data"
    write_version(root, {"RmsNorm": rms(10.0)})
    url = new_database(tmp_path)
    engine = make_engine(url)
    upgrade(engine)
    try:
        with ingest_lock(engine), pytest.raises(IngestBusy) as busy:
            ingest_path(make_engine(url), root, wait=False)
        assert re.fullmatch(r"another ingest holds the database since \d{4}-\d\d-\d\dT"
                            r"\d\d:\d\d:\d\d(\.\d+)?\+00:00 \((server )?pid \d+\)",
                            str(busy.value))
        [summary] = ingest_path(engine, root, wait=False)
        assert summary.status == "ingested"
    finally:
        engine.dispose()
