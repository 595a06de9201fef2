"""Issue #16 item 11: the answer cache bounded by memory (``cache_bytes``), checked by
measuring what the cache holds with tracemalloc rather than by counting entries."""

from __future__ import annotations

import tracemalloc

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp

from tests.support.cli_lookup import rms

UNIQUE = 300
BOUND = 80 * 1024


def growth(store: Store) -> int:
    """Bytes still allocated after ``UNIQUE`` distinct lookups (misses past the measured
    range, so only the answer cache grows), the regime's candidates loaded beforehand."""
    for tokens in (9, 10, 11):
        store.lookup(LeafOp.from_json(rms(tokens)), "v0.18")
    leaves = [LeafOp.from_json(rms(10**6 + i)) for i in range(UNIQUE)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        answers = [store.lookup(leaf, "v0.18").reason for leaf in leaves]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert {a.value for a in answers} == {"outside_range"}
    return after - before


def test_cache_bytes_bounds_the_answer_cache_by_memory(fixture_db):
    """The answer cache's own footprint is the growth beyond a store that keeps no answers
    (``cache_bytes=0``): the other caches grow alike in all three. The process-wide caches
    (exact keys, parsed shapes) are filled first by a store that is not measured: how
    full the earlier tests of this worker left them would otherwise land on whichever
    store is measured first."""
    with Store.open(fixture_db, cache_bytes=0) as store:
        growth(store)
    footprint = {}
    for label, options in (("none", {"cache_bytes": 0}), ("default", {}),
                           ("bounded", {"cache_bytes": BOUND})):
        with Store.open(fixture_db, **options) as store:
            footprint[label] = growth(store)
    assert footprint["default"] - footprint["none"] > 2 * BOUND  # the bound has work to do
    assert footprint["bounded"] - footprint["none"] <= BOUND


@pytest.mark.no_database
@pytest.mark.parametrize("value", [-1, 1.5, "1MB"])
def test_cache_bytes_must_be_a_non_negative_integer(value):
    from sqlalchemy import create_engine

    with pytest.raises(ValueError, match="cache_bytes: expected a non-negative integer"):
        Store(create_engine("sqlite://"), cache_bytes=value)
