"""Text rendering shared by the command line and the web view: cells, aligned tables and
JSON. Clipping applies only where the caller asks (a terminal); JSON always carries the
full values."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    """One table column: ``key`` in the row mapping, ``title`` in the header; ``numeric``
    columns are right-aligned; ``clip`` is the widest a cell may be on a terminal."""

    key: str
    title: str
    numeric: bool = False
    clip: int | None = None


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
    text = json.dumps(plain(value), indent=indent, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (e.g. in a query id) is written escaped
        return json.dumps(plain(value), indent=indent, default=str)
    return text
