"""What every verb shares: the ``--db``/``--json`` options, opening a database, naming a
version, and the one exception type that becomes a one-line message and an exit code."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the option builders here serve --help, which opens no database
    from profstore.storage.catalog import StoredVersion
    from profstore.storage.engines import ReadOnly
    from profstore.storage.handles import Connection, Engine

DB_ENV = "PROFSTORE_DB"
DEFAULT_DB = "profstore.db"


class CliError(Exception):
    """A user error: printed as ``profstore: error: <message>``, exits with ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def db_options() -> argparse.ArgumentParser:
    """A parent parser holding ``--db``; every verb that touches a database uses it."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--db", metavar="URL_OR_PATH", default=None,
        help=f"SQLAlchemy URL or SQLite file path (default: ${DB_ENV}, else {DEFAULT_DB})")
    parent.add_argument(
        "--immutable", action="store_true",
        help="reading verbs: open the SQLite file with immutable=1 (no locks, no -wal/-shm), "
             "for read-only storage; chosen on its own when the file or its directory is "
             "not writable")
    return parent


def read_mode(args: argparse.Namespace) -> ReadOnly:
    """How a reading verb opens the database: ``--immutable``, else plain read-only."""
    return "immutable" if getattr(args, "immutable", False) else True


def json_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--json", action="store_true", help="machine-readable JSON output")
    return parent


def db_url(args: argparse.Namespace) -> str:
    """The full URL (never print it: use ``redact_url``)."""
    from profstore.storage.urls import normalize_url

    return normalize_url(args.db or os.environ.get(DB_ENV) or DEFAULT_DB)


def check_database(url: str, read_only: ReadOnly = True) -> None:
    """Refuse, with a message a person can act on, a database that is missing or not at the
    schema head; read-only opens never migrate."""
    from profstore.storage.engines import SchemaMismatch, make_engine, require_head, sqlite_file
    from profstore.storage.urls import redact_url

    path = sqlite_file(url)
    if path is not None and not path.is_file():
        raise CliError(f"no database at {path}; run `profstore ingest PATH --db {path}` first")
    engine = make_engine(url, read_only=read_only)
    try:
        require_head(engine, redact_url(url))
    except SchemaMismatch as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.dispose()


@contextmanager
def read_engine(args: argparse.Namespace) -> Iterator[Engine]:
    """A read-only engine on a checked database, disposed on exit."""
    from profstore.storage.engines import make_engine

    url = db_url(args)
    check_database(url, read_mode(args))
    engine = make_engine(url, read_only=read_mode(args))
    try:
        yield engine
    finally:
        engine.dispose()


def profile_row(conn: Connection, version: str) -> StoredVersion:
    """The ``profile_set`` row of a version named by alias or directory."""
    from profstore.storage.catalog import find_profile, known_aliases

    row = find_profile(conn, version)
    if row is None:
        known = known_aliases(conn)
        listing = ", ".join(known) if known else "none; run `profstore ingest` first"
        raise CliError(f"unknown version {version!r} (ingested: {listing})")
    return row


def add_version_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", required=True, metavar="V",
                        help="version alias (e.g. v0.18) or directory name")
