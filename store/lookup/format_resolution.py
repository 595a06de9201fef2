"""Memory formats a leaf does not state, resolved before a path reads them.

A TensorCast meta tensor carries no memory format, but several paths keep the format in
their regime (MatMul's ``formats``, DispatchFFNCombine's weight layout, ...). A JSON
descriptor that omits a tensor's format states none, and DESIGN §3 reads that as ND
(``TensorSpec.format_defaulted``) unless the policy (per-op format or default) or the
mapping's ``expected_input_formats`` give one; the policy default ``"infer"`` makes it
unstated. What nothing restates stays ND (``format_source: default``). A tensor whose
``format`` is None is resolved in this order (docs/adr/0047-unstated-formats.md):

1. ``policy``: a ``FormatPolicy`` the caller passes (per op and argument, then a per-run
   default);
2. ``mapping``: the entry's ``expected_input_formats`` (by tensor-input position);
3. ``inferred``: from the measured rows (``wrapper.Dispatcher``): every assignment of
   the formats the kernel's rows hold to the unstated tensors that change the target
   regime is tried; the answer stands when exactly one latency comes out, and a miss
   (``format_ambiguous``) naming the candidates and how to state a format otherwise.

The source is recorded as ``details["format_source"]``: ``stated`` when the leaf stated
every format the answer depended on, else the weakest source used.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from profstore.model.leaf import LeafOp, walk_tensors
from profstore.model.mapping import MappingEntry
from profstore.model.tensor_spec import TensorSpec

KNOWN_FORMATS = frozenset({"ND", "FRACTAL_NZ", "NCHW", "NHWC", "NC1HWC0", "FRACTAL_Z",
                           "NDHWC", "NCDHW", "NDC1HWC0", "FRACTAL_Z_3D"})
"""Formats a policy may name (Ascend's format names as the CSVs spell them)."""

INFER = "infer"
"""A policy default that leaves every omitted or unstated format to the mapping and the
measured rows (the unstated resolution) instead of the descriptor's ND default."""

_UNIT = re.compile(r"^(?:args\[(?P<arg>[0-9]+)\]|outputs\[(?P<out>[0-9]+)\]|"
                   r"kwargs\.(?P<kw>[A-Za-z_][A-Za-z0-9_]*))$")
_POLICY_KEYS = frozenset({"default", "ops"})


class FormatSource(str, enum.Enum):
    """Where a resolved format came from, strongest first."""

    STATED = "stated"
    DEFAULT = "default"
    POLICY = "policy"
    MAPPING = "mapping"
    INFERRED = "inferred"


_STRENGTH = {source: i for i, source in enumerate(FormatSource)}


def check_format(value: Any, path: str) -> str:
    """A known format name (upper-cased); ``ValueError`` naming ``path`` otherwise."""
    text = value.strip().upper() if isinstance(value, str) else None
    if text not in KNOWN_FORMATS:
        raise ValueError(f"{path}: unknown format {value!r}; known: "
                         f"{', '.join(sorted(KNOWN_FORMATS))}")
    return text


def unit_name(key: Any, path: str) -> str:
    """A policy key as a unit name: ``2`` / ``"2"`` → ``args[2]``, ``"name"`` →
    ``kwargs.name``, ``args[i]``, ``outputs[i]`` and ``kwargs.x`` as they are."""
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        return f"args[{key}]"
    if isinstance(key, str):
        if key.isdigit():
            return f"args[{int(key)}]"
        if _UNIT.match(key):
            return key
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            return f"kwargs.{key}"
    raise ValueError(f"{path}: {key!r} names no argument (an argument index, a keyword "
                     "name, args[i], outputs[i] or kwargs.name)")


@dataclass(frozen=True)
class FormatPolicy:
    """Formats a caller states for tensors its leaves leave unstated.

    ``ops``: op → {unit: format} (a unit is an argument index, a keyword name,
    ``outputs[i]``); ``default``: the format of every other unstated (or defaulted) tensor of
    the run, or ``"infer"`` for the unstated resolution of every tensor whose format the
    descriptor did not state.
    Construction validates every format and key (``ValueError`` naming it);
    ``check_ops`` validates the op names against a version's mapping."""

    default: str | None = None
    ops: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        default = self.default
        if default is not None and str(default).strip().lower() == INFER:
            default = INFER
        elif default is not None:
            default = check_format(default, "format_policy.default")
        if not isinstance(self.ops, Mapping):
            raise ValueError(f"format_policy.ops: must be a mapping, got {self.ops!r}")
        ops: dict[str, dict[str, str]] = {}
        for op, units in self.ops.items():
            name = str(op).removeprefix("torch.ops.")
            where = f"format_policy.ops[{op!r}]"
            if not isinstance(units, Mapping) or not units:
                raise ValueError(f"{where}: must map arguments to formats, got {units!r}")
            ops[name] = {unit_name(k, where): check_format(v, f"{where}[{k!r}]")
                         for k, v in units.items()}
        object.__setattr__(self, "default", default)
        object.__setattr__(self, "ops", ops)

    @classmethod
    def from_json(cls, data: Any) -> FormatPolicy:
        """``{"default": "ND", "ops": {"aten.mm.default": {"1": "FRACTAL_NZ"}}}``."""
        if isinstance(data, FormatPolicy):
            return data
        if not isinstance(data, Mapping):
            raise ValueError(f"format_policy: must be an object, got {data!r}")
        unknown = sorted(set(data) - _POLICY_KEYS)
        if unknown:
            raise ValueError(f"format_policy: unknown key {unknown[0]!r}; known: default, ops")
        return cls(data.get("default"), data.get("ops") or {})

    def check_ops(self, known: Iterable[str], version: str) -> None:
        known = set(known)
        for op in self.ops:
            if op not in known:
                raise ValueError(f"format_policy.ops: unknown op {op!r} (not in the "
                                 f"{version} mapping)")

    def __hash__(self) -> int:
        return hash((self.default, tuple(sorted((op, tuple(sorted(u.items())))
                                                for op, u in self.ops.items()))))


def units_of(leaf: LeafOp) -> dict[str, tuple[TensorSpec, ...]]:
    """Every argument, keyword and output holding tensors, with its tensors."""
    found: dict[str, tuple[TensorSpec, ...]] = {}
    for i, value in enumerate(leaf.args):
        tensors = tuple(walk_tensors(value))
        if tensors:
            found[f"args[{i}]"] = tensors
    for name, value in leaf.kwargs:
        tensors = tuple(walk_tensors(value))
        if tensors:
            found[f"kwargs.{name}"] = tensors
    for i, tensor in enumerate(leaf.outputs):
        found[f"outputs[{i}]"] = (tensor,)
    return found


def unstated(leaf: LeafOp) -> list[str]:
    """Units holding a tensor whose format is not stated."""
    return list(unstated_units(leaf))


def unstated_units(leaf: LeafOp) -> dict[str, tuple[TensorSpec, ...]]:
    """``units_of`` restricted to the units holding a tensor whose format is not stated."""
    return {unit: tensors for unit, tensors in units_of(leaf).items()
            if any(t.format is None for t in tensors)}


def unstated_below_rank(leaf: LeafOp, rank: int) -> bool:
    """Whether every tensor of ``leaf`` whose format is unstated has fewer than ``rank``
    dimensions (``units_of``'s tensors, without naming the units)."""
    for tensor in leaf.tensor_inputs():
        if tensor.format is None and len(tensor.shape) >= rank:
            return False
    for tensor in leaf.outputs:
        if tensor.format is None and len(tensor.shape) >= rank:
            return False
    return not leaf.kwargs or all(t.format is not None or len(t.shape) < rank
                                  for _, value in leaf.kwargs for t in walk_tensors(value))


@dataclass(frozen=True)
class Prefilled:
    """A leaf after policy and mapping, with the source of each unit they filled."""

    leaf: LeafOp
    sources: Mapping[str, FormatSource]

    def source(self, inferred: bool = False) -> FormatSource:
        """The weakest source the answer used."""
        if inferred:
            return FormatSource.INFERRED
        return max(self.sources.values(), key=_STRENGTH.__getitem__, default=FormatSource.STATED)


def prefill(leaf: LeafOp, entry: MappingEntry, policy: FormatPolicy | None) -> Prefilled:
    """Settle defaulted formats (module docstring), then fill unstated ones from the
    policy, then from the mapping's expected formats."""
    leaf, sources = _settle_defaults(leaf, policy, entry)
    if policy is None and not entry.expected_input_formats:
        return Prefilled(leaf, sources)  # nothing to fill from: every unit stays as it is
    pending = unstated(leaf)
    if not pending:
        return Prefilled(leaf, sources)
    assignment: dict[str, str] = {}
    per_op = policy.ops.get(leaf.op, {}) if policy is not None else {}
    default = policy.default if policy is not None and policy.default != INFER else None
    expected = _expected_by_unit(leaf, entry)
    for unit in pending:
        if unit in per_op:
            assignment[unit], sources[unit] = per_op[unit], FormatSource.POLICY
        elif default is not None:
            assignment[unit], sources[unit] = default, FormatSource.POLICY
        elif unit in expected:
            assignment[unit], sources[unit] = expected[unit], FormatSource.MAPPING
    return Prefilled(leaf.with_formats(assignment), sources)


def _settle_defaults(leaf: LeafOp, policy: FormatPolicy | None,
                     entry: MappingEntry) -> tuple[LeafOp, dict[str, FormatSource]]:
    """The leaf with its defaulted tensors unstated again where the policy or the mapping's
    expected formats speak for them (DESIGN §3: those apply where the leaf states no
    format), and the units that keep their ND default marked ``default``."""
    defaulted = [unit for unit, tensors in units_of(leaf).items()
                 if any(t.format_defaulted for t in tensors)] if _has_defaults(leaf) else []
    if not defaulted:
        return leaf, {}
    per_op = policy.ops.get(leaf.op, {}) if policy is not None else {}
    default = policy.default if policy is not None else None
    expected = _expected_by_unit(leaf, entry) if entry.expected_input_formats else {}
    reopened = [unit for unit in defaulted
                if unit in per_op or unit in expected or default is not None]
    kept = {unit: FormatSource.DEFAULT for unit in defaulted if unit not in reopened}
    return _map_defaulted(leaf, set(reopened)), kept


def _has_defaults(leaf: LeafOp) -> bool:
    return any(t.format_defaulted for t in leaf.tensor_inputs()) or any(
        t.format_defaulted for t in leaf.outputs) or any(
        t.format_defaulted for _, value in leaf.kwargs for t in walk_tensors(value))


def _map_defaulted(leaf: LeafOp, units: set[str]) -> LeafOp:
    """``leaf`` with the defaulted tensors of ``units`` unstated."""
    if not units:
        return leaf

    def reopen(value: Any, unit: str) -> Any:
        if unit not in units:
            return value
        if isinstance(value, TensorSpec):
            return value.unstated() if value.format_defaulted else value
        if isinstance(value, tuple):
            return tuple(reopen(item, unit) for item in value)
        return value

    args = tuple(reopen(v, f"args[{i}]") for i, v in enumerate(leaf.args))
    kwargs = tuple((n, reopen(v, f"kwargs.{n}")) for n, v in leaf.kwargs)
    outputs = tuple(reopen(t, f"outputs[{i}]") for i, t in enumerate(leaf.outputs))
    return leaf.with_tensors(args, kwargs, outputs)


def _expected_by_unit(leaf: LeafOp, entry: MappingEntry) -> dict[str, str]:
    """The entry's expected input formats for the single-tensor arguments at those
    tensor-input positions (lists of tensors are left to inference)."""
    expected = entry.expected_input_formats or ()
    found: dict[str, str] = {}
    position = 0
    for i, value in enumerate(leaf.args):
        count = len(tuple(walk_tensors(value)))
        if count == 1 and isinstance(value, TensorSpec) and position < len(expected):
            fmt = expected[position].strip().upper()
            if fmt:
                found[f"args[{i}]"] = fmt
        position += count
    return found
