"""The figures ``bench.bench_tensorcast`` reports: medians over runs, the ratios the
issue sets targets on, and the result file's Markdown."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Run:
    """One command: its wall clock, upstream's own search time (None for text-generate),
    what it found, and the load average when it started."""

    wall_s: float
    completed_s: float | None
    load_before: float
    best: str = ""
    best_throughput: float | None = None
    batch: int | None = None
    step_s: float | None = None
    """text-generate: the simulated step time it printed."""
    lookups: dict[str, float] = field(default_factory=dict)

    @property
    def outside_s(self) -> float | None:
        return None if self.completed_s is None else self.wall_s - self.completed_s


def _median(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


OUTSIDE_AGAINST = {"analytic": "analytic", "analytic-frozen": "analytic_frozen",
                   "profstore-baseline": "baseline"}
"""The sources profstore's time outside the search is compared with, by their name there."""


def summary(runs: dict[str, list[Run]]) -> dict[str, Any]:
    """Per source the medians; then profstore over each other source, wall and search, and
    profstore's time outside the search minus the analytic commands' (and the baseline's)."""
    sources: dict[str, dict[str, Any]] = {}
    for source, found in runs.items():
        last = found[-1]
        sources[source] = {
            "wall_s": _median([r.wall_s for r in found]),
            "completed_s": _median([r.completed_s for r in found]),
            "outside_s": _median([r.outside_s for r in found]),
            "best": last.best, "best_throughput": last.best_throughput, "batch": last.batch,
            "step_s": last.step_s,
            "lookups": {key: statistics.median(r.lookups[key] for r in found)
                        for key in (found[0].lookups or {})}}
    ours = sources.get("profstore", {})
    ratios: dict[str, float | None] = {}
    for other in ("analytic", "analytic-frozen", "upstream", "profstore-baseline"):
        if other in sources:
            ratios[f"wall_over_{other}"] = _ratio(ours.get("wall_s"), sources[other]["wall_s"])
            ratios[f"completed_over_{other}"] = _ratio(ours.get("completed_s"),
                                                       sources[other]["completed_s"])
    for other, name in OUTSIDE_AGAINST.items():
        if other in sources and ours.get("outside_s") is not None:
            ratios[f"outside_minus_{name}_s"] = ours["outside_s"] - sources[other]["outside_s"]
    return {"sources": sources, "profstore": ratios}


def _number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _rounds(runs: list[dict[str, Any]], key: str) -> str:
    return " / ".join(_number(r[key]) for r in runs)


def _scenario(name: str, data: dict[str, Any]) -> list[str]:
    sources, ratios = data["summary"]["sources"], data["summary"]["profstore"]
    lines = [f"## {name}: `{data['command']} {data['model']} {' '.join(data['args'])}`", "",
             "| source | wall (s) | completed in (s) | outside the search (s) | each run: "
             "wall | completed in | load before | best | tok/s | batch |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for source, med in sources.items():
        runs = data["runs"][source]
        best = (med["best"].replace(" | ", ", ") or
                (f"step {med['step_s']} s" if med["step_s"] else "no table"))
        lines.append(f"| {source} | {_number(med['wall_s'])} | {_number(med['completed_s'])} | "
                     f"{_number(med['outside_s'])} | {_rounds(runs, 'wall_s')} | "
                     f"{_rounds(runs, 'completed_s')} | {_rounds(runs, 'load_before')} | "
                     f"{best} | {_number(med['best_throughput'])} | {med['batch'] or '–'} |")
    lines.append("")
    lines.append("profstore: " + ", ".join(f"{key.replace('_', ' ')} {_number(value, 3)}"
                                          for key, value in ratios.items()))
    for source in ("profstore", "profstore-baseline"):
        lookups = sources.get(source, {}).get("lookups")
        if lookups:
            lines.append(_lookup_line(source, lookups))
    return [*lines, ""]


def _lookup_line(source: str, lookups: dict[str, float]) -> str:
    collected = lookups.get("collection_seconds", 0.0)
    without = lookups.get("share_without_collections", lookups["share"])
    return (f"{source} lookups: {lookups['lookups']:.0f} in {lookups['processes']:.0f} "
            f"processes, {lookups['lookup_seconds']:.2f} s, {lookups['per_lookup_ms']:.3f} ms "
            f"each, share {100 * lookups['share']:.2f} % (garbage collections {collected:.2f} s "
            f"of it, {100 * without:.2f} % without; medians over runs)")


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# TensorCast three ways, wall clock and search time, at {report['commit']}", "",
             f"`python -m bench.bench_tensorcast`, {report['cpus']} CPUs. A figure is the "
             "median over a source's runs; each round ran every command one after the other "
             "(a scenario with repeats ran its commands that many times a round, "
             "alternating). "
             "Outside the search: wall − upstream's \"All experiments completed in\".", ""]
    for name, data in report["scenarios"].items():
        lines.extend(_scenario(name, data))
    return "\n".join(lines)
