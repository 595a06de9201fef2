"""A kernel's exact keys, read once it has missed often enough (store/storage/queries.py): a
later miss costs no exact-key statement, every answer stays what SQL alone gives.

Statements are counted on the DBAPI connection the hot statements run on (SQLAlchemy's
events do not see them): every statement naming ``sample_key`` is an exact-key statement
or the key set's read.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.model.result import QueryResult, QuerySource, Reason
from profstore.storage import generations
from profstore.storage import queries as candidates

from tests.support.perfdb import build_database
from tests.support.recorded_sql import Recorder
from tests.support.rms_versions import (
    ABSENT,
    BF16,
    CSV_LATENCY,
    EMPTY,
    ENTRIES,
    HIDDEN,
    NORM,
    leaf,
    reingested,
    write,
)


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return build_database(tmp_path, write(tmp_path / "data", CSV_LATENCY))


def open_recorded(url: str, monkeypatch: pytest.MonkeyPatch,
                  **options: Any) -> tuple[Store, list[str]]:
    store = Store.open(url, **options)
    seen: list[str] = []
    snapshots = store._snapshots
    cursor = snapshots.cursor

    def recorded() -> Recorder | None:
        found = cursor()
        return None if found is None else Recorder(found, seen)

    monkeypatch.setattr(snapshots, "cursor", recorded)
    return store, seen


def counted(store: Store, seen: list[str], target: LeafOp, table: str = "sample_key",
            **kw: object) -> tuple[QueryResult, int]:
    """The answer for ``target`` and how many of its statements name ``table``."""
    before = len(seen)
    result = store.lookup(target, "v0.18", **kw)
    return result, sum(table in sql for sql in seen[before:])


def key_of(tokens: int) -> str:
    return f"x2|{tokens},{HIDDEN}:{BF16};{HIDDEN}:{BF16}"


def test_a_repeated_miss_runs_no_exact_key_statement(url, monkeypatch):
    store, seen = open_recorded(url, monkeypatch)
    with store:
        answers = [counted(store, seen, leaf(tokens)) for tokens in (5, 6, 7, 12)]
    # by default (KEY_SET_AFTER 2) the first miss asks its keys; the second asks them and
    # reads the set; then none
    assert [n for _, n in answers] == [1, 2, 0, 0]
    # on the CSV's line: 5.0 + (6.0 - 5.0) * (t - 4) / 4 below 8, 6.0 + 3.0 * (t - 8) / 8 above
    assert [(r.latency_us, r.source, r.details["method"]) for r, _ in answers] == [
        (5.25, QuerySource.INTERPOLATED, "linear_1d"), (5.5, QuerySource.INTERPOLATED, "linear_1d"),
        (5.75, QuerySource.INTERPOLATED, "linear_1d"), (7.5, QuerySource.INTERPOLATED, "linear_1d")]


def test_a_hit_after_the_set_is_read_returns_the_csv_row(url, monkeypatch):
    store, seen = open_recorded(url, monkeypatch)
    with store:
        for tokens in (5, 6):
            store.lookup(leaf(tokens), "v0.18")
        hit, statements = counted(store, seen, leaf(8))
    assert statements == 1
    assert (hit.latency_us, hit.source, hit.reason) == (6.0, QuerySource.MEASURED, None)
    assert (hit.details["method"], hit.details["exact_key"]) == ("base_exact", key_of(8))
    assert hit.details["matched_rows"] == [{"file": "RmsNorm.csv", "line": 3, "latency_us": 6.0,
                                            "latency_column": "Average Duration(us)"}]


@pytest.mark.parametrize(("cap", "statements"), [(8, [1, 2, 1, 1, 1]), (9, [1, 2, 0, 1, 0])])
def test_a_kernel_over_the_cap_keeps_asking_sql(url, monkeypatch, cap, statements):
    """RmsNorm has nine key rows (three samples, three keys each): a cap of eight reads the
    set once, finds it too large and keeps asking SQL; nine keeps the set."""
    monkeypatch.setattr(candidates, "KEY_SET_CAP", cap)
    store, seen = open_recorded(url, monkeypatch)
    with store:
        answers = [counted(store, seen, leaf(tokens)) for tokens in (5, 6, 7, 8, 12)]
    assert [n for _, n in answers] == statements
    assert [(r.latency_us, r.source) for r, _ in answers] == [
        (5.25, QuerySource.INTERPOLATED), (5.5, QuerySource.INTERPOLATED),
        (5.75, QuerySource.INTERPOLATED), (6.0, QuerySource.MEASURED),
        (7.5, QuerySource.INTERPOLATED)]


@pytest.mark.parametrize(("op", "reason", "message"), [
    (ABSENT, Reason.CSV_NOT_FOUND, "no NoSuchKernel.csv"),
    (EMPTY, Reason.NO_EXACT_MATCH, f"no EmptyNorm row with input signature {key_of(11)}"),
    (NORM, Reason.NO_EXACT_MATCH, f"no RmsNorm row with input signature {key_of(11)}"),
])
def test_miss_reasons_are_unchanged_once_the_set_is_read(url, monkeypatch, op,
                                                        reason, message):
    """No CSV, a CSV without rows (its file has no keys) and a CSV without the key: the
    third miss is answered from the set alone, kernel presence included (the presence
    cache emptied first), with the reason and message SQL gives."""
    store, seen = open_recorded(url, monkeypatch)
    with store:
        for tokens in (9, 10):
            store.lookup(leaf(tokens, op), "v0.18", interpolation=False)
        store.queries._kernels.clear()
        miss, statements = counted(store, seen, leaf(11, op), "kernel_file", interpolation=False)
    assert statements == 0
    assert (miss.latency_us, miss.source, miss.reason) == (None, None, reason)
    assert miss.details["base_attempts"] == [
        {"kernel": ENTRIES[op]["kernel_type"], "reason": reason.value, "message": message}]


def test_a_reingest_reads_a_new_set(url, tmp_path, monkeypatch):
    """The set read before a re-ingest is not consulted after it: the added row is found
    (no refresh interval: every uncached lookup reads the state first)."""
    store, seen = open_recorded(url, monkeypatch, refresh_seconds=None)
    with store:
        answers = [counted(store, seen, leaf(tokens)) for tokens in (5, 7, 12)]
        assert [n for _, n in answers] == [1, 2, 0]
        reingested(url, tmp_path / "again")
        added = store.lookup(leaf(6), "v0.18")
    assert (added.latency_us, added.source) == (7.5, QuerySource.MEASURED)
    assert (added.details["method"], added.details["exact_key"]) == ("base_exact", key_of(6))


def test_inside_the_refresh_interval_an_answer_from_cached_rows_may_be_stale(
        url, tmp_path, monkeypatch):
    """Within ``refresh_seconds`` of the last look at the state, a lookup answered from the
    key set and the cached slice runs no statement, so it does not see a re-ingest: the
    line between 4 (5.0 µs) and 8 tokens (6.0 µs) at 6 gives 5.5. After the interval
    the lookup reads the state and finds the new row."""
    clock = [time.monotonic()]
    monkeypatch.setattr(generations.time, "monotonic", lambda: clock[0])
    store, seen = open_recorded(url, monkeypatch, refresh_seconds=1.0)
    with store:
        for tokens in (5, 7, 12):
            store.lookup(leaf(tokens), "v0.18")
        reingested(url, tmp_path / "again")
        before = len(seen)
        clock[0] += 0.5
        stale = store.lookup(leaf(6), "v0.18")
        assert seen[before:] == []
        clock[0] += 1.0
        fresh = store.lookup(leaf(6), "v0.18")
    assert (stale.latency_us, stale.source) == (5.5, QuerySource.INTERPOLATED)
    assert (fresh.latency_us, fresh.source) == (7.5, QuerySource.MEASURED)


def other_width(tokens: int, hidden: int) -> LeafOp:
    """An RmsNorm leaf of another hidden size: a regime the version does not measure."""
    return LeafOp.from_json({
        "op": NORM,
        "args": [{"shape": [tokens, hidden], "dtype": "bfloat16"},
                 {"shape": [hidden], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": [tokens, hidden], "dtype": "bfloat16"}]})


def test_once_a_kernels_regimes_are_read_a_new_regime_misses_without_a_statement(
        url, monkeypatch):
    """The first regime miss reads its own (absent) regime and the kernel's regimes (to
    name the nearest); a miss in a second absent regime reads neither. Both name the one
    measured regime (hidden 7168), which answers at 5 tokens on its line: 5.0 + 1.0 / 4."""
    store, seen = open_recorded(url, monkeypatch)
    with store:
        misses = [counted(store, seen, other_width(5, hidden), "regime_points.axes")
                  for hidden in (4096, 2048)]
    assert [n for _, n in misses] == [2, 0]
    for (miss, _), hidden in zip(misses, (4096, 2048)):
        assert miss.reason is Reason.REGIME_MISMATCH
        [nearest] = miss.details["nearest_regimes"]
        assert nearest["differs"] == {"shape_signature": [f"T,{hidden};{hidden}",
                                                          f"T,{HIDDEN};{HIDDEN}"]}
        assert (nearest["latency_us"], nearest["method"]) == (5.25, "linear_1d")


def test_a_regime_miss_counts_the_kernels_points_from_its_regime_list(url, monkeypatch):
    """The miss message's "3 points in 1 other regimes" (RmsNorm's hidden 7168 regime, three
    samples) and the nearest regimes both come from one statement over the kernel's
    regimes on the path, not one to count them and one to list them."""
    store, seen = open_recorded(url, monkeypatch)
    with store:
        miss = store.lookup(other_width(5, 4096), "v0.18")
    kernel_wide = [sql for sql in seen if "FROM regime JOIN regime_points" in sql
                   and "regime.regime_key = " not in sql]
    assert len(kernel_wide) == 1
    assert miss.details["attempted_kernels"][0]["message"] == (
        "no RmsNorm row shares the target regime (3 points in 1 other regimes)")
