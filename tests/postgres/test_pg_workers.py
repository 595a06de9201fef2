"""Issue #24 item 6 (many workers): threads share a Store's few connections, a forked child
never reuses the parent's, and workers beyond ``max_connections`` wait for a free slot
instead of failing at once."""

from __future__ import annotations

import multiprocessing
import threading

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.storage.engines import POOL_OVERFLOW, POOL_SIZE
from sqlalchemy.engine import make_url

from bench.bench_workers import run_workers
from tests.support import perfdb
from tests.support.postgres import database_on, execute, rms_leaf

pytestmark = pytest.mark.postgresql_only
THREADS = 18
_FORKED: Store | None = None
"""The Store a forked child inherits (set by the fork test before the pool forks)."""


def latency(store: Store, tokens: int) -> float | None:
    return store.lookup(LeafOp.from_json(rms_leaf(tokens)), "v0.18").latency_us


def sessions(url: str) -> int:
    name = make_url(url).database
    rows = execute(perfdb.BACKEND.admin_url or "",
                   "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                   f"'profstore' AND datname = '{name}'")
    return int(rows[0][0])


@pytest.fixture()
def shared_db(rms_data):
    url = database_on(perfdb.BACKEND.admin_url or "", rms_data)
    yield url
    perfdb.drop_databases([make_url(url).database or ""])


def test_eighteen_threads_share_a_bounded_pool(shared_db):
    barrier, answers, errors = threading.Barrier(THREADS + 1), {}, []

    def thread(i: int) -> None:
        try:
            answers[i] = [latency(store, 8 + i)]
            barrier.wait(timeout=60)  # asleep between lookups: holds no connection
            barrier.wait(timeout=60)
            answers[i].append(latency(store, 40 + i))
        except Exception as exc:
            errors.append(exc)

    with Store.open(shared_db) as store:
        threads = [threading.Thread(target=thread, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        barrier.wait(timeout=60)
        held = sessions(shared_db)
        barrier.wait(timeout=60)
        for t in threads:
            t.join(timeout=60)
    assert errors == []
    assert 1 <= held <= POOL_SIZE + POOL_OVERFLOW  # seen by application_name, bounded
    assert answers[0] == [7.0, 15.0] and answers[17] == [11.25, 19.25]


def _child_lookup(tokens: int) -> float | None:
    assert _FORKED is not None
    return latency(_FORKED, tokens)


def test_a_forked_pool_never_reuses_the_parents_connection(shared_db):
    global _FORKED
    with Store.open(shared_db) as store:
        _FORKED = store
        assert latency(store, 8) == 7.0  # the parent has a live pooled connection now
        with multiprocessing.get_context("fork").Pool(4) as pool:
            got = pool.map_async(_child_lookup, [12, 16, 20, 24, 40, 64, 100, 128])
            assert got.get(timeout=60) == [8.0, 9.0, 10.0, 11.0, 15.0, 21.0, 30.0, 37.0]
        store.clear_cache()
        assert [latency(store, t) for t in (8, 12)] == [7.0, 8.0]
    _FORKED = None


def test_workers_beyond_max_connections_wait_for_a_slot(cluster, cluster_db):
    cluster.restart(max_connections="8", superuser_reserved_connections="1")
    try:
        leaves = [rms_leaf(t) for t in (8, 12, 16, 20, 24, 40)]
        run = run_workers("postgresql", cluster_db, leaves, workers=16, threads=1, seconds=3,
                          sample=False)
    finally:
        cluster.restart()
    assert run.failures == []
    assert run.lookups_per_s > 0 and run.pool_connections == 16
