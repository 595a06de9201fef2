"""Request/sequence semantics shared by the sparse-attention paths (RFC §4.3; DESIGN §7).

LightningIndexer and SparseFlashAttention rows that share tokens, cache and topk can
still describe different batches. Both paths therefore read, on the row side and on
the target side, the same three things and build their regime from them here:

- the query in token-flattened form: ``[T, H, D]`` as given, ``[B, S, H, D]`` as
  ``[B·S, H, D]`` (the kernels run the TND layout);
- the request grouping: number of requests and phase (prefill / decode / mixed);
- the per-request KV lengths, when known, as the semantic discriminator that keeps
  rows of one coordinate apart (not a regime field, so a leaf without them still has a
  regime; rows that differ in them never merge into one median, and their coordinate
  is ambiguous unless the leaf's lengths pick one row).

Phase from lengths: every query length 1 → decode, else every query length equal to
its KV length → prefill, else mixed. It checks a row's ``Runtime phase`` and derives a
leaf's phase when the context gives per-request lengths but no phase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from profstore.model.dtypes import to_profiler_dtype
from profstore.model.leaf import LeafOp, TensorSpec
from profstore.model.leaf_context import LeafContext
from profstore.model.profile_row import CsvRow, Slot
from profstore.model.result import Reason
from profstore.model.shapes import Shape
from profstore.paths.base import Extraction, Refusal, RowContext, TargetContext, refuse, unwrap

PHASES = ("prefill", "decode", "mixed")
COMPLETE = "complete"
API_PATH_COLUMNS = ("Runtime api_path", "API Path")
"""CSV columns read as an API path; the v0.18 corpus has none (``Runtime source_profile``
names a profiling run, not an API)."""
ROW_COUNT_COLUMNS = ("Runtime batch_size", "Runtime actual_seq_lengths_shape",
                     "Runtime actual_seq_lengths_kv_shape")
_NO_SUBCATEGORIES: frozenset[str] = frozenset()
QUERY_VALUES = "Runtime actual_seq_lengths_values"
KV_VALUES = "Runtime actual_seq_lengths_kv_values"


@dataclass(frozen=True)
class Query:
    """A query tensor in token-flattened form."""

    tokens: int
    heads: int
    head_dim: int
    rank: int = 3


def flatten_query(shape: Shape | None, where: str) -> Query | Refusal:
    """``[T, H, D]`` → T tokens; ``[B, S, H, D]`` → B·S tokens; any other rank refused."""
    if shape is None or len(shape) not in (3, 4):
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"{where} must be [T, H, D] or [B, S, H, D], got {shape}")
    tokens = shape[0] if len(shape) == 3 else shape[0] * shape[1]
    return Query(tokens, shape[-2], shape[-1])


def query_fields(query: Query) -> dict[str, int]:
    return {"query_rank": query.rank, "heads": query.heads, "head_dim": query.head_dim}


def last_dim(shape: Shape | None, where: str) -> int | Refusal:
    """The selected topk: the last dimension of an output or an index tensor."""
    if not shape:
        return refuse(Reason.TARGET_UNAVAILABLE, f"{where} is missing: topk is its last dimension")
    return shape[-1]


def with_api_path(extraction: Extraction, api_path: str | None) -> Extraction:
    if api_path is None:
        return extraction
    regime = {**extraction.regime, "api_path": api_path}
    return Extraction(regime, extraction.axes, extraction.semantic)


def target_api_path(ctx: TargetContext) -> str | None:
    value = ctx.entry.raw.get("api_path")
    return str(value) if value else None


def phase_from_lengths(query_lens: Sequence[int], kv_lens: Sequence[int]) -> str:
    if all(q == 1 for q in query_lens):
        return "decode"
    if all(q == kv for q, kv in zip(query_lens, kv_lens)):
        return "prefill"
    return "mixed"


@dataclass(frozen=True)
class Grouping:
    """Request/sequence grouping: a regime field plus the KV-length discriminator."""

    num_requests: int
    phase: str
    kv_lens: tuple[int, ...] | None = None

    @property
    def key(self) -> str:
        return f"requests={self.num_requests},phase={self.phase}"

    @property
    def semantic(self) -> str | None:
        if self.kv_lens is None:
            return None
        return "kv_lens=" + ",".join(str(n) for n in self.kv_lens)


# --- row side -----------------------------------------------------------------------------


def row_grouping(row: CsvRow, request_slots: Sequence[int]) -> Grouping | Refusal:
    """Grouping of a CSV row: request count from the per-request metadata slots (checked
    against the Runtime count columns), phase from ``Runtime phase`` (checked against
    the per-request lengths), KV lengths from ``Runtime actual_seq_lengths_kv_values``."""
    completeness = row.extra("Runtime metadata_completeness")
    if completeness is not None and completeness != COMPLETE:
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      f"Runtime metadata_completeness is {completeness!r}, not {COMPLETE!r}",
                      metadata_completeness=completeness)
    count = unwrap(_row_request_count(row, request_slots))
    phase = row.extra("Runtime phase")
    if not phase:
        return refuse(Reason.REQUIRED_FIELD_MISSING, "row has no Runtime phase")
    if phase not in PHASES:
        return refuse(Reason.TARGET_UNAVAILABLE, f"Runtime phase {phase!r} is not one of {PHASES}")
    lengths = unwrap(_row_lengths(row, count))
    query_lens, kv_lens = lengths
    if query_lens is not None and kv_lens is not None:
        derived = phase_from_lengths(query_lens, kv_lens)
        if derived != phase:
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"Runtime phase {phase!r} contradicts the per-request lengths "
                          f"({derived})")
    return Grouping(count, phase, kv_lens)


def _row_request_count(row: CsvRow, request_slots: Sequence[int]) -> int | Refusal:
    counts: dict[str, int] = {}
    for slot in request_slots:
        shape = row.inputs[slot].shape if slot < len(row.inputs) else None
        if not shape:
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          f"input {slot} (per-request metadata) is missing or a scalar")
        counts[f"input {slot}"] = shape[0]
    for column in ROW_COUNT_COLUMNS:
        text = row.extra(column)
        if text:
            number = _ints(text.split(",")[:1])
            if number is None:
                return refuse(Reason.TARGET_UNAVAILABLE, f"{column} {text!r} is not a count")
            counts[column] = number[0]
    return _one_count(counts, Reason.TARGET_UNAVAILABLE)


def _row_lengths(row: CsvRow, count: int
                 ) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None] | Refusal:
    """Per-request query and KV lengths. The TND layout stores query lengths as
    cumulative offsets; they are turned back into per-request lengths."""
    parsed = []
    for column in (QUERY_VALUES, KV_VALUES):
        text = row.extra(column)
        values = _ints(text.split(",")) if text else None
        if text and (values is None or len(values) != count):
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"{column} {text[:40]!r} is not {count} lengths")
        parsed.append(values)
    query, kv = parsed
    if query is not None and row.extra("Runtime input_layout") in (None, "TND"):
        steps = [b - a for a, b in zip((0, *query), query)]
        if min(steps) < 0:
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"{QUERY_VALUES} is not a cumulative TND offset list")
        query = tuple(steps)
    return query, kv


def row_api_paths(row: CsvRow, ctx: RowContext, modes: frozenset[str]
                  ) -> list[str | None] | Refusal:
    """The API paths a row serves. No path stated by the mapping entries that route to the
    calling path (a ``query_mode`` path serving ``modes``) → ``[None]`` (no API-path
    field). Otherwise each stated path the row's own API path column agrees with (a CSV
    without that column agrees with every stated one).

    An entry routes to such a path exactly when its dispatch selector is one of ``modes``,
    and ``MappingEntry.selector_among`` decides that from ``modes`` alone: a served query
    mode outranks every compute subcategory (RFC §3.1), and no two paths declare the same
    selector, so the registry's whole vocabulary gives the same answer (checked on every
    shipped mapping by tests/paths/test_request_grouping.py) without this module
    depending on the registry, which imports every path."""
    stated = sorted({str(e.raw["api_path"]) for e in ctx.entries
                     if e.selector_among(modes, _NO_SUBCATEGORIES) in modes
                     and e.raw.get("api_path")})
    if not stated:
        return [None]
    own = next((row.extra(c) for c in API_PATH_COLUMNS if row.extra(c)), None)
    if own is None:
        return list(stated)
    if own in stated:
        return [own]
    return refuse(Reason.REGIME_MISMATCH,
                  f"CSV API path {own!r} differs from the mapping's {', '.join(stated)}",
                  api_path=own)


def check_runtime_topk(row: CsvRow, topk: int) -> Refusal | None:
    """A row's ``Runtime topk``, when given, must equal the topk its shapes say."""
    text = row.extra("Runtime topk")
    if text and text != str(topk):
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"Runtime topk {text!r} contradicts the shapes' topk {topk}")
    return None


def slot_fields(slots: Sequence[Slot]) -> dict[str, Any]:
    """Profiler dtype and format of the query (first) and cache (second) slot."""
    query, cache = slots
    return {"activation_dtype": query.dtype, "cache_dtype": cache.dtype,
            "formats": f"{query.format};{cache.format}"}


# --- target side --------------------------------------------------------------------------


def target_grouping(context: LeafContext, arg_counts: Mapping[str, int]) -> Grouping | Refusal:
    """Grouping of a leaf: request count from the sequence-argument shapes (``arg_counts``)
    and the context; phase from ``context.phase`` or derived from per-request lengths."""
    counts = dict(arg_counts)
    if context.num_requests is not None:
        counts["context.num_requests"] = context.num_requests
    for name in ("query_lens", "kv_lens"):
        lengths = getattr(context, name)
        if lengths is not None:
            counts[f"len(context.{name})"] = len(lengths)
    if not counts:
        return refuse(Reason.UPSTREAM_LEAF_SEMANTICS_MISSING,
                      "the leaf does not say how many requests it serves "
                      "(context.num_requests or per-request sequence arguments)",
                      missing="num_requests")
    count = unwrap(_one_count(counts, Reason.TARGET_UNAVAILABLE))
    phase = unwrap(_target_phase(context))
    return Grouping(count, phase, context.kv_lens)


def _target_phase(context: LeafContext) -> str | Refusal:
    derived = None
    if context.query_lens is not None and context.kv_lens is not None:
        derived = phase_from_lengths(context.query_lens, context.kv_lens)
    if context.phase is not None and derived is not None and context.phase != derived:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"context.phase {context.phase!r} contradicts the per-request lengths "
                      f"({derived})", phase=context.phase, derived_phase=derived)
    phase = context.phase or derived
    if phase is None:
        return refuse(Reason.UPSTREAM_LEAF_SEMANTICS_MISSING,
                      "the leaf does not give its phase (context.phase, or context.query_lens "
                      "with context.kv_lens)", missing="phase")
    return phase


def leaf_slots(leaf: LeafOp, positions: Sequence[tuple[int, str]]) -> list[Slot] | Refusal:
    """Leaf tensor arguments in the row vocabulary: shape, profiler dtype (Phase 1 rule:
    float16 reads as DT_BF16), format."""
    slots = []
    for index, name in positions:
        value = leaf.arg(index)
        if not isinstance(value, TensorSpec):
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"argument {index} ({name}) must be a tensor, got {value!r}")
        try:
            slots.append(Slot(value.shape, to_profiler_dtype(value.dtype), value.format or "ND"))
        except ValueError as error:
            return refuse(Reason.TARGET_UNAVAILABLE, f"{name}: {error}")
    return slots


def describe_attention(extraction: Extraction) -> dict[str, Any]:
    """Success-detail fields of both paths: the API path and the KV-length semantic."""
    return {"api_path": extraction.regime.get("api_path"), "semantic": extraction.semantic}


def arg_request_counts(leaf: LeafOp, positions: Mapping[int, str]) -> dict[str, int]:
    """First dimensions of the per-request sequence arguments that are tensors."""
    counts = {}
    for index, name in positions.items():
        value = leaf.arg(index)
        if isinstance(value, TensorSpec) and value.shape:
            counts[name] = value.shape[0]
    return counts


# --- shared -------------------------------------------------------------------------------


def _one_count(counts: Mapping[str, int], reason: Reason) -> int | Refusal:
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{k}={v}" for k, v in counts.items())
        return refuse(reason, f"request counts disagree: {listed}", counts=dict(counts))
    return next(iter(counts.values()))


def _ints(parts: Sequence[str]) -> tuple[int, ...] | None:
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        return None
    return values if all(v >= 0 for v in values) else None
