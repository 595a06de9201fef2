"""Rendering a profstore page with Datasette's own templates (its header, menu, styles)."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response

PNG_HEADERS = {"cache-control": "no-store"}


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
