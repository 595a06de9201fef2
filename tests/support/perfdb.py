"""Fixture databases for tests: the format writers plus ingest-and-open, on the selected
backend.

The backend is chosen once per pytest session (``--backend``, see tests/conftest.py):
SQLite writes ``<tmp_path>/store.db``; PostgreSQL creates a fresh database
``profstore_t_<uuid>`` through the admin URL for every store (a copy of a template
migrated once per session with ``store.db.upgrade``), and tests/conftest.py drops it
when the test that made it ends (wider-scoped fixtures' databases: at session end).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from profstore.api import Store
from profstore.ingest.loader import ingest_path
from profstore.ingest.profiling_folders import (  # noqa: F401 - re-exported for tests
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
from profstore.storage.engines import make_engine, upgrade
from profstore.storage.urls import redact_url
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
DATABASE_PREFIX = "profstore_t_"


@dataclass
class Backend:
    """The session's backend. ``created`` lists the PostgreSQL databases not yet dropped;
    ``template`` is a database migrated to head once per session, copied by every
    ``CREATE DATABASE`` (so each store skips re-running the migrations)."""

    name: str = SQLITE
    admin_url: str | None = None
    created: list[str] = field(default_factory=list)
    template: str | None = None
    admin: Engine | None = None


BACKEND = Backend()


def use_backend(name: str, admin_url: str | None = None) -> None:
    if name == POSTGRESQL and not admin_url:
        raise ValueError("the postgresql backend needs an admin URL (PROFSTORE_TEST_PG_URL)")
    BACKEND.name, BACKEND.admin_url = name, admin_url


def on_postgresql() -> bool:
    return BACKEND.name == POSTGRESQL


def server_problem() -> str | None:
    """Why the admin URL cannot create test databases (None when it can)."""
    try:
        _admin_execute("SELECT 1")
    except Exception as exc:
        first = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        return f"cannot use {redact_url(BACKEND.admin_url)}: {first}"
    return None


def _admin_execute(statement: str) -> None:
    if BACKEND.admin is None:
        BACKEND.admin = create_engine(BACKEND.admin_url, isolation_level="AUTOCOMMIT",
                                      poolclass=NullPool, connect_args={"connect_timeout": 10})
    with BACKEND.admin.connect() as conn:
        conn.execute(text(statement))


def _database_url(name: str) -> str:
    return make_url(BACKEND.admin_url).set(database=name).render_as_string(hide_password=False)


def _create(template: str | None) -> str:
    name = f"{DATABASE_PREFIX}{uuid.uuid4().hex}"
    _admin_execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    return name


def _template() -> str:
    if BACKEND.template is None:
        name = _create(None)
        engine = make_engine(_database_url(name))
        try:
            upgrade(engine)
        finally:
            engine.dispose()
        BACKEND.template = name
    return BACKEND.template


def new_database(tmp_path: Path, stem: str = "store") -> str:
    """An empty database on the selected backend: a SQLite file path, or the URL of a
    database created for this call (already at the schema head)."""
    if not on_postgresql():
        return str(Path(tmp_path) / f"{stem}.db")
    name = _create(_template())
    BACKEND.created.append(name)
    return _database_url(name)


def new_empty_database() -> str:
    """The URL of a PostgreSQL database created for this call with no schema at all (to
    build by an older revision), dropped like ``new_database``'s."""
    name = _create(None)
    BACKEND.created.append(name)
    return _database_url(name)


def drop_databases(names: list[str]) -> None:
    """Drop test databases (connections still open are terminated)."""
    for name in list(names):
        _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in BACKEND.created:
            BACKEND.created.remove(name)


def drop_all() -> None:
    """Session end: every database still listed, then the template."""
    drop_databases(BACKEND.created)
    if BACKEND.template is not None:
        drop_databases([BACKEND.template])
        BACKEND.template = None
    if BACKEND.admin is not None:
        BACKEND.admin.dispose()
        BACKEND.admin = None


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
