"""Evaluation and reporting: workload replay, hold-out error, the minimal report, plots and
the benchmark (RFC §7.3, §8.3). Unit tests prove code paths; these measure coverage and
accuracy on a given database and workload.

The names below are imported on first use (PEP 562): a TensorCast run imports
``fallback_prices`` for its summary, and importing the package must not import the
hold-out and replay machinery with it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from profstore.evaluation.holdout import HoldoutReport, run_holdout
    from profstore.evaluation.replay import ReplayReport, replay_workload

__all__ = ["HoldoutReport", "ReplayReport", "replay_workload", "run_holdout"]

_HOMES = {"HoldoutReport": "holdout", "run_holdout": "holdout",
          "ReplayReport": "replay", "replay_workload": "replay"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
