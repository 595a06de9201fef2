"""``TensorSpec``: one tensor of a leaf descriptor (DESIGN §3), frozen and hashable.

The constructor normalises and validates (a list shape becomes a tuple, the dtype its
canonical torch name, the format upper-case); every ``ValueError`` names the offending
field (``dtype: ...``), prefixed by the tensor's path in the descriptor when parsed from
JSON (``args[0].dtype: missing``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from profstore.model.dtypes import canonical_torch_dtype
from profstore.model.leaf_fields import (
    field_error,
    format_field,
    is_list,
    number_of,
    object_error,
    shape_of,
)

__all__ = ["TensorSpec"]

_TENSOR_KEYS = frozenset({"shape", "dtype", "format", "values"})


@dataclass(frozen=True)
class TensorSpec:
    """One tensor: shape, canonical torch dtype, memory format, and optionally its values.

    ``format`` None means the caller does not state it (a TensorCast meta tensor carries
    none): the lookup resolves it (store/lookup/format_resolution.py); ``"ND"`` is a stated ND.
    ``format_defaulted``: the format is ND because a JSON descriptor omitted it (DESIGN §3:
    the format defaults to ND); a format policy may still state another one, and its
    ``"infer"`` default makes it unstated again (store/lookup/format_resolution.py).

    Raises:
        ValueError: a field is invalid; the message names it (``dtype: ...``).

    Examples:
        >>> from profstore import TensorSpec
        >>> TensorSpec([64, 7168], "torch.bfloat16", "nd")
        TensorSpec(shape=(64, 7168), dtype='bfloat16', format='ND', values=None,
                   format_defaulted=False)
        >>> TensorSpec([2], "int64", values=[1, 2, 3])
        Traceback (most recent call last):
        ValueError: values: length 3 != numel 2 of [2]
    """

    shape: tuple[int, ...]
    """The dimensions (a list is accepted); ``()`` for a scalar."""
    dtype: str
    """The canonical torch dtype name (``bfloat16``; ``torch.bfloat16`` is accepted)."""
    format: str | None = None
    """The memory format, upper-cased (``ND``, ``FRACTAL_NZ``); None: unstated."""
    values: tuple[int | float, ...] | None = None
    """The tensor's values, flat (small integer tensors: sequence lengths, ...)."""
    format_defaulted: bool = False
    """True when the format is ND only because a JSON descriptor omitted it."""

    def __post_init__(self) -> None:
        shape = shape_of(self.shape, "shape")
        try:
            dtype = canonical_torch_dtype(self.dtype)
        except ValueError as error:
            raise ValueError(f"dtype: {error}") from None
        fmt = format_field(self.format, self.format_defaulted)
        values = self.values
        if values is not None:
            if not is_list(values):
                raise ValueError(f"values: must be a flat list of numbers, got {values!r}")
            values = tuple(number_of(v, f"values[{i}]") for i, v in enumerate(values))
            numel = math.prod(shape)
            if len(values) != numel:
                raise ValueError(f"values: length {len(values)} != numel {numel} of {list(shape)}")
        for name, value in (("shape", shape), ("dtype", dtype), ("format", fmt),
                            ("values", values)):
            object.__setattr__(self, name, value)

    def with_format(self, fmt: str) -> TensorSpec:
        """This tensor in another format; only the format is validated (the rest was
        when this tensor was made, and format resolution copies thousands of tensors
        in a search).

        Args:
            fmt: the format (upper-cased like the constructor's).

        Returns:
            A copy with that format, no longer ``format_defaulted``.

        Raises:
            ValueError: ``fmt`` is None or not a non-empty string.

        Examples:
            >>> from profstore import TensorSpec
            >>> TensorSpec((16, 16), "float16").with_format("fractal_nz").format
            'FRACTAL_NZ'
        """
        if fmt is None:
            raise ValueError("format: must be a non-empty string or null, got None")
        return self._copy(format_field(fmt))

    def unstated(self) -> TensorSpec:
        """This tensor with its format unstated (a policy's ``"infer"`` default).

        Never raises.

        Returns:
            A copy whose ``format`` is None.

        Examples:
            >>> from profstore import TensorSpec
            >>> print(TensorSpec((16,), "float16", "ND").unstated().format)
            None
        """
        return self._copy(None)

    def _copy(self, fmt: str | None) -> TensorSpec:
        """This tensor with a format already validated, stated (not defaulted)."""
        copy = object.__new__(TensorSpec)
        vars(copy).update(shape=self.shape, dtype=self.dtype, format=fmt, values=self.values,
                          format_defaulted=False)  # frozen: its fields set as __init__ would
        return copy

    @property
    def numel(self) -> int:
        """Element count; 1 for a scalar (shape ``()``).

        Examples:
            >>> from profstore import TensorSpec
            >>> TensorSpec((64, 7168), "bfloat16").numel, TensorSpec((), "float32").numel
            (458752, 1)
        """
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        """The number of dimensions; 0 for a scalar.

        Examples:
            >>> from profstore import TensorSpec
            >>> TensorSpec((64, 7168), "bfloat16").rank
            2
        """
        return len(self.shape)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> TensorSpec:
        """Build from ``{"shape", "dtype", "format"?, "values"?}``.

        An omitted ``"format"`` is ND (``format_defaulted``); ``"format": null`` leaves it
        unstated.

        Args:
            data: the tensor's JSON object.
            path: where it sits in the descriptor (``args[0]``), prefixed to errors.

        Returns:
            The validated tensor.

        Raises:
            ValueError: a missing, unknown or invalid key, named with ``path``.

        Examples:
            >>> from profstore import TensorSpec
            >>> spec = TensorSpec.from_json({"shape": [64, 7168], "dtype": "bfloat16"})
            >>> spec.format, spec.format_defaulted
            ('ND', True)
            >>> TensorSpec.from_json({"shape": [64]}, "args[0]")
            Traceback (most recent call last):
            ValueError: args[0].dtype: missing
        """
        if not isinstance(data, Mapping):
            raise object_error(path, f"must be a tensor object, got {data!r}")
        if not data.keys() <= _TENSOR_KEYS:
            unknown = sorted(set(data) - _TENSOR_KEYS)
            raise object_error(path, f"unknown tensor key {unknown[0]!r}")
        for name in ("shape", "dtype"):
            if data.get(name) is None:
                raise field_error(path, ValueError(f"{name}: missing"))
        try:
            omitted = "format" not in data
            return cls(
                shape=data["shape"],
                dtype=data["dtype"],
                format="ND" if omitted else data["format"],
                values=data.get("values"),
                format_defaulted=omitted,
            )
        except ValueError as error:
            raise field_error(path, error) from None

    def to_json(self) -> dict[str, Any]:
        """The tensor's JSON object; ``TensorSpec.from_json(x.to_json()) == x``.

        Never raises.

        Returns:
            ``shape``, ``dtype``, ``format`` unless it was defaulted, ``values`` if any.

        Examples:
            >>> from profstore import TensorSpec
            >>> TensorSpec((4,), "int64", "ND", (1, 2, 3, 4)).to_json()
            {'shape': [4], 'dtype': 'int64', 'format': 'ND', 'values': [1, 2, 3, 4]}
        """
        out: dict[str, Any] = {"shape": list(self.shape), "dtype": self.dtype}
        if not self.format_defaulted:
            out["format"] = self.format
        if self.values is not None:
            out["values"] = list(self.values)
        return out
