"""A one-kernel version for the storage tests: RmsNorm at three token counts (5.0, 6.0
and 9.0 µs at 4, 8 and 16 tokens), a kernel with an empty CSV and an op whose kernel has
none; and the same version ingested again with one more row."""

from __future__ import annotations

from pathlib import Path

from profstore.ingest.loader import ingest_path
from profstore.model.leaf import LeafOp
from profstore.storage.engines import make_engine

from tests.support.perfdb import Row, mapping_doc, write_version

BF16 = "DT_BF16"
HIDDEN = 7168
NORM, ABSENT, EMPTY = "tensor_cast.rms_norm.default", "test.absent", "test.empty"
ENTRIES = {NORM: {"kernel_type": "RmsNorm"}, ABSENT: {"kernel_type": "NoSuchKernel"},
           EMPTY: {"kernel_type": "EmptyNorm"}}
CSV_LATENCY = {4: 5.0, 8: 6.0, 16: 9.0}
"""RmsNorm's rows (tokens → µs); a target between two is interpolated on the line."""
EMPTY_CSV = "Input Shapes,Input Data Types,Output Shapes,Output Data Types,Duration(us)\n"


def rms(tokens: int, latency: float) -> Row:
    return Row([[tokens, HIDDEN], [HIDDEN]], [BF16, BF16], [[tokens, HIDDEN]], [BF16], latency)


def leaf(tokens: int, op: str = NORM) -> LeafOp:
    return LeafOp.from_json({
        "op": op,
        "args": [{"shape": [tokens, HIDDEN], "dtype": "bfloat16"},
                 {"shape": [HIDDEN], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": [tokens, HIDDEN], "dtype": "bfloat16"}]})


def write(root: Path, rows: dict[int, float]) -> Path:
    kernels: dict[str, list[Row] | str] = {"RmsNorm": [rms(t, v) for t, v in rows.items()],
                                           "EmptyNorm": EMPTY_CSV}
    write_version(root, kernels, mapping_doc(ENTRIES))
    return root


def reingested(url: str, root: Path) -> None:
    """The version again, with a row at 6 tokens (7.5 µs) the first ingest lacks."""
    engine = make_engine(url)
    try:
        ingest_path(engine, write(root, {**CSV_LATENCY, 6: 7.5}))
    finally:
        engine.dispose()
