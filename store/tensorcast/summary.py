"""The run summary of ``profstore tensorcast``: text for stderr, JSON for ``--stats-json``,
and the fallback ops as a workload ``profstore gaps`` reads (JSON lines with ``calls``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profstore.evaluation.fallback_prices import Price, PricedMiss, price_lines, prices
from profstore.tensorcast import analytic_check, fallback_rows, time_split
from profstore.tensorcast.check_report import check_lines
from profstore.tensorcast.ranking import Ranked, matches
from profstore.tensorcast.run_stats import Fallback, RunSummary


@dataclass(frozen=True)
class Timing:
    """The command's wall time and how many processes asked profstore."""

    wall_seconds: float

    def share(self, summary: RunSummary, without_collections: bool = False) -> float:
        """Lookup time over the wall time of the processes that looked up (without the
        garbage collections that ran inside lookups, if asked)."""
        busy = self.wall_seconds * max(1, _looked_up(summary))
        seconds = summary.total("lookup_seconds")
        if without_collections:
            seconds -= summary.total("lookup_collection_seconds")
        return seconds / busy if busy > 0 else 0.0


def _looked_up(summary: RunSummary) -> int:
    return sum(1 for p in summary.processes if p.lookups)


def to_json(summary: RunSummary, timing: Timing, best: Ranked | None = None,
            top: int = 20) -> dict[str, Any]:
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
        "lookup_collection_seconds": summary.total("lookup_collection_seconds"),
        "lookup_share_without_collections": timing.share(summary, without_collections=True),
        "answers": dict(sorted(summary.counter("sources").items())),
        "misses": {reason: {"count": count, "tensorcast_labels": labels.get(reason, {})}
                   for reason, count in summary.counter("misses").most_common()},
        **time_json(summary, best),
        "analytic_check": analytic_check.check(
            analytic_check.observations(summary.models())).to_json(),
        "fallback_time_us": sum(f.time_us for f in fallbacks),
        "fallbacks": [row.to_json() for row in fallback_rows.rows(fallbacks)[:top]],
        "fallback_prices": [p.to_json() for p in _prices(fallbacks)[:top]],
        "regime_equivalences": dict(summary.counter("equivalences").most_common()),
        "errors": summary.errors(),
    }


def time_json(summary: RunSummary, best: Ranked | None) -> dict[str, Any]:
    """Time by source for the run, per configuration, per op class and for the search's
    best configuration; upstream's beside it where ``--compare`` asked it."""
    models = summary.models()
    ops = time_split.all_ops(models)
    mine = [m for m in models if best is not None and matches(best.parallel, m.config)]
    data: dict[str, Any] = {
        "time_by_source": time_split.split(ops).to_json(),
        "time_by_configuration": {label: part.to_json() for label, part
                                  in time_split.by_configuration(models).items()},
        "best_configuration": best.parallel if best is not None else None,
        "best_time_by_source": (time_split.split(time_split.all_ops(mine)).to_json()
                                if mine else None),
        "time_by_class": {name: part.to_json() for name, part
                          in time_split.by_class(models).items()},
    }
    if any(op.upstream_kind is not None for op in ops):
        side = time_split.upstream_side
        data["upstream_time_by_source"] = time_split.split(ops, side).to_json()
        data["upstream_best_time_by_source"] = (
            time_split.split(time_split.all_ops(mine), side).to_json() if mine else None)
    return data


def _prices(fallbacks: list[Fallback]) -> list[Price]:
    return prices(PricedMiss(f.op, f.calls, f.analytic_us, f.nearest_us, f.differs)
                  for f in fallbacks)


def render(summary: RunSummary, timing: Timing, best: Ranked | None = None,
           top: int = 10) -> str:
    data = to_json(summary, timing, best, top)
    answers = ", ".join(f"{k} {v}" for k, v in data["answers"].items()) or "none"
    lines = [
        f"profstore: {data['lookups']} lookups ({data['calls']} op calls) in "
        f"{data['processes_that_looked_up']} processes, {data['data_sources']} data sources; "
        f"lookups {data['lookup_seconds']:.2f} s ({100 * data['lookup_share']:.1f} % of "
        f"{data['wall_seconds']:.1f} s wall per process; garbage collections "
        f"{data['lookup_collection_seconds']:.2f} s of it, "
        f"{100 * data['lookup_share_without_collections']:.1f} % without), "
        f"setup {data['setup_seconds']:.2f} s",
        f"  answers: {answers}",
    ]
    if data["misses"]:
        lines.append("  misses: " + ", ".join(
            f"{r} {m['count']}" + _labels(r, m["tensorcast_labels"])
            for r, m in data["misses"].items()))
    lines += time_lines(data)
    lines += check_lines(data["analytic_check"], top)
    fallbacks = summary.fallbacks()
    lines += fallback_rows.lines(fallback_rows.rows(fallbacks), data["fallback_time_us"], top)
    lines += price_lines(_prices(fallbacks), "analytic", top)
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


def write_workload(summary: RunSummary, path: str | Path) -> int:
    """Every fallback op as a ``profstore gaps`` workload line; returns the line count."""
    fallbacks = summary.fallbacks()
    with open(path, "w", encoding="utf-8") as handle:
        for item in fallbacks:
            handle.write(json.dumps({**item.leaf, "calls": item.calls}) + "\n")
    return len(fallbacks)


def _split_line(name: str, split: dict[str, Any]) -> str:
    shares = split["shares"]
    total = split["total_us"] or 1.0
    kinds = ", ".join(f"{label} {100 * shares[key]:.1f} %" for key, label in (
        ("measured", "measured"), ("interpolated", "interpolated"), ("partial", "partial"),
        ("zero_cost", "zero-cost"), ("calibrated", "calibrated"),
        ("extrapolated", "extrapolated")) if shares[key] or key in ("measured", "interpolated"))
    reasons = ", ".join(f"{reason} {100 * us / total:.1f} %" for reason, us in sorted(
        split["fallback_us"].items(), key=lambda item: -item[1]))
    return (f"  {name}: {split['total_us']:.1f} us simulated; {kinds}, analytic fallback "
            f"{100 * shares['fallback']:.1f} %" + (f" ({reasons})" if reasons else ""))


def time_lines(data: dict[str, Any]) -> list[str]:
    """Time by source for stderr: the run, the best configuration, each configuration."""
    lines = [_split_line("time by source", data["time_by_source"])]
    if "upstream_time_by_source" in data:
        lines.append(_split_line("upstream's CSV source would give",
                                 data["upstream_time_by_source"]))
    best = data["best_configuration"]
    if data["best_time_by_source"] is not None:
        lines.append(_split_line(f"best configuration ({best})", data["best_time_by_source"]))
    configurations = data["time_by_configuration"]
    if len(configurations) > 1:
        lines.append(f"    {'CONFIGURATION':<44} {'TOTAL_US':>12} {'MEASURED':>9} "
                     f"{'INTERP':>7} {'FALLBACK':>9}")
        for label, split in configurations.items():
            shares = split["shares"]
            lines.append(f"    {label:<44} {split['total_us']:>12.1f} "
                         f"{shares['measured']:>9.1%} {shares['interpolated']:>7.1%} "
                         f"{shares['fallback']:>9.1%}" + ("  best" if label == best else ""))
    return lines
