"""A lookup inside the refresh interval begins a transaction only with its first
statement (store/storage/generations.py, ``SnapshotEngine.deferred``), and one that finds
the versions changed answers again from the new state.

Transactions are counted where a lookup's connection begins one (``Pinned.begin``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from profstore.api import Store
from profstore.model.result import QuerySource
from profstore.storage import generations, pinned
from profstore.storage.engines import make_engine
from profstore.storage.snapshot import SnapshotEngine, StaleSnapshot

from tests.support.perfdb import build_database
from tests.support.rms_versions import CSV_LATENCY, leaf, reingested, write


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return build_database(tmp_path, write(tmp_path / "data", CSV_LATENCY))


@pytest.fixture()
def begun(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per read transaction begun."""
    seen: list[int] = []
    begin = pinned.Pinned.begin

    def counted(self: pinned.Pinned) -> None:
        seen.append(1)
        begin(self)

    monkeypatch.setattr(pinned.Pinned, "begin", counted)
    return seen


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The monotonic clock the Store's generations read, moved by the test."""
    now = [time.monotonic()]
    monkeypatch.setattr(generations.time, "monotonic", lambda: now[0])
    return now


def test_inside_the_interval_a_lookup_from_cached_rows_begins_no_transaction(
        url, begun, clock, monkeypatch):
    """5, 6 and 7 tokens interpolate on RmsNorm's line between 4 (5.0 µs) and 8 (6.0 µs).
    The first lookup begins with the state; the second, inside the interval, has the
    slice but asks its exact key (and, at the kernel's second miss, reads its key set):
    one transaction, begun by that statement; the third finds its key absent from the set
    and its slice cached, and begins none."""
    counts = []
    with Store.open(url, refresh_seconds=1.0) as store:
        answers = []
        for tokens in (5, 6, 7):
            answers.append(store.lookup(leaf(tokens), "v0.18").latency_us)
            counts.append(len(begun))
            clock[0] += 0.25
    assert counts == [1, 2, 2]
    assert answers == [5.25, 5.5, 5.75]


def test_inside_the_interval_a_profile_read_begins_no_transaction(url, begun, clock):
    with Store.open(url, refresh_seconds=1.0) as store:
        first = store.profile("v0.18")
        clock[0] += 0.5
        again = store.profile("v0.18")
        clock[0] += 1.0
        after = store.profile("v0.18")
    assert first is not None and again is first and after is first
    assert len(begun) == 2


def test_a_profile_read_follows_a_reingest_once_the_interval_is_over(url, tmp_path, clock):
    """Inside the interval the profile is read from the generation without a statement,
    as a cached answer is; after it, the new state's profile (the re-ingest's)."""
    with Store.open(url, refresh_seconds=1.0) as store:
        first = store.profile("v0.18")
        reingested(url, tmp_path / "again")
        clock[0] += 0.5
        inside = store.profile("v0.18")
        clock[0] += 1.0
        after = store.profile("v0.18")
    assert inside is first
    assert after is not first and after.alias == "v0.18"


def test_a_statement_that_finds_the_versions_changed_answers_from_the_new_state(
        url, tmp_path, begun, clock):
    """After a re-ingest, inside the interval, a lookup that asks a statement (6 tokens'
    exact key) begins the transaction, reads the new state and starts again in a new
    generation: the new row (7.5 µs) is its answer, measured."""
    with Store.open(url, refresh_seconds=1.0) as store:
        assert store.lookup(leaf(5), "v0.18").latency_us == 5.25
        old = store._generations.current
        reingested(url, tmp_path / "again")
        clock[0] += 0.5
        added = store.lookup(leaf(6), "v0.18")
        assert store._generations.current is not old
    assert (added.latency_us, added.source) == (7.5, QuerySource.MEASURED)
    assert len(begun) == 3  # the first lookup, the stale attempt, its new snapshot


def test_a_snapshot_nested_in_a_deferred_one_begins_it_and_shares_it(url):
    engine = make_engine(url)
    snapshots = SnapshotEngine(engine)
    asked: list[object] = []
    try:
        with snapshots.deferred(lambda seen: asked.append(seen) is None):
            assert snapshots._local.pinned is None
            with snapshots.snapshot():
                pinned = snapshots._local.pinned
                assert pinned is not None and snapshots._local.active
            assert snapshots._local.pinned is pinned and snapshots._local.active
        assert not snapshots._local.active and snapshots._local.pinned is None
        assert [len(seen) for seen in asked] == [1]  # one version: v0.18
    finally:
        snapshots.close()
        engine.dispose()


def test_a_deferred_snapshot_on_another_state_raises_stale_and_ends_its_transaction(url):
    engine = make_engine(url)
    snapshots = SnapshotEngine(engine)
    try:
        with pytest.raises(StaleSnapshot), snapshots.deferred(lambda seen: False):
            snapshots.cursor()
        assert not snapshots._local.active and snapshots._local.pinned is None
        assert snapshots._local.deferred is None
    finally:
        snapshots.close()
        engine.dispose()
