"""Writing verbs: ``db upgrade`` and ``ingest``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from profstore.cli.common import CliError, db_options, db_url, json_options, sqlite_file
from profstore.cli.output import is_terminal, print_json
from profstore.db import current_revision, make_engine, redact_url, upgrade
from profstore.ingest.discover import discover
from profstore.ingest.loader import VersionSummary, ingest_path

BAR_WIDTH = 30


def register(subparsers: argparse._SubParsersAction) -> None:
    db = subparsers.add_parser("db", help="database administration")
    db_verbs = db.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    up = db_verbs.add_parser("upgrade", parents=[db_options()],
                             help="create the schema or bring it to the latest revision")
    up.set_defaults(handler=db_upgrade)
    p = subparsers.add_parser("ingest", parents=[db_options(), json_options()],
                              help="load profiling version directories (idempotent)")
    p.add_argument("path", metavar="PATH",
                   help="a data root (<DEVICE>/vllm_ascend/<version>/…) or one version directory")
    p.set_defaults(handler=ingest)


def _writable_engine(url: str):
    path = sqlite_file(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    return make_engine(url)


def db_upgrade(args: argparse.Namespace) -> int:
    url = db_url(args)
    engine = _writable_engine(url)
    try:
        before = current_revision(engine)
        head = upgrade(engine)
    finally:
        engine.dispose()
    shown = redact_url(url)
    if before == head:
        print(f"{shown}: already at revision {head}")
    else:
        print(f"{shown}: upgraded from {before or 'an empty database'} to revision {head}")
    return 0


class Progress:
    """``label [#####.....] done/total files`` redrawn in place on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, label: str, done: int, total: int) -> None:
        filled = BAR_WIDTH * done // max(total, 1)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        self.stream.write(f"\r{label} [{bar}] {done}/{total} files")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def ingest(args: argparse.Namespace) -> int:
    root = Path(args.path).expanduser()
    if not root.exists():
        raise CliError(f"{root} does not exist")
    try:
        discover(root)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    url = db_url(args)
    engine = _writable_engine(url)
    progress = Progress(sys.stderr) if is_terminal(sys.stderr) else None
    try:
        upgrade(engine)
        summaries = ingest_path(engine, root, progress=progress)
    except ValueError as exc:
        raise CliError(f"ingest refused: {exc}") from None
    finally:
        engine.dispose()
    if args.json:
        print_json([_summary(s) for s in summaries])
    else:
        for summary in summaries:
            print(summary.line())
    return 0


def _summary(summary: VersionSummary) -> dict:
    out = asdict(summary)
    out["reasons"] = dict(sorted(summary.reasons.items()))
    out["seconds"] = round(summary.seconds, 3)
    return out
