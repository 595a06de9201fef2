"""Migration test helpers: the schema drift between a database and the metadata, SQLite URLs."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from profstore.ingest.profiling_folders import Row
from profstore.model.leaf import LeafOp
from profstore.storage import schema as t
from sqlalchemy import create_engine


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"



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
