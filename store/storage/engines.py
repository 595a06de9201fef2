"""Engines, per-dialect connection settings, read-only mode and schema upgrades.

Every difference between SQLite and PostgreSQL that the rest of the code must not
know about lives here.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from profstore.storage.urls import (
    normalize_url,
    postgres_connect_args,
)
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import QueuePool

if TYPE_CHECKING:
    from alembic.config import Config

BULK_LOAD_CACHE_KIB = 65536
IMMUTABLE = "immutable"
ReadOnly = bool | Literal["immutable"]
"""False: read-write; True: read-only (immutable on its own when the storage is read-only);
"immutable": SQLite's ``immutable=1`` (no locks, no -wal/-shm files) whatever the storage."""


class DatabaseNotReadable(OSError):
    """A SQLite file that cannot be opened as asked; the message is one line saying what
    is not writable and the option to use."""


class DriverNotInstalled(RuntimeError):
    """The URL names a database driver that is not importable (e.g. psycopg)."""

    def __init__(self, drivername: str, module: str) -> None:
        hint = (" (install profstore[postgres] and use a postgresql+psycopg:// URL)"
                if drivername.startswith("postgresql") else "")
        super().__init__(f"the {drivername} driver is not installed: no module named "
                         f"{module!r}{hint}")


def sqlite_file(url: str) -> Path | None:
    """The file behind a SQLite URL; None for other dialects and in-memory databases."""
    if not is_sqlite(url):
        return None
    name = make_url(url).database or ""
    return Path(name) if name and name != ":memory:" else None


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url_or_path: str | Path, *, read_only: ReadOnly = False) -> Engine:
    """An engine with the dialect's settings applied.

    SQLite: WAL journal (readers never block the writer), foreign keys on, a busy
    timeout; ``read_only`` opens the file with ``mode=ro`` so a simulation worker can
    never write, or ``immutable=1`` on read-only storage (``sqlite_read_uri``).
    PostgreSQL: ``read_only`` sets the session default to read-only; a connect timeout,
    TCP keepalives and ``application_name`` unless the URL sets them (store/storage/urls.py); a
    bounded pool (``POOL_SIZE``), whose connections a writer pings before use (an ingest
    outlives server idle timeouts; a reader retries instead, store/storage/reconnect.py). A
    malformed URL raises ``InvalidDatabaseUrl``.
    """
    url = normalize_url(url_or_path)
    if is_sqlite(url):
        return _sqlite_engine(url, read_only)
    parsed = make_url(url)
    try:
        engine = create_engine(parsed, connect_args=postgres_connect_args(parsed.query),
                               pool_pre_ping=not read_only, **POOL_SETTINGS)
    except ModuleNotFoundError as exc:
        raise DriverNotInstalled(make_url(url).drivername, exc.name or "") from exc
    if read_only:
        _set_postgres_read_only(engine)
    return engine


POOL_SIZE = 5
POOL_OVERFLOW = 5
POOL_TIMEOUT_SECONDS = 30
"""Connections one engine (one Store) holds: 5 kept, 5 more under load, a thread past
that waits up to 30 s for one. A lookup holds a connection only while it runs
(storage/snapshot.py), so many threads share few connections (docs/adr/0104-pool-sizing.md)."""

POOL_SETTINGS: dict = {"pool_size": POOL_SIZE, "max_overflow": POOL_OVERFLOW,
                       "pool_timeout": POOL_TIMEOUT_SECONDS}

SQLITE_PAGE_SIZE = 16384
"""Page size of a new SQLite file (an existing one keeps its own). A sample row is about a
kilobyte with its raw text: on 4 KiB pages a fifth of the table was the unused tail of
pages and overflow chains; on v0.18 16 KiB pages took ``sample`` from 28.6 to 25.3 MB."""


def _sqlite_engine(url: str, read_only: ReadOnly) -> Engine:
    database = make_url(url).database or ""
    if read_only and database not in ("", ":memory:"):
        uri = sqlite_read_uri(Path(database), read_only)
        # QueuePool, not the SingletonThreadPool a "sqlite://" URL implies: that pool
        # closes other threads' connections past five threads (a crash in the driver).
        engine = create_engine("sqlite://", creator=lambda: _sqlite_connect(uri),
                               poolclass=QueuePool, **POOL_SETTINGS)
    else:
        pooled = POOL_SETTINGS if database not in ("", ":memory:") else {}
        engine = create_engine(url, connect_args={"timeout": 30}, **pooled)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:
        cursor = dbapi_conn.cursor()
        if not read_only:
            cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    return engine


@contextmanager
def bulk_load_settings(conn: Connection) -> Iterator[None]:
    """Connection settings for one bulk-load transaction, restored afterwards.

    SQLite: a 64 MiB page cache, so index pages are not spilled to the WAL and re-read
    while a large version loads (the default 2 MiB made that a third of SQLite's time).
    Journal and synchronous modes are not touched: WAL with synchronous=NORMAL keeps
    every ingest atomic, so a killed ingest leaves the previous version intact.
    """
    if conn.dialect.name != "sqlite":
        yield
        return
    previous = conn.exec_driver_sql("PRAGMA cache_size").scalar_one()
    conn.exec_driver_sql(f"PRAGMA cache_size=-{BULK_LOAD_CACHE_KIB}")
    try:
        yield
    finally:
        with suppress(SQLAlchemyError):  # a broken connection must not hide the real error
            conn.exec_driver_sql(f"PRAGMA cache_size={int(previous)}")


def storage_writable(path: Path) -> bool:
    """Whether ``path`` is writable storage: the file system is mounted read-write, the
    mode grants write permission to someone, and ``os.access`` agrees. The mode bits are
    checked on their own because root passes every ``os.access`` test: a 0555 directory
    or a 0444 file is a read-only artefact even to root."""
    try:
        mode, flags = os.stat(path).st_mode, os.statvfs(path).f_flag
    except OSError:
        return False
    return bool(mode & 0o222) and not flags & os.ST_RDONLY and os.access(path, os.W_OK)


def sqlite_read_uri(path: Path, read_only: ReadOnly = True) -> str:
    """The URI a reader opens. ``mode=ro`` needs to create ``-shm`` beside the file (WAL);
    when the file or its directory is not writable storage it is opened ``immutable=1``
    instead, unless an un-checkpointed ``-wal`` holds changes immutable would not see."""
    path = path.resolve()
    if read_only == IMMUTABLE:
        return f"file:{path}?mode=ro&immutable=1"
    blocked = [f"{what} {where}" for what, where in (("file", path), ("directory", path.parent))
               if not storage_writable(where)]
    if not blocked:
        return f"file:{path}?mode=ro"
    wal = path.with_name(path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        raise DatabaseNotReadable(
            f"cannot read {path}: the {' and the '.join(blocked)} "
            f"{'are' if len(blocked) > 1 else 'is'} not writable and "
            f"{wal.name} holds changes not checkpointed into it; run `profstore db checkpoint "
            f"--db {path}` where it is writable, or pass --immutable to read it without them")
    return f"file:{path}?mode=ro&immutable=1"


def probe(engine: Engine, name: str) -> None:
    """Open one connection now, so an unreadable SQLite file fails at open time as one
    ``DatabaseNotReadable`` line rather than as a driver traceback at the first query."""
    if engine.dialect.name != "sqlite":
        return
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar()
    except SQLAlchemyError as exc:
        cause = getattr(exc, "orig", exc)
        raise DatabaseNotReadable(f"cannot read {name}: {cause}") from None


def checkpoint(engine: Engine) -> str:
    """Fold the write-ahead log into the file and leave rollback-journal mode, so the file
    alone is the database (no ``-wal``/``-shm``): ready to copy to read-only storage.
    The next writer switches back to WAL on its own. Returns the journal mode now set."""
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        mode = conn.exec_driver_sql("PRAGMA journal_mode=DELETE").scalar()
    return str(mode)


def _sqlite_connect(uri: str) -> sqlite3.Connection:
    return sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)


def _set_postgres_read_only(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        cursor.close()
        dbapi_conn.commit()


def migrations_dir() -> str:
    """The installed ``profstore.migrations`` package: works from a wheel and from a checkout."""
    return str(resources.files("profstore.migrations"))


def alembic_config(url: str) -> Config:
    """Alembic is imported only here and below: opening a store at head needs one query
    (``current_revision``), not Alembic's import time."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", migrations_dir())
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return script.get_current_head() or ""


UPGRADE_LOCK_KEY = 0x70726F67  # "prog": not the ingest lock's key (ingest/lock.py)


class SchemaMismatch(RuntimeError):
    """The database is not at this code's schema head; the message names both revisions and
    the command to run."""


_REVISION_FILE = re.compile(r"(\d{4})_\w+\.py")


def known_revisions() -> list[str]:
    """The revisions this code ships, oldest first, read from the migration file names
    (``NNNN_title.py``, revision ``NNNN``): no Alembic import on the open path (a test
    checks the last one is Alembic's head)."""
    files = resources.files("profstore.migrations").joinpath("versions").iterdir()
    return sorted(m.group(1) for f in files if (m := _REVISION_FILE.fullmatch(f.name)))


def stored_revision(engine: Engine) -> str | None:
    """The database's Alembic revision in one query (None: no profstore schema)."""
    from sqlalchemy import inspect

    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


def require_head(engine: Engine, shown: str) -> None:
    """Raise ``SchemaMismatch`` unless the database is at this code's head revision."""
    known = known_revisions()
    head, revision = known[-1], stored_revision(engine)
    if revision == head:
        return
    if revision is None:
        raise SchemaMismatch(f"{shown} has no profstore schema; run `profstore db upgrade` "
                             f"first (this profstore needs revision {head})")
    if revision in known:
        raise SchemaMismatch(f"{shown} is at schema revision {revision}, this profstore needs "
                             f"{head}; run `profstore db upgrade`")
    raise SchemaMismatch(f"{shown} is at schema revision {revision}, which this profstore "
                         f"(head {head}) does not know: a newer profstore wrote it; upgrade "
                         "profstore to read it")


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine) -> str:
    """Bring the database to the head revision (a no-op at head); returns the head.

    PostgreSQL: the upgrade's transaction first takes an advisory lock, so two processes
    upgrading one fresh database run one after the other (the second finds it at head)
    instead of both creating the same types and tables."""
    head = known_revisions()[-1]
    if stored_revision(engine) == head:
        return head
    from alembic import command

    config = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({UPGRADE_LOCK_KEY})")
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    return head
