"""What ``--draws`` reports: which configurations won, how wide the best throughput is,
whether the nominal choice is robust, and which ops carry the winner's variance.

The variance of an op's share of the winner's simulated time is, with independent errors,
``(calls · latency)² · Var(multiplier)`` (``Var`` over its error pool, uniform; for an
analytic answer with ``--fallback-error`` the log-normal's). It is read from the nominal
search: every step the winner's model simulated during the search, all its batch sizes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from profstore.tensorcast.draw_spec import FallbackErrors
from profstore.tensorcast.drawn_source import ModelRecord
from profstore.tensorcast.ranking import Ranked, matches

ROBUST_SHARE = 0.8
"""The share of draws the nominal best must win to be called robust."""
NO_WINNER = "(none)"
"""A search in which no configuration met the latency limits."""


@dataclass(frozen=True)
class OpShare:
    """One op's part of the variance of the winner's simulated time."""

    op: str
    kernel: str
    source: str
    level: str
    calls: int
    time_us: float
    variance_share: float


@dataclass
class DrawReport:
    k: int
    seed: int
    fallback: FallbackErrors
    nominal_best: str
    nominal_throughput: float
    nominal_batch_size: int
    runner_up: Ranked | None
    """The nominal search's second configuration (None when it ranked one)."""
    winners: dict[str, int]
    best_throughputs: list[float]
    p10: float
    p90: float
    robust: bool
    fallback_time_share: float
    winner_fallback_time_share: float
    variance_ops: list[OpShare] = field(default_factory=list)
    nominal_seconds: float = 0.0
    draw_seconds: float = 0.0
    winner_fallback_variance_share: float = 0.0
    """The analytic fallbacks' part of the variance of the nominal best's time."""
    fallback_classes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per op class of the nominal best's fallbacks: where its error came from."""

    def fallback_json(self) -> dict[str, Any]:
        return {"source": self.fallback.source, "stated": self.fallback.stated,
                "classes": self.fallback_classes,
                "pooled_ops": len(self.fallback.pooled),
                "winner_variance_share": self.winner_fallback_variance_share}

    def to_json(self) -> dict[str, Any]:
        return {"k": self.k, "seed": self.seed, "winners": self.winners,
                "nominal_best": self.nominal_best, "best_throughput_p10": self.p10,
                "best_throughput_p90": self.p90, "robust": self.robust,
                "nominal_best_throughput": self.nominal_throughput,
                "nominal_best_batch_size": self.nominal_batch_size,
                "runner_up": asdict(self.runner_up) if self.runner_up else None,
                "best_throughputs": self.best_throughputs,
                "fallback_error": self.fallback_json(),
                "fallback_time_share": self.fallback_time_share,
                "winner_fallback_time_share": self.winner_fallback_time_share,
                "variance_ops": [asdict(o) for o in self.variance_ops],
                "nominal_seconds": self.nominal_seconds, "draw_seconds": self.draw_seconds}


def build_report(k: int, seed: int, fallback: FallbackErrors, nominal: list[Ranked],
                 drawn: Sequence[list[Ranked]], models: list[ModelRecord],
                 nominal_seconds: float, draw_seconds: float) -> DrawReport:
    best = nominal[0] if nominal else Ranked(NO_WINNER, 0.0, 0)
    winners = Counter(table[0].parallel if table else NO_WINNER for table in drawn)
    tops = [table[0].throughput if table else 0.0 for table in drawn]
    p10, p90 = (float(v) for v in np.percentile(tops, [10, 90]))
    mine = [m for m in models if matches(best.parallel, m.config)]
    return DrawReport(
        k, seed, fallback, best.parallel, best.throughput, best.batch_size,
        nominal[1] if len(nominal) > 1 else None, dict(winners.most_common()), tops, p10, p90,
        winners[best.parallel] >= ROBUST_SHARE * k and best.parallel != NO_WINNER,
        fallback_share(models), fallback_share(mine), variance_shares(mine),
        nominal_seconds, draw_seconds, fallback_variance_share(mine),
        fallback_classes(mine, fallback))


def _variance_parts(models: list[ModelRecord]) -> dict[tuple[Any, ...], float]:
    """Each distinct answer's part of the variance (module docstring), its calls summed
    over the models."""
    merged: dict[tuple[str, str, str, str, float, float], int] = {}
    for model in models:
        for op in model.ops.values():
            key = (op.op, op.kernel, op.source, op.level, op.latency_us, op.variance)
            merged[key] = merged.get(key, 0) + op.calls
    return {(*key, calls): calls ** 2 * key[4] ** 2 * key[5] for key, calls in merged.items()}


def fallback_variance_share(models: list[ModelRecord]) -> float:
    """The analytic fallbacks' part of the variance of these models' simulated time."""
    parts = _variance_parts(models)
    total = math.fsum(parts.values())
    analytic = math.fsum(v for key, v in parts.items() if key[2] == "ANALYTIC")
    return analytic / total if total > 0 else 0.0


def fallback_classes(models: list[ModelRecord], fallback: FallbackErrors
                     ) -> dict[str, dict[str, Any]]:
    """Per op class of these models' fallbacks: its calls, where its error came from
    (``class``, ``pooled``, ``stated`` or ``none``) and that distribution's size."""
    found: dict[str, dict[str, Any]] = {}
    for model in models:
        for op in model.ops.values():
            if op.source != "ANALYTIC":
                continue
            entry = found.setdefault(op.kernel, {"calls": 0, "from": op.level, "values": len(
                fallback.pool(op.kernel)[1]) if fallback.source == "calibration" else 0})
            entry["calls"] += op.calls
    return dict(sorted(found.items(), key=lambda item: -item[1]["calls"]))


def fallback_share(models: list[ModelRecord]) -> float:
    """The share of the simulated time TensorCast's analytic model priced (exactly rounded
    sums: the models come from worker processes in no fixed order)."""
    ops = [op for model in models for op in model.ops.values()]
    total = math.fsum(op.calls * op.latency_us for op in ops)
    analytic = math.fsum(op.calls * op.latency_us for op in ops if op.source == "ANALYTIC")
    return analytic / total if total > 0 else 0.0


def variance_shares(models: list[ModelRecord], top: int = 8) -> list[OpShare]:
    """The ops with the largest part of the variance of these models' simulated time."""
    parts = _variance_parts(models)
    total = math.fsum(parts.values())
    if total <= 0:
        return []
    ranked = sorted(parts.items(), key=lambda item: -item[1])
    return [OpShare(key[0], key[1], key[2], key[3], key[6], key[6] * key[4], v / total)
            for key, v in ranked[:top] if v > 0]


def render(report: DrawReport) -> str:
    verdict = "robust" if report.robust else "not robust"
    won = report.winners.get(report.nominal_best, 0)
    lines = [
        f"draws: {report.k} searches (seed {report.seed}, {_fallback_words(report)}) in "
        f"{report.draw_seconds:.1f} s "
        f"(the nominal search {report.nominal_seconds:.1f} s)",
        f"  nominal best {report.nominal_best} at batch {report.nominal_batch_size}: "
        f"{report.nominal_throughput:.2f} tok/s; best throughput p10-p90 "
        f"[{report.p10:.2f}, {report.p90:.2f}]" + (
            f"; runner-up {report.runner_up.parallel} {report.runner_up.throughput:.2f} tok/s"
            if report.runner_up else ""),
        f"  the nominal best wins {won} of {report.k} draws: {verdict} "
        f"(robust: at least {ROBUST_SHARE:.0%})",
        "  winners: " + ", ".join(f"{label} {count}" for label, count
                                  in report.winners.items()),
        f"  analytic fallbacks price {report.fallback_time_share:.1%} of the simulated time "
        f"({report.winner_fallback_time_share:.1%} of the nominal best's) and carry "
        f"{report.winner_fallback_variance_share:.1%} of the variance of the nominal best's"
        + ("; they have no error in the draws" if report.fallback.source == "none" else ""),
    ]
    if report.fallback_classes:
        lines.append("  fallback errors by op class (the nominal best's): " + ", ".join(
            f"{name} {entry['from']}" + (f" ({entry['values']})" if entry["values"] else "")
            for name, entry in list(report.fallback_classes.items())[:8]))
    if report.variance_ops:
        lines.append("  ops that carry the variance of the nominal best's time "
                     "(what to profile next):")
        lines.append(f"    {'OP':<40} {'KERNEL':<24} {'SOURCE':<12} {'ERRORS FROM':<18} "
                     f"{'CALLS':>7} {'TIME_US':>12} {'VARIANCE':>8}")
        for o in report.variance_ops:
            lines.append(f"    {o.op:<40} {o.kernel:<24} {o.source:<12} {o.level:<18} "
                         f"{o.calls:>7} {o.time_us:>12.1f} {o.variance_share:>8.1%}")
    return "\n".join(lines)


def _fallback_words(report: DrawReport) -> str:
    errors = report.fallback
    if errors.source == "stated":
        return f"fallback error {errors.stated:g}"
    if errors.source == "none":
        return "analytic answers exact"
    return (f"fallback errors from the analytic check: {len(errors.classes)} classes, "
            f"{len(errors.pooled)} ops pooled")
