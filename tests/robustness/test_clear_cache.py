"""What ``Store.clear_cache`` forgets: every answer and everything read from the samples,
but not a version's mapping while the ``profile_set`` state it was read from holds (the
mapping is a function of that state; docs/adr/0041-caches-follow-reingest.md)."""

from __future__ import annotations

import pytest
from profstore.api import Store

from tests.support.replacement import ingest, rms_leaf


def test_clear_cache_keeps_the_mapping_and_drops_the_answers(replacement):
    with Store.open(replacement.url, refresh_seconds=None) as store:
        profile = store.profile("v0.18")
        answer = store.lookup(rms_leaf(12), "v0.18")
        assert answer.latency_us == pytest.approx(5.0)  # v1: 2 + 0.25 µs per token (conftest)
        assert store.lookup(rms_leaf(12), "v0.18") is answer  # served from the cache
        store.clear_cache()
        assert store.profile("v0.18") is profile
        again = store.lookup(rms_leaf(12), "v0.18")
        assert again is not answer
        assert again.latency_us == pytest.approx(5.0)


def test_after_a_reingest_clear_cache_reads_the_new_mapping_and_rows(replacement):
    with Store.open(replacement.url, refresh_seconds=None) as store:
        old = store.profile("v0.18")
        store.lookup(rms_leaf(12), "v0.18")
        ingest(replacement.url, replacement.v2)
        store.clear_cache()
        new = store.profile("v0.18")
        assert new is not old and new.id != old.id
        assert store.lookup(rms_leaf(12), "v0.18").latency_us == pytest.approx(10.0)
