"""Writing verbs: ``db upgrade`` and ``ingest``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from profstore.cli.common import CliError, db_url
from profstore.cli.output import ProgressBar, print_json
from profstore.ingest.discover import discover
from profstore.ingest.loader import VersionSummary, ingest_path
from profstore.ingest.lock import IngestBusy
from profstore.storage.engines import (
    checkpoint,
    current_revision,
    make_engine,
    sqlite_file,
    storage_writable,
    upgrade,
)
from profstore.storage.urls import redact_url


def _writable_engine(url: str):
    path = sqlite_file(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        for what, where in (("directory", path.parent), ("file", path)):
            if where.exists() and not storage_writable(where):
                raise CliError(f"cannot write {path}: the {what} {where} is not writable "
                               "(read-only storage); reading verbs open it with --immutable")
    return make_engine(url)


def db_checkpoint(args: argparse.Namespace) -> int:
    url = db_url(args)
    if sqlite_file(url) is None:
        raise CliError("db checkpoint is for a SQLite file")
    engine = _writable_engine(url)
    try:
        mode = checkpoint(engine)
    finally:
        engine.dispose()
    print(f"{redact_url(url)}: checkpointed; journal mode {mode}, no -wal needed to read it")
    return 0


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


def ingest(args: argparse.Namespace) -> int:
    root = Path(args.path).expanduser()
    if not root.exists():
        raise CliError(f"{root} does not exist")
    try:
        discover(root)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    if args.immutable:
        raise CliError("--immutable is for reading verbs; ingest writes")
    url = db_url(args)
    engine = _writable_engine(url)
    bar = ProgressBar(unit="files", stream=sys.stderr)
    try:
        summaries = ingest_path(engine, root,
                                progress=lambda label, done, total: bar(done, total, label),
                                allow_missing_mapping=args.allow_missing_mapping,
                                wait=not args.no_wait, on_wait=_waiting, upgrade_schema=True)
    except IngestBusy as exc:
        raise CliError(f"ingest refused: {exc}") from None
    finally:
        bar.close()
        engine.dispose()
    if args.json:
        print_json([_summary(s) for s in summaries])
    else:
        for summary in summaries:
            print(summary.line())
    return 1 if any(s.failed for s in summaries) else 0


def _waiting(message: str) -> None:
    print(f"profstore: {message}", file=sys.stderr, flush=True)


def _summary(summary: VersionSummary) -> dict:
    out = asdict(summary)
    out["reasons"] = dict(sorted(summary.reasons.items()))
    out["seconds"] = round(summary.seconds, 3)
    return out
