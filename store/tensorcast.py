"""A drop-in data source for TensorCast's empirical performance model.

TensorCast asks its data source ``lookup(op_invoke_info)`` for every operator and uses
its analytic model when the answer is ``None``. ``ProfstoreDataSource`` answers from a
profstore database: it converts the invocation (``func``, ``args``, ``kwargs``, ``out``)
into a ``LeafOp`` and calls ``Store.lookup``.

The module never imports torch. A tensor is any object with ``.shape`` and ``.dtype``
(real, ``meta`` and fake torch tensors, numpy arrays, test doubles); a dtype is read
through ``str()``, so ``torch.bfloat16`` and ``"bfloat16"`` are the same.

Conversion rules (see ``leaf_from_invocation``):

- ``func``: ``str(func)`` with a leading ``torch.ops.`` removed.
- ``args``: tensors become ``TensorSpec``; lists and tuples become tuples (of specs,
  ``None`` and scalars); ``None``, bools, ints, floats and strings stay; a dtype object
  (``gmm1_out_dtype``) becomes its name (``"bfloat16"``); any other object (a device,
  a layout) becomes its ``str()``.
- ``kwargs``: ``phase`` and ``is_decode_values`` (one flag per request, True = decode)
  become ``context.phase`` and leave the kwargs; the rest convert like args.
- ``out``: a tensor, or a (nested) list or tuple whose tensors become the outputs in
  order; non-tensor entries are skipped.
- A tensor's format is ``format_of(tensor)`` when that hook is given and returns a
  value, else its ``.format`` attribute (a string or an enum member), else ``ND``.
- Values: an integer tensor with at most ``MAX_VALUE_ELEMENTS`` elements that is not on
  the ``meta`` device carries its values, read through ``.tolist()``; a tensor whose
  data cannot be read (fake tensors) simply carries none.
- EP and TP sizes are not on the op: they come from the constructor into the context.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from numbers import Integral, Real
from typing import Any

from profstore.api import Store
from profstore.dtypes import canonical_torch_dtype
from profstore.leaf import Arg, LeafContext, LeafOp, TensorSpec
from profstore.mapping import VersionMapping, load_mapping, merge_overlay
from profstore.result import QueryResult, QuerySource, Reason

__all__ = [
    "MAX_VALUE_ELEMENTS",
    "ProfstoreDataSource",
    "TensorCastResult",
    "leaf_from_invocation",
]

#: Integer tensors up to this many elements carry their values (seq_lens, query_lens, ...).
MAX_VALUE_ELEMENTS = 4096

FormatOf = Callable[[Any], "str | None"]

_VALUE_DTYPES = frozenset({"int8", "uint8", "int16", "int32", "int64"})
_TORCH_PREFIX = "torch."


@dataclass(frozen=True)
class TensorCastResult(QueryResult):
    """A ``QueryResult`` plus the one method TensorCast's empirical model calls on a hit."""

    @classmethod
    def of(cls, result: QueryResult) -> TensorCastResult:
        return cls(result.latency_us, result.source, result.confidence, result.reason,
                   result.details)

    def shape_debug_statistics(self) -> dict[str, Any]:
        """TensorCast merges this into its per-op statistics; the lookup method is the rule."""
        method = self.details.get("method")
        return {"shape_match_rule": method} if method else {}


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _flatten(data: Any) -> Iterator[Any]:
    if isinstance(data, (list, tuple)):
        for item in data:
            yield from _flatten(item)
    else:
        yield data


def _on_meta(tensor: Any) -> bool:
    return getattr(tensor, "is_meta", False) is True or str(getattr(tensor, "device", "")) == "meta"


def _read_list(tensor: Any) -> list[Any] | None:
    """The tensor's data as a flat list, or None when it has none to give."""
    if _on_meta(tensor) or not callable(getattr(tensor, "tolist", None)):
        return None
    try:
        return list(_flatten(tensor.tolist()))
    except Exception:  # fake tensors and other data-less tensors refuse in their own ways
        return None


def _values(tensor: Any, shape: tuple[int, ...], dtype: str) -> tuple[int, ...] | None:
    if dtype not in _VALUE_DTYPES or math.prod(shape) > MAX_VALUE_ELEMENTS:
        return None
    data = _read_list(tensor)
    if data is None or len(data) != math.prod(shape):
        return None
    if not all(isinstance(v, Integral) and not isinstance(v, bool) for v in data):
        return None
    return tuple(int(v) for v in data)


def _format(tensor: Any, format_of: FormatOf | None) -> str:
    fmt = format_of(tensor) if format_of is not None else None
    if fmt is None:
        fmt = getattr(tensor, "format", None)
    if fmt is None:
        return "ND"
    if isinstance(fmt, str):
        return fmt
    name = getattr(fmt, "name", None)
    if isinstance(name, str):
        return name
    raise ValueError(f"format: unsupported value {fmt!r}")


def _spec(tensor: Any, path: str, format_of: FormatOf | None) -> TensorSpec:
    """Errors name the field the way ``LeafOp`` does: ``args[2][0].dtype: ...``."""
    try:
        shape = tuple(operator.index(dim) for dim in tensor.shape)
    except TypeError as error:
        raise ValueError(f"{path}.shape: {error}") from None
    try:
        dtype = canonical_torch_dtype(str(tensor.dtype))
    except ValueError as error:
        raise ValueError(f"{path}.dtype: {error}") from None
    try:
        return TensorSpec(shape, dtype, _format(tensor, format_of), _values(tensor, shape, dtype))
    except ValueError as error:
        raise ValueError(f"{path}.{error}") from None


def _dtype_name(value: Any, path: str) -> str | None:
    """The canonical name of a dtype object (``torch.bfloat16``), None for other objects."""
    text = str(value)
    is_dtype = type(value).__name__ == "dtype"
    if not is_dtype and not text.startswith(_TORCH_PREFIX):
        return None
    try:
        return canonical_torch_dtype(text)
    except ValueError as error:
        if is_dtype:
            raise ValueError(f"{path}: {error}") from None
        return None


def _arg(value: Any, path: str, format_of: FormatOf | None) -> Arg:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    if _is_tensor(value):
        return _spec(value, path, format_of)
    if isinstance(value, (list, tuple)):
        return tuple(_arg(item, f"{path}[{i}]", format_of) for i, item in enumerate(value))
    name = _dtype_name(value, path)
    return name if name is not None else str(value)


def _phase_from_flags(flags: Any) -> str | None:
    data = _read_list(flags) if _is_tensor(flags) else list(_flatten(flags))
    if not data:
        return None
    decode = [bool(flag) for flag in data]
    if all(decode):
        return "decode"
    return "mixed" if any(decode) else "prefill"


def _phase(kwargs: dict[str, Any]) -> str | None:
    """Pop ``phase`` and ``is_decode_values`` from ``kwargs``; their agreed phase, if any."""
    stated = kwargs.pop("phase", None)
    flags = kwargs.pop("is_decode_values", None)
    derived = None if flags is None else _phase_from_flags(flags)
    if stated is not None and not isinstance(stated, str):
        stated = str(getattr(stated, "value", stated))
    if stated is not None and derived is not None and stated.strip().lower() != derived:
        raise ValueError(f"kwargs.phase: {stated!r} contradicts is_decode_values ({derived})")
    return stated if stated is not None else derived


def _outputs(out: Any, format_of: FormatOf | None) -> tuple[TensorSpec, ...]:
    items = [out] if _is_tensor(out) else list(_flatten(out))
    tensors = [item for item in items if _is_tensor(item)]
    return tuple(_spec(t, f"outputs[{i}]", format_of) for i, t in enumerate(tensors))


def leaf_from_invocation(op_invoke_info: Any, context: LeafContext | None = None,
                         format_of: FormatOf | None = None) -> LeafOp:
    """The leaf descriptor of a TensorCast invocation (rules in the module docstring).

    ``context`` supplies what the op does not carry (EP/TP sizes); the phase found in
    the kwargs is added to it. Raises ``ValueError`` naming the offending field.
    """
    func = getattr(op_invoke_info, "func", None)
    if func is None:
        raise ValueError("func: missing")
    raw_kwargs = getattr(op_invoke_info, "kwargs", None) or {}
    if not isinstance(raw_kwargs, Mapping):
        raise ValueError(f"kwargs: must be a mapping, got {type(raw_kwargs).__name__}")
    kwargs = dict(raw_kwargs)
    phase = _phase(kwargs)
    args = getattr(op_invoke_info, "args", None) or ()
    context = context or LeafContext()
    return LeafOp(
        op=str(func),
        args=tuple(_arg(v, f"args[{i}]", format_of) for i, v in enumerate(args)),
        kwargs={name: _arg(v, f"kwargs.{name}", format_of) for name, v in kwargs.items()},
        outputs=_outputs(getattr(op_invoke_info, "out", None), format_of),
        context=context if phase is None else replace(context, phase=phase),
    )


def _overlay(value: str | os.PathLike[str] | VersionMapping | None) -> VersionMapping | None:
    if value is None or isinstance(value, VersionMapping):
        return value
    return load_mapping(value)


def _open(db: str | os.PathLike[str] | Store, overlay: VersionMapping | None
          ) -> tuple[Store, bool]:
    """The store to query and whether this data source owns (and so closes) it."""
    if not isinstance(db, Store):
        return Store.open(db, mapping_overlay=overlay), True
    if overlay is None:
        return db, False
    if db.mapping_overlay is not None:
        overlay = merge_overlay(db.mapping_overlay, overlay)
    return Store(db.engine, mapping_overlay=overlay), False


def _op_name(op_invoke_info: Any) -> str | None:
    try:
        func = getattr(op_invoke_info, "func", None)
        return None if func is None else str(func).removeprefix("torch.ops.")
    except Exception:
        return None


class ProfstoreDataSource:
    """TensorCast data source backed by a profstore database.

    ``lookup`` returns a ``TensorCastResult`` for a complete answer (MEASURED or
    INTERPOLATED) and ``None`` otherwise, leaving the reason code in
    ``last_miss_reason`` and the details in ``last_miss_details`` (both reset to None on
    a hit). ``last_result`` keeps the full ``QueryResult`` of the last lookup, whatever
    it was. Not thread-safe: like TensorCast's own sources, the ``last_*`` attributes
    describe the most recent call.
    """

    def __init__(self, db: str | os.PathLike[str] | Store, version: str, *,
                 ep_size: int | None = None, tp_size: int | None = None,
                 interpolation: bool = True,
                 mapping_overlay: str | os.PathLike[str] | VersionMapping | None = None,
                 format_of: FormatOf | None = None) -> None:
        self.context = LeafContext(ep_size=ep_size, tp_size=tp_size)
        self.store, self._owns_store = _open(db, _overlay(mapping_overlay))
        self.version = version
        self.interpolation = bool(interpolation)
        self.format_of = format_of
        self.last_miss_reason: str | None = None
        self.last_miss_details: dict[str, Any] | None = None
        self.last_result: QueryResult | None = None
        if self.store.profile(version) is None:
            known = ", ".join(self.store.versions()) or "none"
            self.close()
            raise ValueError(f"version {version!r} is not in the database; ingested: {known}")

    def to_leaf(self, op_invoke_info: Any) -> LeafOp:
        """The leaf descriptor this source queries for ``op_invoke_info``."""
        return leaf_from_invocation(op_invoke_info, self.context, self.format_of)

    def lookup(self, op_invoke_info: Any) -> TensorCastResult | None:
        """A complete answer, or None with the reason in ``last_miss_reason``."""
        try:
            leaf = self.to_leaf(op_invoke_info)
        except Exception as error:  # a malformed op is a miss, never a crash in the host loop
            message = str(error) if isinstance(error, ValueError) else (
                f"{type(error).__name__}: {error}")
            result = QueryResult.miss(Reason.INVALID_DESCRIPTOR, op=_op_name(op_invoke_info),
                                      message=message)
        else:
            result = self.store.lookup(leaf, self.version, self.interpolation)
        return self._settle(result)

    def _settle(self, result: QueryResult) -> TensorCastResult | None:
        self.last_result = result
        if result.hit and result.source is not QuerySource.PARTIAL:
            self.last_miss_reason = self.last_miss_details = None
            return TensorCastResult.of(result)
        details = dict(result.details)
        if result.source is QuerySource.PARTIAL:
            details["partial_latency_us"] = result.latency_us
        self.last_miss_reason = (result.reason or Reason.NO_EXACT_MATCH).value
        self.last_miss_details = details
        return None

    def close(self) -> None:
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ProfstoreDataSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ProfstoreDataSource({self.store!r}, version={self.version!r})"
