"""Which "other world" a process of a TensorCast run simulates (``--draws``).

A draw multiplies every profstore answer by an error drawn from that answer's own error
distribution (``profstore.tensorcast.draws``). The parent hands the draw to its workers
inside ``Settings`` (JSON in the environment), so every process of one draw draws alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

FALLBACK_SOURCES = ("calibration", "stated", "none")
"""Where an analytic fallback's error comes from: the analytic check's per-class
distributions (the default), ``--fallback-error F``, or nowhere (``--fallback-error 0``)."""


@dataclass(frozen=True)
class FallbackErrors:
    """The error of an answer TensorCast's analytic model gave (a miss), in a draw.

    ``calibration``: a multiplier drawn from the op class's distribution in ``classes``
    (sorted multipliers truth / answer: the class's ratios measured / analytic, or, for a
    calibrated fallback, its leave-one-out multipliers), else from ``pooled`` (every
    class's); ``stated``: ``(1 + stated) ** z``; ``none``: 1."""

    source: str = "none"
    stated: float | None = None
    classes: dict[str, tuple[float, ...]] = field(default_factory=dict)
    pooled: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.source not in FALLBACK_SOURCES:
            raise ValueError(f"fallback error source must be one of {FALLBACK_SOURCES}, "
                             f"got {self.source!r}")
        if (self.source == "stated") != (self.stated is not None):
            raise ValueError("a stated fallback error needs its relative error F (and only it)")
        check_fallback_error(self.stated)

    @classmethod
    def of(cls, stated: float | None) -> FallbackErrors:
        """From ``--fallback-error``: None → calibration, 0 → none, F → stated."""
        check_fallback_error(stated)
        if stated is None:
            return cls("calibration")
        return cls("none") if stated == 0 else cls("stated", stated)

    def pool(self, op_class: str) -> tuple[str, tuple[float, ...]]:
        """Where a calibration-sourced error of this class comes from, and its values."""
        if op_class in self.classes:
            return "class", self.classes[op_class]
        return "pooled", self.pooled

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FallbackErrors:
        return cls(data["source"], data.get("stated"),
                   {k: tuple(v) for k, v in data.get("classes", {}).items()},
                   tuple(data.get("pooled", ())))


@dataclass(frozen=True)
class DrawSpec:
    """``seed``: the user's seed; ``index``: the draw (0 … K-1), or None for the nominal
    search (every multiplier 1: only the error distributions are recorded);
    ``fallback``: the error of the answers TensorCast's analytic model gave."""

    seed: int
    index: int | None = None
    fallback: FallbackErrors = field(default_factory=FallbackErrors)

    def __post_init__(self) -> None:
        if self.index is not None and self.index < 0:
            raise ValueError(f"draw index must be non-negative, got {self.index}")

    @classmethod
    def from_json(cls, data: dict[str, Any] | DrawSpec | None) -> DrawSpec | None:
        if data is None or isinstance(data, DrawSpec):
            return data
        return cls(data["seed"], data.get("index"),
                   FallbackErrors.from_json(data.get("fallback") or {"source": "none"}))


def check_fallback_error(value: float | None) -> None:
    """A relative error must be a finite number, 0 or above (``--fallback-error``; 0: the
    analytic answers draw no error)."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--fallback-error must be a relative error of 0 or above (e.g. "
                         f"0.2), got {value}")
