"""What a ``Store`` reads about its versions rather than answers: each version's profile
(its mapping loaded once per ``profile_set`` state), the aliases, the input shapes of
stored rows (all rows of a file read at once), and a regime policy checked against a
version's mapping and measured regimes."""

from __future__ import annotations

import json
import threading
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from profstore.lookup.dispatch import LookupOptions, Profile
from profstore.lookup.regime_policy import RegimePolicy, kernel_paths, vocabulary_of
from profstore.model.clock_cache import ClockCache
from profstore.model.mapping import VersionMapping, merge_overlay
from profstore.model.shapes import Shape

if TYPE_CHECKING:  # the engine side (SQLAlchemy, numpy) is imported when a Store opens
    from profstore.storage.catalog import StoredVersion
    from profstore.storage.generations import Generation
    from profstore.storage.handles import Connection, Engine
    from profstore.storage.queries import CandidateQueries
    from profstore.storage.snapshot import Fingerprint, SnapshotEngine

ROW_SHAPES_CACHED = 8192
"""CSV rows whose input shapes a store keeps (TensorCast reports the matched row's shapes
with every answer; a row is one index lookup, migration 0007)."""


class VersionReads:
    """A store's reads of its versions, on its engine and snapshots (the caller retries a
    lost connection)."""

    def __init__(self, engine: Engine, snapshots: SnapshotEngine,
                 mapping_overlay: VersionMapping | None) -> None:
        self.engine, self.snapshots, self.mapping_overlay = engine, snapshots, mapping_overlay
        self._lock = threading.Lock()
        self._mappings: dict[str, Profile | None] = {}
        self._mappings_of: Fingerprint | None = None
        self._row_shapes: ClockCache[tuple[int, str, int], tuple[tuple[Shape, ...] | None]] = (
            ClockCache(ROW_SHAPES_CACHED))
        self._checked: ClockCache[tuple[Any, ...], bool] = ClockCache(64)

    def profile_in(self, generation: Generation, version: str) -> Profile | None:
        """The version's profile as the generation holds it, loaded on first use."""
        if version in generation.profiles:  # written only under the lock, read without it
            return generation.profiles[version]
        with self._lock:
            if version not in generation.profiles:
                generation.profiles[version] = self._mapping_for(generation.fingerprint,
                                                                 version)
            return generation.profiles[version]

    def checked_profile(self, generation: Generation, version: str,
                        options: LookupOptions) -> Profile | None:
        """``profile_in``, with the lookup's format and regime policies checked against it
        (``ValueError`` names what the version does not have)."""
        profile = self.profile_in(generation, version)
        if profile is not None and options.formats is not None:
            options.formats.check_ops(profile.mapping.entries, version)
        if profile is not None and options.regimes is not None:
            self.check_regime_policy(options.regimes, profile, generation.parts.queries)
        return profile

    def _mapping_for(self, seen: Fingerprint | None, version: str) -> Profile | None:
        """The version's profile as loaded for the ``profile_set`` state ``seen``: kept
        across ``clear_cache`` and generations of the same state (caller holds the lock)."""
        if seen is None or seen != self._mappings_of:
            self._mappings, self._mappings_of = {}, seen
        if version not in self._mappings:
            self._mappings[version] = self._load_profile(version)
        return self._mappings[version]

    def _load_profile(self, version: str) -> Profile | None:
        from profstore.storage.catalog import find_profile

        with self.snapshots.connect() as conn:
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

    def check_regime_policy(self, policy: RegimePolicy, profile: Profile,
                            queries: CandidateQueries) -> None:
        """``Store.check_regime_policy``: once per (policy, version) pair."""
        key = ("regime_policy", policy, profile.id)
        if self._checked.get(key) is not None:
            return
        mapping = profile.mapping

        def vocabulary(kernel: str) -> dict[str, set[str]]:
            return vocabulary_of(key for path in kernel_paths(mapping, kernel)
                                 for key, _ in queries.regime_keys(profile.id, kernel, path))

        policy.check({op: e.kernels for op, e in mapping.entries.items()}, vocabulary,
                     profile.alias)
        self._checked.put(key, True)

    def aliases(self) -> list[str]:
        """The ingested versions' aliases, in the order they were first ingested."""
        from profstore.storage.catalog import known_aliases

        with self.engine.connect() as conn:
            return known_aliases(conn)

    def row_input_shapes(self, profile_id: int, file_name: str,
                         line_no: int) -> tuple[tuple[int, ...], ...] | None:
        """``Store.row_input_shapes`` of a known version: each row read once and kept."""
        from profstore.storage.provenance import input_shapes_of, row_input_shapes_cell

        key = (profile_id, file_name, line_no)  # a re-ingest gives the version a new id
        found = self._row_shapes.get(key)
        if found is None:
            with self.snapshots.lone():  # one statement: no transaction to begin or end
                text = row_input_shapes_cell(self.snapshots, profile_id, file_name, line_no)
            found = (None if text is None else input_shapes_of(text),)
            self._row_shapes.put(key, found)
        return found[0]


def _comm_profile(conn: Connection, row: StoredVersion, mapping: VersionMapping) -> int | None:
    """The HCCL profile a version's ``communication_data_ref`` points at (same device);
    without the field (the older layout), the version itself when it holds communication
    CSVs of its own."""
    from profstore.storage.catalog import has_comm_samples, hccl_profile_id

    ref = mapping.header.get("communication_data_ref")
    if not ref:
        return row.id if has_comm_samples(conn, row.id) else None
    return hccl_profile_id(conn, row.device, PurePosixPath(str(ref).rstrip("/")).name)
