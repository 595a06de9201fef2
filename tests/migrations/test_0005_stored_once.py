"""Migration 0005 (keys stored once, narrow points, packed JSON) on a database built and
filled by revision 0004, on SQLite and on PostgreSQL (this folder runs in both passes):
every column of ``sample``, ``sample_key`` and ``sample_point`` reads as before through
the Core names, the views give the same rows, lookups give the same answers, a new
version is stored as in a fresh database, and the downgrade restores 0004's tables."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from profstore.api import Store
from profstore.ingest.loader import ingest_path
from profstore.ingest.profiling_folders import mapping_doc, write_version
from profstore.storage import schema as t
from profstore.storage.engines import alembic_config, current_revision, make_engine, upgrade
from sqlalchemy import Engine, create_engine, func, select, text

from tests.support import perfdb
from tests.support.migrations import OPS, RMS, add, filled_at, leaf, rms, schema_drift

PROFILING = {"Profiling Average Duration(us)": 9.5, "Profiling Std Duration(us)": 0.25}

SAMPLE_0004 = ("id, profile_id, kernel_file_id, kernel_type, line_no, raw_text, input_shapes, "
               "input_dtypes, input_formats, output_shapes, output_dtypes, output_formats, "
               "latencies, extras, latency_us, latency_column")
KEY_0004 = "id, profile_id, sample_id, kernel_type, exact_key, latency_us, latency_column"
POINT_0004 = ("p.id, p.profile_id, p.sample_id, p.kernel_type, p.path, p.regime_key, "
              + ", ".join(f"g.{c}" for c in t.REGIME_COLUMNS)
              + ", p.semantic_key, p.axis_0, p.axis_1, p.axis_2, p.latency_us, p.latency_column")
READS_0004 = {
    "sample": f"SELECT {SAMPLE_0004} FROM sample ORDER BY id",
    "sample_key": f"SELECT {KEY_0004} FROM sample_key ORDER BY id",
    "sample_point": f"SELECT {POINT_0004} FROM sample_point p "
                    "JOIN regime g ON g.id = p.regime_id ORDER BY p.id",
    "regimes": "SELECT * FROM regimes ORDER BY 1, 2, 3, 4",
    "duplicates": "SELECT * FROM duplicates ORDER BY 1, 2, 3, 4, 5",
}
"""Everything 0004 stored, read in 0004's own layout (raw SQL)."""


@pytest.fixture()
def url_0004(tmp_path: Path) -> Iterator[str]:
    """A database at revision 0004 holding one version written by 0004's layout."""
    rows = [rms(n, v, **{"EP Size": "16", "Runtime phase": "decode"}) for n, v in RMS]
    yield filled_at("0004", tmp_path, {
        "RmsNorm": rows,
        "Add": [add(4, 2.5), add(4, 3.5), add(8, 3.0), add(16, None, **PROFILING)],
    })


def read_raw(url: str) -> dict[str, list[tuple]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = {name: [tuple(r) for r in conn.execute(text(sql))]
                 for name, sql in READS_0004.items()}
    engine.dispose()
    return found


def read_core(engine: Engine) -> dict[str, list[tuple]]:
    with engine.connect() as conn:
        return {
            "sample": [tuple(r) for r in conn.execute(select(t.sample).order_by(t.sample.c.id))],
            "sample_key": [tuple(r) for r in conn.execute(
                select(t.sample_key).order_by(t.sample_key.c.id))],
            "sample_point": [tuple(r) for r in conn.execute(
                select(t.sample_point).order_by(t.sample_point.c.id))],
        }


def test_0005_keeps_every_column_readable_and_downgrades_to_0004(url_0004):
    before = read_raw(url_0004)
    samples = before["sample"]
    assert len(samples) == 8 and len(before["sample_key"]) > len(samples)
    assert [json.loads(r[13]) for r in samples[:1]] == [{}]  # Add rows have no extra column
    assert [r[13] for r in samples if r[3] == "RmsNorm"] == [
        '{"EP Size": "16", "Runtime phase": "decode"}'] * 4
    assert json.loads(samples[3][12]) == {"Average Duration(us)": None, **PROFILING}
    assert [(r[8], r[10]) for r in before["duplicates"]] == [(2, 3.0)]  # Add n=4: 2.5, 3.5

    command.upgrade(alembic_config(url_0004), "0005")
    engine = create_engine(url_0004)
    assert current_revision(engine) == "0005"
    assert read_core(engine) == {k: before[k] for k in ("sample", "sample_key", "sample_point")}
    with engine.connect() as conn:
        packed = conn.execute(select(func.sum(func.length(t.sample_table.c.latencies_packed)))
                              ).scalar()
        stored = [r[0] for r in conn.execute(text(
            "SELECT sql FROM sqlite_master WHERE name = 'sample_key'"))] \
            if engine.dialect.name == "sqlite" else ["WITHOUT ROWID"]
    engine.dispose()
    assert packed < sum(len(r[12]) for r in samples) / 2
    assert "WITHOUT ROWID" in stored[0]
    command.upgrade(alembic_config(url_0004), "head")  # 0006 adds regime_points alone
    assert schema_drift(url_0004) == []
    after = read_raw_views(url_0004)
    assert after == {k: before[k] for k in ("regimes", "duplicates")}

    with Store.open(url_0004) as store:
        between = store.lookup(leaf("aten.rms_norm.default", [[3, 7168], [7168]], "bfloat16",
                                    [3, 7168]), "v0.18")
        duplicated = store.lookup(leaf("aten.add.Tensor", [[4, 64], [4, 64]], "float32",
                                       [4, 64]), "v0.18")
    assert (between.latency_us, between.details["method"]) == (14.0, "linear_1d")
    assert duplicated.latency_us == 3.0  # the median of the two measured rows, 2.5 and 3.5

    command.downgrade(alembic_config(url_0004), "0004")
    assert read_raw(url_0004) == before


def read_raw_views(url: str) -> dict[str, list[tuple]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = {name: [tuple(r) for r in conn.execute(text(READS_0004[name]))]
                 for name in ("regimes", "duplicates")}
    engine.dispose()
    return found


def test_a_database_migrated_to_0005_takes_a_new_version_like_a_fresh_one(url_0004, tmp_path):
    command.upgrade(alembic_config(url_0004), "head")
    fresh = perfdb.new_database(tmp_path, "fresh")
    root = tmp_path / "more"
    write_version(root, {"RmsNorm": [rms(16, 40.0), rms(32, 72.0, **{"EP Size": "8"})]},
                  mapping_doc(OPS), directory="vllm0.15.0_torch2.9.0_cann8.5")
    found = []
    for url in (url_0004, fresh):
        engine = make_engine(url)
        upgrade(engine)
        ingest_path(engine, root)
        with engine.connect() as conn:
            version = select(t.profile_set.c.id).where(t.profile_set.c.alias == "v0.15")
            s, k, p = t.sample.c, t.sample_key.c, t.sample_point.c
            found.append((
                [tuple(r) for r in conn.execute(
                    select(s.line_no, s.latencies, s.extras, s.latency_us)
                    .where(s.profile_id == version.scalar_subquery()).order_by(s.line_no))],
                [tuple(r) for r in conn.execute(
                    select(k.kernel_type, k.exact_key, k.latency_us)
                    .where(k.profile_id == version.scalar_subquery())
                    .order_by(k.exact_key, k.latency_us))],
                [tuple(r) for r in conn.execute(
                    select(p.kernel_type, p.path, p.regime_key, p.axis_0, p.latency_us)
                    .where(p.profile_id == version.scalar_subquery()).order_by(p.axis_0))],
            ))
        engine.dispose()
    assert found[0] == found[1]
    samples, keys, points = found[1]
    assert [(r[2], r[3]) for r in samples] == [('{"EP Size": ""}', 40.0),
                                               ('{"EP Size": "8"}', 72.0)]
    assert ("RmsNorm", "x1|16,7168:DT_BF16", 40.0) in keys
    assert [r[-1] for r in points if r[1] == "generic"] == [40.0, 72.0]
