"""One transaction per version: an ingest that dies mid-version leaves the previous
content of that version intact (rows and content hash), and other versions unaffected."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from profstore.ingest.discover import content_hash, discover
from profstore.ingest.loader import ingest_path
from profstore.storage import schema as t
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import Engine, select

from tests.support.paths import REPO
from tests.support.perfdb import Row, mapping_doc, new_database, write_version

V15_DIR = "vllm0.15.0_torch2.9.0_cann8.5"
MAPPING = mapping_doc({"tensor_cast.rms_norm.default": {"kernel_type": "RmsNorm"}})


class Boom(RuntimeError):
    pass


def rms(tokens: int, latency: float) -> Row:
    return Row([[tokens, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[tokens, 7168]], ["DT_BF16"],
               latency)


def add(tokens: int, latency: float) -> Row:
    return Row([[tokens, 64], [tokens, 64]], ["FLOAT", "FLOAT"], [[tokens, 64]], ["FLOAT"],
               latency)


def write_v1(root: Path, directory: str) -> None:
    write_version(root, {"RmsNorm": [rms(8, 10.0), rms(16, 14.0)], "Add": [add(4, 2.0)]},
                  MAPPING, directory=directory)


def write_v2(root: Path, directory: str) -> None:
    write_version(root, {"RmsNorm": [rms(8, 11.0), rms(32, 20.0), rms(64, 30.0)],
                         "Add": [add(4, 2.5), add(8, 3.0)], "Mul": [add(2, 1.0)]},
                  MAPPING, directory=directory)


def snapshot(engine: Engine) -> dict[str, object]:
    """Everything a version's data is: profiles and each table's rows, ids included."""
    with engine.connect() as conn:
        state: dict[str, object] = {
            "profiles": conn.execute(select(t.profile_set).order_by(t.profile_set.c.id)).all()}
        for table in t.DATA_TABLES:
            state[table.name] = conn.execute(
                select(table).order_by(*table.primary_key.columns)).all()
    return state


def digest_of(folder: Path) -> str:
    [source] = discover(folder)
    return content_hash({p.name: p.read_bytes() for p in source.files()})


@pytest.fixture()
def db(tmp_path: Path) -> Iterator[tuple[Engine, Path]]:
    root = tmp_path / "data"
    write_v1(root, V15_DIR)
    write_v1(root, "vllm0.18.0_torch2.9.0_cann8.5")
    engine = make_engine(new_database(tmp_path))
    upgrade(engine)
    ingest_path(engine, root)
    yield engine, root
    engine.dispose()


def test_a_failure_mid_version_keeps_the_previous_content(db):
    engine, root = db
    before = snapshot(engine)
    folder = root / "TEST_DEVICE" / "vllm_ascend" / V15_DIR
    v1_hash = digest_of(folder)
    write_v2(root, V15_DIR)
    seen: list[int] = []

    def fail_after_first_file(rows: int) -> None:
        seen.append(rows)
        if rows >= 2:
            raise Boom(f"killed after {rows} rows")

    with pytest.raises(Boom, match="killed after 2 rows"):
        ingest_path(engine, folder, row_hook=fail_after_first_file)
    assert seen == [2]
    assert snapshot(engine) == before
    v15 = next(p for p in before["profiles"] if p.alias == "v0.15")
    assert v15.content_hash == v1_hash
    with engine.connect() as conn:
        latencies = conn.execute(select(t.sample.c.latency_us).where(
            t.sample.c.profile_id == v15.id).order_by(t.sample.c.id)).scalars().all()
    assert latencies == [2.0, 10.0, 14.0]


def test_after_the_failure_a_clean_run_loads_the_new_content(db):
    engine, root = db
    folder = root / "TEST_DEVICE" / "vllm_ascend" / V15_DIR
    write_v2(root, V15_DIR)
    def fail(rows: int) -> None:
        raise Boom(f"killed after {rows} rows")

    with pytest.raises(Boom):
        ingest_path(engine, folder, row_hook=fail)
    [summary] = ingest_path(engine, folder)
    assert (summary.status, summary.rows_read) == ("ingested", 6)
    with engine.connect() as conn:
        v15 = conn.execute(select(t.profile_set).where(t.profile_set.c.alias == "v0.15")).one()
        latencies = conn.execute(select(t.sample.c.latency_us).where(
            t.sample.c.profile_id == v15.id).order_by(t.sample.c.id)).scalars().all()
    assert v15.content_hash == digest_of(folder)
    assert latencies == [2.5, 3.0, 1.0, 11.0, 20.0, 30.0]


def test_a_failure_in_one_version_keeps_the_versions_already_loaded(db):
    engine, root = db
    write_v2(root, V15_DIR)
    write_v2(root, "vllm0.18.0_torch2.9.0_cann8.5")
    current: list[str] = []

    def fail_in_v018(rows: int) -> None:
        if current and current[-1] == "v0.18":
            raise Boom("v0.18 died")

    with pytest.raises(Boom, match="v0.18 died"):
        ingest_path(engine, root, progress=lambda label, done, total: current.append(label),
                    row_hook=fail_in_v018)
    with engine.connect() as conn:
        rows = {p.alias: p.rows_read for p in conn.execute(select(t.profile_set))}
    assert rows == {"v0.15": 6, "v0.18": 3}


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from profstore.ingest.loader import ingest_path
    from profstore.storage.engines import make_engine

    def die(rows):
        if rows >= 2:
            os.kill(os.getpid(), signal.SIGKILL)

    ingest_path(make_engine(sys.argv[1]), sys.argv[2], row_hook=die)
""")


@pytest.mark.sqlite_only
def test_a_killed_process_leaves_the_previous_version_intact(tmp_path):
    root = tmp_path / "data"
    write_v1(root, V15_DIR)
    db = tmp_path / "killed.db"
    engine = make_engine(db)
    upgrade(engine)
    ingest_path(engine, root)
    before = snapshot(engine)
    engine.dispose()
    write_v2(root, V15_DIR)
    done = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(db), str(root)], cwd=REPO,
                          env={"PYTHONPATH": str(REPO)}, capture_output=True, timeout=120,
                          check=False)
    assert done.returncode == -9, done.stderr
    engine = make_engine(db)
    assert snapshot(engine) == before
    [summary] = ingest_path(engine, root)
    assert (summary.status, summary.rows_read) == ("ingested", 6)
    engine.dispose()
