"""Replay a TensorCast operator trace against one version of the store.

A trace (``../shared/workloads/*.json``) lists, per op, a total call ``count`` and its
distinct ``shape_variants`` (input/output shape strings and dtypes); it does not say how
the calls split between the variants. Each variant becomes one leaf descriptor (inputs →
``args`` in order, outputs → ``outputs``) and gets an equal share of the op's calls,
apportioned as whole calls (largest remainder, earlier variants first), so every
distribution adds up to the trace's call count. A dtype the trace leaves out (its dtype
list is shorter than its shape list) is filled with the trace's most common dtype and
counted. The modelled latency is the count-weighted sum of the answers; a miss adds
nothing and is counted with its reason; ops the mapping does not know are listed.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from profstore.api import Store
from profstore.evaluation.fallback_prices import PricedMiss, prices
from profstore.lookup.regime_policy import RegimePolicy
from profstore.model.leaf import LeafOp
from profstore.model.leaf_context import LeafContext
from profstore.model.result import QueryResult, Reason
from profstore.model.shapes import parse_shape_text
from profstore.model.tensor_spec import TensorSpec

SOURCES = ("MEASURED", "INTERPOLATED", "PARTIAL", "miss")
ZERO_METHODS = ("zero_cost", "accepted_miss")
"""MEASURED answers of 0 that come from the mapping's accounting, not from a CSV row."""
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class Variant:
    """One shape variant of a trace op, as a leaf (or why it could not become one)."""

    op: str
    index: int
    calls: int
    leaf: LeafOp | None
    error: str | None = None
    filled_dtypes: int = 0


@dataclass
class VariantOutcome:
    op: str
    index: int
    calls: int
    shapes: str
    latency_us: float | None
    source: str
    reason: str | None
    method: str | None
    path: str | None
    kernel: str | None
    interpolation_dim: int | None
    axes: list[str]
    filled_dtypes: int
    error: str | None = None
    nearest_latency_us: float | None = None
    """A miss's nearest measured regime's answer (lookup/nearest_regime.py), if one answers."""
    nearest_differs: dict[str, list[Any]] | None = None


@dataclass
class OpRow:
    op: str
    calls: int
    unique_shapes: int
    latency_us: float
    source: str
    sources: dict[str, int]
    reasons: dict[str, int]


@dataclass
class ReplayReport:
    """Everything a replay measured; ``to_dict`` is its JSON form."""

    workload: str
    trace: str
    version: str
    options: dict[str, Any]
    total_latency_us: float
    calls: int
    unique_shapes: int
    trace_total_ops: int | None
    ops: list[OpRow]
    source_by_calls: dict[str, int]
    source_by_shapes: dict[str, int]
    latency_by_source: dict[str, float]
    miss_reasons_by_calls: dict[str, int]
    miss_reasons_by_shapes: dict[str, int]
    methods_by_calls: dict[str, int]
    zero_cost_calls: int
    interpolation: list[dict[str, Any]]
    unmapped_ops: list[dict[str, Any]]
    filled_dtypes: dict[str, Any]
    variants: list[VariantOutcome] = field(default_factory=list)
    fallback_prices: list[dict[str, Any]] = field(default_factory=list)
    """Per missed op: calls, the trace's own time for them (0 without one: a miss adds
    nothing) and the time their nearest measured regimes would give, the largest
    difference first (``profstore.evaluation.fallback_prices``)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_trace(path_or_dict: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The trace document and a label for it (the file path, or ``<dict>``)."""
    if isinstance(path_or_dict, Mapping):
        return dict(path_or_dict), "<dict>"
    path = Path(path_or_dict)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the trace: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("ops"), list):
        raise ValueError(f"{path}: not a TensorCast trace (no 'ops' list)")
    return data, str(path)


def apportion(count: int, parts: int) -> list[int]:
    """``count`` whole calls split as evenly as possible over ``parts`` (earlier get more)."""
    if parts <= 0:
        return []
    base, extra = divmod(max(int(count), 0), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def dominant_dtype(trace: Mapping[str, Any]) -> str:
    """The dtype named most often in the trace (ties: alphabetical); float16 if none."""
    seen: Counter[str] = Counter()
    for op in trace["ops"]:
        for variant in op.get("shape_variants") or []:
            seen.update(variant.get("input_dtypes") or [])
            seen.update(variant.get("output_dtypes") or [])
    if not seen:
        return "float16"
    return min(seen, key=lambda d: (-seen[d], d))


def _tensors(shapes: Iterable[str], dtypes: list[str], fill: str) -> tuple[list[TensorSpec], int]:
    tensors, filled = [], 0
    for i, text in enumerate(shapes):
        dtype = dtypes[i] if i < len(dtypes) and dtypes[i] else None
        if dtype is None:
            filled += 1
        tensors.append(TensorSpec(parse_shape_text(text), dtype or fill))
    return tensors, filled


def trace_variants(trace: Mapping[str, Any], context: LeafContext,
                   fill_dtype: str) -> list[Variant]:
    """Every shape variant of every op as a leaf, with its share of the op's calls."""
    variants = []
    for op in trace["ops"]:
        name = str(op.get("op_name"))
        shapes = op.get("shape_variants") or []
        for index, (variant, calls) in enumerate(zip(shapes, apportion(op.get("count", 0),
                                                                       len(shapes)))):
            try:
                args, filled_in = _tensors(variant.get("input_shapes") or [],
                                           list(variant.get("input_dtypes") or []), fill_dtype)
                outs, filled_out = _tensors(variant.get("output_shapes") or [],
                                            list(variant.get("output_dtypes") or []), fill_dtype)
                leaf = LeafOp(op=name, args=tuple(args), outputs=tuple(outs), context=context)
            except ValueError as exc:
                variants.append(Variant(name, index, calls, None, str(exc)))
                continue
            variants.append(Variant(name, index, calls, leaf, None, filled_in + filled_out))
    return variants


def trace_context(trace: Mapping[str, Any], num_devices: int | None,
                  ep_size: int | None) -> LeafContext:
    scenario = str(trace.get("scenario") or "").strip().lower()
    phase = scenario if scenario in ("prefill", "decode", "mixed") else None
    return LeafContext(phase=phase, num_devices=num_devices, ep_size=ep_size)


def _outcome(variant: Variant, result: QueryResult | None) -> VariantOutcome:
    leaf = variant.leaf
    shapes = "" if leaf is None else (
        ";".join(str(list(t.shape)) for t in leaf.tensor_inputs()) + " -> "
        + ";".join(str(list(t.shape)) for t in leaf.outputs))
    if result is None:
        return VariantOutcome(variant.op, variant.index, variant.calls, shapes, None, "miss",
                              Reason.INVALID_DESCRIPTOR.value, None, None, None, None, [],
                              variant.filled_dtypes, variant.error)
    details = result.details
    near: dict[str, Any] = next((n for n in details.get("nearest_regimes") or []
                                 if n.get("latency_us") is not None), {})
    return VariantOutcome(
        variant.op, variant.index, variant.calls, shapes, result.latency_us,
        result.source.value if result.source is not None else "miss",
        result.reason.value if result.reason is not None else None,
        details.get("method"), details.get("path"), details.get("kernel_type"),
        details.get("interpolation_dim"), _used_axes(details), variant.filled_dtypes,
        nearest_latency_us=near.get("latency_us"), nearest_differs=near.get("differs"))


def _used_axes(details: Mapping[str, Any]) -> list[str]:
    """The axis group that answered (the last entry of the interpolation path)."""
    tried = details.get("interpolation_path") or []
    return list(tried[-1].get("axes") or []) if tried else []


def replay_workload(store: Store, path_or_dict: str | Path | Mapping[str, Any], version: str,
                    *, interpolation: bool = True, num_devices: int | None = None,
                    ep_size: int | None = None, fill_dtype: str | None = None,
                    progress: ProgressFn | None = None,
                    regime_policy: RegimePolicy | None = None) -> ReplayReport:
    """Look up every shape variant of a trace and aggregate, count-weighted
    (``regime_policy``: stated regime equivalences, store/lookup/regime_policy.py)."""
    trace, label = load_trace(path_or_dict)
    fill = fill_dtype or dominant_dtype(trace)
    variants = trace_variants(trace, trace_context(trace, num_devices, ep_size), fill)
    outcomes = []
    for done, variant in enumerate(variants, start=1):
        result = None if variant.leaf is None else store.lookup(
            variant.leaf, version, interpolation, regime_policy=regime_policy)
        outcomes.append(_outcome(variant, result))
        if progress is not None:
            progress(done, len(variants))
    options = {"interpolation": interpolation, "num_devices": num_devices, "ep_size": ep_size,
               "phase": trace_context(trace, None, None).phase, "fill_dtype": fill}
    return summarise(outcomes, trace, label, version, options)


def _label(trace: Mapping[str, Any], label: str) -> str:
    parts = [str(trace[k]) for k in ("model", "scenario") if trace.get(k)]
    return " ".join(parts) if parts else Path(label).stem


def summarise(outcomes: list[VariantOutcome], trace: Mapping[str, Any], label: str,
              version: str, options: dict[str, Any]) -> ReplayReport:
    by_calls, by_shapes = Counter({s: 0 for s in SOURCES}), Counter({s: 0 for s in SOURCES})
    latency: defaultdict[str, float] = defaultdict(float, {s: 0.0 for s in SOURCES})
    reasons_calls: Counter[str] = Counter()
    reasons_shapes: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    for o in outcomes:
        by_calls[o.source] += o.calls
        by_shapes[o.source] += 1
        latency[o.source] += (o.latency_us or 0.0) * o.calls
        if o.reason is not None and o.source == "miss":
            reasons_calls[o.reason] += o.calls
            reasons_shapes[o.reason] += 1
        methods[o.method or f"miss:{o.reason}"] += o.calls
    ops = _op_rows(outcomes)
    filled = [o for o in outcomes if o.filled_dtypes]
    return ReplayReport(
        workload=_label(trace, label), trace=label, version=version, options=options,
        total_latency_us=sum(r.latency_us for r in ops),
        calls=sum(o.calls for o in outcomes), unique_shapes=len(outcomes),
        trace_total_ops=trace.get("total_ops"), ops=ops,
        source_by_calls=dict(by_calls), source_by_shapes=dict(by_shapes),
        latency_by_source=dict(latency),
        miss_reasons_by_calls=_sorted(reasons_calls),
        miss_reasons_by_shapes=_sorted(reasons_shapes),
        methods_by_calls=_sorted(methods), interpolation=_interpolation_use(outcomes),
        zero_cost_calls=sum(methods[m] for m in ZERO_METHODS),
        unmapped_ops=[{"op": r.op, "calls": r.calls, "unique_shapes": r.unique_shapes}
                      for r in ops if r.reasons.get(Reason.UNMAPPED.value)],
        filled_dtypes={"dtype": options["fill_dtype"], "tensors": sum(o.filled_dtypes
                                                                      for o in filled),
                       "variants": len(filled), "calls": sum(o.calls for o in filled)},
        variants=outcomes, fallback_prices=missed_prices(outcomes, trace))


def missed_prices(outcomes: list[VariantOutcome], trace: Mapping[str, Any]
                  ) -> list[dict[str, Any]]:
    """``ReplayReport.fallback_prices``: the misses priced at the trace's own per-call
    figure (``total_duration_us / count``; 0 without one) against their nearest regimes."""
    per_call = {str(op.get("op_name")): float(op["total_duration_us"]) / op["count"]
                for op in trace.get("ops") or []
                if op.get("count") and isinstance(op.get("total_duration_us"), (int, float))}
    return [p.to_json() for p in prices(
        PricedMiss(o.op, o.calls, per_call.get(o.op, 0.0), o.nearest_latency_us,
                   o.nearest_differs) for o in outcomes if o.source == "miss")]


def _sorted(counter: Counter) -> dict[str, int]:
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _op_rows(outcomes: list[VariantOutcome]) -> list[OpRow]:
    grouped: dict[str, list[VariantOutcome]] = {}
    for o in outcomes:
        grouped.setdefault(o.op, []).append(o)
    rows = []
    for op, items in grouped.items():
        sources: Counter[str] = Counter()
        reasons: Counter[str] = Counter()
        for o in items:
            sources[o.source] += o.calls
            if o.reason is not None and o.source == "miss":
                reasons[o.reason] += o.calls
        kinds = sorted({o.source for o in items})
        rows.append(OpRow(op, sum(o.calls for o in items), len(items),
                          sum((o.latency_us or 0.0) * o.calls for o in items),
                          kinds[0] if len(kinds) == 1 else "mixed",
                          _sorted(sources), _sorted(reasons)))
    return sorted(rows, key=lambda r: (-r.latency_us, -r.calls, r.op))


def _interpolation_use(outcomes: list[VariantOutcome]) -> list[dict[str, Any]]:
    """Which path, kernel, axes and dimension the INTERPOLATED answers used."""
    used: dict[tuple, list[int]] = {}
    for o in outcomes:
        if o.source != "INTERPOLATED":
            continue
        key = (o.path or "communication", o.kernel or "", o.method, o.interpolation_dim,
               tuple(o.axes))
        used.setdefault(key, [0, 0])
        used[key][0] += o.calls
        used[key][1] += 1
    return [{"path": k[0], "kernel": k[1], "method": k[2], "interpolation_dim": k[3],
             "axes": list(k[4]), "calls": v[0], "unique_shapes": v[1]}
            for k, v in sorted(used.items(), key=lambda kv: (-kv[1][0], str(kv[0])))]
