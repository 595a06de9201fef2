"""Fixture databases for tests: the format writers plus ingest-and-open."""

from __future__ import annotations

from pathlib import Path

from ingest.loader import ingest_path
from ingest.writer import (  # noqa: F401 - re-exported for tests
    BASE_HEADER,
    DEVICE,
    V18_DIR,
    Row,
    csv_text,
    mapping_doc,
    shape_cell,
    write_hccl,
    write_version,
)
from store.api import Store
from store.db import make_engine, upgrade


def build_store(tmp_path: Path, root: Path | None = None) -> Store:
    """Ingest ``root`` (default ``tmp_path/'data'``) into a fresh SQLite file and open it."""
    db = tmp_path / "store.db"
    engine = make_engine(db)
    upgrade(engine)
    ingest_path(engine, root or tmp_path / "data")
    engine.dispose()
    return Store.open(db)
