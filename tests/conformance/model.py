"""The shape of a conformance example: one per registered capability path.

An example is a kernel CSV in the kernel's real column layout (``rows`` share one regime
of the path; ``foreign`` rows sit in other regimes), the mapping entries that route the
example's op to the path, a leaf descriptor that lands exactly on ``rows[hit]``, and
mutations: descriptor edits that change named regime fields and nothing else (the
coordinate stays), each with what a lookup of the mutated leaf must then return.

Latencies are the numbers written into the CSV; a ``Probe`` latency is worked out by
hand from them (linear between two rows of the regime).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from profstore.model.result import Reason

from tests.support.perfdb import Row

Path = tuple[str | int, ...]
Edit = tuple[Path, Any]
FIRST_DATA_LINE = 2
"""The line number of the first data row of a kernel CSV (line 1 is the header)."""


@dataclass(frozen=True)
class Miss:
    """The mutated leaf misses with this reason."""

    reason: Reason


@dataclass(frozen=True)
class Lands:
    """The mutated leaf answers MEASURED from ``foreign[index]``: the row of its own regime."""

    index: int


@dataclass(frozen=True)
class BaseAnswers:
    """The base input-signature lookup (RFC §2.1, tried first for paths that do not own
    exact matching, RFC §3.1) answers the mutated leaf from the example's own row: the
    changed field is a regime field of the path but not part of the input signature."""


Outcome = Miss | Lands | BaseAnswers


@dataclass(frozen=True)
class Mutation:
    """Descriptor edits that change exactly ``fields`` of the target regime (a regime may
    spell one fact in more than one field, e.g. MatMul's ``dtypes`` and
    ``activation_dtype``); ``name`` is the test id."""

    name: str
    fields: tuple[str, ...]
    edits: tuple[Edit, ...]
    outcome: Outcome


@dataclass(frozen=True)
class Probe:
    """A leaf between two rows of the example's regime and its latency worked out by hand,
    for paths whose exact hit the base lookup answers first (so that ``explain`` shows
    the path itself at work)."""

    leaf: Mapping[str, Any]
    latency_us: float
    method: str


@dataclass(frozen=True)
class PathExample:
    path: str
    kernel: str
    entries: Mapping[str, Mapping[str, Any]]
    rows: tuple[Row, ...]
    leaf: Mapping[str, Any]
    hit: int
    mutations: tuple[Mutation, ...]
    foreign: tuple[Row, ...] = ()
    probe: Probe | None = None
    policies: Mapping[str, Any] = field(default_factory=dict)
    """Kernel overrides per policy block (``interpolation_policy`` …) for this kernel."""

    @property
    def csv_rows(self) -> tuple[Row, ...]:
        return (*self.rows, *self.foreign)

    def row_line(self, index: int) -> int:
        return FIRST_DATA_LINE + index

    @property
    def hit_line(self) -> int:
        return self.row_line(self.hit)

    @property
    def hit_latency(self) -> float:
        return _latency(self.rows[self.hit])

    def foreign_line(self, index: int) -> int:
        return FIRST_DATA_LINE + len(self.rows) + index

    def foreign_latency(self, index: int) -> float:
        return _latency(self.foreign[index])


def _latency(row: Row) -> float:
    assert isinstance(row.latency, float), "example rows state their latency as a float"
    return row.latency


def mutated(leaf: Mapping[str, Any], edits: tuple[Edit, ...]) -> dict[str, Any]:
    """A deep copy of ``leaf`` with each edit's path set to its value (an index one past
    the end of a list appends)."""
    found = copy.deepcopy(dict(leaf))
    for path, value in edits:
        owner: Any = found
        for key in path[:-1]:
            owner = owner[key]
        if isinstance(owner, list) and path[-1] == len(owner):
            owner.append(value)
        else:
            owner[path[-1]] = value
    return found


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> set[str]:
    """Regime fields present on one side only or with different values."""
    return {k for k in {*before, *after} if before.get(k, _ABSENT) != after.get(k, _ABSENT)}


_ABSENT = object()
