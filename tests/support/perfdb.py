"""Fixture databases for tests: the format writers plus ingest-and-open, on the selected
backend.

The backend is chosen once per pytest session (``--backend``, see tests/conftest.py):
SQLite writes ``<tmp_path>/store.db``; PostgreSQL creates a fresh database
``profstore_t_<uuid>`` through the admin URL for every store, and tests/conftest.py
drops it when the test (or the fixture scope) that made it ends.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

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

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
DATABASE_PREFIX = "profstore_t_"


@dataclass
class Backend:
    """The session's backend; ``created`` lists the PostgreSQL databases not yet dropped."""

    name: str = SQLITE
    admin_url: str | None = None
    created: list[str] = field(default_factory=list)


BACKEND = Backend()


def use_backend(name: str, admin_url: str | None = None) -> None:
    if name == POSTGRESQL and not admin_url:
        raise ValueError("the postgresql backend needs an admin URL (PROFSTORE_TEST_PG_URL)")
    BACKEND.name, BACKEND.admin_url = name, admin_url


def on_postgresql() -> bool:
    return BACKEND.name == POSTGRESQL


def _admin_execute(statement: str) -> None:
    engine = create_engine(BACKEND.admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


def new_database(tmp_path: Path, stem: str = "store") -> str:
    """An empty database on the selected backend: a SQLite file path, or the URL of a
    database created for this call."""
    if not on_postgresql():
        return str(Path(tmp_path) / f"{stem}.db")
    name = f"{DATABASE_PREFIX}{uuid.uuid4().hex}"
    _admin_execute(f'CREATE DATABASE "{name}"')
    BACKEND.created.append(name)
    url = make_url(BACKEND.admin_url).set(database=name)
    return url.render_as_string(hide_password=False)


def drop_databases(names: list[str]) -> None:
    """Drop test databases (connections still open are terminated)."""
    for name in names:
        _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in BACKEND.created:
            BACKEND.created.remove(name)


def build_database(tmp_path: Path, root: Path | None = None, stem: str = "store") -> str:
    """Ingest ``root`` (default ``tmp_path/'data'``) into a fresh database; returns what
    ``Store.open`` and ``--db`` accept (a SQLite file path or a PostgreSQL URL)."""
    url = new_database(tmp_path, stem)
    engine = make_engine(url)
    try:
        upgrade(engine)
        ingest_path(engine, root or Path(tmp_path) / "data")
    finally:
        engine.dispose()
    return url


def build_store(tmp_path: Path, root: Path | None = None) -> Store:
    """Ingest ``root`` (default ``tmp_path/'data'``) into a fresh database and open it."""
    return Store.open(build_database(tmp_path, root))
