"""The answers of the ops whose answer reads none of their arguments (the version maps
them ``zero_cost`` or ``accepted_miss``: ADR 0130), made once per op and profile (ADR 0132).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from profstore.lookup.dispatch import Profile, answer_by_name
from profstore.model.leaf_fields import op_name
from profstore.model.result import QueryResult
from profstore.tensorcast.tensorcast_result import TensorCastResult

Named = tuple[QueryResult, TensorCastResult]
"""The store's answer by name, and TensorCast's answer made from it (for no shapes)."""


class NamedAnswers:
    """Per ``str(func)``, its answers by name, or None for an op that needs its arguments;
    for one profile of the version: a re-ingest brings a new profile, and they are asked
    again."""

    def __init__(self, make: Callable[[QueryResult], TensorCastResult]) -> None:
        self._make = make
        self._profile: Profile | None = None
        self._known: dict[str, Named | None] = {}

    def of(self, func: Any, profile: Profile) -> Named | None:
        """The op's answers by name; None also where its name cannot be read (its
        conversion then says why)."""
        if profile is not self._profile:
            self._known, self._profile = {}, profile
        try:
            text = str(func)
            op = None if text in self._known else op_name(text)
        except Exception:  # a name that cannot be read: as for any op, conversion says why
            return None
        if op is not None:
            result = answer_by_name(op, profile)
            self._known[text] = None if result is None else (result, self._make(result))
        return self._known[text]
