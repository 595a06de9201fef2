"""Phase 1 attention (``attention_special``): FusedInferAttentionScore on (seq, batch).

Axes: ``seq`` — the mean per-request KV length (``√seq`` for geometry when the
kernel's ``interpolation_policy`` says ``axis_transform: sqrt_seq``) — and ``batch``,
the number of requests. Groups are seq-anchored only: ``seq``, then ``seq + batch``;
``max_interpolation_dim`` caps them like any other path.

Regime: query and cache dtypes, heads, head dimension, KV heads, sparse mode, input
layout (``BNSD_NBSD`` is read as its input half ``BNSD``), the width of a separate
rope input (0 when there is none), the quant mode, and the query kind. The quant mode
is the row's ``Runtime quant_mode`` cell and the target's mapping-entry ``quant_mode``
(else a ``quant_mode`` kwarg); a blank cell or no statement is "none". Rows of
different quant modes are different kernels' work (RFC §2.2 "never interpolate across
incompatible discrete regimes"), so a W8A8 target never meets an unquantised row, and
a row without the column is unquantised. The query kind is not in the
DESIGN's list but is required: decode rows (one query token per request) and prefill
rows (query tokens = KV tokens) of one shape family share (seq, batch) and differ
several-fold in latency. Anything else is ``mixed`` and keeps its query-token count
in the regime, so it matches only identical calls.

Exact ownership: the path owns exact matching (``owns_exact``). The base input-signature
lookup cannot serve this kernel: a TensorCast leaf passes the query as
``(tokens, hidden)`` and the cache as ``(blocks, block_size, kv_heads, head_dim)``,
while the 31-slot kernel rows hold ``(T, N, D)`` / ``(B, N, S, D)`` queries and
``(blocks, block_size, kv_heads·head_dim)`` caches, so the two never meet; and where a
leaf happened to be written in kernel layout, every row of one shape family — all the
sequence lengths — shares one signature, so the base lookup would merge different
sequence lengths into one median. The exact answer is the measured (seq, batch)
coordinate of the regime instead (MEASURED, ``method=exact_coordinate``).

Row side: ``Runtime …`` columns (v0.18) where present, else the shapes (v0.13/v0.15,
which carry only ``avg_seq_len``): heads and head dim from the query, KV heads from the
cache (paged ``(blocks, block_size, kv_heads·head_dim)`` when a block table is present,
contiguous ``(T, kv_heads, head_dim)`` otherwise, ``(blocks, kv_heads, block_size, D)``
in BNSD), sparse mode 3 when the compressed causal mask slot is filled and 0 otherwise.
Rows whose sequence length was not recorded (``avg_seq_len`` -1 or blank) or whose
``Runtime metadata_completeness`` is not ``runtime_values`` are refused.

Target side (DESIGN §8): ``attention(q, key, value, mask, block_table,
query_start_loc, seq_lens, query_lens)``; seq is the mean of ``seq_lens`` values and
batch their count — a ``seq_lens`` without values is a REQUIRED_FIELD_MISSING miss.
The leaf states no sparse mode; the vLLM-Ascend calling convention supplies it (TND:
3, the compressed causal mask; BNSD: 0 for decode, 3 otherwise), which every v0.18
row that records its sparse mode follows. Both sides round seq to the six decimals the
profiler prints, so a fractional mean meets its row at the exact coordinate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from profstore.model.csv_row import CsvRow, Slot
from profstore.model.dtypes import to_profiler_dtype
from profstore.model.leaf import LeafOp
from profstore.model.mapping import KernelPolicy
from profstore.model.result import Reason
from profstore.model.tensor_spec import TensorSpec
from profstore.paths.base import (
    AxisTransform,
    Extraction,
    OperatorPath,
    Refusal,
    RowContext,
    TargetContext,
    refuse,
    unwrap,
)

KERNEL = "FusedInferAttentionScore"
SEQ_DECIMALS = 6
# kernel input slots (aclnnFusedInferAttentionScore argument order)
Q_SLOT, KEY_SLOT, MASK_SLOT, BLOCK_TABLE_SLOT, Q_ROPE_SLOT = 0, 1, 4, 14, 24
# TensorCast attention argument positions (DESIGN §8)
Q_ARG, KEY_ARG, SEQ_LENS_ARG = 0, 1, 6
RUNTIME = "Runtime "
COMPLETE_METADATA = "runtime_values"
RANK_LAYOUT = {3: "TND", 4: "BNSD"}


@dataclass(frozen=True)
class AttentionFacts:
    """The normalised fields both sides read; the regime and axes are built from these."""

    activation_dtype: str
    cache_dtype: str
    heads: int
    head_dim: int
    kv_heads: int
    sparse_mode: int
    layout: str
    rope_dim: int
    query_tokens: int
    batch: int
    seq: float
    quant_mode: str | None = None


def query_kind(query_tokens: int, batch: int, seq: float) -> str:
    if query_tokens == batch:
        return "decode"
    if math.isclose(query_tokens, batch * seq):
        return "prefill"
    return "mixed"


def attention_extraction(kernel: str, facts: AttentionFacts) -> Extraction:
    kind = query_kind(facts.query_tokens, facts.batch, facts.seq)
    regime: dict[str, Any] = {
        "kernel": kernel,
        "activation_dtype": facts.activation_dtype,
        "cache_dtype": facts.cache_dtype,
        "heads": facts.heads,
        "head_dim": facts.head_dim,
        "kv_heads": facts.kv_heads,
        "sparse_mode": facts.sparse_mode,
        "layout": facts.layout,
        "rope_dim": facts.rope_dim,
        "query_kind": kind,
    }
    if facts.quant_mode is not None:  # absent when unquantised: keys of older stores hold
        regime["quant_mode"] = facts.quant_mode
    if kind == "mixed":
        regime["query_tokens"] = facts.query_tokens
    return Extraction(regime, (facts.seq, float(facts.batch)))


def seq_value(value: float) -> float:
    return round(float(value), SEQ_DECIMALS)


def query_tokens(q: Sequence[int], layout: str) -> int:
    return q[0] if layout == "TND" else q[0] * q[2]


class FusedInferAttentionPath(OperatorPath):
    name = "attention_special"
    selectors = frozenset({"attention_special"})
    kernels = frozenset({KERNEL})
    axis_names = ("seq", "batch")
    axis_groups = ((0,), (0, 1))
    ceiling = 2
    owns_exact = True
    specialized_base = True
    target_reads_formats = False

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        facts = unwrap(row_facts(row))
        return [attention_extraction(ctx.kernel_type, facts)]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        facts = unwrap(target_facts(leaf))
        return attention_extraction(ctx.kernel_type,
                                    replace(facts, quant_mode=target_quant_mode(leaf, ctx)))

    def axis_transforms(self, policy: KernelPolicy) -> tuple[AxisTransform | None, ...]:
        return (math.sqrt if policy.axis_transform == "sqrt_seq" else None, None)

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        return {"attention_subcategory": "fused_infer_attention",
                "query_kind": extraction.regime.get("query_kind")}


# ---- row side ----------------------------------------------------------------------


def row_facts(row: CsvRow) -> AttentionFacts | Refusal:
    completeness = row.extra(RUNTIME + "metadata_completeness")
    if completeness and completeness != COMPLETE_METADATA:
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      f"runtime sequence metadata incomplete (metadata_completeness="
                      f"{completeness})", metadata_completeness=completeness)
    q, key = _slot(row, Q_SLOT), _slot(row, KEY_SLOT)
    if q is None or key is None or q.shape is None or key.shape is None:
        return refuse(Reason.TARGET_UNAVAILABLE, "row lacks the query or key input")
    seq = _row_number(row, RUNTIME + "avg_seq_len", "avg_seq_len")
    if seq is None or not math.isfinite(seq) or seq <= 0:
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      f"sequence length not recorded (avg_seq_len={seq})")
    layout = unwrap(_row_layout(row, q.shape))
    return _row_facts(row, q, key, layout, seq_value(seq))


def _row_facts(row: CsvRow, q: Slot, key: Slot, layout: str, seq: float
               ) -> AttentionFacts | Refusal:
    head_dim = q.known_shape[-1]
    paged = _present(row, BLOCK_TABLE_SLOT)
    kv_heads = _row_int(row, "num_key_value_heads")
    if kv_heads is None:
        kv_heads = _kernel_kv_heads(key.known_shape, head_dim, layout, paged)
    if kv_heads is None:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"cannot read KV heads from key {key.known_shape} (head_dim {head_dim})")
    tokens = query_tokens(q.known_shape, layout)
    batch = _row_batch(row, q.known_shape, layout, tokens, seq)
    if batch is None:
        return refuse(Reason.REQUIRED_FIELD_MISSING, "batch size not recorded")
    heads = _row_int(row, "num_heads")
    sparse = _row_int(row, "sparse_mode")
    rope = _slot(row, Q_ROPE_SLOT)
    return AttentionFacts(
        activation_dtype=q.dtype, cache_dtype=key.dtype,
        heads=q.known_shape[1] if heads is None else heads, head_dim=head_dim, kv_heads=kv_heads,
        sparse_mode=(3 if _present(row, MASK_SLOT) else 0) if sparse is None else sparse,
        layout=layout, rope_dim=rope.shape[-1] if rope and rope.shape else 0,
        query_tokens=tokens, batch=batch, seq=seq,
        quant_mode=row.extra(RUNTIME + "quant_mode") or None)


def _slot(row: CsvRow, index: int) -> Slot | None:
    return row.inputs[index] if index < len(row.inputs) else None


def _present(row: CsvRow, index: int) -> bool:
    slot = _slot(row, index)
    return slot is not None and slot.present


def _row_number(row: CsvRow, *columns: str) -> float | None:
    for column in columns:
        text = row.extra(column)
        if text:
            try:
                return float(text)
            except ValueError:
                return math.nan
    return None


def _row_int(row: CsvRow, field: str) -> int | None:
    value = _row_number(row, RUNTIME + field)
    return int(value) if value is not None and math.isfinite(value) else None


def _row_layout(row: CsvRow, q: Sequence[int]) -> str | Refusal:
    stated = row.extra(RUNTIME + "input_layout")
    layout = stated.split("_")[0] if stated else RANK_LAYOUT.get(len(q))
    if layout is None or layout not in RANK_LAYOUT.values() or RANK_LAYOUT.get(len(q)) != layout:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"query {q} does not fit layout {stated or layout}")
    return layout


def bnsd_kv_heads(key: Sequence[int]) -> int | None:
    """KV heads of a BNSD key ``(B, N, S, D)``: dimension 1, on the row and target sides."""
    return key[1] if len(key) == 4 else None


def _kernel_kv_heads(key: Sequence[int], head_dim: int, layout: str, paged: bool
                     ) -> int | None:
    if layout == "BNSD":
        return bnsd_kv_heads(key)
    if paged:
        width = key[-1]
        return width // head_dim if width % head_dim == 0 else None
    return key[-2] if len(key) == 3 and key[-1] == head_dim else None


def _row_batch(row: CsvRow, q: Sequence[int], layout: str, tokens: int, seq: float
               ) -> int | None:
    stated = _row_int(row, "batch_size")
    if stated is not None:
        return stated
    table = _slot(row, BLOCK_TABLE_SLOT)
    if table is not None and table.shape:
        return table.shape[0]
    if layout == "BNSD":
        return q[0]
    per_request = tokens / seq
    return int(per_request) if per_request.is_integer() and per_request >= 1 else None


# ---- target side ---------------------------------------------------------------------


def target_facts(leaf: LeafOp) -> AttentionFacts | Refusal:
    q, key = leaf.arg(Q_ARG), leaf.arg(KEY_ARG)
    if not isinstance(q, TensorSpec) or not isinstance(key, TensorSpec):
        return refuse(Reason.TARGET_UNAVAILABLE, "attention needs query and key tensors")
    lens = unwrap(_seq_lens(leaf))
    shape = unwrap(_query_layout(q.shape, key.shape))
    heads, head_dim, layout = shape
    try:
        dtypes = to_profiler_dtype(q.dtype), to_profiler_dtype(key.dtype)
    except ValueError as error:
        return refuse(Reason.TARGET_UNAVAILABLE, str(error))
    kv_heads = bnsd_kv_heads(key.shape) if layout == "BNSD" else key.shape[-2]
    if kv_heads is None:
        return refuse(Reason.TARGET_UNAVAILABLE, f"BNSD key {key.shape} is not (B, N, S, D)")
    tokens = q.shape[0] if q.rank == 2 else query_tokens(q.shape, layout)
    seq = seq_value(sum(lens) / len(lens))
    kind = query_kind(tokens, len(lens), seq)
    return AttentionFacts(
        activation_dtype=dtypes[0], cache_dtype=dtypes[1], heads=heads, head_dim=head_dim,
        kv_heads=kv_heads, sparse_mode=convention_sparse_mode(layout, kind),
        layout=layout, rope_dim=0, query_tokens=tokens, batch=len(lens), seq=seq)


def target_quant_mode(leaf: LeafOp, ctx: TargetContext) -> str | None:
    """The target's quant mode: the mapping entry's ``quant_mode``, else the leaf's kwarg."""
    stated = ctx.entry.raw.get("quant_mode")
    if stated is None:
        stated = leaf.kwarg("quant_mode")
    return None if stated is None or stated == "" else str(stated)


def convention_sparse_mode(layout: str, kind: str) -> int:
    """The sparse mode vLLM-Ascend passes: the compressed causal mask (3) except for
    BNSD decode, which runs without a mask (0)."""
    return 0 if layout == "BNSD" and kind == "decode" else 3


def _seq_lens(leaf: LeafOp) -> tuple[float, ...] | Refusal:
    seq_lens = leaf.arg(SEQ_LENS_ARG)
    if not isinstance(seq_lens, TensorSpec):
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      f"seq_lens (argument {SEQ_LENS_ARG}) is absent", field="seq_lens")
    if not seq_lens.values:
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      "seq_lens carries no values: the mean sequence length is unknown",
                      field="seq_lens.values")
    if min(seq_lens.values) < 0 or sum(seq_lens.values) <= 0:
        return refuse(Reason.TARGET_UNAVAILABLE, "seq_lens values are not positive",
                      field="seq_lens.values")
    return tuple(float(v) for v in seq_lens.values)


def _query_layout(q: Sequence[int], key: Sequence[int]) -> tuple[int, int, str] | Refusal:
    """(heads, head_dim, layout) of a TensorCast query: ``(tokens, heads·head_dim)`` with
    the head dim from the key ``(…, kv_heads, head_dim)``, or ``(T, N, D)`` / ``(B, N, S, D)``."""
    if len(key) < 3 or key[-1] == 0:
        return refuse(Reason.TARGET_UNAVAILABLE, f"key {tuple(key)} is not (…, kv_heads, D)")
    if len(q) == 2:
        if q[1] % key[-1]:
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"query width {q[1]} is not a multiple of head_dim {key[-1]}")
        return q[1] // key[-1], key[-1], "TND"
    if len(q) in RANK_LAYOUT:
        return q[1], q[-1], RANK_LAYOUT[len(q)]
    return refuse(Reason.TARGET_UNAVAILABLE, f"query {tuple(q)} has rank {len(q)}")
