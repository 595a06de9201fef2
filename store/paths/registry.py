"""Which path serves which mapping selector, and which paths read which kernel at ingest.

Every ``OperatorPath`` subclass defined in a module of ``store.paths`` is registered.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

import profstore.paths as package
from profstore.model.mapping import MappingEntry, VersionMapping
from profstore.paths.base import OperatorPath
from profstore.paths.generic import GenericComputePath


def _discover() -> tuple[OperatorPath, ...]:
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    found: dict[str, OperatorPath] = {}
    stack = list(OperatorPath.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if "name" in cls.__dict__:
            found.setdefault(cls.name, cls())
    return tuple(found[name] for name in sorted(found))


ALL_PATHS: tuple[OperatorPath, ...] = _discover()
GENERIC = next(p for p in ALL_PATHS if isinstance(p, GenericComputePath))

_BY_NAME = {p.name: p for p in ALL_PATHS}
_BY_SELECTOR = {s: p for p in ALL_PATHS for s in p.selectors if s != "generic"}
QUERY_MODES = frozenset(s for p in ALL_PATHS if p.selector_field == "query_mode"
                        for s in p.selectors if s != "generic")
SUBCATEGORIES = frozenset(s for p in ALL_PATHS if p.selector_field == "compute_subcategory"
                          for s in p.selectors)
DISPATCH_SELECTORS = frozenset({"communication", "zero_cost", "accepted_miss", "composite",
                                "compute_subcategory_unknown", "generic"})
"""Selectors the dispatcher answers itself (RFC §3.1); every other selector is a path's."""


@lru_cache(maxsize=8192)
def selector_of(entry: MappingEntry) -> str:
    """The entry's dispatch selector, over the vocabulary the registered paths declare
    (memoised: entries are frozen, and the dispatcher asks three times per lookup)."""
    return entry.selector_among(QUERY_MODES, SUBCATEGORIES)


def path_named(name: str) -> OperatorPath:
    return _BY_NAME[name]


def phase1_path(kernel: str) -> OperatorPath:
    """The Phase 1 path a plain (selector ``generic``) mapping uses for this kernel."""
    found = _PHASE1.get(kernel)
    return GENERIC if found is None else found


_PHASE1 = {k: p for p in reversed(ALL_PATHS) for k in p.phase1_kernels}
"""Each Phase 1 kernel's path (the first path in ``ALL_PATHS`` order that claims it)."""


def path_for(selector: str, kernel: str) -> OperatorPath | None:
    """The path for a mapping selector; None for selectors that never interpolate."""
    if selector == "generic":
        return phase1_path(kernel)
    return _BY_SELECTOR.get(selector)


def ingest_paths(kernel: str, mapping: VersionMapping) -> list[OperatorPath]:
    """Paths whose interpretation of this kernel's rows is stored at ingest: the kernel's
    Phase 1 path, paths that always claim the kernel, and paths the mapping routes it to."""
    chosen: list[OperatorPath] = [phase1_path(kernel)]
    chosen += [p for p in ALL_PATHS if kernel in p.kernels]
    for entry in mapping.entries_for_kernel(kernel):
        path = path_for(selector_of(entry), kernel)
        if path is not None:
            chosen.append(path)
    unique: dict[str, OperatorPath] = {}
    for path in chosen:
        unique.setdefault(path.name, path)
    return list(unique.values())


def tc_input_counts(kernel: str, mapping: VersionMapping) -> frozenset[int]:
    return frozenset(
        e.tc_input_count for e in mapping.entries_for_kernel(kernel) if e.tc_input_count
    )
