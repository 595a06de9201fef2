"""The Datasette plugin of ``profstore serve``: the profstore pages, links from regime
keys to their pictures, the ``profstore_path`` SQL function the canned queries use, and
menu entries. Registered as an object so each server carries its own state."""

from __future__ import annotations

import sqlite3
from typing import Any

from datasette import hookimpl
from markupsafe import Markup, escape
from profstore.paths.registry import path_for
from profstore.web.explain_page import explain_page
from profstore.web.pages import PREFIX, regime_url
from profstore.web.regime_page import overview_page, overview_png, regime_page, regime_png
from profstore.web.state import WebState

PLUGIN_NAME = "profstore-web"
REGIME_FIELDS = ("version", "kernel_type", "path", "regime_key")


def route_path(selector: str | None, kernel: str | None) -> str | None:
    """The path a mapping selector sends a kernel to (SQL: ``profstore_path``)."""
    if not selector or not kernel:
        return None
    found = path_for(selector, kernel)
    return found.name if found is not None else None


class ProfstorePlugin:
    __name__ = "profstore.web"
    """Datasette lists plugins by ``__name__`` (modules have one; this object needs it)."""

    def __init__(self, state: WebState) -> None:
        self.state = state

    @hookimpl
    def register_routes(self, datasette: Any) -> list[tuple[str, Any]]:
        state = self.state

        def bind(handler: Any) -> Any:
            async def view(request: Any, datasette: Any) -> Any:
                return await handler(state, datasette, request)
            return view

        return [
            (rf"^{PREFIX}/regime$", bind(regime_page)),
            (rf"^{PREFIX}/regime\.png$", bind(regime_png)),
            (rf"^{PREFIX}/overview$", bind(overview_page)),
            (rf"^{PREFIX}/overview\.png$", bind(overview_png)),
            (rf"^{PREFIX}/explain$", bind(explain_page)),
        ]

    @hookimpl
    def render_cell(self, row: Any, value: Any, column: str, table: str | None,
                    database: str, datasette: Any) -> Markup | None:
        """A regime_key shown with its version, kernel and path links to its picture."""
        if column != "regime_key" or database != self.state.database or value is None:
            return None
        keys = set(row.keys()) if hasattr(row, "keys") else set()
        if not set(REGIME_FIELDS) <= keys:
            return None
        url = regime_url(*(row[name] for name in REGIME_FIELDS))
        return Markup(f'<a class="profstore-regime" href="{escape(url)}">{escape(value)}</a>')

    @hookimpl
    def prepare_connection(self, conn: sqlite3.Connection, database: str) -> None:
        conn.create_function("profstore_path", 2, route_path, deterministic=True)

    @hookimpl
    def menu_links(self, datasette: Any) -> list[dict[str, str]]:
        return [{"href": f"{PREFIX}/overview", "label": "Version overview"},
                {"href": f"{PREFIX}/explain", "label": "Explain a descriptor"}]
