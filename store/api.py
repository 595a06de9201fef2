"""``Store``: the library entry point a simulator calls for every leaf operator."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from time import monotonic
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from profstore.lookup.base_exact import BaseExact
from profstore.lookup.dispatch import Dispatcher, LookupOptions, Profile
from profstore.lookup.format_resolution import FormatPolicy
from profstore.lookup.regime_policy import RegimePolicy, kernel_paths, vocabulary_of
from profstore.model.clock_cache import ClockCache
from profstore.model.leaf import LeafOp
from profstore.model.mapping import VersionMapping, merge_overlay
from profstore.model.result import QueryResult, Reason

if TYPE_CHECKING:  # the engine side (SQLAlchemy, numpy) is imported when a Store opens
    from profstore.storage.catalog import StoredVersion
    from profstore.storage.engines import ReadOnly
    from profstore.storage.handles import Connection, Engine
    from profstore.storage.queries import CandidateQueries
    from profstore.storage.snapshot import Fingerprint, Generation

T = TypeVar("T")
REFRESH_SECONDS = 1.0
"""How stale a cached answer may be after a re-ingest (one small query per interval)."""
RESULT_ENTRY_BYTES = 6144
"""Memory one cached answer holds, rounded up: measured with tracemalloc at about 2.8 KB
for a miss and 5 KB for an interpolated answer with its rows (details, key, leaf). The
default ``cache_size`` of 65536 answers can so reach about 330 MB; ``cache_bytes`` bounds
the answer cache by memory instead."""


ROW_SHAPES_CACHED = 256
"""CSV files whose rows' input shapes a store keeps, all rows of a file read at once
(TensorCast reports the matched row's shapes with every answer: one query a row cost more
than the lookup, and a throughput search builds a data source per configuration)."""


class Caches(NamedTuple):
    """The query objects of one generation (store/storage/snapshot.py)."""

    queries: CandidateQueries
    dispatcher: Dispatcher
    results: ClockCache[tuple[Any, ...], QueryResult]


_PLAIN = {flag: LookupOptions(flag, frozenset()) for flag in (False, True)}
"""The options of a lookup that excludes nothing, built once."""

ResultKey = tuple[LeafOp, str, bool | LookupOptions]
"""An answer-cache key: ``(leaf, version, interpolation)`` for a lookup that excludes
nothing and states no format policy (a plain tuple: hashed and compared by C code, so a
warm lookup costs about one hash of the leaf), else ``(leaf, version, options)``."""


class Store:
    """An opened profiling store. Opening reads nothing but the schema revision; a
    version's mapping is read on its first lookup, candidates per regime on demand.

    ``cache_size`` is the number of answers kept (about ``RESULT_ENTRY_BYTES`` each: the
    default 65536 is up to about 330 MB); ``cache_bytes`` caps the same cache by memory
    (the smaller bound wins)."""

    def __init__(self, engine: Engine, *, cache_size: int = 65536,
                 cache_bytes: int | None = None,
                 mapping_overlay: VersionMapping | None = None,
                 refresh_seconds: float | None = REFRESH_SECONDS) -> None:
        from profstore.storage.snapshot import Generations, SnapshotEngine

        self.engine = engine
        self.mapping_overlay = mapping_overlay
        if cache_bytes is not None and (type(cache_bytes) is not int or cache_bytes < 0):
            raise ValueError(f"cache_bytes: expected a non-negative integer, got {cache_bytes!r}")
        self._cache_size = cache_size if cache_bytes is None else \
            min(cache_size, cache_bytes // RESULT_ENTRY_BYTES)
        self._snapshots = SnapshotEngine(engine)
        self._generations = Generations(self._new_caches, refresh_seconds)
        self._lock = threading.Lock()
        self._mappings: dict[str, Profile | None] = {}
        self._mappings_of: Fingerprint | None = None
        self._row_shapes: ClockCache[tuple[int, str], dict[int, str]] = ClockCache(
            ROW_SHAPES_CACHED)
        self._checked: ClockCache[tuple[Any, ...], bool] = ClockCache(64)

    def _new_caches(self) -> Caches:
        from profstore.geometry.simplex import TriangulationCache
        from profstore.lookup.communication import CommunicationLookup
        from profstore.lookup.format_inference import FormatInference
        from profstore.lookup.path_runner import PathRunner
        from profstore.storage.queries import CandidateQueries

        queries = CandidateQueries(self._snapshots)
        runner = PathRunner(queries, TriangulationCache(512))
        dispatcher = Dispatcher(BaseExact(queries), runner, CommunicationLookup(self._snapshots),
                                FormatInference(self._snapshots, runner))
        return Caches(queries, dispatcher, ClockCache(self._cache_size))

    @property
    def queries(self) -> CandidateQueries:
        return self._generations.current.parts.queries

    @property
    def dispatcher(self) -> Dispatcher:
        return self._generations.current.parts.dispatcher

    @classmethod
    def open(cls, url_or_path: str | Path, *, read_only: ReadOnly = True,
             mapping_overlay: VersionMapping | None = None, cache_size: int = 65536,
             cache_bytes: int | None = None,
             refresh_seconds: float | None = REFRESH_SECONDS) -> Store:
        """Open a database by SQLAlchemy URL or SQLite file path.

        A writable open brings the schema to head; a read-only open refuses a database
        that is not at this code's head revision (older or newer) with ``SchemaMismatch``
        naming both revisions and the command to run, rather than migrating it. Every
        lookup that queries reads one snapshot and follows a re-ingest at once; cached
        answers are re-validated at most every ``refresh_seconds`` (None: never; see
        store/storage/snapshot.py).
        ``read_only="immutable"`` opens a SQLite file with ``immutable=1``; a read-only
        open picks it on its own on read-only storage (storage/engines.py ``sqlite_read_uri``).
        A file that cannot be opened raises ``DatabaseNotReadable`` (an ``OSError``).
        """
        from profstore.storage.engines import make_engine, probe, require_head, sqlite_file, upgrade
        from profstore.storage.urls import normalize_url, redact_url

        url = normalize_url(url_or_path)
        path = sqlite_file(url)
        if path is not None and not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        from profstore.storage.reconnect import retrying

        engine = make_engine(url, read_only=read_only)
        with _closed_on_error(engine):
            if not read_only:
                retrying(engine, lambda: None, lambda: upgrade(engine))
            else:
                _require_file(url)
                probe(engine, redact_url(url))
                retrying(engine, lambda: None, lambda: require_head(engine, redact_url(url)))
        return cls(engine, cache_size=cache_size, cache_bytes=cache_bytes,
                   mapping_overlay=mapping_overlay, refresh_seconds=refresh_seconds)

    def close(self) -> None:
        self._snapshots.close()
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        from profstore.storage.urls import redact_url

        return f"Store({redact_url(self.engine.url.render_as_string(hide_password=False))})"

    def lookup(self, leaf: LeafOp, version: str, interpolation: bool = True,
               exclude_samples: Iterable[int] = (),
               format_policy: FormatPolicy | Mapping[str, Any] | None = None,
               regime_policy: RegimePolicy | Mapping[str, Any] | None = None) -> QueryResult:
        """The latency of one leaf operator in one version; never raises for a miss.

        ``exclude_samples`` hides measured rows (by sample id) from this query only:
        hold-out evaluation asks through the same code path a real lookup uses.
        ``format_policy`` states formats the leaf leaves unstated (lookup/format_resolution.py); a
        policy with an unknown format or key raises ``ValueError``. ``regime_policy``
        states regime equivalences (store/lookup/regime_policy.py); one naming an unknown op,
        kernel, field or value raises ``ValueError``.
        """
        if not isinstance(leaf, LeafOp):
            raise ValueError(f"leaf: expected a LeafOp, got {type(leaf).__name__}")
        if exclude_samples == () and format_policy is None and regime_policy is None:
            key: ResultKey = (leaf, version, bool(interpolation))
        else:
            key = _options_key(leaf, version, interpolation, exclude_samples, format_policy,
                               regime_policy)
        current = self._generations.current
        if monotonic() < current.fresh_until:
            cached = current.parts.results.get(key)
            if cached is not None:
                return cached
        return self._retrying(self._computed, key)

    def _retrying(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, once more after a lost connection (store/storage/reconnect.py): a
        server that stays down raises ``DatabaseUnavailable``, never a driver error."""
        from profstore.storage.reconnect import retrying

        return retrying(self.engine, self._snapshots.forget, lambda: call(*args))

    def _computed(self, key: ResultKey) -> QueryResult:
        """The answer for ``key`` in a fresh snapshot: cached unless the snapshot shows a
        new ``profile_set`` state (then a new generation), computed and cached otherwise."""
        leaf, version, flag_or_options = key
        options = _PLAIN[flag_or_options] if isinstance(flag_or_options, bool) else \
            flag_or_options
        with self._snapshots.snapshot():
            generation = self._generations.matching(self._snapshots.fingerprint())
            cached = generation.parts.results.get(key)
            if cached is not None:
                return cached
            profile = self._profile_in(generation, version)
            if profile is not None and options.formats is not None:
                options.formats.check_ops(profile.mapping.entries, version)
            if profile is not None and options.regimes is not None:
                self.check_regime_policy(options.regimes, profile)
            if profile is None:
                result = QueryResult.miss(Reason.UNKNOWN_VERSION,
                                          message=f"no ingested version {version!r}")
            else:
                result = generation.parts.dispatcher.lookup(leaf, profile, options)
                result.details.setdefault("version", profile.alias)
        generation.parts.results.put(key, result)
        return result

    def check_regime_policy(self, policy: RegimePolicy, profile: Profile) -> None:
        """``policy`` against the version's mapping and measured regimes (``ValueError``
        naming the unknown op, kernel, field or value); each (policy, version) once."""
        key = ("regime_policy", policy, profile.id)
        if self._checked.get(key) is not None:
            return
        queries, mapping = self.queries, profile.mapping

        def vocabulary(kernel: str) -> dict[str, set[str]]:
            return vocabulary_of(key for path in kernel_paths(mapping, kernel)
                                 for key, _ in queries.regime_keys(profile.id, kernel, path))

        policy.check({op: e.kernels for op, e in mapping.entries.items()}, vocabulary,
                     profile.alias)
        self._checked.put(key, True)

    def lookup_many(self, leaves: Iterable[LeafOp], version: str,
                    interpolation: bool = True) -> list[QueryResult]:
        return [self.lookup(leaf, version, interpolation) for leaf in leaves]

    def clear_cache(self) -> None:
        """Forget every answer and everything read from the samples (regime slices,
        prepared candidates, triangulations, kernel presence and formats). A loaded
        version's mapping is kept: it is a function of the ``profile_set`` state (row ids
        and content hashes), so it is reused only while that state is unchanged, and a
        re-ingest (a new id or hash) reads it again."""
        self._generations.reset()

    def profile(self, version: str) -> Profile | None:
        """The version's profile as of now (re-read after a re-ingest)."""
        return self._retrying(self._profile_now, version)

    def _profile_now(self, version: str) -> Profile | None:
        with self._snapshots.snapshot():
            return self._profile_in(self._generations.matching(self._snapshots.fingerprint()),
                                    version)

    def _profile_in(self, generation: Generation, version: str) -> Profile | None:
        if version in generation.profiles:  # written only under the lock, read without it
            return generation.profiles[version]
        with self._lock:
            if version not in generation.profiles:
                generation.profiles[version] = self._mapping_for(generation.fingerprint,
                                                                 version)
            return generation.profiles[version]

    def _mapping_for(self, seen: Fingerprint | None, version: str) -> Profile | None:
        """The version's profile as loaded for the ``profile_set`` state ``seen``: kept
        across ``clear_cache`` and generations of the same state (caller holds the lock)."""
        if seen is None or seen != self._mappings_of:
            self._mappings, self._mappings_of = {}, seen
        if version not in self._mappings:
            self._mappings[version] = self._load_profile(version)
        return self._mappings[version]

    def row_input_shapes(self, version: str, file_name: str,
                         line_no: int) -> tuple[tuple[int, ...], ...] | None:
        """The input shapes of the stored row at ``file_name`` line ``line_no`` of a version
        (the CSV's own spelling); None for an unknown version or row."""
        from profstore.storage.provenance import file_input_shapes, input_shapes_of

        profile = self.profile(version)
        if profile is None:
            return None
        key = (profile.id, file_name)  # a re-ingest gives the version a new id
        rows = self._row_shapes.get(key)
        if rows is None:
            with self._snapshots.connect() as conn:
                rows = file_input_shapes(conn, profile.id, file_name)
            self._row_shapes.put(key, rows)
        text = rows.get(line_no)
        return None if text is None else input_shapes_of(text)

    def versions(self) -> list[str]:
        return self._retrying(self._versions)

    def _versions(self) -> list[str]:
        from profstore.storage.catalog import known_aliases

        with self.engine.connect() as conn:
            return known_aliases(conn)

    def _load_profile(self, version: str) -> Profile | None:
        from profstore.storage.catalog import find_profile

        with self._snapshots.connect() as conn:
            row = find_profile(conn, version)
            if row is None:
                return None
            mapping = VersionMapping.from_document(json.loads(row.mapping_document or "{}"))
            if self.mapping_overlay is not None:
                mapping = merge_overlay(mapping, self.mapping_overlay)
            for kernel in mapping.kernels():  # resolved once per load, not per lookup
                mapping.policy(kernel)
            comm_id = _comm_profile(conn, row, mapping)
        return Profile(row.id, row.alias, mapping, comm_id)


def _options_key(leaf: LeafOp, version: str, interpolation: bool,
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


def _comm_profile(conn: Connection, row: StoredVersion, mapping: VersionMapping) -> int | None:
    """The HCCL profile a version's ``communication_data_ref`` points at (same device);
    without the field (the older layout), the version itself when it holds communication
    CSVs of its own."""
    from profstore.storage.catalog import has_comm_samples, hccl_profile_id

    ref = mapping.header.get("communication_data_ref")
    if not ref:
        return row.id if has_comm_samples(conn, row.id) else None
    return hccl_profile_id(conn, row.device, PurePosixPath(str(ref).rstrip("/")).name)


@contextmanager
def _closed_on_error(engine: Engine) -> Iterator[None]:
    try:
        yield
    except BaseException:
        engine.dispose()
        raise


def _require_file(url: str) -> None:
    from profstore.storage.engines import sqlite_file

    path = sqlite_file(url)
    if path is not None and not path.exists():
        raise FileNotFoundError(f"no database at {path}; run profstore ingest first")
