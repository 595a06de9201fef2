"""``Store``: the library entry point a simulator calls for every leaf operator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from profstore.api.answers import PLAIN, ResultKey, cache_entries, new_caches, options_key
from profstore.api.opening import open_engine
from profstore.api.versions import VersionReads
from profstore.lookup.dispatch import Dispatcher, Profile
from profstore.lookup.format_resolution import FormatPolicy
from profstore.lookup.regime_policy import RegimePolicy
from profstore.model.leaf import LeafOp
from profstore.model.mapping import VersionMapping
from profstore.model.result import QueryResult, Reason

if TYPE_CHECKING:  # the engine side (SQLAlchemy, numpy) is imported when a Store opens
    from profstore.storage.engines import ReadOnly
    from profstore.storage.generations import Generation
    from profstore.storage.handles import Engine
    from profstore.storage.queries import CandidateQueries

T = TypeVar("T")
REFRESH_SECONDS = 1.0
"""How stale an answer from cached rows may be after a re-ingest (one small query per
interval)."""


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
        refresh_seconds: how stale an answer from cached rows (or a cached answer) may
            be after a re-ingest; None: those are never re-validated.

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
        from profstore.storage.generations import Generations
        from profstore.storage.snapshot import SnapshotEngine

        self.engine = engine
        self.mapping_overlay = mapping_overlay
        self._cache_size = cache_entries(cache_size, cache_bytes)
        self._snapshots = SnapshotEngine(engine)
        self._generations = Generations(
            partial(new_caches, self._snapshots, self._cache_size), refresh_seconds)
        self._versions = VersionReads(engine, self._snapshots, mapping_overlay)

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
            refresh_seconds: how often answers from cached rows are re-validated
                against a re-ingest; None: never.

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
        engine = open_engine(url_or_path, read_only)
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
            key = options_key(leaf, version, interpolation, exclude_samples, format_policy,
                              regime_policy)
        fresh = self._generations.fresh()
        cached = None if fresh is None else fresh.parts.results.get(key)
        return cached if cached is not None else self._retrying(self._computed, key)

    def _retrying(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, once more after a lost connection (store/storage/reconnect.py): a
        server that stays down raises ``DatabaseUnavailable``, never a driver error."""
        from profstore.storage.reconnect import retrying

        return retrying(self.engine, self._snapshots.forget, lambda: call(*args))

    def _computed(self, key: ResultKey) -> QueryResult:
        """The answer for ``key`` on the current ``profile_set`` state
        (``Generations.within``): cached, else computed and cached."""
        return self._generations.within(self._snapshots, partial(self._answered, key))

    def _answered(self, key: ResultKey, generation: Generation) -> QueryResult:
        leaf, version, flag_or_options = key
        cached = generation.parts.results.get(key)
        if cached is not None:
            return cached
        options = PLAIN[flag_or_options] if isinstance(flag_or_options, bool) else \
            flag_or_options
        profile = self._versions.checked_profile(generation, version, options)
        if profile is None:
            result = QueryResult.miss(Reason.UNKNOWN_VERSION,
                                      message=f"no ingested version {version!r}")
        else:
            result = generation.parts.dispatcher.lookup(leaf, profile, options)
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
        self._versions.check_regime_policy(policy, profile, self.queries)

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
        """A version's profile as of now (re-read after a re-ingest, as answers are).

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
        fresh = self._generations.fresh()
        if fresh is not None and version in fresh.profiles:
            return fresh.profiles[version]
        return self._retrying(self._profile_now, version)

    def _profile_now(self, version: str) -> Profile | None:
        return self._generations.within(
            self._snapshots, lambda generation: self._versions.profile_in(generation, version))

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
        profile = self.profile(version)
        return None if profile is None else \
            self._versions.row_input_shapes(profile.id, file_name, line_no)

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
        return self._retrying(self._versions.aliases)
