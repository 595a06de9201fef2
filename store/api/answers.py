"""The answer cache of a ``Store``: its keys, its bound, and the query objects that live
and die with it (one generation: store/storage/generations.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from profstore.lookup.dispatch import Dispatcher, LookupOptions
from profstore.lookup.format_resolution import FormatPolicy
from profstore.lookup.regime_policy import RegimePolicy
from profstore.model.clock_cache import ClockCache
from profstore.model.leaf import LeafOp
from profstore.model.result import QueryResult

if TYPE_CHECKING:
    from profstore.storage.queries import CandidateQueries
    from profstore.storage.snapshot import SnapshotEngine

RESULT_ENTRY_BYTES = 6144
"""Memory one cached answer holds, rounded up: measured with tracemalloc at about 2.8 KB
for a miss and 5 KB for an interpolated answer with its rows (details, key, leaf). The
default ``cache_size`` of 65536 answers can so reach about 330 MB; ``cache_bytes`` bounds
the answer cache by memory instead."""


class Caches(NamedTuple):
    """The query objects of one generation (store/storage/generations.py)."""

    queries: CandidateQueries
    dispatcher: Dispatcher
    results: ClockCache[tuple[Any, ...], QueryResult]


def new_caches(snapshots: SnapshotEngine, cache_size: int) -> Caches:
    """A new generation's query objects, and its empty answer cache."""
    from profstore.geometry.simplex import TriangulationCache
    from profstore.lookup.base_exact import BaseExact
    from profstore.lookup.communication import CommunicationLookup
    from profstore.lookup.format_inference import FormatInference
    from profstore.lookup.path_runner import PathRunner
    from profstore.storage.queries import CandidateQueries

    queries = CandidateQueries(snapshots)
    runner = PathRunner(queries, TriangulationCache(512))
    dispatcher = Dispatcher(BaseExact(queries), runner, CommunicationLookup(snapshots),
                            FormatInference(snapshots, runner))
    return Caches(queries, dispatcher, ClockCache(cache_size))


PLAIN = {flag: LookupOptions(flag, frozenset()) for flag in (False, True)}
"""The options of a lookup that excludes nothing, built once."""

ResultKey = tuple[LeafOp, str, bool | LookupOptions]
"""An answer-cache key: ``(leaf, version, interpolation)`` for a lookup that excludes
nothing and states no format policy (a plain tuple: hashed and compared by C code, so a
warm lookup costs about one hash of the leaf), else ``(leaf, version, options)``."""


def cache_entries(cache_size: int, cache_bytes: int | None) -> int:
    """The answers a cache holds: ``cache_size``, or fewer under a memory cap.

    Raises:
        ValueError: ``cache_bytes`` is not a non-negative integer."""
    if cache_bytes is None:
        return cache_size
    if type(cache_bytes) is not int or cache_bytes < 0:
        raise ValueError(f"cache_bytes: expected a non-negative integer, got {cache_bytes!r}")
    return min(cache_size, cache_bytes // RESULT_ENTRY_BYTES)


def options_key(leaf: LeafOp, version: str, interpolation: bool,
                exclude_samples: Iterable[int],
                format_policy: FormatPolicy | Mapping[str, Any] | None,
                regime_policy: RegimePolicy | Mapping[str, Any] | None = None) -> ResultKey:
    """The key of a lookup with exclusions, a format or a regime policy (a bad policy
    raises ``ValueError`` here, cached answer or not); with none after all (an empty list),
    the plain lookup's key, so both share one cached answer."""
    policy = None if format_policy is None else FormatPolicy.from_json(format_policy)
    regimes = None if regime_policy is None else RegimePolicy.from_json(regime_policy)
    options = LookupOptions(bool(interpolation), frozenset(exclude_samples), policy, regimes)
    if not options.exclude and policy is None and regimes is None:
        return (leaf, version, options.interpolation)
    return (leaf, version, options)
