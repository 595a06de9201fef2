"""Rendering shared by the verbs: aligned tables for people, JSON for scripts.

Tables clip long text cells only when the stream is a terminal; piped output and JSON
always carry the full values.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    """One table column: ``key`` in the row mapping, ``title`` in the header; ``numeric``
    columns are right-aligned; ``clip`` is the widest a cell may be on a terminal."""

    key: str
    title: str
    numeric: bool = False
    clip: int | None = None


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def format_cell(value: Any) -> str:
    """None as ``-``; whole floats without ``.0``; other floats to 7 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.7g}"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(plain(value), separators=(",", ":"))
    return str(value)


def clip_text(text: str, width: int | None) -> str:
    text = " ".join(text.split()) if "\n" in text or "\r" in text else text
    if width is None or len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + ELLIPSIS


def render_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], *,
                 clip: bool = False) -> str:
    """An aligned text table with a header line; no trailing spaces."""
    cells = [[clip_text(format_cell(row.get(c.key)), c.clip if clip else None) for c in columns]
             for row in rows]
    widths = [max([len(c.title)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if c.numeric else v.ljust(w)
                 for v, w, c in zip(values, widths, columns)]
        return "  ".join(parts).rstrip()

    return "\n".join([line([c.title for c in columns]), *(line(r) for r in cells)])


def plain(value: Any) -> Any:
    """A JSON-safe copy: non-finite floats become null, numpy scalars Python numbers,
    tuples lists."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item") and callable(value.item):
        return plain(value.item())
    if hasattr(value, "value") and isinstance(getattr(value, "value", None), str):
        return value.value
    return value


def to_json(value: Any, *, indent: int | None = None) -> str:
    return json.dumps(plain(value), indent=indent, ensure_ascii=False, default=str)


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
