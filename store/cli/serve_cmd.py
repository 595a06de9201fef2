"""``profstore serve``: browse a store in a web browser (Datasette, read-only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from profstore.cli.common import CliError, check_database, db_options, db_url
from profstore.db import is_sqlite, sqlite_file

POSTGRES_REFUSAL = (
    "profstore serve shows SQLite stores only: Datasette reads SQLite files and has no "
    "PostgreSQL backend (serving one would need a separate service); browse a PostgreSQL "
    "store with `profstore regimes|duplicates|rejected|sql --db URL` or psql")
DESCRIPTION = """\
Serve a SQLite store read-only with Datasette on this machine (127.0.0.1 unless --host
says otherwise). Needs the extra: pip install 'profstore[web]'. The pages:

  /                       the tables and views, each described; the canned queries
  /DB/regimes             every regime with point counts and axis ranges (facets: version,
                          path, kernel); a regime_key opens the regime's page
  /-/profstore/regime     one regime: its curve or triangulation with hold-out errors
  /-/profstore/overview   one version as small multiples: kernels per path, refusals,
                          duplicates, rejected rows
  /-/profstore/explain    paste a leaf descriptor: the explain output, rows used linked
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve", parents=[db_options()], help="browse the store in a web browser (Datasette)",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=_port, default=8001,
                   help="port (default: 8001; 0 picks a free one, printed on start)")
    p.add_argument("--open", action="store_true", help="open the index in a web browser")
    p.add_argument("--live", action="store_true",
                   help="follow a concurrent ingest (opens mode=ro instead of immutable; "
                        "chosen by itself when the file has a write-ahead log in use)")
    p.set_defaults(handler=serve)


def _port(value: str) -> int:
    number = int(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError("must be 0..65535")
    return number


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
    except (ImportError, WebUnavailable) as exc:
        raise CliError(str(exc) if isinstance(exc, WebUnavailable) else
                       "the web view needs Datasette; install the extra: "
                       "pip install 'profstore[web]'") from None
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
