"""The data source and fallback model of one ``--draws`` search, and what they record.

``DrawnDataSource`` wraps the data source a TensorCast model asks: a profstore answer comes
back multiplied by its draw (``draws``); ``DrawnFallback`` wraps the analytic model that
prices a miss (multiplied by its fallback error, ``spec.FallbackErrors``). Per model
(one per parallel configuration) each process records every distinct op it priced: its
nominal latency, its calls, its multiplier and the variance of its multiplier; it writes
them to ``<run_dir>/draws-<pid>.json`` at exit, as ``run_stats`` does for its statistics.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from profstore.model.result import QueryResult
from profstore.tensorcast.draws import errors as draws
from profstore.tensorcast.draws.spec import DrawSpec
from profstore.tensorcast.ledger import config_of, op_class
from profstore.tensorcast.metered import MeteredDataSource
from profstore.tensorcast.stores import shared_store
from profstore.tensorcast.tensorcast_result import TensorCastResult


@dataclass
class OpRecord:
    """One distinct op of one model: ``source`` is profstore's (MEASURED, …) or
    ``ANALYTIC`` for a miss TensorCast's own model priced (its ``kernel`` is then its op
    class, ``ledger.op_class``)."""

    op: str
    kernel: str
    source: str
    level: str
    latency_us: float
    multiplier: float
    variance: float
    calls: int = 0


@dataclass
class ModelRecord:
    """The ops one model priced; ``config``: its parallel sizes (upstream's label keys)."""

    config: dict[str, int]
    ops: dict[str, OpRecord] = field(default_factory=dict)


class DrawnDataSource:
    """Answers like ``inner``, each profstore answer times its draw's multiplier."""

    def __init__(self, inner: Any, metered: MeteredDataSource, spec: DrawSpec,
                 dists: draws.Distributions, record: ModelRecord) -> None:
        self.inner, self.metered, self.spec = inner, metered, spec
        self.dists, self.record = dists, record
        self.missed_key: str | None = None

    def lookup(self, op_invoke_info: Any) -> TensorCastResult | None:
        answer = self.inner.lookup(op_invoke_info)
        key = str(op_invoke_info.cache_key)
        if answer is None:
            self.missed_key = key
            return None
        self.missed_key = None
        full = self.metered.inner.last_result or QueryResult(
            answer.latency_us, answer.source, answer.confidence, answer.reason,
            answer.all_details)
        ident = draws.identity(full)
        dist = self.dists.of(full, ident)
        factor = draws.multiplier(dist, self.spec, ident)
        self.record.ops[key] = OpRecord(
            _op_name(op_invoke_info), str(full.details.get("kernel_type", "")),
            answer.source.value if answer.source is not None else "?", dist.level or "none",
            float(answer.latency_us or 0.0), factor, dist.variance())
        if factor == 1.0:
            return answer
        return TensorCastResult(
            (answer.latency_us or 0.0) * factor, answer.source, answer.confidence,
            answer.reason, answer.details, answer.shape_match_info, answer.sub_kernel_shapes,
            answer.full_details)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class DrawnFallback:
    """TensorCast's analytic model; a miss's price times its fallback multiplier."""

    def __init__(self, inner: Any, source: DrawnDataSource) -> None:
        self.inner, self.source = inner, source

    def process_op(self, op_invoke_info: Any) -> Any:
        result = self.inner.process_op(op_invoke_info)
        key = str(op_invoke_info.cache_key)
        if self.source.missed_key != key:
            return result
        spec, name = self.source.spec, _op_name(op_invoke_info)
        kind = op_class(name, self.source.metered.inner.last_result)
        factor = draws.fallback_multiplier(spec, key, kind)
        level, variance = draws.fallback_error(spec.fallback, kind)
        self.source.record.ops[key] = OpRecord(
            name, kind, "ANALYTIC", level, result.execution_time_s * 1e6, factor, variance)
        if factor == 1.0:
            return result
        return dataclasses.replace(result, execution_time_s=result.execution_time_s * factor,
                                   statistics=dict(result.statistics))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def counting(process_op: Callable[[Any], Any], record: ModelRecord) -> Callable[[Any], Any]:
    """``process_op`` that also counts each call on its op's record."""

    def counted(op_invoke_info: Any) -> Any:
        result = process_op(op_invoke_info)
        found = record.ops.get(str(op_invoke_info.cache_key))
        if found is not None:
            found.calls += 1
        return result

    return counted


def _op_name(op_invoke_info: Any) -> str:
    return str(getattr(op_invoke_info, "func", "?")).removeprefix("torch.ops.")


class DrawRecorder:
    """This process's model records, written to ``run_dir`` at exit."""

    def __init__(self, run_dir: str | None) -> None:
        self.run_dir, self.pid = run_dir, os.getpid()
        self.models: list[ModelRecord] = []
        if run_dir is not None:
            from profstore.tensorcast.run_stats import _at_worker_exit

            atexit.register(self.flush)
            _at_worker_exit(self.flush)

    def flush(self) -> None:
        if self.run_dir is None or self.pid != os.getpid() or not Path(self.run_dir).is_dir():
            return
        path = Path(self.run_dir) / f"draws-{self.pid}.json"
        staged = path.with_suffix(".tmp")
        staged.write_text(json.dumps([asdict(m) for m in self.models]), encoding="utf-8")
        staged.replace(path)


_PROCESS: dict[tuple[int, str | None], tuple[DrawRecorder, draws.Distributions]] = {}
"""This process's recorder and error distributions, per run folder."""


@dataclass(frozen=True)
class DrawRun:
    """What a process's drawn models share: the draw, the database and version whose error
    distributions they read, and the run folder their records go to."""

    spec: DrawSpec
    db: str
    version: str
    run_dir: str | None


def attach(run: DrawRun, user_input: Any, source: Any, fallback: Any,
           metered: MeteredDataSource) -> tuple[DrawnDataSource, DrawnFallback, ModelRecord]:
    """The drawn data source and fallback of one model, and the record they fill."""
    state = _PROCESS.get((os.getpid(), run.run_dir))
    if state is None:
        dists = draws.Distributions(shared_store(run.db), run.version)
        state = _PROCESS[(os.getpid(), run.run_dir)] = (DrawRecorder(run.run_dir), dists)
    record = ModelRecord(config_of(user_input))
    state[0].models.append(record)
    drawn = DrawnDataSource(source, metered, run.spec, state[1], record)
    return drawn, DrawnFallback(fallback, drawn), record


def collect(run_dir: str) -> list[ModelRecord]:
    """Every process's model records (this process's written first); the parent calls it
    before the run folder goes."""
    own = _PROCESS.pop((os.getpid(), run_dir), None)
    if own is not None:
        own[0].flush()
        own[0].run_dir = None
    found = []
    for path in sorted(Path(run_dir).glob("draws-*.json")):
        for item in json.loads(path.read_text(encoding="utf-8")):
            ops = {k: OpRecord(**v) for k, v in item["ops"].items()}
            found.append(ModelRecord(item["config"], ops))
    return found
