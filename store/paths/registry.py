"""Which path serves which mapping selector, and which paths read which kernel at ingest."""

from __future__ import annotations

from store.mapping import VersionMapping
from store.paths.base import OperatorPath
from store.paths.generic import GenericComputePath

GENERIC = GenericComputePath()

ALL_PATHS: tuple[OperatorPath, ...] = (GENERIC,)

_BY_NAME = {p.name: p for p in ALL_PATHS}
_BY_SELECTOR = {s: p for p in ALL_PATHS for s in p.selectors}


def path_named(name: str) -> OperatorPath:
    return _BY_NAME[name]


def phase1_path(kernel: str) -> OperatorPath:
    """The Phase 1 path a plain (selector ``generic``) mapping uses for this kernel."""
    for path in ALL_PATHS:
        if path.selectors & {"generic"} and kernel in path.kernels:
            return path
    return GENERIC


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
        path = path_for(entry.selector, kernel)
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
