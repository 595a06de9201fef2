"""What the analytic fallbacks cost a run: per op (and per set of differing regime fields),
its calls, the simulated time of the run's own figure for them (TensorCast's analytic
answer, or a replay's estimate) and, where the misses have a nearest measured regime
(store/lookup/nearest_regime.py), the time that regime would give; the largest difference first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from profstore.lookup.nearest_regime import spell_differs

CLIP = 40
"""The most characters of one regime value a price spells (a cat of 128 tensors has a
dtype list of 128 names)."""


@dataclass(frozen=True)
class PricedMiss:
    """One distinct missed leaf: its op, calls, the run's figure per call, and what its
    nearest regime answers per call (None: none answers) with the fields that differ."""

    op: str
    calls: int
    run_us: float
    nearest_us: float | None
    differs: Mapping[str, Sequence[Any]] | None


@dataclass
class Price:
    """Misses of one op whose nearest regimes differ in the same fields, added up."""

    op: str
    differs: str
    """``field target → theirs, ...`` (empty: no nearest regime answers; values clipped
    at ``CLIP`` characters)."""
    calls: int = 0
    time_us: float = 0.0
    """The run's own simulated time for these calls."""
    nearest_time_us: float | None = None
    """The time the nearest regimes would give (None: no nearest regime answers)."""

    @property
    def difference_us(self) -> float | None:
        return None if self.nearest_time_us is None else self.nearest_time_us - self.time_us

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "calls": self.calls, "time_us": self.time_us,
                "nearest_time_us": self.nearest_time_us, "difference_us": self.difference_us,
                "differs": self.differs}


def prices(misses: Iterable[PricedMiss]) -> list[Price]:
    """Grouped by op and differing fields; the largest absolute difference first, then
    the groups without a nearest regime, by time."""
    grouped: dict[tuple[str, str], Price] = {}
    for miss in misses:
        answered = miss.nearest_us is not None
        differs = spell_differs(miss.differs or {}, CLIP) if answered else ""
        price = grouped.setdefault((miss.op, differs), Price(miss.op, differs))
        price.calls += miss.calls
        price.time_us += miss.run_us * miss.calls
        if answered:
            assert miss.nearest_us is not None
            price.nearest_time_us = (price.nearest_time_us or 0.0) + miss.nearest_us * miss.calls
    return sorted(grouped.values(), key=_order)


def _order(price: Price) -> tuple[bool, float, float, str]:
    difference = price.difference_us
    return (difference is None, -abs(difference or 0.0), -price.time_us, price.op)


def price_lines(found: Sequence[Price], what: str, top: int = 10) -> list[str]:
    """The table a run summary prints (``what``: the run's own figure, e.g. ``analytic``)."""
    if not found:
        return []
    lines = [f"  fallback prices ({what} vs. the nearest measured regime), the largest "
             "difference first:",
             f"    {'OP':<48} {'CALLS':>6} {what.upper() + '_US':>12} {'NEAREST_US':>11} "
             f"{'DIFF_US':>10}  DIFFERS"]
    for price in found[:top]:
        near = "-" if price.nearest_time_us is None else f"{price.nearest_time_us:.1f}"
        diff = "-" if price.difference_us is None else f"{price.difference_us:+.1f}"
        lines.append(f"    {price.op:<48} {price.calls:>6} {price.time_us:>12.1f} {near:>11} "
                     f"{diff:>10}  {price.differs or '(no nearest regime answers)'}")
    return lines


def lines_of(rows: Sequence[Mapping[str, Any]], what: str, top: int = 10) -> list[str]:
    """``price_lines`` of prices in their JSON form (``Price.to_json``)."""
    return price_lines([Price(r["op"], r["differs"], r["calls"], r["time_us"],
                              r["nearest_time_us"]) for r in rows], what, top)
