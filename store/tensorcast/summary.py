"""The run summary of ``profstore tensorcast``: text for stderr, JSON for ``--stats-json``,
and the fallback ops as a workload ``profstore gaps`` reads (JSON lines with ``calls``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profstore.presentation.fallback_price import Price, PricedMiss, price_lines, prices
from profstore.tensorcast.run_stats import Fallback, RunSummary


@dataclass(frozen=True)
class Timing:
    """The command's wall time and how many processes asked profstore."""

    wall_seconds: float

    def share(self, summary: RunSummary) -> float:
        """Lookup time over the wall time of the processes that looked up."""
        busy = self.wall_seconds * max(1, _looked_up(summary))
        return summary.total("lookup_seconds") / busy if busy > 0 else 0.0


def _looked_up(summary: RunSummary) -> int:
    return sum(1 for p in summary.processes if p.lookups)


def to_json(summary: RunSummary, timing: Timing, top: int = 20) -> dict[str, Any]:
    labels = summary.labels()
    fallbacks = summary.fallbacks()
    return {
        "lookups": summary.total("lookups"),
        "calls": summary.total("calls"),
        "processes": len(summary.processes),
        "processes_that_looked_up": _looked_up(summary),
        "data_sources": summary.total("data_sources"),
        "lookup_seconds": summary.total("lookup_seconds"),
        "setup_seconds": summary.total("setup_seconds"),
        "wall_seconds": timing.wall_seconds,
        "lookup_share": timing.share(summary),
        "answers": dict(sorted(summary.counter("sources").items())),
        "misses": {reason: {"count": count, "tensorcast_labels": labels.get(reason, {})}
                   for reason, count in summary.counter("misses").most_common()},
        "fallback_time_us": sum(f.time_us for f in fallbacks),
        "fallbacks": [_fallback_json(f) for f in fallbacks[:top]],
        "fallback_prices": [p.to_json() for p in _prices(fallbacks)[:top]],
        "regime_equivalences": dict(summary.counter("equivalences").most_common()),
        "errors": summary.errors(),
    }


def _prices(fallbacks: list[Fallback]) -> list[Price]:
    return prices(PricedMiss(f.op, f.calls, f.analytic_us, f.nearest_us, f.differs)
                  for f in fallbacks)


def _fallback_json(item: Fallback) -> dict[str, Any]:
    return {"op": item.op, "calls": item.calls, "analytic_us": item.analytic_us,
            "time_us": item.time_us, "reason": item.reason, "tensorcast_label": item.label,
            "leaf": item.leaf, "nearest_us": item.nearest_us, "differs": item.differs}


def render(summary: RunSummary, timing: Timing, top: int = 10) -> str:
    data = to_json(summary, timing, top)
    answers = ", ".join(f"{k} {v}" for k, v in data["answers"].items()) or "none"
    lines = [
        f"profstore: {data['lookups']} lookups ({data['calls']} op calls) in "
        f"{data['processes_that_looked_up']} processes, {data['data_sources']} data sources; "
        f"lookups {data['lookup_seconds']:.2f} s ({100 * data['lookup_share']:.1f} % of "
        f"{data['wall_seconds']:.1f} s wall per process), setup {data['setup_seconds']:.2f} s",
        f"  answers: {answers}",
    ]
    if data["misses"]:
        lines.append("  misses: " + ", ".join(
            f"{r} {m['count']}" + _labels(r, m["tensorcast_labels"])
            for r, m in data["misses"].items()))
    if data["fallbacks"]:
        lines.append(f"  analytic fallbacks, {data['fallback_time_us']:.1f} us simulated "
                     "in all; the most time first:")
        lines.append(f"    {'OP':<48} {'CALLS':>6} {'TIME_US':>10}  REASON  SHAPES")
        for item in data["fallbacks"]:
            lines.append(f"    {item['op']:<48} {item['calls']:>6} {item['time_us']:>10.1f}  "
                         f"{item['reason']}  {_shapes(item['leaf'])}")
    lines += price_lines(_prices(summary.fallbacks()), "analytic", top)
    if data["regime_equivalences"]:
        lines.append("  answers through stated regime equivalences: " + ", ".join(
            f"{k} ({n} lookups)" for k, n in data["regime_equivalences"].items()))
    return "\n".join(lines)


def _labels(reason: str, labels: dict[str, int]) -> str:
    """``(TensorCast's label N, ...)`` where a label differs from profstore's reason."""
    if not labels or set(labels) == {reason}:
        return ""
    return " (" + ", ".join(f"{label} {n}" for label, n in sorted(
        labels.items(), key=lambda item: -item[1])) + ")"


def _shapes(leaf: dict[str, Any]) -> str:
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict) and "shape" in value:
            found.append("x".join(map(str, value["shape"])) or "()")
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(leaf.get("args", []))
    return ";".join(found)


def write_workload(summary: RunSummary, path: str | Path) -> int:
    """Every fallback op as a ``profstore gaps`` workload line; returns the line count."""
    fallbacks = summary.fallbacks()
    with open(path, "w", encoding="utf-8") as handle:
        for item in fallbacks:
            handle.write(json.dumps({**item.leaf, "calls": item.calls}) + "\n")
    return len(fallbacks)
