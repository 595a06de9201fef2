"""A workload as the insight verbs read it: a TensorCast trace or JSON lines of leaves.

``replay.replay_workload`` answers "what did the store say"; the gap plan, the version diff
and the replay interval also need each variant's leaf, its full ``QueryResult`` (the
target regime and axes of a miss) and the trace's own figure for the op. ``run_workload``
keeps all three and still builds the replay report with ``replay.summarise``, so its
totals and counts are the replay verb's.

A JSON-lines workload has one leaf descriptor per line (the ``lookup`` verb's input),
optionally with ``"calls"`` (default 1) and ``"id"``; blank lines are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from profstore.api import Store
from profstore.evaluation.replay import (
    ReplayReport,
    Variant,
    VariantOutcome,
    _outcome,
    dominant_dtype,
    summarise,
    trace_context,
    trace_variants,
)
from profstore.model.leaf import LeafOp
from profstore.model.result import QueryResult


@dataclass(frozen=True)
class Workload:
    """The variants to look up, the trace document (empty for JSON lines) and a label."""

    label: str
    trace: Mapping[str, Any]
    variants: list[Variant]
    trace_us: Mapping[str, float]
    """Per op, the trace's ``total_duration_us / count``: TensorCast's own per-call figure."""


@dataclass
class Answer:
    variant: Variant
    result: QueryResult | None
    outcome: VariantOutcome

    @property
    def time_us(self) -> float:
        return (self.outcome.latency_us or 0.0) * self.variant.calls


@dataclass
class WorkloadRun:
    workload: Workload
    version: str
    report: ReplayReport
    answers: list[Answer]


def load_workload(path: str | Path | Mapping[str, Any], *, num_devices: int | None = None,
                  ep_size: int | None = None) -> Workload:
    """Read a trace (a JSON object with an ``ops`` list) or a JSON-lines file of leaves;
    anything else is a ``ValueError`` naming the file."""
    if isinstance(path, Mapping):
        return _from_trace(dict(path), "<dict>", num_devices, ep_size)
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the workload: {exc}") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
    if isinstance(document, dict) and isinstance(document.get("ops"), list):
        return _from_trace(document, str(path), num_devices, ep_size)
    return _from_lines(text, path, num_devices, ep_size)


def _from_trace(trace: dict[str, Any], label: str, num_devices: int | None,
                ep_size: int | None) -> Workload:
    variants = trace_variants(trace, trace_context(trace, num_devices, ep_size),
                              dominant_dtype(trace))
    per_call = {}
    for op in trace["ops"]:
        count, total = op.get("count") or 0, op.get("total_duration_us")
        if count and isinstance(total, (int, float)):
            per_call[str(op.get("op_name"))] = float(total) / count
    return Workload(label, trace, variants, per_call)


def _from_lines(text: str, path: Path, num_devices: int | None,
                ep_size: int | None) -> Workload:
    variants: list[Variant] = []
    problem = (f"{path}: not a workload: neither a TensorCast trace (a JSON object with an "
               "'ops' list) nor JSON lines of leaf descriptors")
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{problem} (line {line_no} is not JSON)") from None
        if not isinstance(data, dict) or "op" not in data:
            raise ValueError(f"{problem} (line {line_no} has no 'op')")
        variants.append(_leaf_variant(data, line_no, path, num_devices, ep_size))
    if not variants:
        raise ValueError(f"{problem} (no leaves)")
    return Workload(path.stem, {}, variants, {})


def _leaf_variant(data: dict[str, Any], line_no: int, path: Path, num_devices: int | None,
                  ep_size: int | None) -> Variant:
    body = {k: v for k, v in data.items() if k not in ("id", "calls")}
    calls = data.get("calls", 1)
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
        raise ValueError(f"{path}: line {line_no}: calls must be a whole number >= 0")
    try:
        leaf = LeafOp.from_json(body)
    except ValueError as exc:
        return Variant(str(data["op"]), line_no, calls, None, str(exc))
    changes: dict[str, Any] = {name: value for name, value in (("num_devices", num_devices),
                                                               ("ep_size", ep_size))
                               if value is not None and getattr(leaf.context, name) is None}
    if changes:
        leaf = replace(leaf, context=replace(leaf.context, **changes))
    return Variant(leaf.op, line_no, calls, leaf)


def run_workload(store: Store, workload: Workload, version: str, *,
                 interpolation: bool = True, exclude_samples: Iterable[int] = ()) -> WorkloadRun:
    """Look up every variant (optionally with measured rows hidden) and summarise."""
    if store.profile(version) is None:
        raise ValueError(f"unknown version {version!r}; ingested: "
                         f"{', '.join(store.versions()) or 'none'}")
    hidden = frozenset(exclude_samples)
    answers = []
    for variant in workload.variants:
        result = None if variant.leaf is None else store.lookup(
            variant.leaf, version, interpolation, hidden)
        answers.append(Answer(variant, result, _outcome(variant, result)))
    options: dict[str, Any] = {
        "interpolation": interpolation, "hidden_samples": len(hidden),
        "fill_dtype": dominant_dtype(workload.trace) if workload.trace else None}
    report = summarise([a.outcome for a in answers], workload.trace, workload.label, version,
                       options)
    return WorkloadRun(workload, version, report, answers)
