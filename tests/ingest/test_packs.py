"""The ``regime_points`` packs ingest writes (collected from the rows its writer flushed)
are the packs the stored ``sample_point`` and ``sample`` rows give (what migration 0006
and a stored version that gains rows use), on the whole corpus: every regime, every byte.
Both backends (this folder runs in both passes)."""

from __future__ import annotations

from profstore.ingest.packs import write_packs
from profstore.storage import schema as t
from profstore.storage.engines import make_engine
from profstore.storage.regime_pack import READ_COLUMNS, decode
from sqlalchemy import delete, func, select


def _packs(conn) -> list[tuple]:
    return [tuple(r) for r in conn.execute(
        select(t.regime_points).order_by(t.regime_points.c.regime_id))]


def test_ingest_packs_equal_the_packs_of_the_stored_points(perfdb_path):
    engine = make_engine(perfdb_path)
    with engine.connect() as conn:
        written = _packs(conn)
        regimes = conn.execute(select(func.count()).select_from(t.regime)).scalar()
        profiles = conn.execute(select(t.profile_set.c.id)).scalars().all()
    with engine.connect() as conn:
        rebuilding = conn.begin()  # rolled back: the session's database stays as it was
        conn.execute(delete(t.regime_points))
        rebuilt = sum(write_packs(conn, profile_id) for profile_id in profiles)
        again = _packs(conn)
        rebuilding.rollback()
    engine.dispose()
    assert len(written) == regimes == rebuilt > 2000
    assert again == written


def test_a_pack_holds_the_rows_of_its_regime(perfdb_path):
    """The RmsNorm generic regime of v0.18 at [T, 7168] BF16: its pack's points are the
    regime's sample_point rows with their samples' latency, line and file."""
    engine = make_engine(perfdb_path)
    g, p, s = t.regime.c, t.point.c, t.sample_table.c
    with engine.connect() as conn:
        regime_id = conn.execute(
            select(g.id).join(t.profile_set, t.profile_set.c.id == g.profile_id)
            .where(t.profile_set.c.alias == "v0.18", g.kernel_type == "RmsNorm",
                   g.path == "generic", g.shape_signature == "T,7168;7168")).scalar_one()
        stored = conn.execute(
            select(p.axis_0, s.latency_us, s.line_no, s.latency_column)
            .join(t.sample_table, s.id == p.sample_id).where(p.regime_id == regime_id)
        ).all()
        row = conn.execute(select(*[t.regime_points.c[c] for c in READ_COLUMNS])
                           .where(t.regime_points.c.regime_id == regime_id)).one()
    engine.dispose()
    packed = decode(row).rows
    assert sorted((r.axes[0], r.latency_us, r.line_no, r.latency_column) for r in packed) \
        == sorted(tuple(r) for r in stored)
    assert {r.file_name for r in packed} == {"RmsNorm.csv"} and len(packed) == len(stored)
    assert [r.axes[0] for r in packed] == sorted(r.axes[0] for r in packed)
