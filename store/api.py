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
    """An opened profiling store: the library's entry point.

    Opening reads nothing but the schema revision; a version's mapping is read on its
    first lookup, candidates per regime on demand. Open one with ``Store.open``; the
    constructor takes an engine that is already at the schema's head revision. A store
    is a context manager (``close`` on exit) and may be shared by threads.

    Args:
        engine: a SQLAlchemy engine on a database at this profstore's schema revision.
        cache_size: the number of answers kept (about ``RESULT_ENTRY_BYTES`` each: the
            default 65536 is up to about 330 MB).
        cache_bytes: a memory cap on the same cache (the smaller bound wins); None: none.
        mapping_overlay: a mapping merged over every version's ``op_mapping.yaml``.
        refresh_seconds: how stale a cached answer may be after a re-ingest; None: cached
            answers are never re-validated.

    Raises:
        ValueError: ``cache_bytes`` is not a non-negative integer.

    Examples:
        >>> from profstore import LeafOp, Store
        >>> with Store.open(demo_db) as store:
        ...     result = store.lookup(LeafOp.from_json({
        ...         "op": "tensor_cast.rms_norm.default",
        ...         "args": [{"shape": [64, 7168], "dtype": "bfloat16"},
        ...                  {"shape": [7168], "dtype": "bfloat16"}, 1e-6],
        ...         "outputs": [{"shape": [64, 7168], "dtype": "bfloat16"}]}), "v0.18")
        >>> result.latency_us, result.source.value, result.details["method"]
        (5.15584, 'MEASURED', 'base_exact')
    """

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
        """The candidate queries of the current generation (internal: profstore's own
        evaluation tools read the rows through it; its type may change).

        Examples:
            >>> with Store.open(demo_db) as store:
            ...     profile = store.profile("v0.18")
            ...     store.queries.regime_keys(profile.id, "RmsNorm", "generic")[0][1]
            13
        """
        return self._generations.current.parts.queries

    @property
    def dispatcher(self) -> Dispatcher:
        """The lookup dispatcher of the current generation (internal: the hold-out and
        plot tools run one path through it; its type may change).

        Examples:
            >>> with Store.open(demo_db) as store:
            ...     type(store.dispatcher).__name__
            'Dispatcher'
        """
        return self._generations.current.parts.dispatcher

    @classmethod
    def open(cls, url_or_path: str | Path, *, read_only: ReadOnly = True,
             mapping_overlay: VersionMapping | None = None, cache_size: int = 65536,
             cache_bytes: int | None = None,
             refresh_seconds: float | None = REFRESH_SECONDS) -> Store:
        """Open a database by SQLAlchemy URL or SQLite file path.

        A writable open brings the schema to head; a read-only open refuses a database
        that is not at this code's head revision (older or newer) rather than migrating
        it. Every lookup that queries reads one snapshot and follows a re-ingest at once.

        Args:
            url_or_path: a SQLite file path or a SQLAlchemy URL
                (``postgresql+psycopg://user@host/db``).
            read_only: True (the default) to only read; False to create the database or
                bring its schema to head; ``"immutable"`` to open a SQLite file with
                ``immutable=1`` (a read-only open picks it on its own on read-only
                storage).
            mapping_overlay: a mapping merged over every version's ``op_mapping.yaml``.
            cache_size: the number of answers kept.
            cache_bytes: a memory cap on the answer cache; None: none.
            refresh_seconds: how often cached answers are re-validated against a
                re-ingest; None: never.

        Returns:
            The opened store; close it (or use it in a ``with`` block).

        Raises:
            FileNotFoundError: a read-only open of a SQLite file that does not exist.
            profstore.storage.engines.DatabaseNotReadable: the file cannot be opened (an
                ``OSError``).
            profstore.storage.engines.SchemaMismatch: a read-only open of a database at
                another schema revision (the message names both and
                ``profstore db upgrade``).
            ValueError: a malformed URL (one slash, a bad port) or ``cache_bytes``.
            profstore.storage.reconnect.DatabaseUnavailable: a server that stays
                unreachable.

        Examples:
            >>> store = Store.open(demo_db)
            >>> store.versions()
            ['v0.18', 'hccl-v8.5']
            >>> store.close()
            >>> Store.open(demo_db + ".absent")
            Traceback (most recent call last):
            FileNotFoundError: no database at ....absent; run profstore ingest first
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
        """Release the store's connections (a ``with`` block calls it on exit).

        Never raises.

        Examples:
            >>> store = Store.open(demo_db)
            >>> store.close()
        """
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
        """The latency of one leaf operator in one version; a miss is an answer too.

        Args:
            leaf: the leaf descriptor.
            version: a version alias (``v0.18``) or name as ``profstore versions`` lists.
            interpolation: False answers measured rows only (the base result).
            exclude_samples: sample ids hidden from this query only (hold-out evaluation
                asks through the same code path a real lookup uses).
            format_policy: formats stated for the tensors the leaf leaves unstated (a
                ``FormatPolicy`` or its JSON object).
            regime_policy: stated regime equivalences (a ``RegimePolicy`` or its JSON
                object, ``{"ops": {op: {field: {from: to}}}}``).

        Returns:
            The answer: ``latency_us`` with its ``source`` and the rows used in
            ``details["matched_rows"]``, or a miss (``latency_us`` None) with its
            ``reason`` and the evidence in ``details``. An unknown version is the miss
            ``Reason.UNKNOWN_VERSION``.

        Raises:
            ValueError: ``leaf`` is not a ``LeafOp``, or a policy names an unknown op,
                kernel, field, value or format.
            profstore.storage.reconnect.DatabaseUnavailable: the server stays unreachable.

        Examples:
            >>> from profstore import LeafOp
            >>> leaf = LeafOp.from_json({
            ...     "op": "tensor_cast.rms_norm.default",
            ...     "args": [{"shape": [100, 7168], "dtype": "bfloat16"},
            ...              {"shape": [7168], "dtype": "bfloat16"}, 1e-6],
            ...     "outputs": [{"shape": [100, 7168], "dtype": "bfloat16"}]})
            >>> with Store.open(demo_db) as store:
            ...     result = store.lookup(leaf, "v0.18")
            ...     base = store.lookup(leaf, "v0.18", interpolation=False)
            >>> round(result.latency_us, 6), result.source.value, result.details["method"]
            (5.80096, 'INTERPOLATED', 'linear_1d')
            >>> [(row["line"], row["weight"]) for row in result.details["matched_rows"]]
            [(8, 0.4375), (9, 0.5625)]
            >>> base.latency_us, base.reason.value
            (None, 'no_exact_match')
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
        """Check a regime policy against a version's mapping and measured regimes.

        Each (policy, version) pair is checked once; ``lookup`` and
        ``ProfstoreDataSource`` call it before the first answer.

        Args:
            policy: the stated regime equivalences.
            profile: the version, as ``Store.profile`` returns it.

        Raises:
            ValueError: the policy names an op, kernel, field or value the version does
                not have.

        Examples:
            >>> from profstore.lookup.regime_policy import RegimePolicy
            >>> policy = RegimePolicy.from_json(
            ...     {"ops": {"aten.unknown.default": {"scale_mode": {"per_tensor": "per_token"}}}})
            >>> with Store.open(demo_db) as store:
            ...     store.check_regime_policy(policy, store.profile("v0.18"))
            Traceback (most recent call last):
            ValueError: ...aten.unknown.default...
        """
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
        """``lookup`` for each leaf in order.

        Args:
            leaves: the leaf descriptors.
            version: the version to answer from.
            interpolation: False answers measured rows only.

        Returns:
            One answer per leaf, in the order given.

        Raises:
            ValueError: an element is not a ``LeafOp``.

        Examples:
            >>> from profstore import LeafOp
            >>> leaves = [LeafOp.from_json({"op": "aten.mm.default", "args": [
            ...     {"shape": [m, 7168], "dtype": "bfloat16"},
            ...     {"shape": [7168, 4096], "dtype": "bfloat16"}]}) for m in (128, 200)]
            >>> with Store.open(demo_db) as store:
            ...     [round(r.latency_us, 6) for r in store.lookup_many(leaves, "v0.18")]
            [67.754136, 81.846998]
        """
        return [self.lookup(leaf, version, interpolation) for leaf in leaves]

    def clear_cache(self) -> None:
        """Forget every answer and everything read from the samples.

        Regime slices, prepared candidates, triangulations, kernel presence and formats
        go too. A loaded version's mapping is kept: it is a function of the
        ``profile_set`` state (row ids and content hashes), so it is reused only while
        that state is unchanged, and a re-ingest (a new id or hash) reads it again.
        Never raises.

        Examples:
            >>> with Store.open(demo_db) as store:
            ...     store.clear_cache()
            ...     store.versions()
            ['v0.18', 'hccl-v8.5']
        """
        self._generations.reset()

    def profile(self, version: str) -> Profile | None:
        """A version's profile as of now (re-read after a re-ingest).

        Args:
            version: a version alias or name.

        Returns:
            The version's id, alias and op mapping (an internal type), or None when the
            database holds no such version.

        Raises:
            profstore.storage.reconnect.DatabaseUnavailable: the server stays unreachable.

        Examples:
            >>> with Store.open(demo_db) as store:
            ...     profile = store.profile("v0.18")
            ...     missing = store.profile("v9")
            >>> profile.alias, "aten.mm.default" in profile.mapping.entries, missing
            ('v0.18', True, None)
        """
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
        """The input shapes of one stored row (what TensorCast reports with an answer).

        Args:
            version: a version alias or name.
            file_name: the CSV file's name, as ``details["matched_rows"]`` gives it.
            line_no: the row's line in that file (the header is line 1).

        Returns:
            The row's input shapes, one tuple per input, or None for an unknown version
            or row.

        Raises:
            profstore.storage.reconnect.DatabaseUnavailable: the server stays unreachable.

        Examples:
            >>> with Store.open(demo_db) as store:
            ...     store.row_input_shapes("v0.18", "RmsNorm.csv", 8)
            ((64, 7168), (7168,))
        """
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
        """The ingested versions' aliases, in the order they were first ingested.

        Returns:
            The aliases (``v0.18``; a communication version is ``hccl-v8.5``).

        Raises:
            profstore.storage.reconnect.DatabaseUnavailable: the server stays unreachable.

        Examples:
            >>> with Store.open(demo_db) as store:
            ...     store.versions()
            ['v0.18', 'hccl-v8.5']
        """
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
