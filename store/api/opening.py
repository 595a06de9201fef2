"""How a ``Store`` opens a database: a writable open brings the schema to head, a read-only
open refuses a missing file or another schema revision rather than migrating; both retry
a lost connection once (store/storage/reconnect.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine side (SQLAlchemy) is imported when a Store opens
    from profstore.storage.engines import ReadOnly
    from profstore.storage.handles import Engine


def open_engine(url_or_path: str | Path, read_only: ReadOnly) -> Engine:
    """An engine on the database, checked (read-only) or brought to head (writable);
    disposed again when the check fails. ``Store.open`` documents what it raises."""
    from profstore.storage.engines import make_engine, probe, require_head, sqlite_file, upgrade
    from profstore.storage.urls import normalize_url, redact_url

    url = normalize_url(url_or_path)
    path = sqlite_file(url)
    if path is not None and not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    from profstore.storage.reconnect import retrying

    engine = make_engine(url, read_only=read_only)
    with _closed_on_error(engine):
        if not read_only:
            retrying(engine, lambda: None, lambda: upgrade(engine))
        else:
            _require_file(url)
            probe(engine, redact_url(url))
            retrying(engine, lambda: None, lambda: require_head(engine, redact_url(url)))
    return engine


@contextmanager
def _closed_on_error(engine: Engine) -> Iterator[None]:
    try:
        yield
    except BaseException:
        engine.dispose()
        raise


def _require_file(url: str) -> None:
    from profstore.storage.engines import sqlite_file

    path = sqlite_file(url)
    if path is not None and not path.exists():
        raise FileNotFoundError(f"no database at {path}; run profstore ingest first")
