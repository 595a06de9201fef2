"""Which path serves which mapping selector, and which paths read which kernel at ingest.

The registry lists every path by a plain import, so the import checker sees each edge
(``lint-imports``; a path module never imports the registry). A path module under
``store/paths/`` that is not listed here fails tests/paths/test_registry.py.
"""

from __future__ import annotations

from functools import lru_cache

from profstore.model.mapping import MappingEntry, VersionMapping
from profstore.paths.attention_fia import FusedInferAttentionPath
from profstore.paths.base import OperatorPath
from profstore.paths.elementwise import ElementwisePath
from profstore.paths.generic import GenericComputePath
from profstore.paths.lightning_indexer import LightningIndexerPath
from profstore.paths.matmul import MatMulPath
from profstore.paths.mla_cache_update import MlaCacheUpdatePath
from profstore.paths.moe_fused import MoeFusedPath
from profstore.paths.quant_matmul import QuantizedMatmulPath
from profstore.paths.quant_scale import ComputeScalePath
from profstore.paths.sparse_attention import SparseSharedKVPath

_PATH_CLASSES: tuple[type[OperatorPath], ...] = (
    ComputeScalePath, ElementwisePath, FusedInferAttentionPath, GenericComputePath,
    LightningIndexerPath, MatMulPath, MlaCacheUpdatePath, MoeFusedPath,
    QuantizedMatmulPath, SparseSharedKVPath,
)


def _registered(classes: tuple[type[OperatorPath], ...]) -> tuple[OperatorPath, ...]:
    """One instance of each path, ordered by name (the order ``ALL_PATHS`` promises)."""
    names = [cls.name for cls in classes]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"path names registered twice: {', '.join(repeated)}")
    return tuple(cls() for cls in sorted(classes, key=lambda cls: cls.name))


ALL_PATHS: tuple[OperatorPath, ...] = _registered(_PATH_CLASSES)
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
