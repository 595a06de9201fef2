"""Running the web view: bind the socket first (so port 0 picks a free port and the URL
printed is the real one), then serve Datasette with uvicorn until interrupted."""

from __future__ import annotations

import asyncio
import socket
import webbrowser
from collections.abc import Callable
from pathlib import Path

from profstore.web.config import ServeOptions, build_datasette, require_datasette


def wal_in_use(path: Path) -> bool:
    """Whether the file has a non-empty write-ahead log beside it: a writer (an ingest) is
    open or did not checkpoint, and an ``immutable`` open would not see its pages."""
    wal = path.with_name(path.name + "-wal")
    return wal.is_file() and wal.stat().st_size > 0


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(options: ServeOptions, host: str, port: int, *, open_browser: bool = False,
          announce: Callable[[str], None] = print) -> None:
    """Serve until SIGINT/SIGTERM; ``announce`` gets the URL once the socket listens."""
    require_datasette()
    import uvicorn

    ds, state = build_datasette(options)
    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/"
    server = uvicorn.Server(uvicorn.Config(ds.app(), log_level="warning", lifespan="on"))

    async def main() -> None:
        await ds.invoke_startup()
        announce(url)
        if open_browser:
            webbrowser.open(url)
        await server.serve(sockets=[sock])

    try:
        asyncio.run(main())
    finally:
        sock.close()
        state.close()
