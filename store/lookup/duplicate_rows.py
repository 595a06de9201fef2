"""Rows that share a regime and a coordinate: merge by median, or refuse when ambiguous.

Rows of one coordinate merge only within one latency column (source purity). With
``require_semantic_unique`` a coordinate whose rows disagree is ambiguous: it never
merges, an exact lookup there misses, and interpolation leaves it out.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from profstore.storage.regime_slice import MeasuredRow

AGREEMENT_RTOL = 1e-9


@dataclass(frozen=True)
class Merged:
    latency_us: float
    latency_column: str
    rows: tuple[MeasuredRow, ...]

    @property
    def duplicates(self) -> dict | None:
        if len(self.rows) < 2:
            return None
        values = [r.latency_us for r in self.rows]
        return {"count": len(values), "min": min(values), "max": max(values),
                "aggregation": "median"}


@dataclass
class MergeOutcome:
    merged: Merged | None = None
    ambiguous: int = 0
    other_semantics: int = 0
    notes: list[str] = field(default_factory=list)


def select_semantic(rows: Sequence[MeasuredRow], semantic: str | None) -> list[MeasuredRow]:
    """Keep the rows whose semantic discriminator matches the target's, when it has one."""
    if semantic is None:
        return list(rows)
    return [r for r in rows if r.semantic == semantic]


def rows_agree(rows: Sequence[MeasuredRow]) -> bool:
    values = [r.latency_us for r in rows]
    return max(values) - min(values) <= AGREEMENT_RTOL * max(values)


def merge_coordinate(
    rows: Sequence[MeasuredRow],
    rank: Mapping[str, int],
    *,
    unique_required: bool,
    semantic: str | None = None,
) -> MergeOutcome:
    """Merge the rows of one coordinate: the most preferred latency column wins. Rows that
    differ in their semantic discriminator never merge, whatever the policy says. A single
    row, the usual exact hit, is its own median (the same outcome without grouping)."""
    if len(rows) == 1 and not unique_required and semantic in (None, rows[0].semantic):
        row = rows[0]
        return MergeOutcome(Merged(row.latency_us, row.latency_column, (row,)))
    outcome = MergeOutcome()
    chosen = select_semantic(rows, semantic)
    outcome.other_semantics = len(rows) - len(chosen)
    by_column: dict[str, list[MeasuredRow]] = defaultdict(list)
    for row in chosen:
        by_column[row.latency_column].append(row)
    for column in sorted(by_column, key=lambda c: rank.get(c, len(rank))):
        group = by_column[column]
        mixed_semantics = len({r.semantic for r in group}) > 1
        if (unique_required or mixed_semantics) and not rows_agree(group):
            outcome.ambiguous += len(group)
            outcome.notes.append(f"{len(group)} rows in {column} disagree")
            return outcome
        median = statistics.median(r.latency_us for r in group)
        outcome.merged = Merged(median, column, tuple(group))
        return outcome
    return outcome
