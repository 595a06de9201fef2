"""Is the replay interval honest? Hide rows, replay, and see whether the truth falls inside.

Each trial hides a random share of a version's measured rows (``Store.lookup``'s
``exclude_samples``: the same lookups, those rows invisible), replays the workload,
and builds the interval from the hold-out error model of the full data. The truth is
the full-data replay. Both are summed over the variants the full data answers MEASURED
(an interpolated full-data answer is no truth) and the reduced data still answers (a
hidden row that was a variant's only support turns it into a miss, which no interval
covers); a trial counts as covered when the truth lies in the p10–p90 bounds, and
informs only when some of those variants were interpolated. A calibrated 80 %
interval covers about 80 % of trials.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from profstore.api import Store
from profstore.evaluation.holdout import known_profile
from profstore.evaluation.uncertainty import DRAWS, ErrorModel, interval, op_errors
from profstore.evaluation.workload import Workload, WorkloadRun, run_workload
from profstore.storage.samples import sample_ids as stored_sample_ids


@dataclass
class Trial:
    seed: int
    hidden_rows: int
    common_variants: int
    interpolated_variants: int
    truth_us: float
    total_us: float
    independent: tuple[float, float]
    correlated: tuple[float, float]
    inside_independent: bool
    inside_correlated: bool


@dataclass
class Calibration:
    workload: str
    version: str
    share: float
    trials: list[Trial] = field(default_factory=list)

    @property
    def informative(self) -> list[Trial]:
        """Trials where hiding rows left something interpolated (else nothing to test)."""
        return [t for t in self.trials if t.interpolated_variants]

    def coverage(self, bound: str) -> float | None:
        used = self.informative
        if not used:
            return None
        key = "inside_independent" if bound == "independent" else "inside_correlated"
        return sum(getattr(t, key) for t in used) / len(used)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["informative_trials"] = len(self.informative)
        data["coverage_independent"] = self.coverage("independent")
        data["coverage_correlated"] = self.coverage("correlated")
        return data


def sample_ids(store: Store, version: str) -> list[int]:
    profile = known_profile(store, version)
    with store.engine.connect() as conn:
        return stored_sample_ids(conn, profile.id)


def run_trial(store: Store, workload: Workload, full: WorkloadRun, model: ErrorModel,
              hidden: frozenset[int], seed: int, draws: int) -> Trial:
    run = run_workload(store, workload, full.version, exclude_samples=hidden)
    pairs = [(h, f) for h, f in zip(run.answers, full.answers)
             if h.outcome.latency_us is not None and f.outcome.source == "MEASURED"]
    errors = op_errors([h for h, _ in pairs], model)
    found = interval(errors, draws=draws, seed=seed)
    truth = sum(f.time_us for _, f in pairs)
    return Trial(seed, len(hidden), len(pairs),
                 sum(1 for h, _ in pairs if h.outcome.source == "INTERPOLATED"), truth,
                 found.total_us, (found.independent.p10, found.independent.p90),
                 (found.correlated.p10, found.correlated.p90),
                 found.contains(truth, "independent"), found.contains(truth, "correlated"))


def calibrate(store: Store, workload: Workload, version: str, *, share: float = 0.2,
              trials: int = 20, seed: int = 0, draws: int = DRAWS,
              model: ErrorModel | None = None) -> Calibration:
    """``trials`` hide-and-replay rounds, each hiding ``share`` of the version's rows."""
    if not 0 < share < 1:
        raise ValueError(f"share must be between 0 and 1 (exclusive), got {share}")
    if trials <= 0:
        raise ValueError(f"trials must be positive, got {trials}")
    model = model or ErrorModel(store, version)
    full = run_workload(store, workload, version)
    ids = np.array(sample_ids(store, version))
    rng = np.random.default_rng(seed)
    result = Calibration(full.report.workload, version, share)
    for n in range(trials):
        chosen = rng.choice(ids, size=max(int(round(share * len(ids))), 1), replace=False)
        result.trials.append(run_trial(store, workload, full, model,
                                       frozenset(int(i) for i in chosen), seed + n, draws))
    return result
