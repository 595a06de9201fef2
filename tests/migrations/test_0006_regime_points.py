"""Migration 0006 (each regime's points in one ``regime_points`` row) on a database built
and filled by revision 0005, on SQLite and on PostgreSQL (this folder runs in both passes):
every regime gets its pack with the points as the CSVs wrote them, lookups read them and
answer as the rows say, a new version and a re-ingest write their own packs, and the
downgrade removes the table and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from profstore.api import Store
from profstore.ingest.loader import ingest_path
from profstore.ingest.profiling_folders import mapping_doc, write_version
from profstore.storage import schema as t
from profstore.storage.engines import alembic_config, current_revision, make_engine
from profstore.storage.regime_pack import READ_COLUMNS, decode
from sqlalchemy import create_engine, func, inspect, select

from tests.support.migrations import OPS, RMS, add, filled_at, leaf, rms, schema_drift

V15 = "vllm0.15.0_torch2.9.0_cann8.5"


@pytest.fixture()
def url_0005(tmp_path: Path) -> Iterator[str]:
    """A database at revision 0005 holding one version written by 0005's layout."""
    url = filled_at("0005", tmp_path, {
        "RmsNorm": [rms(n, v) for n, v in RMS],
        "Add": [add(4, 2.5), add(4, 3.5), add(8, 3.0)],
    })
    engine = create_engine(url)
    assert not inspect(engine).has_table("regime_points")
    engine.dispose()
    yield url


def packs(url: str) -> dict[tuple[str, str], list[tuple]]:
    """(kernel, path) -> the pack's points as (axes, latency, line, file) of each."""
    engine = create_engine(url)
    g, p = t.regime.c, t.regime_points.c
    with engine.connect() as conn:
        rows = conn.execute(select(g.kernel_type, g.path, *[p[c] for c in READ_COLUMNS])
                            .join(t.regime_points, p.regime_id == g.id)
                            .order_by(g.kernel_type, g.path)).all()
    engine.dispose()
    return {(r[0], r[1]): [(m.axes, m.latency_us, m.line_no, m.file_name)
                           for m in decode(r[2:]).rows] for r in rows}


def test_0006_packs_every_stored_regime_and_downgrades_to_0005(url_0005):
    command.upgrade(alembic_config(url_0005), "0006")
    engine = create_engine(url_0005)
    assert current_revision(engine) == "0006"
    with engine.connect() as conn:
        regimes = conn.execute(select(func.count()).select_from(t.regime)).scalar()
        packed = conn.execute(select(func.count(), func.sum(t.regime_points.c.points))).one()
        points = conn.execute(select(func.count()).select_from(t.point)).scalar()
    engine.dispose()
    assert tuple(packed) == (regimes, points)
    command.upgrade(alembic_config(url_0005), "head")  # 0007 adds an index alone
    assert schema_drift(url_0005) == []
    found = packs(url_0005)
    assert found[("RmsNorm", "generic")] == [  # RMS: (tokens, latency), CSV lines 2..5
        ((1.0,), 10.0, 2, "RmsNorm.csv"), ((2.0,), 12.0, 3, "RmsNorm.csv"),
        ((4.0,), 16.0, 4, "RmsNorm.csv"), ((8.0,), 24.0, 5, "RmsNorm.csv")]
    assert [(a, v) for a, v, _, _ in found[("Add", "generic")]] == [
        ((4.0,), 2.5), ((4.0,), 3.5), ((8.0,), 3.0)]

    with Store.open(url_0005) as store:
        between = store.lookup(leaf("aten.rms_norm.default", [[3, 7168], [7168]], "bfloat16",
                                    [3, 7168]), "v0.18")
        beyond = store.lookup(leaf("aten.rms_norm.default", [[9, 7168], [7168]], "bfloat16",
                                   [9, 7168]), "v0.18")
    assert (between.latency_us, between.details["method"]) == (14.0, "linear_1d")
    assert [r["line"] for r in between.details["matched_rows"]] == [3, 4]  # 2 and 4 tokens
    assert (beyond.latency_us, beyond.reason.value) == (None, "outside_range")

    command.downgrade(alembic_config(url_0005), "0005")
    engine = create_engine(url_0005)
    assert current_revision(engine) == "0005"
    assert not inspect(engine).has_table("regime_points")
    engine.dispose()


def test_a_new_version_and_a_reingest_write_their_own_packs(url_0005, tmp_path):
    command.upgrade(alembic_config(url_0005), "head")
    root = tmp_path / "more"
    write_version(root, {"RmsNorm": [rms(16, 40.0), rms(32, 72.0)]}, mapping_doc(OPS),
                  directory=V15)
    engine = make_engine(url_0005)
    ingest_path(engine, root)
    write_version(root, {"RmsNorm": [rms(16, 41.0), rms(64, 130.0), rms(32, 72.0)]},
                  mapping_doc(OPS), directory=V15)
    ingest_path(engine, root)  # changed content: the version is replaced
    with engine.connect() as conn:
        per_profile = conn.execute(
            select(t.regime_points.c.profile_id, func.count())
            .group_by(t.regime_points.c.profile_id).order_by(t.regime_points.c.profile_id)
        ).all()
    engine.dispose()
    assert [n for _, n in per_profile] == [2, 1]  # v0.18: RmsNorm and Add; v0.15: RmsNorm
    with Store.open(url_0005) as store:
        answer = store.lookup(leaf("aten.rms_norm.default", [[48, 7168], [7168]], "bfloat16",
                                   [48, 7168]), "v0.15")
    assert answer.latency_us == pytest.approx(101.0)  # halfway from (32, 72) to (64, 130)
    assert [r["line"] for r in answer.details["matched_rows"]] == [4, 3]
