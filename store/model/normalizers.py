"""Kernel input normalisers: reshape a TensorCast call into the kernel's own input layout.

One registry, applied on the target side before matching. Add an entry only where
the data demands it, each with a test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from profstore.model.tensor_spec import TensorSpec

Normalizer = Callable[[Sequence[TensorSpec]], tuple[TensorSpec, ...]]


def _swiglu(tensors: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
    """TensorCast passes ``(gate, up)``; the SwiGlu kernel takes one tensor holding both,
    concatenated on the last dimension."""
    if len(tensors) != 2 or tensors[0].shape != tensors[1].shape or not tensors[0].shape:
        return tuple(tensors)
    gate = tensors[0]
    fused = (*gate.shape[:-1], gate.shape[-1] * 2)
    return (TensorSpec(fused, gate.dtype, gate.format),)


_INDEX_DTYPES = frozenset({"int32", "int64"})


def _scatter_nd_update(tensors: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
    """TensorCast ``scatter_nd_update_mla`` passes ``(update, cache, index, …)``; the
    ScatterNdUpdate kernel takes ``(cache, index, update)``. Reordered when the integer
    index sits third (TensorCast order); a call already in kernel order (index second) is
    kept. Either way the kernel's three inputs are all it reads (``seq_lens`` is not one).
    The MLA cache-update path reads its target through this same function."""
    if len(tensors) < 3:
        return tuple(tensors)
    if tensors[1].dtype in _INDEX_DTYPES:
        return tuple(tensors[:3])
    if tensors[2].dtype not in _INDEX_DTYPES:
        return tuple(tensors)
    update, cache, index = tensors[:3]
    return (cache, index, update)


NORMALIZERS: dict[str, Normalizer] = {
    "SwiGlu": _swiglu,
    "ScatterNdUpdate": _scatter_nd_update,
    "ScatterNdUpdateAiCore": _scatter_nd_update,
}


def normalize_target_inputs(kernel: str, tensors: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
    normalizer = NORMALIZERS.get(kernel)
    return normalizer(tensors) if normalizer else tuple(tensors)
