"""The canonical leaf-operator descriptor (DESIGN §3): ``LeafOp`` and its arguments, made
of ``TensorSpec``s (store/model/tensor_spec.py) and a ``LeafContext``
(store/model/leaf_context.py).

All three are frozen and hashable so that lookups can be cached on them. Constructors
normalise and validate (lists become tuples, dtypes become canonical torch names, formats
are upper-cased, kwargs are sorted); every ``ValueError`` names the offending field path,
e.g. ``args[2][0].shape: dimension -3 is negative``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from numbers import Integral, Real
from typing import Any, TypeAlias

from profstore.model.leaf_context import LeafContext
from profstore.model.leaf_fields import is_list, object_error, op_name
from profstore.model.size_limits import bounded_int, check_nesting, load_json, valid_text
from profstore.model.tensor_spec import TensorSpec

__all__ = ["Arg", "LeafOp", "walk_tensors"]

_TOP_LEVEL_KEYS = frozenset({"op", "args", "kwargs", "outputs", "context", "id"})


#: One positional/keyword argument value. A JSON list becomes a tuple (nested as needed).
Arg: TypeAlias = TensorSpec | tuple["Arg", ...] | None | int | float | str | bool


def _arg(value: Any, path: str, depth: int = 0) -> Arg:
    """Normalise one argument: tensor objects -> TensorSpec, lists -> tuples, scalars kept."""
    kind = type(value)
    if kind is dict:
        return _tensor(value, path)
    if kind is float:  # infinities stay: masked_fill(-inf) is a real argument
        return value
    if kind is int:
        return bounded_int(value, path)
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
    ``kwargs`` are ``(name, value)`` pairs sorted by name (a mapping is accepted). The
    constructor takes JSON-like values too (dicts for tensors, lists) and normalises them.

    Raises:
        ValueError: a field is invalid; the message names its path
            (``args[2][0].shape: dimension -3 is negative``).

    Examples:
        >>> from profstore import LeafOp, TensorSpec
        >>> leaf = LeafOp("torch.ops.aten.mm.default",
        ...               args=[{"shape": [200, 7168], "dtype": "bfloat16"},
        ...                     TensorSpec((7168, 4096), "bfloat16")])
        >>> leaf.op, [t.shape for t in leaf.tensor_inputs()]
        ('aten.mm.default', [(200, 7168), (7168, 4096)])
    """

    op: str
    """The operator's name (``aten.mm.default``; a leading ``torch.ops.`` is dropped)."""
    args: tuple[Arg, ...] = ()
    """The positional arguments: tensors, tuples (lists) of them, None and scalars."""
    kwargs: tuple[tuple[str, Arg], ...] = ()
    """The keyword arguments as ``(name, value)`` pairs sorted by name."""
    outputs: tuple[TensorSpec, ...] = ()
    """The output tensors."""
    context: LeafContext = LeafContext()
    """What the op does not carry itself (EP and TP sizes, phase, request lengths)."""

    def __hash__(self) -> int:
        """Computed once per object: a leaf keys every cache of a lookup, and hashing it
        walks every tensor. Kept out of pickles (string hashes differ per process)."""
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash((self.op, self.args, self.kwargs, self.outputs, self.context))

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_hash", "_tensor_inputs")}


    def __post_init__(self) -> None:
        op = op_name(self.op)
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
        """Parse a descriptor given as a dict or a JSON string (DESIGN §3).

        Args:
            data: ``{"op", "args"?, "kwargs"?, "outputs"?, "context"?, "id"?}`` (``id``
                is the caller's and ignored), or its JSON text.

        Returns:
            The validated leaf.

        Raises:
            ValueError: malformed JSON, an unknown key or an invalid field, named by its
                path.

        Examples:
            >>> from profstore import LeafOp
            >>> leaf = LeafOp.from_json('''{"op": "aten.add.Tensor", "args": [
            ...     {"shape": [100, 2048], "dtype": "bfloat16"},
            ...     {"shape": [100, 2048], "dtype": "bfloat16"}],
            ...     "context": {"tp_size": 8}}''')
            >>> leaf.op, leaf.args[0].shape, leaf.context.tp_size
            ('aten.add.Tensor', (100, 2048), 8)
            >>> LeafOp.from_json({"op": "aten.add.Tensor", "args": [{"shape": [-3]}]})
            Traceback (most recent call last):
            ValueError: args[0].dtype: missing
        """
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
        """A JSON-ready dict; ``LeafOp.from_json(x.to_json()) == x``. Defaults are omitted.

        Never raises.

        Returns:
            ``op``, ``args``, ``kwargs`` (when any), ``outputs`` and ``context`` (when any
            field is set).

        Examples:
            >>> from profstore import LeafOp
            >>> LeafOp("aten.mm.default", args=[{"shape": [2, 3], "dtype": "float16"}],
            ...        kwargs={"alpha": 1}).to_json()
            {'op': 'aten.mm.default', 'args': [{'shape': [2, 3], 'dtype': 'float16'}],
             'kwargs': {'alpha': 1}, 'outputs': []}
        """
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
        """This leaf with its tensors swapped for others (formats filled in, say).

        A validated copy (``dataclasses.replace``): the values are normalised like the
        constructor's.

        Args:
            args: the positional arguments.
            kwargs: the keyword arguments, as ``(name, value)`` pairs sorted by name.
            outputs: the output tensors.

        Returns:
            A copy with those values and this leaf's op and context.

        Raises:
            ValueError: a value is invalid; the message names its path, as the
                constructor's does.

        Examples:
            >>> from profstore import LeafOp
            >>> leaf = LeafOp("aten.abs.default", args=[{"shape": [4], "dtype": "float16"}])
            >>> copy = leaf.with_tensors((leaf.args[0].with_format("NC1HWC0"),), (), ())
            >>> copy.args[0].format
            'NC1HWC0'
        """
        return replace(self, args=args, kwargs=kwargs, outputs=outputs)

    def with_formats(self, formats: Mapping[str, str]) -> LeafOp:
        """This leaf with the unstated tensors of the named arguments in the given formats.

        Only the formats are validated (``TensorSpec.with_format``): every other value is
        this leaf's own, validated when it was made, and format inference copies a leaf
        for every assignment of formats it tries (docs/adr/0125-format-trials-and-nearest-table.md).

        Args:
            formats: ``{argument: format}``, each argument named by its path (``args[1]``,
                ``kwargs.scale``, ``outputs[0]``); a tensor whose format is stated, or an
                argument not named, is kept as it is.

        Returns:
            The copy (this leaf itself when ``formats`` is empty).

        Raises:
            ValueError: a format is not a non-empty string.

        Examples:
            >>> from profstore import LeafOp
            >>> leaf = LeafOp("aten.mm.default", args=[
            ...     {"shape": [4, 8], "dtype": "float16", "format": None},
            ...     {"shape": [8, 16], "dtype": "float16", "format": "ND"}])
            >>> copy = leaf.with_formats({"args[0]": "fractal_nz", "args[1]": "NC1HWC0"})
            >>> [t.format for t in copy.args]
            ['FRACTAL_NZ', 'ND']
        """
        if not formats:
            return self
        copy = object.__new__(LeafOp)
        for name, value in (
                ("op", self.op),
                ("args", tuple(_filled(v, formats.get(f"args[{i}]"))
                               for i, v in enumerate(self.args))),
                ("kwargs", tuple((n, _filled(v, formats.get(f"kwargs.{n}")))
                                 for n, v in self.kwargs)),
                ("outputs", tuple(_filled(t, formats.get(f"outputs[{i}]"))
                                  for i, t in enumerate(self.outputs))),
                ("context", self.context)):
            object.__setattr__(copy, name, value)
        return copy

    def kwarg(self, name: str, default: Any = None) -> Any:
        """A keyword argument's value.

        Never raises.

        Args:
            name: the keyword.
            default: what to return when the leaf has no such keyword.

        Returns:
            The argument's (normalised) value, or ``default``.

        Examples:
            >>> from profstore import LeafOp
            >>> leaf = LeafOp("aten.sum.dim_IntList", kwargs={"keepdim": True})
            >>> leaf.kwarg("keepdim"), leaf.kwarg("dtype", "same")
            (True, 'same')
        """
        for key, value in self.kwargs:
            if key == name:
                return value
        return default

    def arg(self, index: int, default: Any = None) -> Any:
        """A positional argument's value.

        A present ``None`` argument is returned as ``None``, not replaced by ``default``.
        Never raises.

        Args:
            index: the position (Python indexing: -1 is the last).
            default: what to return when there is no argument at ``index``.

        Returns:
            The argument's (normalised) value, or ``default``.

        Examples:
            >>> from profstore import LeafOp
            >>> leaf = LeafOp("aten.add.Tensor", args=[None, 2.5])
            >>> leaf.arg(0, "absent"), leaf.arg(-1), leaf.arg(5, "absent")
            (None, 2.5, 'absent')
        """
        try:
            return self.args[index]
        except IndexError:
            return default

    def tensor_inputs(self) -> tuple[TensorSpec, ...]:
        """The tensors among the positional arguments, in order, lists flattened.

        Non-tensors are skipped; the tuple is found once per leaf and kept (the base
        lookup and the path both read it). Never raises.

        Returns:
            The tensors.

        Examples:
            >>> from profstore import LeafOp
            >>> leaf = LeafOp("aten.cat.default", args=[[{"shape": [2], "dtype": "int32"},
            ...                                         {"shape": [3], "dtype": "int32"}], 0])
            >>> [t.shape for t in leaf.tensor_inputs()]
            [(2,), (3,)]
        """
        return self._tensor_inputs

    @cached_property
    def _tensor_inputs(self) -> tuple[TensorSpec, ...]:
        tensors: list[TensorSpec] = []
        for value in self.args:
            if isinstance(value, TensorSpec):  # the common argument, without a generator
                tensors.append(value)
            elif isinstance(value, tuple):
                tensors.extend(walk_tensors(value))
        return tuple(tensors)


def _filled(value: Any, fmt: str | None) -> Any:
    """``value`` with its unstated tensors (nested lists too) in format ``fmt``."""
    if fmt is None:
        return value
    if isinstance(value, TensorSpec):
        return value.with_format(fmt) if value.format is None else value
    if isinstance(value, tuple):
        return tuple(_filled(item, fmt) for item in value)
    return value
