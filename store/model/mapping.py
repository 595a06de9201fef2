"""The op_mapping.yaml model: mapping entries, per-kernel policies, the Phase 2 selector.

A file that cannot be used at all raises ``MappingError``; anything smaller (an unknown
key, a bad field, a duplicate entry) is recorded in ``problems`` and the rest loads."""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from profstore.model.latency_column import column_rank

HEADER_KEYS = ("version", "device", "cann_version", "pytorch_version", "op_plugin_version",
               "collection_date", "communication_data_ref", "communication_fallback")
DOCUMENT_SCHEMA = "profstore.op_mapping/1"
Validator = Callable[[Any], Any]


class MappingError(ValueError):
    """The whole mapping cannot be used (unreadable, broken YAML, wrong top-level shape)."""


class _Invalid(Exception):
    """A value of the wrong type or range: the caller records a problem and ignores it."""


def _check(test: Callable[[Any], bool], message: str, convert: Validator = lambda v: v
           ) -> Validator:
    def validate(value: Any) -> Any:
        if not test(value):
            raise _Invalid(message)
        return convert(value)
    return validate


def _note(value: Any) -> str | None:
    """accepted_miss: a note string, or true (a default note) / false (none)."""
    if isinstance(value, bool):
        return "accepted miss" if value else None
    if isinstance(value, str):
        return value.strip() or "accepted miss"
    raise _Invalid("is not a note string or true/false")


_string = _check(lambda v: isinstance(v, str), "is not a string")
_strings = _check(lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
                  "is not a list of strings", tuple)
_flag = _check(lambda v: isinstance(v, bool), "is not true/false")
_positive_int = _check(lambda v: type(v) is int and v > 0, "is not a positive integer",
                       _check(lambda v: v < 2**31, "is not below 2^31 (an SQL INTEGER)"))
_dimension = _check(lambda v: type(v) is int and 0 <= v <= 3, "is not an integer from 0 to 3")
_ratio = _check(lambda v: type(v) in (int, float) and math.isfinite(v) and v > 0,
                "is not a finite positive number", float)
_axis = _check(lambda v: v in ("axis_0", "output_numel"), "is not axis_0 or output_numel")
_transform = _check(lambda v: v in ("sqrt_seq", "linear"), "is not sqrt_seq or linear")

# entry field -> (validator, value when absent or invalid)
_ENTRY_FIELDS: dict[str, tuple[Validator, Any]] = {
    "kernel_type": (_string, None), "alternate_kernel_types": (_strings, ()),
    "query_mode": (_string, None), "compute_subcategory": (_string, None),
    "tc_input_count": (_positive_int, None), "zero_cost": (_flag, False),
    "accepted_miss": (_note, None), "category": (_string, None), "composite": (_flag, False),
    "sub_kernels": (_strings, ()), "primary_kernel_type": (_string, None),
    "expected_input_formats": (_strings, None),
}
# policy block -> path under kernel_overrides.<kernel> -> (KernelPolicy field, validator)
_POLICY_PATHS: dict[str, dict[tuple[str, ...], tuple[str, Validator]]] = {
    "interpolation_policy": {
        ("max_interpolation_dim",): ("max_interpolation_dim", _dimension),
        ("generic_compute", "axis"): ("generic_axis", _axis),
        ("axis_transform",): ("axis_transform", _transform)},
    "latency_policy": {
        ("prefer_profiling_rows",): ("prefer_profiling_rows", _flag),
        ("profiling_core_envelope_fallback", "max_duration_to_core_ratio"):
            ("core_envelope_ratio", _ratio)},
    "query_selection_policy": {
        ("require_semantic_unique",): ("require_semantic_unique", _flag)},
}
KNOWN_TOP_LEVEL_KEYS = frozenset(
    {*HEADER_KEYS, *_POLICY_PATHS, "operator_mappings", "torch_npu_reference"})
# KernelPolicy field -> (validator, None): the same checks for a stored document
_POLICY_FIELDS: dict[str, tuple[Validator, Any]] = {
    name: (check, None) for paths in _POLICY_PATHS.values() for name, check in paths.values()}


def _plain(value: Any) -> Any:
    """A JSON-compatible deep copy: string keys, lists, ISO dates."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, datetime.date):  # datetime.datetime is a date too
        return value.isoformat()
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def _read_fields(spec: Mapping[str, tuple[Validator, Any]], values: Mapping[str, Any],
                 where: str, problems: list[str]) -> dict[str, Any]:
    """Validate ``values`` against ``spec``; a bad value is recorded and replaced by default."""
    out: dict[str, Any] = {}
    for name, (check, default) in spec.items():
        value, out[name] = values.get(name), default
        try:
            out[name] = default if value is None else check(value)
        except _Invalid as exc:
            problems.append(f"{where}: {name} {value!r:.60} {exc}; field ignored")
    return out


@dataclass(frozen=True)
class MappingEntry:
    """One ``operator_mappings`` entry, normalised; ``raw`` keeps the whole YAML entry."""

    op: str
    kernel_type: str | None = None
    alternate_kernel_types: tuple[str, ...] = ()
    query_mode: str | None = None
    compute_subcategory: str | None = None
    tc_input_count: int | None = None
    zero_cost: bool = False
    accepted_miss: str | None = None
    category: str | None = None
    composite: bool = False
    sub_kernels: tuple[str, ...] = ()
    primary_kernel_type: str | None = None
    expected_input_formats: tuple[str, ...] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @cached_property
    def kernels(self) -> tuple[str, ...]:
        """Kernels in lookup order: kernel_type (else primary_kernel_type), then alternates.
        (Cached, like ``selector``: the entry is frozen and both are asked per lookup.)"""
        first = self.kernel_type or self.primary_kernel_type
        return tuple(dict.fromkeys(k for k in (first, *self.alternate_kernel_types) if k))

    @property
    def is_communication(self) -> bool:
        return self.category == "communication"

    def selector_among(self, query_modes: frozenset[str], subcategories: frozenset[str]) -> str:
        """The Phase 2 dispatch selector (RFC §3.1, §5), given the query modes and compute
        subcategories some path serves (``profstore.paths.registry.selector_of`` passes
        them); the first rule that applies wins:

        communication > zero_cost > accepted_miss > composite > a served query_mode >
        a served compute_subcategory (any other non-empty value ->
        "compute_subcategory_unknown", failing closed) > "generic". A query_mode no path
        serves does not override it: v0.18 static_quant_linear (``query_mode:
        mtp_projection``, ``compute_subcategory: quantized_matmul``) selects
        "quantized_matmul"; such a mode alone gives "generic".
        """
        rules = ((self.is_communication, "communication"), (self.zero_cost, "zero_cost"),
                 (bool(self.accepted_miss), "accepted_miss"), (self.composite, "composite"),
                 (self.query_mode in query_modes, self.query_mode),
                 (self.compute_subcategory in subcategories, self.compute_subcategory),
                 (bool(self.compute_subcategory), "compute_subcategory_unknown"))
        return next((str(name) for applies, name in rules if applies), "generic")


@dataclass(frozen=True)
class KernelPolicy:
    """One kernel's policy, merged from the latency, query-selection and interpolation blocks.

    ``explicit_fields`` (not compared) names the fields a block stated, even at default
    values, so that an overlay can also switch a flag back off."""

    max_interpolation_dim: int | None = None
    generic_axis: str = "axis_0"
    axis_transform: str | None = None
    prefer_profiling_rows: bool = False
    core_envelope_ratio: float | None = None
    require_semantic_unique: bool = False
    explicit_fields: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @cached_property
    def column_rank(self) -> Mapping[str, int]:
        """``latency.column_rank`` of this policy, computed once (read-only: it is shared
        by every lookup of the kernel)."""
        return MappingProxyType(column_rank(self))

    def stated(self) -> dict[str, Any]:
        """The fields stated explicitly or differing from the default."""
        return {name: getattr(self, name) for name in _POLICY_FIELDS
                if name in self.explicit_fields
                or getattr(self, name) != getattr(KernelPolicy, name)}


@dataclass(frozen=True)
class VersionMapping:
    """The op mapping of one profiling-database version (read-only mappings)."""

    header: Mapping[str, Any]
    entries: Mapping[str, MappingEntry]
    policies: Mapping[str, KernelPolicy]
    problems: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("header", "entries", "policies"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        object.__setattr__(self, "problems", tuple(self.problems))

    def entry(self, op: str) -> MappingEntry | None:
        """The entry for ``op``; also tries ``op`` without a leading ``torch.ops.``."""
        return self.entries.get(op) or self.entries.get(op.removeprefix("torch.ops."))

    def policy(self, kernel: str) -> KernelPolicy:
        """The kernel's policy; an alternate kernel without its own axis policy inherits the
        generic axis and axis transform of the primary kernel it stands in for (RFC §3.4.1:
        "alternates inherit the axis"). Resolved once per kernel (the mapping is read-only)."""
        cached = self._policy_cache.get(kernel)
        if cached is None:
            cached = self._policy_cache[kernel] = self._resolve_policy(kernel)
        return cached

    @cached_property
    def _policy_cache(self) -> dict[str, KernelPolicy]:
        return {}

    def _resolve_policy(self, kernel: str) -> KernelPolicy:
        own = self.policies.get(kernel) or KernelPolicy()
        if {"generic_axis", "axis_transform"} & set(own.stated()):
            return own
        for entry in self.entries_for_kernel(kernel):
            primary = entry.kernel_type or entry.primary_kernel_type
            if primary and primary != kernel and primary in self.policies:
                inherited = self.policies[primary]
                return replace(own, generic_axis=inherited.generic_axis,
                               axis_transform=inherited.axis_transform)
        return own

    def kernels(self) -> set[str]:
        return set(self._kernel_index)

    def entries_for_kernel(self, kernel: str) -> list[MappingEntry]:
        """Entries naming ``kernel`` in any role, in mapping order."""
        return list(self._kernel_index.get(kernel, ()))

    @cached_property
    def _kernel_index(self) -> dict[str, list[MappingEntry]]:
        index: dict[str, list[MappingEntry]] = {}
        for entry in self.entries.values():
            names = (entry.kernel_type, entry.primary_kernel_type,
                     *entry.alternate_kernel_types, *entry.sub_kernels)
            for kernel in dict.fromkeys(name for name in names if name):
                index.setdefault(kernel, []).append(entry)
        return index

    def to_document(self) -> dict[str, Any]:
        """A JSON-compatible document; ``from_document`` rebuilds an equal object from it."""
        entries = {op: {**{name: _plain(getattr(entry, name)) for name in _ENTRY_FIELDS},
                        "raw": _plain(entry.raw)} for op, entry in self.entries.items()}
        return {"schema": DOCUMENT_SCHEMA, "header": _plain(self.header), "entries": entries,
                "policies": {kernel: p.stated() for kernel, p in self.policies.items()},
                "problems": list(self.problems)}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], *, source: str = "<document>"
                      ) -> VersionMapping:
        """Rebuild from ``to_document`` output; a field that fails its check is a problem."""
        try:
            if doc["schema"] != DOCUMENT_SCHEMA:
                raise ValueError(f"schema {doc['schema']!r}")
            problems = [str(problem) for problem in doc["problems"]]
            entries = {op: MappingEntry(op=op, raw=_plain(dict(body["raw"])), **_read_fields(
                _ENTRY_FIELDS, body, f"{source}: entry {op!r}", problems))
                for op, body in doc["entries"].items()}
            policies = {kernel: _document_policy(kernel, fields, source, problems)
                        for kernel, fields in doc["policies"].items()}
            return cls(dict(doc["header"]), entries, policies, tuple(problems))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MappingError(f"{source}: not a usable {DOCUMENT_SCHEMA} document: "
                               f"{exc!r}") from exc


def _document_policy(kernel: str, fields: Mapping[str, Any], source: str,
                     problems: list[str]) -> KernelPolicy:
    where = f"{source}: policy {kernel!r}"
    problems.extend(f"{where}: unknown field {name!r} ignored"
                    for name in fields if name not in _POLICY_FIELDS)
    values = _read_fields(_POLICY_FIELDS, fields, where, problems)
    values = {name: value for name, value in values.items() if value is not None}
    return KernelPolicy(**values, explicit_fields=frozenset(values))


def _load_yaml(text: str, source: str) -> tuple[Any, list[str]]:
    """Parse ``text``; return the data and the duplicate-key problems."""
    import yaml  # only to read a mapping file: a lookup reads the stored document
    from profstore.model.mapping_yaml import UnusableYaml, load_yaml

    try:
        data, root, duplicates = load_yaml(text, source)
    except UnusableYaml as exc:
        raise MappingError(str(exc)) from exc
    pairs = root.value if isinstance(root, yaml.MappingNode) else []
    operators = next((v for k, v in reversed(pairs) if k.value == "operator_mappings"), None)
    return data, [f"{source}: duplicate {'entry' if node is operators else 'key'} {key!r} "
                  f"at line {line}: the later one wins" for node, key, line in duplicates]


def _parse_entries(operators: Mapping[Any, Any], source: str, problems: list[str]
                   ) -> dict[str, MappingEntry]:
    entries: dict[str, MappingEntry] = {}
    for op, body in operators.items():
        if not isinstance(op, str) or not isinstance(body, dict):
            what = "is not a mapping" if isinstance(op, str) else "has a non-string name"
            problems.append(f"{source}: entry {op!r} {what}; entry skipped")
            continue
        fields = _read_fields(_ENTRY_FIELDS, body, f"{source}: entry {op!r}", problems)
        entries[op] = MappingEntry(op=op, raw=_plain(body), **fields)
    return entries


def _mapping_or_empty(value: Any, where: str, problems: list[str]) -> dict[Any, Any]:
    if value is not None and not isinstance(value, dict):
        problems.append(f"{where} is not a mapping; ignored")
    return value if isinstance(value, dict) else {}


def _leaves(rules: Mapping[Any, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, value in rules.items():
        if isinstance(value, dict):
            yield from (((str(key), str(sub)), leaf) for sub, leaf in value.items())
        else:
            yield (str(key),), value


def _parse_policy_block(data: Mapping[Any, Any], block: str, source: str,
                        found: dict[str, dict[str, Any]], problems: list[str]) -> None:
    body = _mapping_or_empty(data.get(block), f"{source}: {block}", problems)
    problems.extend(f"{source}: unknown key '{block}.{key}' ignored"
                    for key in body if key != "kernel_overrides")
    where = f"{source}: {block}.kernel_overrides"
    for kernel, rules in _mapping_or_empty(body.get("kernel_overrides"), where,
                                           problems).items():
        rules = _mapping_or_empty(rules, f"{where}.{kernel}", problems)
        for path, value in _leaves(rules):
            spot = f"{where}.{kernel}.{'.'.join(path)}"
            try:
                name, check = _POLICY_PATHS[block][path]
                found.setdefault(str(kernel), {})[name] = check(value)
            except KeyError:
                problems.append(f"{spot}: unknown policy key ignored")
            except _Invalid as exc:
                problems.append(f"{spot}: {value!r:.60} {exc}; field ignored")


def _build(data: Any, problems: list[str], source: str) -> VersionMapping:
    if not isinstance(data, dict):
        raise MappingError(f"{source}: the top level is {type(data).__name__}, not a mapping")
    operators = data.get("operator_mappings")
    if not isinstance(operators, dict):
        raise MappingError(f"{source}: no 'operator_mappings' mapping")
    problems.extend(f"{source}: unknown top-level key {key!r} ignored"
                    for key in data if key not in KNOWN_TOP_LEVEL_KEYS)
    header = {key: _plain(data[key]) for key in HEADER_KEYS if data.get(key) is not None}
    for key in [key for key, value in header.items() if isinstance(value, (dict, list))]:
        problems.append(f"{source}: top-level key {key!r} is not a scalar; ignored")
        del header[key]
    entries = _parse_entries(operators, source, problems)
    found: dict[str, dict[str, Any]] = {}
    for block in _POLICY_PATHS:
        _parse_policy_block(data, block, source, found, problems)
    policies = {kernel: KernelPolicy(**values, explicit_fields=frozenset(values))
                for kernel, values in found.items()}
    return VersionMapping(header, entries, policies, tuple(problems))


def load_mapping(path_or_text: str | os.PathLike[str], *, is_text: bool = False
                 ) -> VersionMapping:
    """Load an op_mapping.yaml file, or with ``is_text=True`` its text."""
    if is_text:
        return _build(*_load_yaml(str(path_or_text), "<text>"), "<text>")
    source = os.fspath(path_or_text)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MappingError(f"{source}: cannot read: {exc}") from exc
    return _build(*_load_yaml(text, source), source)


def merge_overlay(base: VersionMapping, overlay: VersionMapping) -> VersionMapping:
    """Overlay entries replace base entries op by op (new ops appended); policy fields an
    overlay kernel states override the base's one by one; header merged; problems joined."""
    policies = dict(base.policies)
    for kernel, extra in overlay.policies.items():
        old, stated = policies.get(kernel) or KernelPolicy(), extra.stated()
        policies[kernel] = dataclasses.replace(
            old, **stated, explicit_fields=frozenset(old.stated()) | frozenset(stated))
    return VersionMapping(header={**base.header, **overlay.header},
                          entries={**base.entries, **overlay.entries},
                          policies=policies, problems=base.problems + overlay.problems)
