"""A version that an ingest replaces while readers read it, or while it is killed.

``v0.18`` exists twice on disk: v1 and v2 hold the same rows and v2's every latency is
exactly ``FACTOR`` times v1's, so any answer is checkable as entirely old or entirely
new. RmsNorm latencies are linear in tokens (``v1_latency``), so an interpolated answer
is exact; one built from an old and a new neighbour lies strictly between the two
candidates. Filler kernels make the ingest long enough to overlap readers and to be
killed in the middle. A second version (``v0.13``) is ingested after v1 so that the
replaced version's profile id changes on re-ingest (the old id is not the highest).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from profstore.ingest.discover import content_hash, discover
from profstore.ingest.loader import ingest_path
from profstore.model.leaf import LeafOp
from profstore.storage.engines import make_engine

from tests.support.perfdb import Row, mapping_doc, write_version

RMS_OP = "tensor_cast.rms_norm.default"
HIDDEN = 7168
GRID = tuple(range(8, 8 * 41, 8))
"""Measured token counts: 8, 16, …, 320."""
TARGETS = tuple(range(GRID[0], GRID[-1] + 1))
"""Every token count from 8 to 320: measured ones answer exactly, the rest interpolate."""
FACTOR = 2.0
FILLERS = 30
FILLER_ROWS = 40
V13_DIR = "vllm0.13.0_torch2.8.0_cann8.3"


def v1_latency(tokens: float) -> float:
    return 2.0 + 0.25 * tokens


def rms_row(tokens: int, latency: float) -> Row:
    return Row([[tokens, HIDDEN], [HIDDEN]], ["DT_BF16", "DT_BF16"], [[tokens, HIDDEN]],
               ["DT_BF16"], latency)


def rms_leaf(tokens: int) -> LeafOp:
    return LeafOp.from_json({
        "op": RMS_OP,
        "args": [{"shape": [tokens, HIDDEN], "dtype": "bfloat16"},
                 {"shape": [HIDDEN], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": [tokens, HIDDEN], "dtype": "bfloat16"}],
    })


def write_v18(root: Path, factor: float) -> Path:
    kernels: dict[str, list[Row]] = {
        "RmsNorm": [rms_row(t, factor * v1_latency(t)) for t in GRID]}
    for i in range(FILLERS):
        kernels[f"Filler{i:02d}"] = [
            Row([[n, 64]], ["DT_BF16"], [[n, 64]], ["DT_BF16"], factor * (1.0 + n + i))
            for n in range(1, FILLER_ROWS + 1)]
    return write_version(root, kernels, mapping_doc({RMS_OP: {"kernel_type": "RmsNorm"}}))


def rows_per_version() -> int:
    return len(GRID) + FILLERS * FILLER_ROWS


@dataclass(frozen=True)
class Replacement:
    """A database holding v1 of ``v0.18`` (and ``v0.13``), and v2 on disk."""

    url: str
    v1: Path
    v2: Path

    def version_hash(self, root: Path) -> str:
        [source] = discover(root)
        return content_hash({p.name: p.read_bytes() for p in source.files()})


def classify(tokens: int, latency: float | None) -> str:
    """``old``, ``new``, or ``mixed`` (anything else, a miss included)."""
    expected = v1_latency(tokens)
    if latency is None:
        return "miss"
    for name, value in (("old", expected), ("new", FACTOR * expected)):
        if abs(latency - value) <= 1e-9 * value:
            return name
    return "mixed"


def ingest(url: str, root: Path, **kwargs) -> list:
    engine = make_engine(url)
    try:
        return ingest_path(engine, root, **kwargs)
    finally:
        engine.dispose()
