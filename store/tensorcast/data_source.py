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
  value, else its ``.format`` attribute (a string or an enum member), else unstated
  (None): the lookup resolves it (lookup/format_resolution.py; ``format_policy=`` states formats).
- Values: an integer tensor with at most ``MAX_VALUE_ELEMENTS`` elements that is not on
  the ``meta`` device carries its values, read through ``.tolist()``; a tensor whose
  data cannot be read (fake tensors) simply carries none.
- EP and TP sizes are not on the op: they come from the constructor into the context.
- ``context=``: a mapping of ``LeafContext`` fields, or a callable of the invocation
  returning one (or None), merged over the constructor's EP/TP sizes for every leaf.
- ``seq_lens_values`` / ``query_lens_values`` kwargs (the real per-request lengths some
  ops carry) fill ``context.kv_lens`` / ``context.query_lens`` (and ``num_requests``)
  when the configured context does not set them.

An op the version maps ``zero_cost`` or ``accepted_miss`` is answered by its name and not
converted at all (its answer reads none of its arguments; ADR 0130): the simulation shapes
are read from its positional tensors, and ``last_leaf`` is None.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeAlias

from profstore.api import Store
from profstore.lookup.format_resolution import FormatPolicy
from profstore.lookup.regime_policy import RegimePolicy
from profstore.model.leaf import LeafOp
from profstore.model.leaf_context import LeafContext
from profstore.model.mapping import VersionMapping, load_mapping, merge_overlay
from profstore.model.result import QueryResult, QuerySource, Reason
from profstore.tensorcast.aliases import with_upstream_aliases
from profstore.tensorcast.convert import (
    FormatOf,
    context_fields,
    invocation_shapes,
    leaf_from_invocation,
)
from profstore.tensorcast.miss_codes import MissCodes, check_style, upstream_miss_code
from profstore.tensorcast.named_answers import NamedAnswers
from profstore.tensorcast.tensorcast_result import (
    ShapeList,
    ShapeMatchInfo,
    TensorCastResult,
    simulation_shapes,
)

__all__ = ["ProfstoreDataSource"]

ContextArg: TypeAlias = "Mapping[str, Any] | LeafContext | Callable[[Any], Any] | None"
"""A fixed context (mapping of ``LeafContext`` fields) or a callable of the invocation."""


def _overlay(value: str | os.PathLike[str] | VersionMapping | None) -> VersionMapping | None:
    if value is None or isinstance(value, VersionMapping):
        return value
    return load_mapping(value)


def _open(db: str | os.PathLike[str] | Store, overlay: VersionMapping | None
          ) -> tuple[Store, bool]:
    """The store to query and whether this data source owns (and so closes) it."""
    if not isinstance(db, Store):
        return Store.open(os.fspath(db), mapping_overlay=overlay), True
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
    it was, ``last_leaf`` the descriptor it asked (None when the op did not convert), and
    ``last_shape_match_info`` its shape debug info. Not thread-safe: like
    TensorCast's own sources, the ``last_*`` attributes describe the most recent call.
    ``details="compact"`` hands TensorCast only the detail keys its consumers read
    (``TensorCastResult.COMPACT_KEYS``; ``all_details`` keeps the rest), as the
    ``profstore tensorcast`` commands do.

    ``miss_codes="upstream"`` makes ``last_miss_reason`` TensorCast's own code for the miss
    where it has one (``wrapper_unmapped``, ``regime_key_unmatched``,
    ``insufficient_filtered_candidates``, ..., chosen by the path the miss details name;
    table in ``profstore.tensorcast.miss_codes``), so TensorCast's reports label profstore's
    misses as they label their own; profstore's code stays in ``last_result.reason`` and
    in ``last_miss_details["profstore_reason"]``. The
    default ``"profstore"`` reports profstore's code. Anything else is a ``ValueError``.

    ``regime_policy`` states regime equivalences (``profstore.lookup.regime_policy``: a
    ``RegimePolicy`` or its JSON object), checked here against the version.

    Args:
        db: a SQLite file path or SQLAlchemy URL (the source opens and closes the store),
            or an open ``Store`` (shared; not closed by ``close``).
        version: the version to answer from.
        ep_size: the expert-parallel size every leaf's context carries.
        tp_size: the tensor-parallel size every leaf's context carries.
        interpolation: False answers measured rows only.
        mapping_overlay: a YAML file or mapping merged over the version's op mapping.
        format_of: a hook giving a tensor's memory format (None: not stated).
        context: ``LeafContext`` fields for every leaf (a mapping or a ``LeafContext``),
            or a callable of the invocation returning such a mapping (or None).
        format_policy: formats stated for tensors that state none.
        details: ``"full"`` or ``"compact"``.
        miss_codes: ``"profstore"`` or ``"upstream"``.
        regime_policy: stated regime equivalences.

    Raises:
        ValueError: an unknown version (the message lists the ingested ones), a bad
            ``details``, ``miss_codes`` or context field, or a policy the version
            refutes.
        FileNotFoundError: no database at ``db``.

    Examples:
        >>> import torch
        >>> from types import SimpleNamespace
        >>> def meta(*shape):
        ...     return torch.empty(*shape, dtype=torch.bfloat16, device="meta")
        >>> mm = SimpleNamespace(func=torch.ops.aten.mm.default, kwargs={},
        ...                      args=(meta(200, 7168), meta(7168, 4096)), out=meta(200, 4096))
        >>> with ProfstoreDataSource(demo_db, "v0.18", tp_size=8) as source:
        ...     answer = source.lookup(mm)
        >>> round(answer.latency_us, 6), answer.source.value
        (81.846998, 'INTERPOLATED')
        >>> ProfstoreDataSource(demo_db, "v9")
        Traceback (most recent call last):
        ValueError: version 'v9' is not in the database; ingested: v0.18, hccl-v8.5
    """

    def __init__(self, db: str | os.PathLike[str] | Store, version: str, *,
                 ep_size: int | None = None, tp_size: int | None = None,
                 interpolation: bool = True,
                 mapping_overlay: str | os.PathLike[str] | VersionMapping | None = None,
                 format_of: FormatOf | None = None, context: ContextArg = None,
                 format_policy: FormatPolicy | Mapping[str, Any] | None = None,
                 details: str = "full", miss_codes: MissCodes = "profstore",
                 regime_policy: RegimePolicy | Mapping[str, Any] | None = None) -> None:
        if details not in ("full", "compact"):
            raise ValueError(f"details: 'full' or 'compact', got {details!r}")
        self.compact = details == "compact"
        self.miss_codes = check_style(miss_codes)
        base = LeafContext(ep_size=ep_size, tp_size=tp_size)
        self._context_of = context if callable(context) else None
        if not callable(context):
            base = replace(base, **context_fields(context))  # a bad field raises here
        self.context = base
        self.format_policy = (None if format_policy is None
                              else FormatPolicy.from_json(format_policy))
        self.regime_policy = (None if regime_policy is None
                              else RegimePolicy.from_json(regime_policy))
        self.store, self._owns_store = _open(db, _overlay(mapping_overlay))
        self.version = version
        self.interpolation = bool(interpolation)
        self.format_of = format_of
        self.last_miss_reason: str | None = None
        self.last_miss_details: dict[str, Any] | None = None
        self.last_result: QueryResult | None = None
        self.last_leaf: LeafOp | None = None
        self.last_shape_match_info: ShapeMatchInfo | None = None
        self._named = NamedAnswers(lambda result: self._answer(result, None))
        profile = self.store.profile(version)
        if profile is None:
            known = ", ".join(self.store.versions()) or "none"
            self.close()
            raise ValueError(f"version {version!r} is not in the database; ingested: {known}")
        try:
            if self.format_policy is not None:
                self.format_policy.check_ops(profile.mapping.entries, version)
            if self.regime_policy is not None:
                self.store.check_regime_policy(self.regime_policy, profile)
        except ValueError:
            self.close()
            raise

    def context_for(self, op_invoke_info: Any) -> LeafContext:
        """The configured context of one invocation (the callable's answer merged in).

        Args:
            op_invoke_info: TensorCast's invocation (``func``, ``args``, ``kwargs``,
                ``out``).

        Returns:
            The constructor's context, with the ``context`` callable's fields for this
            invocation over it.

        Raises:
            ValueError: the callable returned an unknown field or a bad value.

        Examples:
            >>> from types import SimpleNamespace
            >>> with ProfstoreDataSource(demo_db, "v0.18", tp_size=8,
            ...                          context=lambda op: {"phase": "decode"}) as source:
            ...     context = source.context_for(SimpleNamespace(func="aten.mm.default"))
            >>> context.tp_size, context.phase
            (8, 'decode')
        """
        if self._context_of is None:
            return self.context
        given = self._context_of(op_invoke_info)
        return replace(self.context, **context_fields(given, "context(op_invoke_info)"))

    def to_leaf(self, op_invoke_info: Any) -> LeafOp:
        """The leaf descriptor this source queries for an invocation.

        Args:
            op_invoke_info: TensorCast's invocation (``func``, ``args``, ``kwargs``,
                ``out``).

        Returns:
            The descriptor (``leaf_from_invocation`` with this source's context).

        Raises:
            ValueError: the invocation does not convert; the message names the field.

        Examples:
            >>> import torch
            >>> from types import SimpleNamespace
            >>> def meta(*shape):
            ...     return torch.empty(*shape, dtype=torch.bfloat16, device="meta")
            >>> mm = SimpleNamespace(func=torch.ops.aten.mm.default, kwargs={},
            ...                      args=(meta(200, 7168), meta(7168, 4096)), out=meta(200, 4096))
            >>> with ProfstoreDataSource(demo_db, "v0.18", tp_size=8) as source:
            ...     leaf = source.to_leaf(mm)
            >>> leaf.op, leaf.args[0].shape, leaf.args[0].format, leaf.context.tp_size
            ('aten.mm.default', (200, 7168), None, 8)
        """
        return leaf_from_invocation(op_invoke_info, self.context_for(op_invoke_info),
                                    self.format_of)

    def lookup(self, op_invoke_info: Any) -> TensorCastResult | None:
        """TensorCast's question: the latency of one operator invocation.

        A malformed invocation is a miss (``invalid_descriptor``), never an exception:
        the host's loop goes on and uses its analytic model.

        Args:
            op_invoke_info: TensorCast's invocation (``func``, ``args``, ``kwargs``,
                ``out``; tensors are anything with ``.shape`` and ``.dtype``).

        Returns:
            A complete answer (MEASURED or INTERPOLATED), or None with the reason in
            ``last_miss_reason`` and the evidence in ``last_miss_details``.

        Raises:
            profstore.storage.reconnect.DatabaseUnavailable: the server stays unreachable.

        Examples:
            >>> import torch
            >>> from types import SimpleNamespace
            >>> def meta(*shape):
            ...     return torch.empty(*shape, dtype=torch.bfloat16, device="meta")
            >>> mm = SimpleNamespace(func=torch.ops.aten.mm.default, kwargs={},
            ...                      args=(meta(200, 7168), meta(7168, 4096)), out=meta(200, 4096))
            >>> with ProfstoreDataSource(demo_db, "v0.18") as source:
            ...     answer = source.lookup(mm)
            ...     missed = source.lookup(SimpleNamespace(
            ...         func=torch.ops.aten.mm.default, kwargs={}, out=None,
            ...         args=(meta(9000, 7168), meta(7168, 4096))))
            ...     reason = source.last_miss_reason
            >>> answer.shape_debug_statistics()["kernel_shapes"], missed, reason
            ('[[128, 7168], [7168, 4096]]', None, 'outside_convex_hull')
        """
        by_name = self._answered_by_name(op_invoke_info)
        if by_name is not None:
            return by_name
        try:
            leaf = self.to_leaf(op_invoke_info)
        except Exception as error:  # a malformed op is a miss, never a crash in the host loop
            message = str(error) if isinstance(error, ValueError) else (
                f"{type(error).__name__}: {error}")
            result = QueryResult.miss(Reason.INVALID_DESCRIPTOR, op=_op_name(op_invoke_info),
                                      message=message)
            return self._settle(result, None)
        return self._settle(self.store.lookup(leaf, self.version, self.interpolation,
                                              format_policy=self.format_policy,
                                              regime_policy=self.regime_policy), leaf)

    def _answered_by_name(self, op_invoke_info: Any) -> TensorCastResult | None:
        """The answer of an op whose answer reads none of its arguments (``answer_by_name``:
        zero_cost, accepted_miss), made without converting the invocation (ADR 0130).
        None for any other op, and where the op's name or tensor shapes cannot be read
        (its conversion then reports the invocation). Made once per op (ADR 0132)."""
        func = getattr(op_invoke_info, "func", None)
        profile = self.store.profile(self.version)
        named = None if func is None or profile is None else self._named.of(func, profile)
        if named is None:
            return None
        try:
            shapes = invocation_shapes(op_invoke_info)
        except Exception:  # likewise for a shape
            return None
        return self._hit(named[0], None, named[1].with_simulation(shapes))

    def _read_row_shapes(self, file_name: str, line_no: int) -> ShapeList:
        """The row's input shapes (the store keeps every row of a file once read)."""
        shapes = self.store.row_input_shapes(self.version, file_name, line_no)
        return [list(shape) for shape in shapes or ()]

    def _answer(self, result: QueryResult, leaf: LeafOp | None) -> TensorCastResult:
        aliased = replace(result, details=with_upstream_aliases(result.details))
        return TensorCastResult.of(aliased, leaf, self._read_row_shapes, self.compact)

    def _hit(self, result: QueryResult, leaf: LeafOp | None,
             answer: TensorCastResult) -> TensorCastResult:
        self.last_result, self.last_leaf = result, leaf
        self.last_miss_reason = self.last_miss_details = None
        self.last_shape_match_info = answer.shape_match_info
        return answer

    def _settle(self, result: QueryResult, leaf: LeafOp | None) -> TensorCastResult | None:
        if result.hit and result.source is not QuerySource.PARTIAL:
            return self._hit(result, leaf, self._answer(result, leaf))
        self.last_result, self.last_leaf = result, leaf
        details = with_upstream_aliases(result.details)
        if result.source is QuerySource.PARTIAL:
            details["partial_latency_us"] = result.latency_us
        reason = result.reason or Reason.NO_EXACT_MATCH
        self.last_miss_reason = reason.value
        if self.miss_codes == "upstream":
            self.last_miss_reason = upstream_miss_code(reason, result.details, self.interpolation)
            details.setdefault("profstore_reason", reason.value)
        self.last_miss_details = details
        self.last_shape_match_info = ShapeMatchInfo(
            simulation_shapes(leaf) if leaf is not None else [], [], self.last_miss_reason)
        return None

    def close(self) -> None:
        """Close the store if this source opened it (a ``with`` block calls it on exit).

        Never raises.

        Examples:
            >>> source = ProfstoreDataSource(demo_db, "v0.18")
            >>> source.close()
        """
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ProfstoreDataSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ProfstoreDataSource({self.store!r}, version={self.version!r})"
