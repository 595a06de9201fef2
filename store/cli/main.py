"""``profstore``: the argparse entry point.

Every verb's parser is built from store/cli/verbs.py, which imports no implementation: a
verb's module is imported when it runs, so ``--help`` and a usage error cost only the
parsers. User errors become one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from profstore.cli import verbs
from profstore.cli.common import CliError
from profstore.cli.reference import apply_help
from profstore.cli.tensorcast_verbs import MISSING_SEPARATOR, register_tensorcast

if TYPE_CHECKING:
    from profstore.storage.handles import DatabaseError

REGISTRARS = (verbs.register_ingest, verbs.register_inspect, verbs.register_lookup,
              verbs.register_evaluation, verbs.register_insight, register_tensorcast,
              verbs.register_demo, verbs.register_serve)
"""Called in this order, which is the order of ``profstore --help``."""

PROG = "profstore"


class _Version(argparse._VersionAction):
    """``--version`` reads the installed version only when it is asked for."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from profstore import __version__

        self.version = f"{PROG} {__version__}"
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="An indexed SQL store of measured operator latencies: ingest, inspect, "
                    "look up.")
    parser.add_argument("-V", "--version", action=_Version,
                        help="print profstore's own version and exit (a verb's --version is the "
                             "data version)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in REGISTRARS:
        register(subparsers)
    apply_help(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (the console script exits with it)."""
    words, passed_on = split_passthrough(list(sys.argv[1:] if argv is None else argv))
    if passed_on is None and "tensorcast" in words and not {"-h", "--help"} & set(words):
        return _fail(MISSING_SEPARATOR, 2)
    try:
        args = build_parser().parse_args(words)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else 2
    if passed_on is not None:
        args.upstream_args = passed_on
    try:
        return args.handler(args)
    except CliError as exc:
        return _fail(str(exc), exc.code)
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except UnicodeDecodeError as exc:
        return _fail(f"input is not UTF-8 text: {exc}", 1)
    except OSError as exc:
        return _fail(str(exc), 1)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        message = _user_error(exc)
        if message is None:
            raise
        return _fail(message, 1)


def split_passthrough(words: list[str]) -> tuple[list[str], list[str] | None]:
    """``tensorcast ... -- ARGS``: the words before ``--`` for profstore's parser, the rest
    for TensorCast's (None when there is no ``--`` after the verb)."""
    if "tensorcast" in words and "--" in words[words.index("tensorcast"):]:
        cut = words.index("--", words.index("tensorcast"))
        return words[:cut], words[cut + 1:]
    return words, None


def _user_error(exc: Exception) -> str | None:
    """The one line for a mapping, database or driver error; None for a bug (which keeps
    its traceback). Imported here, not at start-up: these modules import SQLAlchemy."""
    from profstore.model.mapping import MappingError
    from profstore.storage.engines import DriverNotInstalled, SchemaMismatch
    from profstore.storage.handles import DatabaseError
    from profstore.storage.urls import InvalidDatabaseUrl

    if isinstance(exc, (MappingError, InvalidDatabaseUrl, SchemaMismatch)):
        return str(exc)
    if isinstance(exc, DatabaseError):
        return f"database error: {_database_message(exc)}"
    if isinstance(exc, DriverNotInstalled):
        return str(exc)
    return None


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


def _database_message(exc: DatabaseError) -> str:
    """The driver's first line, without SQLAlchemy's background link, passwords redacted."""
    from profstore.storage.urls import redact_url

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
