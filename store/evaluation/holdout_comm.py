"""Leave-one-out of the communication rule: every interior measured size of every
(collective, devices, tier) is hidden in turn and predicted from the other sizes by

- ``local``: the lookup's own rule (alpha-beta through the bracketing pair,
  ``communication.bracketing_fit``);
- ``nearest_k``: the alternative it was chosen over, least squares on the
  ``NEAREST_K`` nearest sizes on each side;
- ``global``: one least-squares alpha-beta line over every other size (the former rule);
- ``nearest``: the latency of the nearest other size (log-size distance, the smaller on
  a tie).

The truth is the size's rows merged by median, as the exact lookup merges them. The
smallest and largest sizes are boundaries (the lookup never extrapolates) and are not
scored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from profstore.api import Store
from profstore.lookup.communication import CommPoint, SizeCurve, bracketing_fit, global_fit
from profstore.storage.comm_samples import comm_samples

NEAREST_K = 2
METHODS = ("local", "nearest_k", "global", "nearest")

Predictor = Callable[[SizeCurve, float], float]


def _local(curve: SizeCurve, size: float) -> float:
    fit = bracketing_fit(curve, size)
    return float("nan") if fit is None else fit.at(size)


def _nearest_k(curve: SizeCurve, size: float) -> float:
    upper = int(np.searchsorted(curve.sizes, size))
    index = list(range(max(0, upper - NEAREST_K), min(len(curve.sizes), upper + NEAREST_K)))
    beta, alpha = np.polyfit(curve.sizes[index], curve.latency[index], 1)
    return float(alpha + beta * size)


def _global(curve: SizeCurve, size: float) -> float:
    alpha, beta = global_fit(curve)
    return alpha + beta * size


def _nearest(curve: SizeCurve, size: float) -> float:
    distance = np.abs(np.log(curve.sizes) - np.log(size))
    return float(curve.latency[int(np.argmin(distance))])


PREDICTORS: dict[str, Predictor] = {
    "local": _local, "nearest_k": _nearest_k, "global": _global, "nearest": _nearest}


@dataclass
class CommStats:
    """Hold-out figures of one collective (``*``: every collective)."""

    collective: str
    groups: int = 0
    sizes: int = 0
    scored: int = 0
    ape: dict[str, dict[str, float | None]] = field(default_factory=dict)


def _ape(predicted: float, truth: float) -> float:
    return abs(predicted - truth) / truth * 100.0


def _load(store: Store, profile_id: int) -> dict[tuple[str, int, str | None], list[CommPoint]]:
    groups: dict[tuple[str, int, str | None], list[CommPoint]] = defaultdict(list)
    with store.engine.connect() as conn:
        for row in comm_samples(conn, profile_id):
            groups[(row.collective, row.devices, row.point.tier)].append(row.point)
    return groups


def _errors(curve: SizeCurve) -> dict[str, list[float]]:
    errors: dict[str, list[float]] = {m: [] for m in METHODS}
    for i in range(1, len(curve.sizes) - 1):
        keep = np.arange(len(curve.sizes)) != i
        rest = SizeCurve(curve.sizes[keep], curve.latency[keep],
                         tuple(lines for j, lines in enumerate(curve.lines) if j != i))
        size, truth = float(curve.sizes[i]), float(curve.latency[i])
        for name, predict in PREDICTORS.items():
            errors[name].append(_ape(predict(rest, size), truth))
    return errors


def communication_holdout(store: Store, version: str,
                          error_stats: Callable[[list[float]], dict[str, float | None]]
                          ) -> list[CommStats]:
    """Per collective and overall (``*``, last); empty when the version names no HCCL data."""
    profile = store.profile(version)
    if profile is None or profile.comm_profile_id is None:
        return []
    per: dict[str, CommStats] = {}
    errors: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (collective, _, _), points in sorted(_load(store, profile.comm_profile_id).items(),
                                             key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
        curve = SizeCurve.of(points)
        stats = per.setdefault(collective, CommStats(collective))
        stats.groups += 1
        stats.sizes += len(curve.sizes)
        for name, values in _errors(curve).items():
            errors[collective][name] += values
            errors["*"][name] += values
    overall = CommStats("*", sum(s.groups for s in per.values()),
                        sum(s.sizes for s in per.values()))
    ordered = [per[name] for name in sorted(per)] + [overall]
    for stats in ordered:
        stats.scored = len(errors[stats.collective]["local"])
        stats.ape = {m: error_stats(errors[stats.collective][m]) for m in METHODS}
    return ordered
