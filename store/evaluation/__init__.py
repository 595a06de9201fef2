"""Evaluation and reporting: workload replay, hold-out error, the minimal report, plots and
the benchmark (RFC §7.3, §8.3). Unit tests prove code paths; these measure coverage and
accuracy on a given database and workload."""

from profstore.evaluation.holdout import HoldoutReport, run_holdout
from profstore.evaluation.replay import ReplayReport, replay_workload

__all__ = ["HoldoutReport", "ReplayReport", "replay_workload", "run_holdout"]
