"""The documented rules by which profstore's answer to one TensorCast op invocation may
differ from upstream's ``InterpolatingDataSource`` on the same version directory
(docs/tensorcast.md, "Differences from upstream"). Every difference of a simulation must
fall under exactly one of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.tensorcast.simulation import COMMUNICATION, Call

REL_TOL = 1e-6


@dataclass(frozen=True)
class Rule:
    name: str
    applies: Callable[[Call, Call], bool]


def _hit(call: Call) -> bool:
    return call.latency_us is not None


def _both(p: Call, u: Call) -> bool:
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
    Rule("profstore-answers-upstream-misses", lambda p, u: _hit(p) and not _hit(u)),
)


def differs(p: Call, u: Call) -> bool:
    if _hit(p) != _hit(u):
        return True
    if not _hit(p):
        return False
    assert p.latency_us is not None and u.latency_us is not None
    return abs(p.latency_us - u.latency_us) > REL_TOL * max(1.0, abs(u.latency_us))


def value_text(call: Call) -> str:
    return f"{call.latency_us:.4f}" if call.latency_us is not None else f"miss ({call.reason})"


@dataclass(frozen=True)
class Difference:
    func: str
    shapes: str
    profstore: str
    upstream: str
    rule: str

    def row(self) -> str:
        """The docs/tensorcast.md table row of this difference."""
        return (f"| `{self.func}` | {self.shapes} | {self.profstore} | {self.upstream} | "
                f"{self.rule} |")


def differences(profstore: list[Call], upstream: list[Call]) -> list[Difference]:
    """Every invocation whose answers differ, with the one rule it falls under (a
    difference no rule explains raises AssertionError naming it)."""
    found = []
    for p, u in zip(profstore, upstream, strict=True):
        assert p.func == u.func and p.shapes == u.shapes, (p.func, u.func)
        if not differs(p, u):
            continue
        rules = [r.name for r in RULES if r.applies(p, u)]
        assert len(rules) == 1, f"{p.func} {p.shapes}: {value_text(p)} vs {value_text(u)} " \
                                f"falls under {rules or 'no documented rule'}"
        found.append(Difference(p.func, str(p.shapes), value_text(p), value_text(u), rules[0]))
    return found
