"""TensorCast's analytic model checked against the profiling data, per op class.

TensorCast's empirical model prices every op with its analytic (roofline) model too, hit or
miss. For every distinct op profstore answered from rows (MEASURED or INTERPOLATED; not
zero-cost, not PARTIAL) a run keeps both figures (``ledger``); per op class (the kernel,
or the op where none is mapped) this module reports the ratio measured / analytic — its
median and p10–p90 (numpy's linear percentiles) — and a leave-one-out test: each op is
predicted from the class's calibration fitted without it, and the median absolute
percentage error of that prediction is set beside the raw analytic answer's.

**The calibration** (docs/adr/0110-analytic-calibration.md): a fixed overhead plus a scaled
analytic time, ``measured = overhead + scale · analytic``, fitted by least squares on the
relative error, when the class has at least 3 ops whose analytic times span at least a
factor ``MIN_SPAN`` and the fit gives a non-negative overhead and a positive scale; else a
constant ratio (the median). The analytic time is the size axis: it already folds FLOPs and
bytes into one roofline figure, and every op has one, hit or miss. Of a constant ratio, a
power law over the analytic time and this line, the line had the lowest leave-one-out
error on the reference searches (the ADR has the figures). A class is ``usable`` (its
calibration may price a fallback) with at least ``MIN_OPS`` ops and a leave-one-out error
below the raw analytic one's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from profstore.tensorcast.ledger import ANSWERED, ModelLedger

MIN_OPS = 5
"""The fewest answered ops a class needs for its calibration to be used."""
MIN_SPAN = 4.0
"""The least ratio of the largest to the smallest analytic time over which a class's
calibration follows size (a power law); below it, a constant ratio."""


@dataclass(frozen=True)
class Observation:
    """One distinct op profstore answered: what the rows say and what TensorCast's
    analytic model said, for one call."""

    op: str
    op_class: str
    kind: str
    measured_us: float
    analytic_us: float

    @property
    def ratio(self) -> float:
        return self.measured_us / self.analytic_us


@dataclass(frozen=True)
class Calibration:
    """``measured ≈ overhead_us + scale · analytic`` (overhead 0: a constant ratio)."""

    overhead_us: float
    scale: float

    def predict(self, analytic_us: float) -> float:
        return self.overhead_us + self.scale * analytic_us

    def factor(self, analytic_us: float) -> float:
        """The calibrated answer over the analytic one, at this size."""
        return self.predict(analytic_us) / analytic_us


def fit(points: Sequence[Observation]) -> Calibration:
    """The class's calibration from these ops (module docstring)."""
    if not points:
        raise ValueError("a calibration needs at least one answered op")
    analytic = np.array([p.analytic_us for p in points])
    measured = np.array([p.measured_us for p in points])
    if len(points) >= 3 and analytic.max() >= MIN_SPAN * analytic.min():
        # (overhead + scale · a - m) / m for every op, in the least-squares sense
        rows = np.column_stack([1.0 / measured, analytic / measured])
        (overhead, scale), *_ = np.linalg.lstsq(rows, np.ones(len(points)), rcond=None)
        if overhead >= 0 and scale > 0:
            return Calibration(float(overhead), float(scale))
    return Calibration(0.0, float(np.median(measured / analytic)))


def observations(models: Iterable[ModelLedger]) -> list[Observation]:
    """Every distinct op answered from rows, once (the same op in several models counts
    once per answer it got), in a fixed order."""
    found: dict[tuple[str, float], Observation] = {}
    for model in models:
        for key, op in model.ops.items():
            if op.kind in ANSWERED and op.latency_us > 0 and op.analytic_us > 0:
                found.setdefault((key, op.latency_us), Observation(
                    op.op, op.op_class, op.kind.value, op.latency_us, op.analytic_us))
    return sorted(found.values(), key=lambda o: (o.op_class, o.analytic_us, o.measured_us,
                                                  o.op, o.kind))


def ape(predicted: float, measured: float) -> float:
    """The absolute percentage error of a prediction (as a fraction: 0.25 is 25 %)."""
    return abs(predicted - measured) / measured


def leave_one_out(points: Sequence[Observation]) -> list[float]:
    """Each op's calibrated prediction from the others' calibration (None-free: a class of
    one op predicts nothing, so the list is empty)."""
    if len(points) < 2:
        return []
    return [fit([p for j, p in enumerate(points) if j != i]).predict(point.analytic_us)
            for i, point in enumerate(points)]


@dataclass(frozen=True)
class ClassCheck:
    """One op class's check (module docstring). ``loo_multipliers``: truth over the
    calibrated prediction, per op (the calibrated answer's error distribution);
    ``ratios``: measured over analytic, per op (the raw analytic answer's)."""

    measured_ops: int
    ratio_median: float
    ratio_p10: float
    ratio_p90: float
    loo_ape_analytic: float
    loo_ape_calibrated: float | None
    usable: bool
    calibration: Calibration
    ratios: tuple[float, ...]
    loo_multipliers: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["calibration"] = asdict(self.calibration)
        data["ratios"], data["loo_multipliers"] = list(self.ratios), list(self.loo_multipliers)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClassCheck:
        return cls(**{**data, "calibration": Calibration(**data["calibration"]),
                      "ratios": tuple(data["ratios"]),
                      "loo_multipliers": tuple(data["loo_multipliers"])})


def check_class(points: Sequence[Observation]) -> ClassCheck:
    """The check of one class's ops (at least one)."""
    ratios = np.array([p.ratio for p in points])
    raw = float(np.median([ape(p.analytic_us, p.measured_us) for p in points]))
    predicted = leave_one_out(points)
    calibrated = (float(np.median([ape(q, p.measured_us) for q, p in zip(predicted, points)]))
                  if predicted else None)
    usable = (len(points) >= MIN_OPS and calibrated is not None and calibrated < raw)
    p10, p90 = (float(v) for v in np.percentile(ratios, [10, 90]))
    return ClassCheck(len(points), float(np.median(ratios)), p10, p90, raw, calibrated, usable,
                      fit(points), tuple(float(r) for r in ratios),
                      tuple(p.measured_us / q for q, p in zip(predicted, points)))


@dataclass(frozen=True)
class AnalyticCheck:
    """Every class's check, and the observations it was made from."""

    classes: dict[str, ClassCheck]
    observations: list[Observation]

    def to_json(self) -> dict[str, Any]:
        return {"classes": {name: c.to_json() for name, c in self.classes.items()},
                "observations": [asdict(o) for o in self.observations],
                "min_ops": MIN_OPS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnalyticCheck:
        return cls({name: ClassCheck.from_json(c) for name, c in data["classes"].items()},
                   [Observation(**o) for o in data["observations"]])

    def usable(self) -> dict[str, ClassCheck]:
        return {name: c for name, c in self.classes.items() if c.usable}


def check(found: Sequence[Observation]) -> AnalyticCheck:
    """The check of every class among these observations, the most ops first."""
    grouped: dict[str, list[Observation]] = defaultdict(list)
    for item in found:
        grouped[item.op_class].append(item)
    order = sorted(grouped, key=lambda name: (-len(grouped[name]), name))
    return AnalyticCheck({name: check_class(grouped[name]) for name in order}, list(found))
