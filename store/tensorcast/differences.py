"""The documented rules by which profstore's answer to one TensorCast op may differ from
upstream's own data source on the same version directory
(docs/tensorcast-compatibility.md, "Differences from upstream"). Each difference falls
under exactly one rule; one that falls under none is "unexplained"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

REL_TOL = 1e-6
COMMUNICATION = frozenset({"tensor_cast.all_reduce.default", "tensor_cast.all_gather.default",
                           "tensor_cast.all_to_all.default",
                           "tensor_cast.reduce_scatter.default"})
UNEXPLAINED = "unexplained"


class Answer(Protocol):
    """One source's answer to one op: a latency (None for a miss), its source, its miss
    reason and profstore's method."""

    @property
    def func(self) -> str: ...
    @property
    def latency_us(self) -> float | None: ...
    @property
    def source(self) -> str | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def method(self) -> str | None: ...


@dataclass(frozen=True)
class Rule:
    name: str
    applies: Callable[[Answer, Answer], bool]


def _hit(answer: Answer) -> bool:
    return answer.latency_us is not None


def _both(p: Answer, u: Answer) -> bool:
    return _hit(p) and _hit(u)


RULES = (
    Rule("communication-local-fit", lambda p, u: _both(p, u) and p.func in COMMUNICATION
         and p.method == "alpha_beta_local"),
    Rule("other-measured-row", lambda p, u: _both(p, u) and p.func not in COMMUNICATION
         and p.source == u.source == "MEASURED"),
    Rule("interpolated-not-borrowed", lambda p, u: _both(p, u) and p.func not in COMMUNICATION
         and (p.source, u.source) == ("INTERPOLATED", "MEASURED")),
    Rule("other-interpolation", lambda p, u: _both(p, u) and p.func not in COMMUNICATION
         and p.source == u.source == "INTERPOLATED"),
    Rule("regime-keeps-what-upstream-ignores", lambda p, u: not _hit(p) and _hit(u)
         and p.reason in ("regime_mismatch", "outside_convex_hull")),
    Rule("formats-unstated-and-ambiguous", lambda p, u: not _hit(p) and _hit(u)
         and p.reason == "format_ambiguous"),
    Rule("profstore-answers-upstream-misses", lambda p, u: _hit(p) and not _hit(u)),
)


def differs(p: Answer, u: Answer) -> bool:
    """Whether the two answers differ (one misses, or the latencies differ beyond 1e-6)."""
    if _hit(p) != _hit(u):
        return True
    if p.latency_us is None or u.latency_us is None:
        return False
    return abs(p.latency_us - u.latency_us) > REL_TOL * max(1.0, abs(u.latency_us))


def rules_for(p: Answer, u: Answer) -> list[str]:
    """The names of the rules a difference falls under (empty: unexplained)."""
    return [rule.name for rule in RULES if rule.applies(p, u)]


def explain(p: Answer, u: Answer) -> str | None:
    """None when the answers agree, else the one rule, or ``UNEXPLAINED``."""
    if not differs(p, u):
        return None
    found = rules_for(p, u)
    return found[0] if len(found) == 1 else UNEXPLAINED
