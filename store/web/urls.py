"""Where the profstore pages live, and links into Datasette's own pages."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

PREFIX = "/-/profstore"


def regime_url(version: str, kernel: str, path: str, regime_key: str, *,
               image: bool = False) -> str:
    """The regime page (or its PNG) of one version, kernel, path and regime."""
    return f"{PREFIX}/regime{'.png' if image else ''}?" + urlencode(
        {"version": version, "kernel": kernel, "path": path, "regime_key": regime_key})


def overview_url(version: str, *, image: bool = False) -> str:
    return f"{PREFIX}/overview{'.png' if image else ''}?" + urlencode({"version": version})


def table_url(datasette: Any, database: str, table: str, **filters: Any) -> str:
    """A table page filtered by exact column values."""
    base = datasette.urls.table(database, table)
    return base + ("?" + urlencode(filters) if filters else "")


def query_url(datasette: Any, database: str, query: str, **params: Any) -> str:
    """A canned query with its named parameters filled in."""
    base = datasette.urls.query(database, query)
    return base + ("?" + urlencode(params) if params else "")
