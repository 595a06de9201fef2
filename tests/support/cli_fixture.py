"""The CLI tests' small hand-computable fixture (tests/cli/conftest.py ingests it; tests/web
serves it).

The fixture version (``v0.18``, device TEST_DEVICE):

- ``RmsNorm.csv``: hidden 7168 at tokens 8 (10.0), 16 (14.0) and three rows at 64
  (30.0, 34.0, 32.5: a duplicate coordinate, median 32.5); a row at 32 with a NaN
  latency (rejected); hidden 4096 at tokens 8 (5.0) and 32 (9.0), a second regime.
- ``Add.csv``: two rows and one line with a missing column (rejected).
- ``Range.csv``: one row with no input tensors (accepted, refused by the generic path).
"""

from __future__ import annotations

from pathlib import Path

from profstore.ingest.loader import ingest_path
from profstore.storage.engines import make_engine, upgrade

from tests.support.paths import PERFDB
from tests.support.perfdb import (
    V18_DIR,
    Row,
    csv_text,
    mapping_doc,
    write_version,
)

RMS_OP = "tensor_cast.rms_norm.default"


def rms_row(tokens: int, latency: float | str, hidden: int = 7168) -> Row:
    return Row([[tokens, hidden], [hidden]], ["DT_BF16", "DT_BF16"], [[tokens, hidden]],
               ["DT_BF16"], latency)


RMS_ROWS = [
    rms_row(8, 10.0), rms_row(16, 14.0), rms_row(64, 30.0), rms_row(64, 34.0),
    rms_row(64, 32.5), rms_row(32, "nan"), rms_row(8, 5.0, 4096), rms_row(32, 9.0, 4096),
]


def add_text() -> str:
    rows = [Row([[4, 128], [4, 128]], ["DT_BF16"] * 2, [[4, 128]], ["DT_BF16"], 3.0),
            Row([[8, 128], [8, 128]], ["DT_BF16"] * 2, [[8, 128]], ["DT_BF16"], 4.0)]
    text = csv_text(rows)
    broken = text.splitlines()[-1].rsplit(",", 1)[0]
    return text + broken + "\r\n"


RANGE_ROWS = [Row([None, None, None], ["INT64"] * 3, [[1]], ["INT64"], 5.5)]


def fixture_kernels() -> dict[str, list[Row] | str]:
    return {"RmsNorm": RMS_ROWS, "Add": add_text(), "Range": RANGE_ROWS}


def write_fixture(root: Path) -> Path:
    return write_version(root, fixture_kernels(),
                         mapping_doc({RMS_OP: {"kernel_type": "RmsNorm"}}))


def ingest_into(db: Path, root: Path) -> Path:
    engine = make_engine(db)
    upgrade(engine)
    ingest_path(engine, root)
    engine.dispose()
    return db


V18_CORPUS = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend" / V18_DIR
