"""Validation of a leaf descriptor's fields (store/model/leaf.py): each returns the normalised
value or raises a ``ValueError`` that names the field. The common case (plain ints, lists
and floats) is checked by type before the slower abstract-number checks."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from profstore.model.size_limits import MAX_INT, bounded_int, bounded_numel, valid_text


def is_int(value: Any) -> bool:
    return type(value) is int or (isinstance(value, Integral) and not isinstance(value, bool))


def is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def field_error(path: str, error: ValueError) -> ValueError:
    """Prefix a field-scoped error (``"shape: ..."``) with the path of its owner."""
    return ValueError(f"{path}.{error}" if path else str(error))


def object_error(path: str, message: str) -> ValueError:
    """An error about a whole object (not one of its fields) at ``path``."""
    return ValueError(f"{path}: {message}" if path else message)


def shape_of(value: Any, path: str) -> tuple[int, ...]:
    if not is_list(value):
        raise ValueError(f"{path}: must be a list of non-negative integers, got {value!r}")
    if all(type(d) is int and 0 <= d <= MAX_INT for d in value):  # the usual case
        bounded_numel(tuple(value), path)
        return tuple(value)
    dims = []
    for dim in value:
        if not is_int(dim):
            raise ValueError(f"{path}: dimension {dim!r} is not an integer")
        if dim < 0:
            raise ValueError(f"{path}: dimension {dim} is negative")
        dims.append(bounded_int(dim, path, "dimension"))
    bounded_numel(tuple(dims), path)
    return tuple(dims)


def number_of(value: Any, path: str) -> int | float:
    if is_int(value):
        return bounded_int(int(value), path)
    if isinstance(value, Real) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            return number
        raise ValueError(f"{path}: value {value!r} is not finite")
    raise ValueError(f"{path}: value {value!r} is not a number")


def positive_int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if not is_int(value) or value <= 0:
        raise ValueError(f"{name}: must be a positive integer, got {value!r}")
    return bounded_int(int(value), name)


def lengths_of(value: Any, name: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not is_list(value):
        raise ValueError(f"{name}: must be a list of non-negative integers, got {value!r}")
    for i, item in enumerate(value):
        if not is_int(item) or item < 0:
            raise ValueError(f"{name}[{i}]: must be a non-negative integer, got {item!r}")
    return tuple(bounded_int(int(item), f"{name}[{i}]") for i, item in enumerate(value))


def format_field(value: Any, defaulted: Any = False) -> str | None:
    """A tensor's memory format upper-cased (None: unstated); ``defaulted`` (the descriptor
    omitted it) goes with ND only."""
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ValueError(f"format: must be a non-empty string or null, got {value!r}")
    if value is not None:
        valid_text(value, "format")
    if defaulted not in (False, True) or (defaulted and value != "ND"):
        raise ValueError("format_defaulted: True only with format 'ND', got "
                         f"{defaulted!r} with {value!r}")
    return None if value is None else value.strip().upper()


_OPS_PREFIX = "torch.ops."


def op_name(value: Any) -> str:
    """A leaf's ``op`` as given (a string, or ``str()`` of a torch op) made canonical:
    stripped, without a leading ``torch.ops.``.

    Raises:
        ValueError: missing, empty or not valid text; the message names ``op``.
    """
    if value is None:
        raise ValueError("op: missing")
    op = value.strip() if isinstance(value, str) else ""
    op = op[len(_OPS_PREFIX) :] if op.startswith(_OPS_PREFIX) else op
    if not op:
        raise ValueError(f"op: must be a non-empty string, got {value!r}")
    valid_text(op, "op")
    return op
