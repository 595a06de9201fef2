"""Every difference between two simulations of one step, each under exactly one of the
documented rules (profstore.tensorcast.differences; docs/tensorcast-compatibility.md,
"Differences from upstream")."""

from __future__ import annotations

from dataclasses import dataclass

from profstore.tensorcast.differences import differs, rules_for

from tests.tensorcast.simulation import Call


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
        """The docs/tensorcast-compatibility.md table row of this difference."""
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
        rules = rules_for(p, u)
        assert len(rules) == 1, f"{p.func} {p.shapes}: {value_text(p)} vs {value_text(u)} " \
                                f"falls under {rules or 'no documented rule'}"
        found.append(Difference(p.func, str(p.shapes), value_text(p), value_text(u), rules[0]))
    return found
