"""Migration test helpers: a database filled at an old revision, the schema drift between a
database and the metadata, SQLite URLs."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from profstore.ingest.loader import ingest_path
from profstore.ingest.profiling_folders import Row, mapping_doc, write_version
from profstore.model.leaf import LeafOp
from profstore.storage import schema as t
from profstore.storage.engines import alembic_config, make_engine
from sqlalchemy import create_engine

from tests.support import perfdb


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"



def filled_at(revision: str, folder: Path, kernels: dict[str, list[Row]]) -> str:
    """The URL of a database at ``revision`` (a throwaway PostgreSQL database in the
    PostgreSQL pass, else a SQLite file in ``folder``) holding one version of ``kernels``
    under ``OPS``'s mapping, ingested at that revision."""
    url = (perfdb.new_empty_database() if perfdb.on_postgresql()
           else sqlite_url(folder / "old.db"))
    command.upgrade(alembic_config(url), revision)
    write_version(folder / "perfdb", kernels, mapping_doc(OPS))
    engine = make_engine(url)
    ingest_path(engine, folder / "perfdb")
    engine.dispose()
    return url


def schema_drift(url: str) -> list:
    engine = create_engine(url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), t.metadata)
    engine.dispose()
    return diff


OPS = {"aten.rms_norm.default": {"kernel_type": "RmsNorm"},
       "aten.add.Tensor": {"kernel_type": "Add"}}


RMS = [(1, 10.0), (2, 12.0), (4, 16.0), (8, 24.0)]
"""(tokens, latency): RmsNorm rows [tokens, 7168] BF16; 3 tokens lies between 2 and 4."""


def rms(tokens: int, latency: float, **extra: str) -> Row:
    return Row([[tokens, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[tokens, 7168]], ["DT_BF16"],
               latency=latency, extra=extra)


def add(n: int, latency: float | None, **columns: float) -> Row:
    return Row([[n, 64], [n, 64]], ["FLOAT", "FLOAT"], [[n, 64]], ["FLOAT"], latency=latency,
               columns=columns)


def leaf(op: str, inputs: list[list[int]], dtype: str, out: list[int]) -> LeafOp:
    return LeafOp.from_json({"op": op, "args": [{"shape": s, "dtype": dtype} for s in inputs],
                             "outputs": [{"shape": out, "dtype": dtype}]})
