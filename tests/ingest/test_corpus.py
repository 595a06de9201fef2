"""Ingesting the real corpus (../shared/perfdb): versions, row accounting, idempotence.

Data-row counts are taken independently of the ingest code: non-blank lines of the
file minus the header line (blank lines are not data rows).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from profstore.ingest.loader import ingest_path
from profstore.storage import schema as t
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import Engine, func, select

from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB
from tests.support.perfdb import new_database

DEVICE = "ATLAS_800_A3_752T_128G_DIE"
DIRECTORIES = {
    "v0.13": ("vllm_ascend", "vllm0.13.0_torch2.8.0_cann8.3"),
    "v0.15": ("vllm_ascend", "vllm0.15.0_torch2.9.0_cann8.5"),
    "v0.18": ("vllm_ascend", "vllm0.18.0_torch2.9.0_cann8.5"),
    "hccl-v8.5": ("hccl", "v8.5"),
}
COUNTED_TABLES = (t.profile_set, t.kernel_file, t.sample, t.sample_key, t.sample_point,
                  t.path_refusal, t.rejected_row, t.comm_sample, t.op_mapping,
                  t.interpolation_policy)

pytestmark = requires_perfdb


def version_dir(root: Path, alias: str) -> Path:
    framework, directory = DIRECTORIES[alias]
    return root / DEVICE / framework / directory


def physical_lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8").replace("\r\n", "\n").split("\n")


def data_row_count(path: Path) -> int:
    return sum(1 for line in physical_lines(path) if line.strip()) - 1


def table_counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {table.name: conn.execute(select(func.count()).select_from(table)).scalar()
                for table in COUNTED_TABLES}


@pytest.fixture(scope="module")
def engine(perfdb_path: str) -> Iterator[Engine]:
    """The suite's one session ingest of the corpus (tests/conftest.py's perfdb_path)."""
    engine = make_engine(perfdb_path)
    yield engine
    engine.dispose()


def test_the_corpus_creates_three_versions_and_the_hccl_set(engine):
    with engine.connect() as conn:
        rows = conn.execute(select(t.profile_set).order_by(t.profile_set.c.id)).all()
    assert [r.alias for r in rows] == ["v0.13", "v0.15", "v0.18", "hccl-v8.5"]
    assert {r.alias: (r.framework, r.directory) for r in rows} == DIRECTORIES
    assert {r.device for r in rows} == {DEVICE}
    for r in rows:
        counts = [data_row_count(p) for p in version_dir(PERFDB, r.alias).glob("*.csv")]
        assert (r.files, r.rows_read) == (len(counts), sum(counts)), r.alias
        assert r.rows_accepted + r.rows_rejected == r.rows_read


def test_every_csv_is_a_kernel_file_whose_rows_add_up(engine):
    with engine.connect() as conn:
        files = conn.execute(
            select(t.profile_set.c.alias, t.kernel_file).join(
                t.profile_set, t.profile_set.c.id == t.kernel_file.c.profile_id)).all()
    by_version: dict[str, dict[str, object]] = {}
    for f in files:
        by_version.setdefault(f.alias, {})[f.file_name] = f
    for alias in DIRECTORIES:
        csvs = sorted(version_dir(PERFDB, alias).glob("*.csv"))
        assert sorted(by_version[alias]) == [p.name for p in csvs]
        for path in csvs:
            row = by_version[alias][path.name]
            expected = data_row_count(path)
            assert (row.rows_read, row.rows_accepted + row.rows_rejected) == (expected, expected), \
                path.name


def test_stored_rows_match_the_file_accounting_and_the_file_text(engine):
    """Each file's samples (or comm samples) and rejected rows are exactly its data lines."""
    with engine.connect() as conn:
        files = conn.execute(select(t.kernel_file, t.profile_set.c.alias).join(
            t.profile_set, t.profile_set.c.id == t.kernel_file.c.profile_id)).all()
        stored: dict[int, list[tuple[int, str]]] = {}
        for table in (t.sample, t.comm_sample, t.rejected_row):
            for file_id, line_no, raw in conn.execute(select(
                    table.c.kernel_file_id, table.c.line_no, table.c.raw_text)):
                stored.setdefault(file_id, []).append((line_no, raw))
    for f in files:
        lines = physical_lines(version_dir(PERFDB, f.alias) / f.file_name)
        expected = [(i, line) for i, line in enumerate(lines, start=1) if line.strip()][1:]
        assert sorted(stored.get(f.id, [])) == expected, f.file_name
        assert f.rows_read == len(expected)


def test_v018_rejects_only_rows_without_a_positive_latency(engine):
    with engine.connect() as conn:
        v18 = conn.execute(select(t.profile_set).where(t.profile_set.c.alias == "v0.18")).one()
        rejected = conn.execute(select(t.rejected_row.c.profile_id, t.rejected_row.c.reason_code,
                                       t.rejected_row.c.reason)).all()
    assert v18.rows_rejected > 0
    assert len(rejected) == v18.rows_rejected
    assert {(r.profile_id, r.reason_code) for r in rejected} == {(v18.id, "latency_invalid")}
    assert all(r.reason.startswith("no finite positive latency: ") for r in rejected)


def test_sample_latencies_hold_every_duration_column_of_the_file(engine):
    with engine.connect() as conn:
        pairs = conn.execute(select(t.kernel_file.c.columns, t.sample.c.latencies).join(
            t.kernel_file, t.kernel_file.c.id == t.sample.c.kernel_file_id)).all()
    assert len(pairs) > 30000
    for columns, latencies in pairs:
        durations = [c for c in json.loads(columns) if c.endswith("Duration(us)")]
        assert list(json.loads(latencies)) == durations


def test_reingesting_the_corpus_changes_nothing(engine):
    before = table_counts(engine)
    with engine.connect() as conn:
        profiles = conn.execute(select(t.profile_set).order_by(t.profile_set.c.id)).all()
    again = ingest_path(engine, PERFDB)
    assert [(s.alias, s.status) for s in again] == [
        ("v0.13", "unchanged"), ("v0.15", "unchanged"), ("v0.18", "unchanged"),
        ("hccl-v8.5", "unchanged")]
    assert table_counts(engine) == before
    with engine.connect() as conn:
        assert conn.execute(select(t.profile_set).order_by(t.profile_set.c.id)).all() == profiles


def copy_small_versions(root: Path) -> None:
    for alias in ("v0.13", "v0.15", "hccl-v8.5"):
        target = version_dir(root, alias)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(version_dir(PERFDB, alias), target)


def test_changing_one_csv_reingests_only_its_version(tmp_path):
    root = tmp_path / "perfdb"
    copy_small_versions(root)
    engine = make_engine(new_database(tmp_path, "small"))
    upgrade(engine)
    ingest_path(engine, root)
    with engine.connect() as conn:
        before = {r.alias: r for r in conn.execute(select(t.profile_set))}
    rms = version_dir(root, "v0.15") / "RmsNorm.csv"
    lines = physical_lines(rms)
    rms.write_text("\n".join([*lines[:-2], lines[-2], lines[-2], ""]))
    summaries = ingest_path(engine, root)
    assert [(s.alias, s.status) for s in summaries] == [
        ("v0.13", "unchanged"), ("v0.15", "ingested"), ("hccl-v8.5", "unchanged")]
    with engine.connect() as conn:
        after = {r.alias: r for r in conn.execute(select(t.profile_set))}
        rms_rows = conn.execute(select(t.kernel_file.c.rows_read).where(
            t.kernel_file.c.profile_id == after["v0.15"].id,
            t.kernel_file.c.file_name == "RmsNorm.csv")).scalar()
    assert after["v0.13"] == before["v0.13"]
    assert after["hccl-v8.5"] == before["hccl-v8.5"]
    assert after["v0.15"].content_hash != before["v0.15"].content_hash
    assert after["v0.15"].rows_read == before["v0.15"].rows_read + 1
    assert rms_rows == data_row_count(rms)
    engine.dispose()
