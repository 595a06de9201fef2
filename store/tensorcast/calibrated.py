"""``--calibrated-fallbacks``: a miss of a usable op class priced as TensorCast's analytic
answer times the class's calibration at its size (``analytic_check``).

Off by default: the RFC never extrapolates, and this is a different, stated model
(docs/adr/0110-analytic-calibration.md). The answer's source is profstore's ``CALIBRATED``;
TensorCast receives it as its analytic fallback's result with the time replaced and the
statistics saying so (``source: CALIBRATED``), so TensorCast's own hit-rate metrics still
count the op as a miss. Time by source counts it apart, never as measured.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profstore.model.result import QueryResult, QuerySource, Reason
from profstore.tensorcast.analytic_check import AnalyticCheck, Calibration
from profstore.tensorcast.ledger import Kind, PricedOp


@dataclass(frozen=True)
class ClassCalibration:
    """A usable class's calibration with the figures its answers carry."""

    calibration: Calibration
    ratio_median: float
    loo_ape_calibrated: float
    measured_ops: int

    def to_json(self) -> dict[str, float]:
        return {"overhead_us": self.calibration.overhead_us, "scale": self.calibration.scale,
                "ratio_median": self.ratio_median,
                "loo_ape_calibrated": self.loo_ape_calibrated,
                "measured_ops": self.measured_ops}

    @classmethod
    def from_json(cls, data: dict[str, float]) -> ClassCalibration:
        return cls(Calibration(data["overhead_us"], data["scale"]), data["ratio_median"],
                   data["loo_ape_calibrated"], int(data["measured_ops"]))


def usable_calibrations(found: AnalyticCheck) -> dict[str, ClassCalibration]:
    """Per usable class (``analytic_check``), what prices its fallbacks."""
    return {name: ClassCalibration(c.calibration, c.ratio_median,
                                   float(c.loo_ape_calibrated or 0.0), c.measured_ops)
            for name, c in found.usable().items()}


def read_saved(path: str) -> dict[str, ClassCalibration]:
    """The usable calibrations of a saved run (its ``--stats-json`` file); a file that is
    not one is a ``ValueError`` naming it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        found = AnalyticCheck.from_json(data["analytic_check"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"--calibrated-fallbacks {path}: not a profstore tensorcast "
                         f"--stats-json file with an analytic check ({error})") from None
    return usable_calibrations(found)


def answer(entry: PricedOp, calibrated: ClassCalibration, reason: str | None) -> QueryResult:
    """profstore's ``CALIBRATED`` answer for a fallback of a usable class: the latency
    TensorCast used (its analytic answer) times the calibration's factor at its size."""
    factor = calibrated.calibration.factor(entry.analytic_us)
    return QueryResult(
        entry.latency_us * factor, QuerySource.CALIBRATED, 0.0,
        Reason(reason) if reason else None,
        {"op_class": entry.op_class, "analytic_us": entry.analytic_us,
         "calibration_factor": factor, "ratio_median": calibrated.ratio_median,
         "loo_ape_calibrated": calibrated.loo_ape_calibrated,
         "measured_ops": calibrated.measured_ops, "method": "calibrated_fallback"})


def apply(result: Any, entry: PricedOp, calibrated: ClassCalibration) -> tuple[Any, PricedOp]:
    """TensorCast's fallback ``result`` and the ledger ``entry`` of a calibrated op."""
    found = answer(entry, calibrated, entry.reason)
    latency_us = float(found.latency_us or 0.0)
    statistics = {**(result.statistics if isinstance(result.statistics, dict) else {}),
                  "source": QuerySource.CALIBRATED.value,
                  "shape_match_rule": "calibrated", **found.details}
    priced = dataclasses.replace(result, execution_time_s=latency_us * 1e-6,
                                 statistics=statistics)
    return priced, dataclasses.replace(entry, kind=Kind.CALIBRATED, latency_us=latency_us)
