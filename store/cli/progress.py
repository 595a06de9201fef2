"""The one progress bar of the command line (tqdm), drawn only when the stream is a terminal.

Library code reports progress through a plain ``(done, total)`` callback; the CLI passes
a ``ProgressBar``, so the library never depends on how (or whether) progress is drawn.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from profstore.cli.output import is_terminal

if TYPE_CHECKING:
    from tqdm import tqdm


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
