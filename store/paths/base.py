"""The one small interface every capability path implements.

A path says how to read a regime and axes from a CSV row (ingest calls
``row_regime``) and from a leaf operator (lookup calls ``target_regime``). The two
live side by side in the path's module so they cannot drift. Everything else —
SQL candidates, geometry, guards, details — is the engine's, shared by all paths.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from profstore.model.clock_cache import ClockCache
from profstore.model.csv_row import CsvRow
from profstore.model.dtypes import to_profiler_dtype
from profstore.model.result import Reason
from profstore.model.shapes import Shape, logical_shape
from profstore.model.tensor_spec import TensorSpec

if TYPE_CHECKING:
    from profstore.model.leaf import LeafOp
    from profstore.model.mapping import KernelPolicy, MappingEntry


@dataclass(frozen=True)
class Extraction:
    """A regime (exact-match fields) and a coordinate (continuous axes).

    ``semantic`` optionally distinguishes rows that share regime and coordinate
    without being a regime field (per-request KV lengths); lookups that carry the
    same information can pick the matching row, and rows that differ in it are never
    merged into one median.
    """

    regime: Mapping[str, Any]
    axes: tuple[float, ...]
    semantic: str | None = None

    @functools.cached_property
    def regime_key(self) -> str:
        """Spelled once per target: a lookup asks it at every step (exact, slice,
        candidates, triangulation), and a miss for each nearest regime again."""
        return regime_key(self.regime)


def regime_key(regime: Mapping[str, Any]) -> str:
    """Canonical text of a regime: the same fields give the same key on both sides.

    Remembered for regimes of ``str`` fields holding ``str`` or ``int`` values (every
    lookup of a regime spells the same text, and ``json.dumps`` costs more than the rest
    of a cached 1-D target's extraction): among such items, equal means equal JSON, while
    ``1``, ``1.0`` and ``True`` (or ``0.0`` and ``-0.0``) are equal yet spelled apart, so
    a regime holding any other value is spelled each time."""
    items = tuple(regime.items())
    plain = _PLAIN_KEYS.issuperset(map(type, regime)) and \
        _PLAIN_VALUES.issuperset(map(type, regime.values()))
    if plain:
        found = _KEY_TEXTS.get(items)
        if found is not None:
            return found
    text = json.dumps(regime, sort_keys=True, separators=(",", ":"), default=list)
    if plain:
        _KEY_TEXTS.put(items, text)
    return text


_KEY_TEXTS: ClockCache[tuple[Any, ...], str] = ClockCache(4096)
"""``regime_key``'s remembered texts, by the regime's items in their order."""
_PLAIN_KEYS, _PLAIN_VALUES = frozenset({str}), frozenset({str, int})
"""The key and value types of a regime whose text ``regime_key`` remembers."""


@dataclass(frozen=True)
class Operand:
    """One tensor as a path compares it: logical shape, profiler dtype, memory format."""

    shape: Shape
    dtype: str
    format: str


def target_operand(tensor: TensorSpec, fmt: str | None,
                   float16_as: str = "DT_BF16") -> Operand:
    """A leaf tensor in format ``fmt`` as the CSV would show it (FRACTAL_NZ restored, profiler
    dtype name); raises ValueError for a dtype the profiler has no name for."""
    fmt = fmt or "ND"  # still unstated only where the format is not in the regime
    return Operand(logical_shape(tensor.shape, fmt),
                   to_profiler_dtype(tensor.dtype, float16_as=float16_as), fmt)


@dataclass(frozen=True)
class Refusal:
    """Why a row or a target cannot enter a path."""

    reason: Reason
    message: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RowContext:
    """What ingest knows about a row beyond its cells."""

    kernel_type: str
    policy: KernelPolicy
    tc_input_counts: frozenset[int] = frozenset()
    entries: tuple[MappingEntry, ...] = ()
    """The version's mapping entries naming this kernel, in mapping order (for fields a
    path compares between the CSV and the mapping, such as an API path)."""


@dataclass(frozen=True)
class TargetContext:
    """What lookup knows about a target beyond the leaf: the mapping entry and the kernel tried."""

    entry: MappingEntry
    kernel_type: str
    policy: KernelPolicy


AxisTransform = Callable[[float], float]
T = TypeVar("T")


class OperatorPath:
    """Base class of the capability paths. Subclasses set the class attributes and
    implement the two extraction methods."""

    name: ClassVar[str]
    selectors: ClassVar[frozenset[str]]
    """Mapping selectors this path serves; the registry builds the dispatch vocabulary
    from them, so a path is reachable exactly through what it declares here."""
    selector_field: ClassVar[str] = "query_mode"
    """The op_mapping field that names this path's selectors (``query_mode``, or
    ``compute_subcategory`` for the quantisation paths)."""
    axis_names: ClassVar[tuple[str, ...]]
    axis_groups: ClassVar[tuple[tuple[int, ...], ...]]
    ceiling: ClassVar[int]
    owns_exact: ClassVar[bool] = False
    kernels: ClassVar[frozenset[str]] = frozenset()
    """Kernels this path always interprets at ingest, whatever the mapping says."""
    specialized_base: ClassVar[bool] = False
    """The path's exact coordinate is the base lookup itself (the attention paths, whose
    base lookups come with their prerequisites): with interpolation disabled it still
    answers. Other paths then return the Phase 1 base result (RFC §3.1, §8.2)."""
    format_anchor_axes: ClassVar[frozenset[str]] = frozenset()
    """Axes that describe the tensors whose format is in the regime (MatMul: K and N, the
    weight): with formats unstated, a format whose rows measure the target on these axes
    is preferred over one that reaches it only by interpolating across them
    (store/lookup/format_inference.py)."""
    formats_as_layout: ClassVar[bool] = False
    """The target reads a tensor's format only through ``shapes.logical_shape`` (and
    rank-preserving kernel normalisers): then no format changes the target of a leaf
    whose unstated tensors all have rank < 4 (a FRACTAL_NZ layout has four dimensions),
    and the lookup need not read the kernel's measured formats for it."""
    target_reads_formats: ClassVar[bool] = True
    """False when ``target_regime`` never reads a tensor's format: then the lookup tries
    no format for an unstated tensor (none can change the target), it reads ND."""
    phase1_kernels: ClassVar[frozenset[str]] = frozenset()
    """Kernels for which this path, not generic compute, serves a plain mapping (Phase 1
    MatMul M/K/N); empty for Phase 2 paths, which are reached only by their selectors."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("row_regime", "target_regime"):
            if name in cls.__dict__:
                setattr(cls, name, _returning_refusals(cls.__dict__[name]))

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        raise NotImplementedError

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        raise NotImplementedError

    def axis_transforms(self, policy: KernelPolicy) -> tuple[AxisTransform | None, ...]:
        """Per-axis coordinate transform applied before geometry (identity by default)."""
        return (None,) * len(self.axis_names)

    def groups_for(self, target: Extraction) -> tuple[tuple[int, ...], ...]:
        """Axis groups usable for this target, low dimension first."""
        n = len(target.axes)
        return tuple(g for g in self.axis_groups if max(g) < n)

    def exact_owner_for(self, leaf: LeafOp) -> bool:
        """Whether this leaf skips the base exact lookup (RFC §3.1)."""
        return self.owns_exact

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        """Capability fields for the result details (EP, scale mode, …)."""
        return {}


def refuse(reason: Reason, message: str, **fields: Any) -> Refusal:
    return Refusal(reason, message, dict(fields))


class Refused(Exception):
    """A refusal on its way out of a path's ``row_regime`` / ``target_regime``: helpers
    return a ``Refusal`` and the path's steps ``unwrap`` them, so no step writes the
    early return by hand; the base class turns the exception back into the result."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def unwrap(value: T | Refusal) -> T:
    """``value``, or raise ``Refused`` when it is a refusal."""
    if isinstance(value, Refusal):
        raise Refused(value)
    return value


def _returning_refusals(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Refused as refused:
            return refused.refusal

    return run
