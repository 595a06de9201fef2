"""The canonical leaf-operator descriptor (DESIGN §3): ``LeafOp``, ``TensorSpec``, ``LeafContext``.

All three are frozen and hashable so that lookups can be cached on them. Constructors
normalise and validate (lists become tuples, dtypes become canonical torch names, formats
are upper-cased, kwargs are sorted); every ``ValueError`` names the offending field path,
e.g. ``args[2][0].shape: dimension -3 is negative``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, TypeAlias

from profstore.model.dtypes import canonical_torch_dtype
from profstore.model.leaf_context import LeafContext
from profstore.model.leaf_fields import (
    field_error,
    format_field,
    is_list,
    number_of,
    object_error,
    shape_of,
)
from profstore.model.size_limits import bounded_int, check_nesting, load_json, valid_text

__all__ = ["Arg", "LeafOp", "TensorSpec", "walk_tensors"]

_OPS_PREFIX = "torch.ops."
_TENSOR_KEYS = frozenset({"shape", "dtype", "format", "values"})
_TOP_LEVEL_KEYS = frozenset({"op", "args", "kwargs", "outputs", "context", "id"})


@dataclass(frozen=True)
class TensorSpec:
    """One tensor: shape, canonical torch dtype, memory format, and optionally its values.

    ``format`` None means the caller does not state it (a TensorCast meta tensor carries
    none): the lookup resolves it (store/lookup/format_resolution.py); ``"ND"`` is a stated ND.
    ``format_defaulted``: the format is ND because a JSON descriptor omitted it (DESIGN §3:
    the format defaults to ND); a format policy may still state another one, and its
    ``"infer"`` default makes it unstated again (store/lookup/format_resolution.py)."""

    shape: tuple[int, ...]
    dtype: str
    format: str | None = None
    values: tuple[int | float, ...] | None = None
    format_defaulted: bool = False

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
        """This tensor in format ``fmt``: ``dataclasses.replace(self, format=fmt)`` without
        validating again the fields that are already normalised."""
        if fmt is None:
            raise ValueError("format: must be a non-empty string or null, got None")
        return self._copy(format_field(fmt))

    def unstated(self) -> TensorSpec:
        """This tensor with its format unstated (a policy's ``"infer"`` default)."""
        return self._copy(None)

    def _copy(self, fmt: str | None) -> TensorSpec:
        copy = object.__new__(TensorSpec)
        for name, value in (("shape", self.shape), ("dtype", self.dtype), ("format", fmt),
                            ("values", self.values), ("format_defaulted", False)):
            object.__setattr__(copy, name, value)
        return copy

    @property
    def numel(self) -> int:
        """Element count; 1 for a scalar (shape ``()``)."""
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> TensorSpec:
        """Build from ``{"shape", "dtype", "format"?, "values"?}``; errors start with ``path``.

        An omitted ``"format"`` is ND (``format_defaulted``); ``"format": null`` leaves it
        unstated."""
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
        out: dict[str, Any] = {"shape": list(self.shape), "dtype": self.dtype}
        if not self.format_defaulted:
            out["format"] = self.format
        if self.values is not None:
            out["values"] = list(self.values)
        return out


#: One positional/keyword argument value. A JSON list becomes a tuple (nested as needed).
Arg: TypeAlias = TensorSpec | tuple["Arg", ...] | None | int | float | str | bool


def _arg(value: Any, path: str, depth: int = 0) -> Arg:
    """Normalise one argument: tensor objects -> TensorSpec, lists -> tuples, scalars kept."""
    kind = type(value)
    if kind is dict:
        return _tensor(value, path)
    if kind is float:  # infinities stay: masked_fill(-inf) is a real argument
        return value
    if value is None or isinstance(value, (TensorSpec, bool)):
        return value
    if isinstance(value, str):
        return valid_text(value, path)
    if isinstance(value, Integral):
        return bounded_int(int(value), path)
    if isinstance(value, Real):  # infinities stay: masked_fill(-inf) is a real argument
        return float(value)
    if isinstance(value, Mapping):
        return _tensor(value, path)
    if is_list(value):
        check_nesting(depth + 1, path)
        return tuple(_arg(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
    raise ValueError(f"{path}: unsupported argument {value!r} of type {type(value).__name__}")


def _tensor(value: TensorSpec | Mapping[str, Any], path: str) -> TensorSpec:
    if isinstance(value, TensorSpec):
        return value
    if "shape" not in value:
        raise object_error(path, "an object argument must be a tensor (with 'shape')")
    return TensorSpec.from_json(value, path)


def _arg_to_json(value: Arg) -> Any:
    if isinstance(value, TensorSpec):
        return value.to_json()
    if isinstance(value, tuple):
        return [_arg_to_json(item) for item in value]
    return value


def walk_tensors(value: Arg) -> Iterator[TensorSpec]:
    """The tensors of one argument, nested lists flattened in order."""
    if isinstance(value, TensorSpec):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from walk_tensors(item)


def _args(value: Any) -> tuple[Arg, ...]:
    if not is_list(value):
        raise ValueError(f"args: must be a list, got {value!r}")
    return tuple(_arg(item, f"args[{i}]") for i, item in enumerate(value))


def _kwargs(value: Any) -> tuple[tuple[str, Arg], ...]:
    """Accept a mapping or (name, value) pairs; return the pairs sorted by name."""
    if not is_list(value) and not isinstance(value, Mapping):
        raise ValueError(f"kwargs: must be an object, got {value!r}")
    normalised: dict[str, Arg] = {}
    for pair in value.items() if isinstance(value, Mapping) else value:
        if not is_list(pair) or len(pair) != 2:
            raise ValueError(f"kwargs: {pair!r} is not a (name, value) pair")
        name, item = pair
        if not isinstance(name, str) or not name or name in normalised:
            raise ValueError(f"kwargs: name {name!r} is empty, not a string or repeated")
        valid_text(name, "kwargs")
        normalised[name] = _arg(item, f"kwargs.{name}")
    return tuple(sorted(normalised.items()))


def _outputs(value: Any) -> tuple[TensorSpec, ...]:
    """A list of tensors; a single tensor (object) is accepted too."""
    single = type(value) is dict or isinstance(value, (TensorSpec, Mapping))
    if not single and not is_list(value):
        raise ValueError(f"outputs: must be a list of tensors, got {value!r}")
    items = [("outputs", value)] if single else [(f"outputs[{i}]", v) for i, v in enumerate(value)]
    for path, item in items:
        if type(item) is not dict and not isinstance(item, (TensorSpec, Mapping)):
            raise object_error(path, f"must be a tensor object, got {item!r}")
    return tuple(_tensor(item, path) for path, item in items)




@dataclass(frozen=True)
class LeafOp:
    """One independently queryable leaf operator (DESIGN §3).

    ``args`` mirror the operator's positional arguments one to one (DESIGN §8);
    ``kwargs`` are ``(name, value)`` pairs sorted by name (a mapping is accepted).
    """

    op: str
    args: tuple[Arg, ...] = ()
    kwargs: tuple[tuple[str, Arg], ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    context: LeafContext = LeafContext()

    def __hash__(self) -> int:
        """Computed once per object: a leaf keys every cache of a lookup, and hashing it
        walks every tensor. Kept out of pickles (string hashes differ per process)."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.op, self.args, self.kwargs, self.outputs, self.context))
            self.__dict__["_hash"] = cached
        return cached

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_hash", "_tensor_inputs")}


    def __post_init__(self) -> None:
        if self.op is None:
            raise ValueError("op: missing")
        op = self.op.strip() if isinstance(self.op, str) else ""
        op = op[len(_OPS_PREFIX) :] if op.startswith(_OPS_PREFIX) else op
        if not op:
            raise ValueError(f"op: must be a non-empty string, got {self.op!r}")
        valid_text(op, "op")
        context = self.context
        if not isinstance(context, LeafContext):  # None or a JSON object
            context = LeafContext.from_json(context, "context")
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", _args(self.args))
        object.__setattr__(self, "kwargs", _kwargs(self.kwargs))
        object.__setattr__(self, "outputs", _outputs(self.outputs))
        object.__setattr__(self, "context", context)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> LeafOp:
        """Parse a descriptor given as a dict or a JSON string (DESIGN §3)."""
        if isinstance(data, str):
            data = load_json(data)
        if not isinstance(data, Mapping):
            raise ValueError(f"descriptor: must be a JSON object, got {type(data).__name__}")
        if not data.keys() <= _TOP_LEVEL_KEYS:
            unknown = sorted(set(data) - _TOP_LEVEL_KEYS)
            known = ", ".join(sorted(_TOP_LEVEL_KEYS))
            raise ValueError(f"descriptor: unknown key {unknown[0]!r}; known: {known}")
        if data.get("kwargs") is not None and not isinstance(data["kwargs"], Mapping):
            raise ValueError(f"kwargs: must be an object, got {data['kwargs']!r}")
        # Raw JSON values: __post_init__ validates and normalises each field.
        given: dict[str, Any] = {"op": data.get("op"), "context": data.get("context")}
        given.update((k, data[k]) for k in ("args", "kwargs", "outputs") if data.get(k) is not None)
        return cls(**given)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; ``LeafOp.from_json(x.to_json()) == x``. Defaults are omitted."""
        out: dict[str, Any] = {
            "op": self.op,
            "args": [_arg_to_json(value) for value in self.args],
        }
        if self.kwargs:
            out["kwargs"] = {name: _arg_to_json(value) for name, value in self.kwargs}
        out["outputs"] = [tensor.to_json() for tensor in self.outputs]
        context = self.context.to_json()
        if context:
            out["context"] = context
        return out

    def with_tensors(self, args: tuple[Arg, ...], kwargs: tuple[tuple[str, Arg], ...],
                     outputs: tuple[TensorSpec, ...]) -> LeafOp:
        """This leaf with its arguments, keywords and outputs replaced by values of this
        leaf in which only tensors were swapped for other tensors (lookup/format_resolution.py fills
        formats so): already normalised, they are not validated again."""
        copy = object.__new__(LeafOp)
        for name, value in (("op", self.op), ("args", args), ("kwargs", kwargs),
                            ("outputs", outputs), ("context", self.context)):
            object.__setattr__(copy, name, value)
        return copy

    def kwarg(self, name: str, default: Any = None) -> Any:
        """The keyword argument ``name``, or ``default`` when it was not given."""
        for key, value in self.kwargs:
            if key == name:
                return value
        return default

    def arg(self, index: int, default: Any = None) -> Any:
        """The positional argument at ``index`` (Python indexing), or ``default`` when absent.

        A present ``None`` argument is returned as ``None``, not replaced by ``default``.
        """
        try:
            return self.args[index]
        except IndexError:
            return default

    def tensor_inputs(self) -> tuple[TensorSpec, ...]:
        """Tensors among the positional args, in order, lists flattened; non-tensors skipped
        (found once per leaf, kept like the hash: the base lookup and the path read them)."""
        found: tuple[TensorSpec, ...] | None = self.__dict__.get("_tensor_inputs")
        if found is None:
            found = self.__dict__["_tensor_inputs"] = self._find_tensor_inputs()
        return found

    def _find_tensor_inputs(self) -> tuple[TensorSpec, ...]:
        tensors: list[TensorSpec] = []
        for value in self.args:
            if isinstance(value, TensorSpec):  # the common argument, without a generator
                tensors.append(value)
            elif isinstance(value, tuple):
                tensors.extend(walk_tensors(value))
        return tuple(tensors)
