"""``profstore serve``: browse a store in a web browser (Datasette, read-only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from profstore.cli.common import CliError, check_database, db_url
from profstore.storage.engines import is_sqlite, sqlite_file

POSTGRES_REFUSAL = (
    "profstore serve shows SQLite stores only: Datasette reads SQLite files and has no "
    "PostgreSQL backend (serving one would need a separate service); browse a PostgreSQL "
    "store with `profstore regimes|duplicates|rejected|sql --db URL` or psql")


def serve(args: argparse.Namespace) -> int:
    url = db_url(args)
    if not is_sqlite(url):
        raise CliError(POSTGRES_REFUSAL)
    path = sqlite_file(url)
    if path is None:
        raise CliError("profstore serve needs a SQLite file, not an in-memory database")
    check_database(url)
    try:
        from profstore.web.config import ServeOptions, WebUnavailable, require_datasette
        from profstore.web.server import serve as run
        from profstore.web.server import wal_in_use

        require_datasette()
    except WebUnavailable as exc:
        raise CliError(str(exc)) from None
    live = args.live or wal_in_use(path)
    mode = "live: mode=ro, follows an ingest" if live else "immutable"
    options = ServeOptions(Path(path), live=live)

    def announce(address: str) -> None:
        print(f"profstore: serving {path} read-only ({mode}) at {address}", flush=True)

    try:
        run(options, args.host, args.port, open_browser=args.open, announce=announce)
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") \
            from None
    print("profstore: stopped", file=sys.stderr)
    return 0
