"""What one process of a TensorCast run did with profstore, and the run's summary.

Each process (the parent and every worker) counts its lookups, their time, the answers by
source, the misses by reason and, per op that fell back to TensorCast's analytic model,
its calls and the analytic time of one call. It writes them once, when it exits, to
``<run_dir>/process-<pid>.json``; the parent reads them all back (``RunSummary.collect``).
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from profstore.tensorcast.ledger import ModelLedger


@dataclass
class Fallback:
    """One distinct op (its leaf descriptor) that TensorCast priced with its analytic model."""

    op: str
    leaf: dict[str, Any]
    reason: str
    label: str
    analytic_us: float
    calls: int = 0
    nearest_us: float | None = None
    """What the miss's nearest measured regime answers for one call (None: none answers)."""
    differs: dict[str, list[Any]] | None = None
    """The fields in which that regime differs: ``{field: [target, theirs]}``."""

    @property
    def time_us(self) -> float:
        return self.analytic_us * self.calls

    @property
    def nearest_time_us(self) -> float | None:
        return None if self.nearest_us is None else self.nearest_us * self.calls


@dataclass
class ProcessStats:
    """One process's counts (module docstring)."""

    pid: int
    data_sources: int = 0
    setup_seconds: float = 0.0
    lookups: int = 0
    lookup_seconds: float = 0.0
    lookup_collection_seconds: float = 0.0
    """The part of ``lookup_seconds`` the interpreter's garbage collections took
    (``collections_inside``)."""
    calls: int = 0
    sources: Counter[str] = field(default_factory=Counter)
    misses: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    """Misses by ``reason->label`` (the label: TensorCast's own code for the miss)."""
    fallbacks: dict[str, Fallback] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    equivalences: Counter[str] = field(default_factory=Counter)
    """Answers that used a stated regime equivalence, by op and substitution."""
    models: list[ModelLedger] = field(default_factory=list)
    """What each model of this process priced, op by op (``ledger``)."""

    def answered(self, source: str, seconds: float) -> None:
        self.lookups += 1
        self.lookup_seconds += seconds
        self.sources[source] += 1

    def missed(self, reason: str, label: str, seconds: float) -> None:
        self.lookups += 1
        self.lookup_seconds += seconds
        self.misses[reason] += 1
        self.labels[f"{reason}->{label}"] += 1

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in (
            "pid", "data_sources", "setup_seconds", "lookups", "lookup_seconds",
            "lookup_collection_seconds", "calls", "errors")}
        data.update(sources=dict(self.sources), misses=dict(self.misses), labels=dict(self.labels),
                    fallbacks=[asdict(f) for f in self.fallbacks.values()],
                    equivalences=dict(self.equivalences),
                    models=[model.to_json() for model in self.models])
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessStats:
        fallbacks = [Fallback(**f) for f in data.pop("fallbacks")]
        models = [ModelLedger.from_json(m) for m in data.pop("models", [])]
        stats = cls(**data, models=models)
        stats.sources, stats.misses = Counter(stats.sources), Counter(stats.misses)
        stats.labels, stats.equivalences = Counter(stats.labels), Counter(stats.equivalences)
        stats.fallbacks = {json.dumps(f.leaf, sort_keys=True): f for f in fallbacks}
        return stats


class Recorder:
    """This process's ``ProcessStats``, written to ``run_dir`` at exit (or by ``flush``)."""

    def __init__(self, run_dir: str | None) -> None:
        self.run_dir = run_dir
        self.stats = ProcessStats(os.getpid())
        self._lock = threading.Lock()
        if run_dir is not None:
            atexit.register(self.flush)
            _at_worker_exit(self.flush)

    def flush(self) -> None:
        """Write the statistics (again: each flush replaces the process's file)."""
        if self.run_dir is None or self.stats.pid != os.getpid():
            return
        if not Path(self.run_dir).is_dir():  # the run is over: its folder is gone
            return
        with self._lock:
            path = Path(self.run_dir) / f"process-{self.stats.pid}.json"
            staged = path.with_suffix(".tmp")
            staged.write_text(json.dumps(self.stats.to_json()), encoding="utf-8")
            staged.replace(path)


    def close(self) -> None:
        """Flush once more and write no more (the parent, before the folder goes)."""
        self.flush()
        self.run_dir = None


def _at_worker_exit(flush: Any) -> None:
    """Also at a multiprocessing worker's exit, which a forked child reaches through
    ``os._exit`` (no atexit handlers) after running multiprocessing's finalizers."""
    from multiprocessing import util

    util.Finalize(None, flush, exitpriority=10)


@dataclass
class RunSummary:
    """Every process's statistics added up."""

    processes: list[ProcessStats]

    @classmethod
    def collect(cls, run_dir: str | Path) -> RunSummary:
        found = []
        for path in sorted(Path(run_dir).glob("process-*.json")):
            found.append(ProcessStats.from_json(json.loads(path.read_text(encoding="utf-8"))))
        return cls(found)

    def total(self, name: str) -> Any:
        return sum(getattr(p, name) for p in self.processes)

    def counter(self, name: str) -> Counter[str]:
        total: Counter[str] = Counter()
        for process in self.processes:
            total.update(getattr(process, name))
        return total

    def labels(self) -> dict[str, dict[str, int]]:
        """Per profstore reason, its misses by TensorCast's label."""
        found: dict[str, dict[str, int]] = {}
        for key, count in self.counter("labels").items():
            reason, label = key.split("->", 1)
            found.setdefault(reason, {})[label] = count
        return found

    def fallbacks(self) -> list[Fallback]:
        """Distinct fallback ops over all processes, the most simulated time first."""
        merged: dict[str, Fallback] = {}
        for process in self.processes:
            for key, item in process.fallbacks.items():
                if key in merged:
                    merged[key].calls += item.calls
                else:  # a copy whose calls the sum may change; leaf and differs shared
                    merged[key] = replace(item)
        return sorted(merged.values(), key=lambda f: (-f.time_us, f.op))

    def models(self) -> list[ModelLedger]:
        """Every model of every process (``ledger``)."""
        return [model for process in self.processes for model in process.models]

    def errors(self) -> list[str]:
        return [e for p in self.processes for e in p.errors]
