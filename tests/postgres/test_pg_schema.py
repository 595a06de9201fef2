"""The schema on PostgreSQL equals the metadata, and values SQLite accepts (long names,
long cells) are accepted on PostgreSQL too (migration 0002)."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from profstore.api import Store
from profstore.ingest.loader import ingest_path
from profstore.storage import schema as t
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import Text, create_engine, select
from sqlalchemy.dialects import postgresql

from tests.support.perfdb import Row, mapping_doc, new_database, write_hccl, write_version
from tests.support.postgres import needs_postgresql

LONG_DEVICE = "D" * 150
LONG_DIRECTORY = "custom_profiling_run_" + "x" * 80
LONG_KERNEL = "triton_fused_kernel_" + "0123456789abcdef" * 9
LONG_DTYPE = "DT_" + "Q" * 40


@needs_postgresql
def test_a_migrated_postgresql_database_equals_the_metadata(tmp_path):
    url = new_database(tmp_path)
    engine = create_engine(url)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), t.metadata) == []
    engine.dispose()


def test_long_names_and_cells_ingest_on_every_backend(tmp_path: Path):
    root = tmp_path / "data"
    rows = [Row([[8, 64]], ["DT_BF16"], [[8, 64]], ["DT_BF16"], 3.5)]
    write_version(root, {LONG_KERNEL: rows},
                  mapping_doc({"op." + "y" * 300: {"kernel_type": LONG_KERNEL,
                                                   "query_mode": "z" * 90}}),
                  directory=LONG_DIRECTORY, device=LONG_DEVICE)
    write_hccl(root, "hcom_allReduce_" + "w" * 120, [(1024, 16, LONG_DTYPE, "t" * 80, 30.5, 0.1)],
               device=LONG_DEVICE)
    url = new_database(tmp_path)
    engine = make_engine(url)
    upgrade(engine)
    summaries = ingest_path(engine, root)
    engine.dispose()
    assert [(s.alias, s.rows_accepted) for s in summaries] == [
        (LONG_DIRECTORY, 1), ("hccl-v8.5", 1)]
    with Store.open(url) as store, store.engine.connect() as conn:
        kernels = conn.execute(select(t.sample.c.kernel_type)).scalars().all()
        dtypes = conn.execute(select(t.comm_sample.c.dtype)).scalars().all()
        assert store.versions() == [LONG_DIRECTORY, "hccl-v8.5"]
    assert (kernels, dtypes) == ([LONG_KERNEL], [LONG_DTYPE])


def test_only_postgresql_drops_the_declared_lengths():
    """SQLite databases need no rebuild (their lengths are documentation) and keep
    matching the metadata; PostgreSQL gets TEXT."""
    alias = t.profile_set.c.alias.type
    assert alias.dialect_impl(create_engine("sqlite://").dialect).length == 64
    assert isinstance(alias.dialect_impl(postgresql.dialect()), Text)
