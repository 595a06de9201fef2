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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from profstore.lookup.regime_values import parsed_regime, same_value, value_text
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


def differences(target: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``{field: [target's value, theirs]}`` for every field whose values differ (a field
    only one side has differs from the other's null), in field order."""
    return {name: [target.get(name), theirs.get(name)]
            for name in sorted(set(target) | set(theirs))
            if not same_value(target.get(name), theirs.get(name))}


Nearest = list[tuple[dict[str, Any], int, dict[str, list[Any]]]]


def closest(target: Mapping[str, Any], regimes: Sequence[tuple[str, int]],
            cap: int = MAX_NEAREST) -> Nearest:
    """(regime, points, differences) of the measured regimes with the fewest differing
    fields (ties in key order, at most ``cap``); the target's own regime is not among
    them (a regime with no difference is the target's and has no point to offer). Each
    call hands back its own dicts and lists."""
    return _closest(target, tuple(regimes), cap)


def _closest(target: Mapping[str, Any], regimes: tuple[tuple[str, int], ...],
             cap: int) -> Nearest:
    from profstore.lookup.regime_table import table_of

    table = table_of(regimes)
    found = []
    for i in table.nearest(target)[:cap]:
        regime = parsed_regime(table.keys[i])
        found.append((dict(regime), table.points[i], differences(target, regime)))
    return found


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
    text = value if isinstance(value, str) else value_text(value)
    return text if clip is None or len(text) <= clip else text[:clip - 1] + "…"
