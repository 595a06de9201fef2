"""The robustness tests' ``replacement``: a database holding v1 of a version that an
ingest replaces with v2 (tests.support.replacement describes the data)."""

from __future__ import annotations

from pathlib import Path

import pytest
from profstore.ingest.loader import ingest_path
from profstore.storage.engines import make_engine, upgrade

from tests.support.perfdb import mapping_doc, new_database, write_version
from tests.support.replacement import FACTOR, RMS_OP, V13_DIR, Replacement, rms_row, write_v18


@pytest.fixture()
def replacement(tmp_path: Path) -> Replacement:
    v1, v2, other = tmp_path / "v1", tmp_path / "v2", tmp_path / "other"
    write_v18(v1, 1.0)
    write_v18(v2, FACTOR)
    write_version(other, {"RmsNorm": [rms_row(8, 1.0)]},
                  mapping_doc({RMS_OP: {"kernel_type": "RmsNorm"}}), directory=V13_DIR)
    url = new_database(tmp_path)
    engine = make_engine(url)
    try:
        upgrade(engine)
        ingest_path(engine, v1)
        ingest_path(engine, other)
    finally:
        engine.dispose()
    return Replacement(url, v1, v2)
