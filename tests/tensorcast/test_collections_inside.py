"""The garbage collections that run inside lookups (tensorcast/collections_inside.py), in the
run statistics and the summary (metered.py, summary.py). Collections are forced with
``gc.collect()``; the expected shares are computed by hand from the stated seconds."""

from __future__ import annotations

import gc
import os
from types import SimpleNamespace

import pytest
from profstore.tensorcast.collections_inside import watcher
from profstore.tensorcast.metered import MeteredDataSource
from profstore.tensorcast.run_stats import ProcessStats, RunSummary
from profstore.tensorcast.summary import Timing, render, to_json

pytestmark = pytest.mark.no_database


def test_only_collections_that_start_while_running_are_counted():
    found = watcher()
    assert watcher() is found and gc.callbacks.count(found.observe) == 1
    count, seconds = found.count, found.seconds
    gc.collect()
    assert (found.count, found.seconds) == (count, seconds)
    found.running = True
    try:
        gc.collect()
    finally:
        found.running = False
    assert found.count == count + 1 and found.seconds > seconds


class _CollectingSource:
    """An inner data source whose lookup forces one full collection, then misses."""

    last_miss_reason = "unmapped"
    last_miss_details: dict = {}
    last_result = None
    last_leaf = None

    def lookup(self, op_invoke_info):
        gc.collect()
        return None


def test_a_collection_inside_a_lookup_is_counted_in_its_time_and_apart():
    stats = ProcessStats(os.getpid())
    source = MeteredDataSource(_CollectingSource(), stats)  # type: ignore[arg-type]
    source.lookup(SimpleNamespace(func="aten.abs.default"))
    assert stats.lookups == 1
    assert 0 < stats.lookup_collection_seconds <= stats.lookup_seconds


def test_the_summary_gives_the_share_with_and_without_collections():
    processes = [ProcessStats(1, lookups=10, lookup_seconds=1.5, lookup_collection_seconds=0.4),
                 ProcessStats(2, lookups=10, lookup_seconds=0.5)]
    summary, timing = RunSummary(processes), Timing(wall_seconds=10.0)
    data = to_json(summary, timing)
    # 2.0 s of lookups over 2 processes x 10 s; without the 0.4 s of collections: 1.6 s
    assert (data["lookup_share"], data["lookup_collection_seconds"]) == (0.1, 0.4)
    assert data["lookup_share_without_collections"] == pytest.approx(0.08)
    assert ("lookups 2.00 s (10.0 % of 10.0 s wall per process; garbage collections 0.40 s "
            "of it, 8.0 % without)") in render(summary, timing).splitlines()[0]
