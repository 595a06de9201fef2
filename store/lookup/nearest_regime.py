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
    """Equal as JSON text; values of one type that compare equal are (the common case, and
    a miss on a kernel of hundreds of regimes compares every field of each)."""
    if type(mine) is type(theirs) and mine == theirs:
        return True
    return _text(mine) == _text(theirs)


def differences(target: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``{field: [target's value, theirs]}`` for every field whose values differ (a field
    only one side has differs from the other's null), in field order."""
    return {name: [target.get(name), theirs.get(name)]
            for name in sorted(set(target) | set(theirs))
            if not _same(target.get(name), theirs.get(name))}


class _Texts(dict[str, str]):
    """A regime's values as JSON text, each made on first use (``_same``'s second test)."""

    def __init__(self, regime: Mapping[str, Any]) -> None:
        super().__init__()
        self.regime = regime

    def __missing__(self, name: str) -> str:
        text = self[name] = _text(self.regime.get(name))
        return text


def _differences_of_key(target: Mapping[str, Any], mine: _Texts,
                        key: str) -> dict[str, list[Any]]:
    """``differences(target, _parsed(key))`` with the JSON texts of both sides made once:
    the target's per miss (``mine``), a measured regime's per key (``_key_texts``). A miss
    compares the target with every regime of its kernel, and a search misses the same
    kernel's regimes again at every new shape."""
    theirs, texts = _parsed(key), _key_texts(key)
    found = {}
    for name in sorted(set(target) | set(theirs)):
        a, b = target.get(name), theirs.get(name)
        if (type(a) is not type(b) or a != b) and mine[name] != texts[name]:
            found[name] = [a, b]
    return found


@functools.lru_cache(maxsize=16384)
def _parsed(key: str) -> Mapping[str, Any]:
    """A regime key's fields, parsed once per key (read only: copied where it is kept)."""
    return MappingProxyType(json.loads(key))


@functools.lru_cache(maxsize=16384)
def _key_texts(key: str) -> _Texts:
    return _Texts(_parsed(key))


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
    key = (repr(tuple(target.items())), tuple(regimes), cap)
    found = _CLOSEST.get(key)
    if found is None:
        found = _closest(target, regimes, cap)
        _CLOSEST.put(key, found)
    return [(dict(regime), points, {name: list(pair) for name, pair in differs.items()})
            for regime, points, differs in found]


def _closest(target: Mapping[str, Any], regimes: Sequence[tuple[str, int]],
             cap: int) -> Nearest:
    scored = []
    mine = _Texts(target)
    for key, points in regimes:
        if points <= 0:
            continue
        regime = _parsed(key)
        differs = _differences_of_key(target, mine, key)
        if differs:
            scored.append((len(differs), key, regime, points, differs))
    if not scored:
        return []
    fewest = min(s[0] for s in scored)
    ties = sorted((s for s in scored if s[0] == fewest), key=lambda s: s[1])
    return [(dict(regime), points, differs) for _, _, regime, points, differs in ties[:cap]]


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
