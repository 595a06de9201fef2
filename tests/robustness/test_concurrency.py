"""Readers during a re-ingest: processes and threads look up ``v0.18`` while an ingest
replaces it; every answer is entirely the old version or entirely the new one.

Two kinds of reader: *cold* ones cache no answers and empty the regime-slice cache
before every lookup (every answer is read from the database in one snapshot), *warm*
ones keep a long-lived Store whose cached answers are re-validated every ``REFRESH``
seconds (after the ingest commits they must move to the new version, not serve the old
one forever).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest
from profstore.api import Store

from tests.support.replacement import (
    FACTOR,
    TARGETS,
    Replacement,
    classify,
    ingest,
    rms_leaf,
    v1_latency,
)

READERS = 4
LOOKUPS = 1000
REFRESH = 0.05
DEADLINE = 120.0
FILE_PAUSE = 0.05
"""Seconds the ingest sleeps after each file (inside its transaction): ~1.5 s in all."""


@dataclass
class Tally:
    counts: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    lookups: int = 0


def read(store: Store, cold: bool, start: int, stop: threading.Event | None = None,
         go: object | None = None) -> Tally:
    """At least LOOKUPS lookups, then on until a new answer has been seen (or DEADLINE)."""
    tally = Tally()
    if go is not None:
        go.wait(DEADLINE)
    ends = time.monotonic() + DEADLINE
    while (tally.lookups < LOOKUPS or not tally.counts["new"]) and time.monotonic() < ends:
        tokens = TARGETS[(start + tally.lookups * 7) % len(TARGETS)]
        if cold:
            store.queries.clear()
        try:
            result = store.lookup(rms_leaf(tokens), "v0.18")
            kind = classify(tokens, result.latency_us)
        except Exception as exc:
            tally.errors.append(f"{type(exc).__name__}: {exc}")
            kind = "error"
        tally.counts[kind] += 1
        tally.lookups += 1
    return tally


def reader_process(url: str, cold: bool, start: int, ready, go, results) -> None:
    with Store.open(url, refresh_seconds=REFRESH, cache_size=0 if cold else 65536) as store:
        first = store.lookup(rms_leaf(TARGETS[start]), "v0.18")
        ready.put(classify(TARGETS[start], first.latency_us))
        tally = read(store, cold, start, go=go)
    results.put((cold, tally.lookups, dict(tally.counts), tally.errors[:5]))


def slow_ingest(replacement: Replacement) -> list:
    return ingest(replacement.url, replacement.v2, row_hook=lambda _rows: time.sleep(FILE_PAUSE))


def assert_clean(tallies: list[tuple[bool, int, dict, list]]) -> None:
    for _cold, lookups, counts, errors in tallies:
        assert errors == []
        assert lookups >= LOOKUPS
        assert set(counts) <= {"old", "new"}, counts
        assert counts.get("old", 0) > 0 and counts.get("new", 0) > 0, counts


def test_fixture_versions_differ_by_the_factor_everywhere(replacement):
    with Store.open(replacement.url) as store:
        before = [store.lookup(rms_leaf(t), "v0.18").latency_us for t in (8, 12, 321)]
    ingest(replacement.url, replacement.v2)
    with Store.open(replacement.url) as store:
        after = [store.lookup(rms_leaf(t), "v0.18").latency_us for t in (8, 12, 321)]
    assert before[:2] == pytest.approx([v1_latency(8), v1_latency(12)])
    assert after[:2] == pytest.approx([FACTOR * v1_latency(8), FACTOR * v1_latency(12)])
    assert before[2] is None and after[2] is None


def test_reader_processes_see_old_or_new_never_mixed(replacement):
    context = multiprocessing.get_context("spawn")
    ready, results, go = context.Queue(), context.Queue(), context.Event()
    readers = [context.Process(target=reader_process,
                               args=(replacement.url, i % 2 == 0, i * 37, ready, go, results))
               for i in range(READERS)]
    for process in readers:
        process.start()
    try:
        firsts = [ready.get(timeout=DEADLINE) for _ in readers]
        go.set()
        [summary] = [s for s in slow_ingest(replacement) if s.alias == "v0.18"]
        tallies = [results.get(timeout=DEADLINE) for _ in readers]
    finally:
        for process in readers:
            process.join(timeout=DEADLINE)
            if process.is_alive():
                process.kill()
    assert firsts == ["old"] * READERS
    assert summary.status == "ingested"
    assert_clean(tallies)
    assert {cold for cold, *_ in tallies} == {True, False}


def test_threads_sharing_one_store_see_old_or_new_never_mixed(replacement):
    tallies: list[Tally] = []
    go = threading.Event()
    with Store.open(replacement.url, refresh_seconds=REFRESH) as store:
        assert classify(8, store.lookup(rms_leaf(8), "v0.18").latency_us) == "old"

        def work(i: int) -> None:
            tallies.append(read(store, cold=False, start=i * 41, go=go))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        go.set()
        [summary] = [s for s in slow_ingest(replacement) if s.alias == "v0.18"]
        for thread in threads:
            thread.join(DEADLINE)
    assert summary.status == "ingested"
    assert_clean([(False, t.lookups, dict(t.counts), t.errors[:5]) for t in tallies])
    assert len(tallies) == 8


def test_a_long_lived_store_follows_a_reingest_within_the_refresh_interval(replacement):
    """A cached answer is served stale at most REFRESH seconds after the commit."""
    with Store.open(replacement.url, refresh_seconds=REFRESH) as store:
        assert store.lookup(rms_leaf(12), "v0.18").latency_us == pytest.approx(5.0)
        ingest(replacement.url, replacement.v2)
        time.sleep(REFRESH * 2)
        assert store.lookup(rms_leaf(12), "v0.18").latency_us == pytest.approx(10.0)
        assert store.lookup(rms_leaf(13), "v0.18").latency_us == pytest.approx(10.5)


def test_an_uncached_lookup_sees_the_new_version_at_once(replacement):
    """Without timed re-validation a cached answer stays old, but the next lookup that
    queries notices the re-ingest (the old profile id is gone), and drops the caches."""
    with Store.open(replacement.url, refresh_seconds=None) as store:
        old_id = store.profile("v0.18").id
        assert store.lookup(rms_leaf(12), "v0.18").latency_us == pytest.approx(5.0)
        ingest(replacement.url, replacement.v2)
        assert store.lookup(rms_leaf(12), "v0.18").latency_us == pytest.approx(5.0)
        assert store.lookup(rms_leaf(20), "v0.18").latency_us == pytest.approx(14.0)
        assert store.lookup(rms_leaf(12), "v0.18").latency_us == pytest.approx(10.0)
        assert store.profile("v0.18").id != old_id
