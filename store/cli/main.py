"""``profstore``: the argparse entry point and the registry of verb modules.

A verb module exposes ``register(subparsers)``, which adds its subcommands and sets
``handler`` (``args -> exit code``) on each. Adding a module is one line in
``VERB_MODULES``. User errors become one line on stderr and a non-zero exit, never a
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from profstore import __version__
from profstore.cli.common import CliError
from profstore.cli.reference import apply_help
from profstore.db import DriverNotInstalled, redact_url
from profstore.mapping import MappingError
from sqlalchemy.exc import SQLAlchemyError

VERB_MODULES: tuple[str, ...] = (
    "profstore.cli.ingest_cmd",
    "profstore.cli.inspect",
    "profstore.cli.lookup_cmd",
    "profstore.cli.evaluate",
    "profstore.cli.insight",
    "profstore.cli.demo_cmd",
    "profstore.cli.serve_cmd",
)
"""Registered in this order, which is the order of ``profstore --help``."""

PROG = "profstore"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="An indexed SQL store of measured operator latencies: ingest, inspect, "
                    "look up.")
    parser.add_argument("-V", "--version", action="version",
                        version=f"{PROG} {__version__}",
                        help="print profstore's own version and exit (a verb's --version is the "
                             "data version)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in VERB_MODULES:
        importlib.import_module(name).register(subparsers)
    apply_help(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (the console script exits with it)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.handler(args)
    except CliError as exc:
        return _fail(str(exc), exc.code)
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except UnicodeDecodeError as exc:
        return _fail(f"input is not UTF-8 text: {exc}", 1)
    except (OSError, MappingError) as exc:
        return _fail(str(exc), 1)
    except SQLAlchemyError as exc:
        return _fail(f"database error: {_database_message(exc)}", 1)
    except DriverNotInstalled as exc:
        return _fail(str(exc), 1)
    except KeyboardInterrupt:
        return 130


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


def _database_message(exc: SQLAlchemyError) -> str:
    """The driver's first line, without SQLAlchemy's background link, passwords redacted."""
    original = getattr(exc, "orig", None)
    text = str(original if original is not None else exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return " ".join(redact_url(word) if "://" in word else word for word in first.split())


def _silence_stdout() -> None:
    """After the reader went away, point stdout at devnull so the exit flush is quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
