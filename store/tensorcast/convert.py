"""Conversion of a TensorCast op invocation into a ``LeafOp`` (rules in profstore.tensorcast)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields, replace
from numbers import Integral, Real
from typing import Any

from profstore.model.clock_cache import ClockCache
from profstore.model.dtypes import canonical_torch_dtype
from profstore.model.leaf import Arg, LeafOp
from profstore.model.leaf_context import LeafContext
from profstore.model.tensor_spec import TensorSpec

MAX_VALUE_ELEMENTS = 4096
"""Integer tensors up to this many elements carry their values (seq_lens, query_lens, ...).

Examples:
    >>> import torch
    >>> from types import SimpleNamespace
    >>> from profstore.tensorcast import MAX_VALUE_ELEMENTS, leaf_from_invocation
    >>> lengths = torch.arange(MAX_VALUE_ELEMENTS + 1)
    >>> leaf_from_invocation(SimpleNamespace(func="aten.abs.default",
    ...                                      args=(lengths[:3], lengths))).arg(0).values
    (0, 1, 2)
    >>> print(leaf_from_invocation(SimpleNamespace(func="aten.abs.default",
    ...                                            args=(lengths,))).arg(0).values)
    None
"""

FormatOf = Callable[[Any], "str | None"]

_VALUE_DTYPES = frozenset({"int8", "uint8", "int16", "int32", "int64"})
_TORCH_PREFIX = "torch."


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


def _format(tensor: Any, format_of: FormatOf | None) -> str | None:
    """The tensor's stated format; None (unstated) when neither the hook nor the tensor
    says one: the lookup resolves it (store/lookup/format_resolution.py)."""
    fmt = format_of(tensor) if format_of is not None else None
    if fmt is None:
        fmt = getattr(tensor, "format", None)
    if fmt is None:
        return None
    if isinstance(fmt, str):
        return fmt
    name = getattr(fmt, "name", None)
    if isinstance(name, str):
        return name
    raise ValueError(f"format: unsupported value {fmt!r}")


_SPECS: ClockCache[tuple[Any, Any, str | None], TensorSpec] = ClockCache(4096)
"""Converted tensors that carry no values, by (shape, dtype, format) as the host gives
them: a search meets the same weights and activations in every layer and configuration,
and the validation of a new ``TensorSpec`` is a fifth of converting an op."""


def _spec(tensor: Any, path: str, format_of: FormatOf | None) -> TensorSpec:
    """Errors name the field the way ``LeafOp`` does: ``args[2][0].dtype: ...``."""
    try:
        fmt = _format(tensor, format_of)
    except ValueError as error:
        raise ValueError(f"{path}.{error}") from None
    key = (tensor.shape, tensor.dtype, fmt)
    try:
        found = _SPECS.get(key)
    except TypeError:  # a host's unhashable shape (a list): converted every time
        return _converted(tensor, path, fmt)
    if found is None:
        found = _converted(tensor, path, fmt)
        if found.dtype not in _VALUE_DTYPES:
            _SPECS.put(key, found)
    return found


def _converted(tensor: Any, path: str, fmt: str | None) -> TensorSpec:
    try:
        shape = tuple(operator.index(dim) for dim in tensor.shape)
    except TypeError as error:
        raise ValueError(f"{path}.shape: {error}") from None
    try:
        dtype = canonical_torch_dtype(str(tensor.dtype))
    except ValueError as error:
        raise ValueError(f"{path}.dtype: {error}") from None
    try:
        return TensorSpec(shape, dtype, fmt, _values(tensor, shape, dtype))
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


_AS_THEY_ARE = frozenset({type(None), bool, str, int, float})
"""Types whose values an argument keeps as they are (checked first: the common case)."""


def _arg(value: Any, path: str, format_of: FormatOf | None) -> Arg:
    kind = type(value)
    if kind in _AS_THEY_ARE:
        return value
    if kind is list or kind is tuple:  # never a number or a tensor: no ABC test
        return _items(value, path, format_of)
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    if _is_tensor(value):
        return _spec(value, path, format_of)
    if isinstance(value, (list, tuple)):
        return _items(value, path, format_of)
    name = _dtype_name(value, path)
    return name if name is not None else str(value)


def _items(value: list[Any] | tuple[Any, ...], path: str,
           format_of: FormatOf | None) -> tuple[Arg, ...]:
    return tuple(_arg(item, f"{path}[{i}]", format_of) for i, item in enumerate(value))


def invocation_shapes(op_invoke_info: Any) -> list[list[int]]:
    """The shapes of the non-scalar tensors among an invocation's positional arguments,
    lists flattened: ``simulation_shapes`` of its leaf, read without converting anything
    else (an op answered by its name alone has no leaf; ADR 0130).

    Raises:
        Exception: whatever reading a shape raises; a dimension that is not an integer
            is a ``TypeError``.
    """
    shapes = []
    for value in _flatten(getattr(op_invoke_info, "args", None) or ()):
        if _is_tensor(value):  # a number with a shape (a numpy scalar) has shape ()
            shape = [operator.index(dim) for dim in value.shape]
            if shape:
                shapes.append(shape)
    return shapes


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


#: Keyword arguments some TensorCast ops carry with the real per-request lengths.
LENGTH_KWARGS = {"seq_lens_values": "kv_lens", "query_lens_values": "query_lens"}


def context_fields(value: Mapping[str, Any] | LeafContext | None,
                   path: str = "context") -> dict[str, Any]:
    """The fields a context mapping sets, validated as ``LeafContext`` fields (an unknown
    field or a bad value is a ``ValueError`` naming it)."""
    if value is None:
        return {}
    if isinstance(value, LeafContext):
        return {f.name: getattr(value, f.name) for f in fields(value)
                if getattr(value, f.name) is not None}
    parsed = LeafContext.from_json(value, path)
    return {name: getattr(parsed, name) for name in value if value[name] is not None}


def _lengths_from_kwargs(kwargs: Mapping[str, Any], context: LeafContext) -> dict[str, Any]:
    """Per-request lengths the invocation states (``seq_lens_values``, ``query_lens_values``)
    for the context fields it does not set yet; the request count follows from them."""
    found: dict[str, Any] = {}
    if not kwargs.keys() & LENGTH_KWARGS.keys():
        return found
    for kwarg, name in LENGTH_KWARGS.items():
        value = kwargs.get(kwarg)
        if getattr(context, name) is None and isinstance(value, (list, tuple)) and value:
            found[name] = tuple(int(v) for v in value)
    lengths = [len(v) for v in found.values()]
    if context.num_requests is None and lengths and len(set(lengths)) == 1:
        found["num_requests"] = lengths[0]
    return found


def leaf_from_invocation(op_invoke_info: Any, context: LeafContext | None = None,
                         format_of: FormatOf | None = None) -> LeafOp:
    """The leaf descriptor of a TensorCast invocation.

    The rules are ``profstore.tensorcast.data_source``'s module documentation: tensors
    (anything with ``.shape`` and ``.dtype``) become ``TensorSpec``, lists tuples,
    ``phase`` / ``is_decode_values`` the context's phase, ``seq_lens_values`` /
    ``query_lens_values`` its request lengths.

    Args:
        op_invoke_info: the invocation (``func``, ``args``, ``kwargs``, ``out``).
        context: what the op does not carry (EP/TP sizes, phase, lengths); the phase and
            the per-request lengths the invocation states are added to it (the
            invocation's phase wins over a configured one).
        format_of: a hook giving a tensor's memory format (None: not stated).

    Returns:
        The validated leaf descriptor.

    Raises:
        ValueError: the invocation has no ``func``, or a field does not convert; the
            message names it (``args[1].dtype: ...``).

    Examples:
        >>> import torch
        >>> from types import SimpleNamespace
        >>> from profstore import LeafContext
        >>> x = torch.empty(4, 7168, dtype=torch.bfloat16, device="meta")
        >>> leaf = leaf_from_invocation(
        ...     SimpleNamespace(func=torch.ops.aten.add.Tensor, args=(x, x),
        ...                     kwargs={"is_decode_values": [True, True]}, out=x),
        ...     LeafContext(tp_size=8))
        >>> leaf.op, leaf.args[0].shape, leaf.context.phase, leaf.context.tp_size
        ('aten.add.Tensor', (4, 7168), 'decode', 8)
        >>> leaf_from_invocation(SimpleNamespace(args=(x,)))
        Traceback (most recent call last):
        ValueError: func: missing
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
    lengths = _lengths_from_kwargs(kwargs, context)
    if lengths:
        try:
            context = replace(context, **lengths)
        except (TypeError, ValueError) as error:
            raise ValueError(f"kwargs (sequence lengths): {error}") from None
    return LeafOp(
        op=str(func),
        args=tuple(_arg(v, f"args[{i}]", format_of) for i, v in enumerate(args)),
        kwargs=tuple((name, _arg(v, f"kwargs.{name}", format_of)) for name, v in kwargs.items()),
        outputs=_outputs(getattr(op_invoke_info, "out", None), format_of),
        context=context if phase is None else replace(context, phase=phase),
    )


