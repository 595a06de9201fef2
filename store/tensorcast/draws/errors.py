"""One draw of ``--draws``: every profstore answer times an error from its own distribution.

The error distribution of an answer is the one ``replay --interval`` uses
(``profstore.evaluation.uncertainty.answer_error``): an INTERPOLATED answer's truth is
``answer / (1 + r)`` for a leave-one-out error ``r`` of its regime (else kernel, else
path) at its dimension; a MEASURED answer with duplicate rows is one of its rows; one
backed by a single row is ``answer · (1 + d)`` for a duplicate deviation ``d`` of its
kernel (else the version); zero-cost and PARTIAL answers have none. As multipliers
``truth / answer``, sorted ascending, that pool is the answer's ``Distribution``; a draw
picks one of them uniformly.

**The seed rule.** Which value is picked depends on nothing but the user's seed, the draw
index and the answer's identity (``identity``): the first 8 bytes of
``sha256(json.dumps([seed, index, identity], separators=(",", ":")))``, big-endian, seed
a ``numpy.random.default_rng``; its ``integers(0, len(pool))`` is the index into the
sorted multipliers.
So within one draw the same regime and coordinate (or the same measured rows) get the
same error in every process and every configuration, and the draws differ from each other.

An answer TensorCast's analytic model gave (a miss) draws, by default, from its op class's
distribution in the analytic check (``spec.FallbackErrors``): one of the sorted
multipliers, picked by the same rule with the identity ``["fallback", cache_key]``. With
``--fallback-error F`` its multiplier is ``(1 + F) ** z``, ``z`` a standard normal from
that rule — log-normal, median 1, one standard deviation is a factor ``1 + F`` either way;
``--fallback-error 0`` leaves it exact.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from profstore.evaluation.uncertainty import ErrorModel, answer_error, default_cache_dir
from profstore.model.result import QueryResult
from profstore.paths.base import regime_key
from profstore.tensorcast.analytic_check import MIN_OPS, AnalyticCheck
from profstore.tensorcast.draws.spec import DrawSpec, FallbackErrors


def identity(result: QueryResult) -> list[Any]:
    """What makes two answers "the same" for a draw (module docstring)."""
    details = result.details
    source = result.source.value if result.source is not None else "miss"
    kernel = details.get("kernel_type", "")
    if source == "INTERPOLATED":
        axes = details.get("axes") or {}
        return ["interpolated", kernel, details.get("path", ""),
                regime_key(details.get("target_regime") or {}),
                details.get("interpolation_dim"), sorted(axes.items())]
    rows = sorted([str(r.get("file")), r.get("line")]
                  for r in details.get("matched_rows") or [])
    return ["measured", kernel, details.get("method", ""), rows]


def draw_rng(seed: int, index: int, ident: list[Any]) -> np.random.Generator:
    """The generator of one answer in one draw (the seed rule, module docstring)."""
    text = json.dumps([seed, index, ident], separators=(",", ":"))
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True)
class Distribution:
    """An answer's error distribution as multipliers ``truth / answer``, sorted (uniform
    over ``values``; empty when the answer has none)."""

    kind: str
    level: str
    values: tuple[float, ...]

    def variance(self) -> float:
        return float(np.var(self.values)) if len(self.values) > 1 else 0.0


def distribution(result: QueryResult, model: ErrorModel) -> Distribution:
    kind, level, pool = answer_error(result, model)
    latency = result.latency_us or 0.0
    if kind == "interpolation":
        values = tuple(1.0 / (1.0 + r) for r in pool)
    elif kind == "duplicates" and latency > 0:
        values = tuple(row / latency for row in pool)
    elif kind == "repeatability":
        values = tuple(1.0 + d for d in pool)
    else:
        return Distribution("none", level, ())
    return Distribution(kind, level, tuple(sorted(values)))


def multiplier(dist: Distribution, spec: DrawSpec, ident: list[Any]) -> float:
    """The answer's multiplier in draw ``spec.index`` (1 for the nominal search)."""
    if spec.index is None or not dist.values:
        return 1.0
    pick = draw_rng(spec.seed, spec.index, ident).integers(0, len(dist.values))
    return dist.values[int(pick)]


def fallback_multiplier(spec: DrawSpec, cache_key: str, op_class: str) -> float:
    """An analytic answer's multiplier in draw ``spec.index`` (module docstring)."""
    errors = spec.fallback
    if spec.index is None or errors.source == "none":
        return 1.0
    rng = draw_rng(spec.seed, spec.index, ["fallback", cache_key])
    if errors.source == "stated":
        return float((1.0 + float(errors.stated or 0.0)) ** rng.standard_normal())
    values = errors.pool(op_class)[1]
    return values[int(rng.integers(0, len(values)))] if values else 1.0


def fallback_error(errors: FallbackErrors, op_class: str) -> tuple[str, float]:
    """Where an analytic answer of this class draws its error from, and the variance of
    its multiplier (``none`` and 0 when it draws none)."""
    if errors.source == "stated":
        sigma2 = math.log1p(float(errors.stated or 0.0)) ** 2
        return "stated", math.exp(sigma2) * (math.exp(sigma2) - 1.0)
    if errors.source == "none":
        return "none", 0.0
    level, values = errors.pool(op_class)
    return (level, float(np.var(values))) if values else ("none", 0.0)


class Distributions:
    """This process's error distributions, one per answer identity (the hold-out errors
    themselves are cached per version on disk, as for ``replay --interval``)."""

    def __init__(self, store: Any, version: str) -> None:
        self.model = ErrorModel(store, version, default_cache_dir())
        self._known: dict[str, Distribution] = {}

    def of(self, result: QueryResult, ident: list[Any]) -> Distribution:
        key = json.dumps(ident, separators=(",", ":"))
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = distribution(result, self.model)
        return found


def errors_from_check(found: AnalyticCheck, calibrated: set[str]) -> FallbackErrors:
    """Per class with at least ``MIN_OPS`` answered ops, its sorted multipliers: the
    leave-one-out ones where its fallbacks are calibrated (``calibrated``, a usable
    class), else its ratios measured / analytic; pooled: every answered op's ratio."""
    classes = {name: tuple(sorted(c.loo_multipliers if name in calibrated and c.usable
                                  else c.ratios))
               for name, c in found.classes.items() if c.measured_ops >= MIN_OPS}
    pooled = tuple(sorted(o.ratio for o in found.observations))
    return FallbackErrors("calibration", None, classes, pooled)
