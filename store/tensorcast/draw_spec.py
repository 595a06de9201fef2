"""Which "other world" a process of a TensorCast run simulates (``--draws``).

A draw multiplies every profstore answer by an error drawn from that answer's own error
distribution (``profstore.tensorcast.draws``). The parent hands the draw to its workers
inside ``Settings`` (JSON in the environment), so every process of one draw draws alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DrawSpec:
    """``seed``: the user's seed; ``index``: the draw (0 … K-1), or None for the nominal
    search (every multiplier 1: only the error distributions are recorded);
    ``fallback_error``: the relative error F of an answer TensorCast's analytic model
    gave, or None for none (its multiplier is then 1)."""

    seed: int
    index: int | None = None
    fallback_error: float | None = None

    def __post_init__(self) -> None:
        check_fallback_error(self.fallback_error)
        if self.index is not None and self.index < 0:
            raise ValueError(f"draw index must be non-negative, got {self.index}")

    @classmethod
    def from_json(cls, data: dict[str, Any] | DrawSpec | None) -> DrawSpec | None:
        if data is None or isinstance(data, DrawSpec):
            return data
        return cls(**data)


def check_fallback_error(value: float | None) -> None:
    """A relative error must be a finite number above 0 (``--fallback-error``)."""
    if value is None:
        return
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"--fallback-error must be a relative error above 0 (e.g. 0.2), "
                         f"got {value}")
