"""The nearest measured regime of a regime miss (docs/adr/0007-nearest-regime.md).

When no row of a kernel shares the target's regime, the miss names the kernel's measured
regimes that differ from the target in the fewest fields (ties at that distance, at most
``MAX_NEAREST`` in regime-key order), each with the fields that differ (``{field:
[target, theirs]}``) and what that regime answers at the target's coordinate (exact, else
interpolated inside it, as any lookup would), or why it does not; those that answer first.
The miss stays a miss: this is what closing it would mean, for a person or a run summary
to weigh, not an answer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
from profstore.model.clock_cache import ClockCache
from profstore.paths.base import Extraction

if TYPE_CHECKING:
    from profstore.lookup.attempt import Attempt

MAX_NEAREST = 3
"""The most regimes a miss answers at its target (the cost of a regime miss stays bounded)."""


@dataclass(frozen=True)
class NearestRegime:
    """One measured regime at the minimal distance from the target, and its answer there."""

    kernel: str
    regime: Mapping[str, Any]
    points: int
    differs: Mapping[str, list[Any]]
    latency_us: float | None
    source: str | None
    method: str | None
    miss_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "kernel": self.kernel, "regime": dict(self.regime), "points": self.points,
            "differs": {k: list(v) for k, v in self.differs.items()},
            "latency_us": self.latency_us, "source": self.source, "method": self.method}
        if self.miss_reason is not None:
            found["miss_reason"] = self.miss_reason
        return found


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=list)


def _same(mine: Any, theirs: Any) -> bool:
    """One regime value: of one type and equal, or equal as JSON text (so ``[1, 0]`` and
    ``[True, 0.0]``, or ``0.0`` and ``-0.0``, are one value; ``1`` and ``1.0`` are not)."""
    if type(mine) is type(theirs) and mine == theirs:
        return True
    return _text(mine) == _text(theirs)


def differences(target: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``{field: [target's value, theirs]}`` for every field whose values differ (a field
    only one side has differs from the other's null), in field order."""
    return {name: [target.get(name), theirs.get(name)]
            for name in sorted(set(target) | set(theirs))
            if not _same(target.get(name), theirs.get(name))}


@functools.lru_cache(maxsize=16384)
def _parsed(key: str) -> Mapping[str, Any]:
    """A regime key's fields, parsed once per key (read only: copied where it is kept)."""
    return MappingProxyType(json.loads(key))


_LOOSE = (float, list, dict)
"""Types whose values can be ``_same`` with different JSON texts (``0.0`` and ``-0.0``,
``[1, 0]`` and ``[True, 0.0]``): for the others, same means same text."""

_PLAIN = (str, int, bool, type(None))


def _token(value: Any) -> Any:
    """Equal exactly when the JSON texts are: a value of a plain type stands for its own
    text (its type and value fix it), any other is spelled."""
    kind = type(value)
    return (kind, value) if kind in _PLAIN else _text(value)


@dataclass(frozen=True)
class _Column:
    """One field's values across a kernel's regimes, each coded by its JSON text."""

    codes: Mapping[Any, int]
    """By ``_token``."""
    loose: Mapping[type, tuple[tuple[Any, int], ...]]
    """The values of the ``_LOOSE`` types with their codes, by type."""

    def same_as(self, value: Any) -> np.ndarray:
        """Per code, whether its value is ``_same`` as ``value``."""
        same = np.zeros(len(self.codes), dtype=bool)
        code = self.codes.get(_token(value))
        if code is not None:
            same[code] = True
        for other, code in self.loose.get(type(value), ()):
            if other == value:
                same[code] = True
        return same


@dataclass(frozen=True)
class _RegimeTable:
    """A kernel's measured regimes (with points) as one row each and one column per field,
    so one array comparison counts every regime's differences from a target: a miss
    compares its target with every regime of its kernel (hundreds, for some), and a search
    misses a new target of the same kernel at every new shape."""

    keys: tuple[str, ...]
    points: tuple[int, ...]
    columns: Mapping[str, _Column]
    codes: np.ndarray
    """``codes[row, column]``: the code of that regime's value (null where it has none)."""

    @classmethod
    def of(cls, regimes: Sequence[tuple[str, int]]) -> _RegimeTable:
        kept = [(key, points) for key, points in regimes if points > 0]
        parsed = [_parsed(key) for key, _ in kept]
        names = sorted({name for regime in parsed for name in regime})
        columns = {}
        codes = np.zeros((len(kept), len(names)), dtype=np.int32)
        for j, name in enumerate(names):
            tokens: dict[Any, int] = {}
            loose: dict[type, list[tuple[Any, int]]] = {}
            for i, regime in enumerate(parsed):
                value = regime.get(name)
                token = _token(value)
                code = tokens.get(token)
                if code is None:
                    code = tokens[token] = len(tokens)
                    if isinstance(value, _LOOSE):
                        loose.setdefault(type(value), []).append((value, code))
                codes[i, j] = code
            columns[name] = _Column(tokens, {t: tuple(v) for t, v in loose.items()})
        return cls(tuple(k for k, _ in kept), tuple(p for _, p in kept), columns, codes)

    def distances(self, target: Mapping[str, Any]) -> np.ndarray:
        """How many fields of each regime differ from the target's (``differences``)."""
        shared = np.zeros(len(self.keys), dtype=np.int32)
        for j, (name, column) in enumerate(self.columns.items()):
            shared += column.same_as(target.get(name))[self.codes[:, j]]
        only_target = sum(1 for name, value in target.items()
                          if name not in self.columns and value is not None)
        return len(self.columns) - shared + only_target


_TABLES: ClockCache[tuple[tuple[str, int], ...], _RegimeTable] = ClockCache(1024)


Nearest = list[tuple[dict[str, Any], int, dict[str, list[Any]]]]

_CLOSEST: ClockCache[tuple[str, tuple[tuple[str, int], ...], int], Nearest] = ClockCache(4096)
"""``closest``'s answers by (the target's ``repr``, regimes, cap): a search misses the same
regime of a kernel at every new shape, and the answer does not depend on the shape."""


def closest(target: Mapping[str, Any], regimes: Sequence[tuple[str, int]],
            cap: int = MAX_NEAREST) -> Nearest:
    """(regime, points, differences) of the measured regimes with the fewest differing
    fields (ties in key order, at most ``cap``); the target's own regime is not among
    them (a regime with no difference is the target's and has no point to offer). Each
    call hands back its own dicts and lists."""
    regimes = tuple(regimes)
    key = (repr(tuple(target.items())), regimes, cap)
    found = _CLOSEST.get(key)
    if found is None:
        found = _closest(target, regimes, cap)
        _CLOSEST.put(key, found)
    return [(dict(regime), points, {name: list(pair) for name, pair in differs.items()})
            for regime, points, differs in found]


def _closest(target: Mapping[str, Any], regimes: tuple[tuple[str, int], ...],
             cap: int) -> Nearest:
    table = _TABLES.get(regimes)
    if table is None:
        table = _RegimeTable.of(regimes)
        _TABLES.put(regimes, table)
    if not table.keys:
        return []
    distances = table.distances(target)
    differing = distances[distances > 0]
    if not differing.size:
        return []
    ties = sorted(np.flatnonzero(distances == differing.min()), key=table.keys.__getitem__)
    return [(dict(_parsed(table.keys[i])), table.points[i],
             differences(target, _parsed(table.keys[i]))) for i in ties[:cap]]


@dataclass(frozen=True)
class RegimeAnswer:
    """What a measured regime answers at a target's coordinate, as a miss names it."""

    latency_us: float | None
    source: str | None
    method: str | None
    miss_reason: str | None = None

    @classmethod
    def of(cls, attempt: Attempt) -> RegimeAnswer:
        result = attempt.result
        if result is None:
            return cls(None, None, None, attempt.reason.value if attempt.reason else None)
        return cls(result.latency_us, result.source.value if result.source else None,
                   result.details.get("method"))


def nearest_regimes(kernel: str, target: Extraction, regimes: Sequence[tuple[str, int]],
                    answer: Callable[[Extraction], RegimeAnswer]) -> list[NearestRegime]:
    """The nearest regimes (``closest``), each answered at the target's coordinate by
    ``answer`` (the path runner's exact-then-interpolate, without a nearest regime of its
    own); those that answer first."""
    return answered(kernel, target, closest(target.regime, regimes), answer)


def answered(kernel: str, target: Extraction, nearest: Nearest,
             answer: Callable[[Extraction], RegimeAnswer]) -> list[NearestRegime]:
    """``closest``'s regimes answered at the target's coordinate, those that answer first."""
    found = []
    for regime, points, differs in nearest:
        got = answer(Extraction(regime, target.axes, target.semantic))
        found.append(NearestRegime(kernel, regime, points, differs, got.latency_us, got.source,
                                   got.method, got.miss_reason))
    return sorted(found, key=lambda n: n.latency_us is None)


def spell_differs(differs: Mapping[str, Sequence[Any]], clip: int | None = None) -> str:
    """``scale_mode per_tensor → per_token, ...`` for a person (``clip``: each value at
    most that many characters, an ellipsis marking the cut)."""
    return ", ".join(f"{name} {_plain(pair[0], clip)} → {_plain(pair[1], clip)}"
                     for name, pair in differs.items())


def _plain(value: Any, clip: int | None = None) -> str:
    text = value if isinstance(value, str) else _text(value)
    return text if clip is None or len(text) <= clip else text[:clip - 1] + "…"
