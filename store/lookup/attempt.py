"""One kernel tried on one path (or by the base exact lookup): the record the dispatcher
chooses from and reports in ``details["attempts"]``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from profstore.model.result import QueryResult, Reason
from profstore.paths.base import Extraction


@dataclass
class Attempt:
    """The outcome of one kernel on one path: a result, or why not."""

    kernel: str
    result: QueryResult | None = None
    reason: Reason | None = None
    message: str = ""
    target: Extraction | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "reason": self.reason.value if self.reason else None,
                "message": self.message, **self.notes}
