"""A temporary copy of one version with extra (synthetic) CSV rows ingested into it.

The gap plan's "after" coverage comes from re-running the replay on such a copy: the
version's rows (and its HCCL profile's, so communication answers stay the same) are
copied table by table into a fresh SQLite file (a SQLite database is copied whole by
SQLite's backup instead), and the planned rows go in through the ingest code itself, as a
file of their own per kernel (``profstore.ingest.profile_copy``). What the copy answers
for a planned point is therefore what a real collection run with those shapes would make
the store answer.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from profstore.api import Store
from profstore.evaluation.holdout import known_profile
from profstore.ingest.perfdb_writer import Row
from profstore.ingest.profile_copy import add_rows, copy_profiles, sqlite_backup
from profstore.storage.engines import make_engine, upgrade


@contextmanager
def standin_store(store: Store, version: str, rows: Mapping[str, Sequence[Row]]
                  ) -> Iterator[tuple[Store, dict[str, int]]]:
    """A Store on a temporary copy of ``version`` with ``rows`` added; removed on exit."""
    profile = known_profile(store, version)
    ids = [profile.id] + ([profile.comm_profile_id] if profile.comm_profile_id is not None else [])
    with tempfile.TemporaryDirectory(prefix="profstore-standin-") as folder:
        path = Path(folder) / "standin.db"
        engine = make_engine(f"sqlite:///{path}")
        try:
            if not sqlite_backup(store.engine, path):
                upgrade(engine)
                copy_profiles(store.engine, engine, ids)
            accepted = add_rows(engine, profile.id, profile.mapping, rows)
        finally:
            engine.dispose()
        copy = Store.open(path, mapping_overlay=store.mapping_overlay)
        try:
            yield copy, accepted
        finally:
            copy.close()
