"""A sample's ``latencies`` and ``extras`` JSON, packed for storage (migration 0005).

Every row of a file repeats the same JSON keys (``"Profiling Average Duration(us)": ``,
``"Runtime actual_seq_lengths_kv_values": ``), which were half of those columns' bytes.
Packing replaces each known key, spelled as ``json.dumps`` writes it with its ``": "``,
by one control character; ``json.dumps`` escapes control characters (``\\u0001``), so
they never occur in its output and the replacement is reversed exactly. Unknown keys stay
as they are. The reverse is a nested SQL ``replace``, so the packed column reads back
as the same text in SQL on every backend (``unpacked``).

The name lists are part of the stored format: a name's code is its position, so names
may only be appended (at most 31 per list), never reordered or removed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from sqlalchemy import func, literal
from sqlalchemy.sql.elements import ColumnElement

LATENCY_NAMES: tuple[str, ...] = (
    "Average Duration(us)", "Profiling Average Duration(us)", "Profiling Median Duration(us)",
    "Profiling Std Duration(us)", "Median Duration(us)", "Std Duration(us)", "Duration(us)",
)
"""Latency columns of the corpus (``*Duration(us)``), most frequent first."""

EXTRA_NAMES: tuple[str, ...] = tuple(f"Runtime {name}" for name in (
    "sparse_mode", "source_profile", "phase", "num_key_value_heads", "num_heads",
    "metadata_completeness", "kv_cache_mode", "input_layout", "block_table_valid_blocks",
    "block_table_shape", "block_size", "batch_size", "avg_seq_len",
    "actual_seq_lengths_values", "actual_seq_lengths_shape", "actual_seq_lengths_kv_values",
    "actual_seq_lengths_kv_shape", "topk", "case_id", "cache_layout",
    "sparse_indices_valid_count", "sparse_indices_pattern", "sparse_block_size",
    "quant_mode", "operator_input_shapes_raw", "attn_state",
)) + ("EP Size", "avg_seq_len")
"""Extra (semantic) columns of the corpus."""

MAX_NAMES = 31
_CONTROL = re.compile("[\x00-\x1f]")


def _pairs(names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    if len(names) > MAX_NAMES:
        raise ValueError(f"at most {MAX_NAMES} packed names, got {len(names)}")
    return tuple((json.dumps(name) + ": ", chr(1 + i)) for i, name in enumerate(names))


_PAIRS = {LATENCY_NAMES: _pairs(LATENCY_NAMES), EXTRA_NAMES: _pairs(EXTRA_NAMES)}


def _pairs_of(names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """(spelled key, code) of each name; the two stored lists' pairs are built once."""
    return _PAIRS.get(tuple(names)) or _pairs(names)


def pack(text: str, names: Sequence[str]) -> str:
    """``text`` (as ``json.dumps`` wrote it) with each known key replaced by its code."""
    if _CONTROL.search(text):
        raise ValueError("packed JSON must not hold control characters (json.dumps escapes them)")
    for spelled, code in _pairs_of(names):
        if spelled in text:
            text = text.replace(spelled, code)
    return text


def unpack(text: str, names: Sequence[str]) -> str:
    """The JSON text ``pack`` was given (Python side of ``unpacked``)."""
    for spelled, code in _pairs_of(names):
        text = text.replace(code, spelled)
    return text


def unpacked(column: ColumnElement, names: Sequence[str]) -> ColumnElement:
    """SQL for the JSON text a packed column holds."""
    expression = column
    for spelled, code in _pairs_of(names):
        expression = func.replace(expression, literal(code), literal(spelled))
    return expression


def pack_sql(column: ColumnElement, names: Sequence[str]) -> ColumnElement:
    """SQL for ``pack`` of a JSON text column (migration 0005 packs stored rows in place)."""
    expression = column
    for spelled, code in _pairs_of(names):
        expression = func.replace(expression, literal(spelled), literal(code))
    return expression
