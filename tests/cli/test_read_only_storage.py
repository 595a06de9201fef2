"""Issue #16 item 1: a database shipped on read-only storage (a 0555 directory, a 0444
file) is readable by every reading verb and by the library.

Tests run as root, whom permission bits do not stop: the readers here run in a child
process without capabilities (``setpriv --bounding-set=-all``), so the kernel applies the
bits to it as it would to any user, and the read-only storage is real. profstore itself
decides "not writable" from the mode bits (store/storage/engines.py ``storage_writable``), so root
reading a 0555 directory in-process picks ``immutable=1`` as well.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.storage.engines import DatabaseNotReadable

from tests.support.cli_fixture import ingest_into, write_fixture
from tests.support.cli_lookup import rms

pytestmark = pytest.mark.sqlite_only
PROFSTORE = [sys.executable, "-m", "profstore"]


def unprivileged(argv: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run ``argv`` where permission bits bind: without capabilities when we are root."""
    prefix = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"] \
        if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *argv], input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture()
def shipped(tmp_path: Path) -> Iterator[Path]:
    """A freshly ingested database (WAL mode in its header, no -wal/-shm beside it) in a
    0555 directory, the file 0444."""
    folder = tmp_path / "shipped"
    folder.mkdir()
    db = ingest_into(folder / "perf.db", write_fixture(tmp_path / "data"))
    assert sorted(p.name for p in folder.iterdir()) == ["perf.db"]
    assert db.read_bytes()[18:20] == b"\x02\x02"  # header: WAL read and write versions
    db.chmod(0o444)
    folder.chmod(0o555)
    yield db
    folder.chmod(0o755)


def test_reading_verbs_work_on_read_only_storage(shipped):
    versions = unprivileged([*PROFSTORE, "versions", "--db", str(shipped), "--json"])
    assert (versions.returncode, versions.stderr) == (0, "")
    assert [v["alias"] for v in json.loads(versions.stdout)] == ["v0.18"]
    sql = unprivileged([*PROFSTORE, "sql", "--db", str(shipped), "--json",
                        "SELECT count(*) AS n FROM sample"])
    assert (sql.returncode, json.loads(sql.stdout)) == (0, [{"n": 10}])
    lookup = unprivileged([*PROFSTORE, "lookup", "--db", str(shipped), "--version", "v0.18",
                           "-"], stdin=json.dumps(rms(16, id="q")) + "\n")
    assert lookup.returncode == 0, lookup.stderr
    answer = json.loads(lookup.stdout)
    assert (answer["id"], answer["latency_us"], answer["source"]) == ("q", 14.0, "MEASURED")
    assert sorted(p.name for p in shipped.parent.iterdir()) == ["perf.db"]


def test_the_library_reads_read_only_storage(shipped):
    script = ("import sys; from profstore import Store, LeafOp\n"
              "store = Store.open(sys.argv[1])\n"
              "print(store.lookup(LeafOp.from_json(sys.argv[2]), 'v0.18').latency_us)\n")
    done = unprivileged([sys.executable, "-c", script, str(shipped), json.dumps(rms(64))])
    assert (done.returncode, done.stdout, done.stderr) == (0, "32.5\n", "")


def test_root_in_process_opens_a_read_only_file_immutable(shipped):
    """Root could create -shm in the 0555 directory; opened immutable, nothing is created."""
    with Store.open(shipped) as store:
        assert store.lookup(LeafOp.from_json(rms(8)), "v0.18").latency_us == 10.0
        assert sorted(p.name for p in shipped.parent.iterdir()) == ["perf.db"]


def pending_wal_copy(tmp_path: Path) -> Path:
    """A database and a -wal holding one committed, not checkpointed, change, copied into
    a 0555 directory (copied while the writer is open, so SQLite has not folded it in)."""
    (tmp_path / "live").mkdir()
    source = ingest_into(tmp_path / "live" / "perf.db", write_fixture(tmp_path / "data"))
    target = tmp_path / "ro"
    target.mkdir()
    with closing(sqlite3.connect(source)) as writer:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE profile_set SET alias = 'renamed'")
        writer.commit()
        for name in ("perf.db", "perf.db-wal"):
            shutil.copy(source.parent / name, target / name)
    target.chmod(0o555)
    return target / "perf.db"


def test_a_pending_wal_on_read_only_storage_is_one_line_naming_the_flag(tmp_path):
    db = pending_wal_copy(tmp_path)
    try:
        done = unprivileged([*PROFSTORE, "versions", "--db", str(db)])
        assert done.returncode == 1
        assert done.stderr == (
            f"profstore: error: cannot read {db}: the directory {db.parent} is not writable "
            f"and perf.db-wal holds changes not checkpointed into it; run `profstore db "
            f"checkpoint --db {db}` where it is writable, or pass --immutable to read it "
            f"without them\n")
        with pytest.raises(DatabaseNotReadable, match="pass --immutable"):
            Store.open(db)
        forced = unprivileged([*PROFSTORE, "versions", "--db", str(db), "--immutable",
                               "--json"])
        assert [v["alias"] for v in json.loads(forced.stdout)] == ["v0.18"]
        with Store.open(db, read_only="immutable") as store:
            assert store.versions() == ["v0.18"]
    finally:
        db.parent.chmod(0o755)


def test_db_checkpoint_leaves_a_file_that_needs_no_wal(tmp_path, capsys):
    from profstore.cli.main import main

    db = pending_wal_copy(tmp_path)
    db.parent.chmod(0o755)
    assert main(["db", "checkpoint", "--db", str(db)]) == 0
    assert capsys.readouterr().out.endswith("checkpointed; journal mode delete, no -wal "
                                            "needed to read it\n")
    assert sorted(p.name for p in db.parent.iterdir()) == ["perf.db"]
    db.chmod(0o444)
    db.parent.chmod(0o555)
    try:
        done = unprivileged([*PROFSTORE, "versions", "--db", str(db), "--json"])
        assert [v["alias"] for v in json.loads(done.stdout)] == ["renamed"]
    finally:
        db.parent.chmod(0o755)


def test_ingest_into_read_only_storage_is_one_line(shipped, tmp_path):
    done = unprivileged([*PROFSTORE, "ingest", str(tmp_path / "data"), "--db", str(shipped)])
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"profstore: error: cannot write {shipped}: the directory "
                           f"{shipped.parent} is not writable (read-only storage); reading "
                           f"verbs open it with --immutable\n")
