"""Rendering shared by the verbs: aligned tables for people, JSON for scripts.

Tables clip long text cells only when the stream is a terminal; piped output and JSON
always carry the full values. The cell and table rendering itself is
``profstore.presentation.text_table`` (the web view uses it too).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from profstore.presentation.text_table import (
    Column,
    render_table,
    to_json,
)


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def print_json(value: Any, stream: TextIO | None = None) -> None:
    print(to_json(value, indent=2), file=stream or sys.stdout)


def print_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], *,
                title: str | None = None, empty: str = "(none)",
                stream: TextIO | None = None) -> None:
    """A titled table, or the title and ``empty`` when there are no rows."""
    out = stream or sys.stdout
    if title:
        print(title, file=out)
    if not rows:
        print(f"  {empty}" if title else empty, file=out)
        return
    text = render_table(rows, columns, clip=is_terminal(out))
    if title:
        text = "\n".join("  " + line for line in text.splitlines())
    print(text, file=out)


def emit(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], as_json: bool, *,
         empty: str = "(none)") -> None:
    """The verb's rows: a JSON list with ``--json``, else a table on stdout."""
    if as_json:
        print_json(list(rows))
    else:
        print_table(rows, columns, empty=empty)
