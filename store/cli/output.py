"""What the verbs write: aligned tables for people, JSON for scripts, and the one progress
bar of the command line.

Tables clip long text cells only when the stream is a terminal; piped output and JSON
always carry the full values. The cell and table rendering itself is
``profstore.presentation.text_table`` (the web view uses it too). The progress bar (tqdm)
is drawn only when its stream is a terminal: library code reports progress through a plain
``(done, total)`` callback, the CLI passes a ``ProgressBar``, so the library never depends
on how (or whether) progress is drawn.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from profstore.presentation.text_table import (
    Column,
    render_table,
    to_json,
)

if TYPE_CHECKING:
    from tqdm import tqdm


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


class ProgressBar:
    """A ``(done, total[, label])`` callback; a new label starts a new bar."""

    def __init__(self, label: str = "", unit: str = "it", stream: TextIO | None = None) -> None:
        self.label, self.unit = label, unit
        self.stream = stream or sys.stderr
        self.enabled = is_terminal(self.stream)
        self._bar: tqdm | None = None

    def __call__(self, done: int, total: int, label: str | None = None) -> None:
        if not self.enabled or total <= 0:
            return
        if label is not None and label != self.label:
            self.close()
            self.label = label
        if self._bar is None:
            from tqdm import tqdm  # only when a bar is drawn (a terminal): tens of ms to import

            self._bar = tqdm(total=total, desc=self.label, unit=self.unit, file=self.stream,
                             leave=True, dynamic_ncols=True)
        self._bar.total = total
        self._bar.update(done - self._bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
