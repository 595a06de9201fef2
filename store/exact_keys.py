"""Base exact-lookup keys: the input signature of a kernel call, row side and target side.

A key spells the first ``n`` present input tensors as ``shape:dtype`` (FRACTAL_NZ
already restored). Each row stores a key for every prefix ``n``, so an op mapping's
``tc_input_count`` picks its prefix at lookup time, plus a batch-stripped variant
(leading 1 removed from each shape) so ``[1, 4, 7168]`` and ``[4, 7168]`` meet.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.rows import CsvRow
from store.shapes import Shape, shape_text, strip_leading_batch

RAW = "x"
STRIPPED = "b"


def signature_key(kind: str, shapes: Sequence[Shape], dtypes: Sequence[str]) -> str:
    if kind == STRIPPED:
        shapes = [strip_leading_batch(s) for s in shapes]
    body = ";".join(f"{shape_text(s)}:{d}" for s, d in zip(shapes, dtypes))
    return f"{kind}{len(shapes)}|{body}"


def row_keys(row: CsvRow) -> list[str]:
    """Every key a row answers: each input prefix, raw and batch-stripped."""
    present = row.present_inputs()
    shapes = [s.shape for s in present]
    dtypes = [s.dtype for s in present]
    keys: list[str] = []
    for n in range(1, len(present) + 1):
        keys.append(signature_key(RAW, shapes[:n], dtypes[:n]))
        keys.append(signature_key(STRIPPED, shapes[:n], dtypes[:n]))
    return keys


def target_keys(shapes: Sequence[Shape], dtypes: Sequence[str]) -> list[str]:
    """Keys to try for a target: the literal shapes first, then batch-stripped on both sides."""
    return [signature_key(RAW, shapes, dtypes), signature_key(STRIPPED, shapes, dtypes)]


def output_key(shape: Shape, dtype: str) -> str:
    """Key of a row's first output (base elementwise lookup by output shape)."""
    return f"o|{shape_text(strip_leading_batch(shape))}:{dtype}"


def row_output_keys(row: CsvRow) -> list[str]:
    outputs = row.present_outputs()
    return [output_key(outputs[0].shape, outputs[0].dtype)] if outputs else []
