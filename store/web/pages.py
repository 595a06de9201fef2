"""What every profstore page shares: where the pages live, links into Datasette's own
pages, and the response of a page rendered with Datasette's templates (its header, menu,
styles), an error shown in the page, or a PNG."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response

PREFIX = "/-/profstore"
PNG_HEADERS = {"cache-control": "no-store"}


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


async def page(datasette: Any, request: Any, template: str, context: dict[str, Any],
               status: int = 200) -> Response:
    body = await datasette.render_template(template, context, request=request)
    return Response.html(body, status=status)


async def error(datasette: Any, request: Any, title: str, message: str,
                status: int = 400) -> Response:
    """The message a person can act on, in the page; never a traceback."""
    return await page(datasette, request, "profstore_error.html",
                      {"title": title, "message": message}, status)


def png(body: bytes) -> Response:
    return Response(body, content_type="image/png", headers=PNG_HEADERS)
