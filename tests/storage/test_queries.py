"""A kernel's exact keys, read once it has missed often enough (store/storage/queries.py): a
later miss costs no exact-key statement, every answer stays what SQL alone gives.

Statements are counted on the DBAPI connection the hot statements run on (SQLAlchemy's
events do not see them): every statement naming ``sample_key`` is an exact-key statement
or the key set's read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from profstore.api import Store
from profstore.ingest.loader import ingest_path
from profstore.model.leaf import LeafOp
from profstore.model.result import QueryResult, QuerySource, Reason
from profstore.storage import queries as candidates
from profstore.storage.engines import make_engine

from tests.support.perfdb import Row, build_database, mapping_doc, write_version

BF16 = "DT_BF16"
HIDDEN = 7168
NORM, ABSENT, EMPTY = "tensor_cast.rms_norm.default", "test.absent", "test.empty"
ENTRIES = {NORM: {"kernel_type": "RmsNorm"}, ABSENT: {"kernel_type": "NoSuchKernel"},
           EMPTY: {"kernel_type": "EmptyNorm"}}
CSV_LATENCY = {4: 5.0, 8: 6.0, 16: 9.0}
"""RmsNorm's rows (tokens → µs); a target between two is interpolated on the line."""
EMPTY_CSV = "Input Shapes,Input Data Types,Output Shapes,Output Data Types,Duration(us)\n"


def rms(tokens: int, latency: float) -> Row:
    return Row([[tokens, HIDDEN], [HIDDEN]], [BF16, BF16], [[tokens, HIDDEN]], [BF16], latency)


def leaf(tokens: int, op: str = NORM) -> LeafOp:
    return LeafOp.from_json({
        "op": op,
        "args": [{"shape": [tokens, HIDDEN], "dtype": "bfloat16"},
                 {"shape": [HIDDEN], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": [tokens, HIDDEN], "dtype": "bfloat16"}]})


def write(root: Path, rows: dict[int, float]) -> Path:
    kernels: dict[str, list[Row] | str] = {"RmsNorm": [rms(t, v) for t, v in rows.items()],
                                           "EmptyNorm": EMPTY_CSV}
    write_version(root, kernels, mapping_doc(ENTRIES))
    return root


class Recorder:
    """Stands in for the pinned DBAPI connection and keeps the SQL of every execute."""

    def __init__(self, raw: Any, seen: list[str]) -> None:
        self._raw, self._seen = raw, seen

    def cursor(self) -> object:
        return _Cursor(self._raw.cursor(), self._seen)

    def __getattr__(self, name: str) -> object:
        return getattr(self._raw, name)


class _Cursor:
    def __init__(self, cursor: Any, seen: list[str]) -> None:
        self._cursor, self._seen = cursor, seen

    def execute(self, sql: str, *args: object) -> object:
        self._seen.append(sql)
        return self._cursor.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._cursor, name)


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return build_database(tmp_path, write(tmp_path / "data", CSV_LATENCY))


@pytest.fixture()
def after_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key set is read at a kernel's second miss."""
    monkeypatch.setattr(candidates, "KEY_SET_AFTER", 2)


def open_recorded(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, list[str]]:
    store = Store.open(url)
    seen: list[str] = []
    snapshots = store._snapshots
    dbapi = snapshots.dbapi
    monkeypatch.setattr(snapshots, "dbapi",
                        lambda: None if dbapi() is None else Recorder(dbapi(), seen))
    return store, seen


def counted(store: Store, seen: list[str], target: LeafOp, table: str = "sample_key",
            **kw: object) -> tuple[QueryResult, int]:
    """The answer for ``target`` and how many of its statements name ``table``."""
    before = len(seen)
    result = store.lookup(target, "v0.18", **kw)
    return result, sum(table in sql for sql in seen[before:])


def key_of(tokens: int) -> str:
    return f"x2|{tokens},{HIDDEN}:{BF16};{HIDDEN}:{BF16}"


def test_a_repeated_miss_runs_no_exact_key_statement(url, after_two, monkeypatch):
    store, seen = open_recorded(url, monkeypatch)
    with store:
        answers = [counted(store, seen, leaf(tokens)) for tokens in (5, 6, 7, 12)]
    # the first miss asks its keys; the second asks them and reads the set; then none
    assert [n for _, n in answers] == [1, 2, 0, 0]
    # on the CSV's line: 5.0 + (6.0 - 5.0) * (t - 4) / 4 below 8, 6.0 + 3.0 * (t - 8) / 8 above
    assert [(r.latency_us, r.source, r.details["method"]) for r, _ in answers] == [
        (5.25, QuerySource.INTERPOLATED, "linear_1d"), (5.5, QuerySource.INTERPOLATED, "linear_1d"),
        (5.75, QuerySource.INTERPOLATED, "linear_1d"), (7.5, QuerySource.INTERPOLATED, "linear_1d")]


def test_a_hit_after_the_set_is_read_returns_the_csv_row(url, after_two, monkeypatch):
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
def test_a_kernel_over_the_cap_keeps_asking_sql(url, after_two, monkeypatch, cap, statements):
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
def test_miss_reasons_are_unchanged_once_the_set_is_read(url, after_two, monkeypatch, op,
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


def test_a_reingest_reads_a_new_set(url, tmp_path, after_two, monkeypatch):
    """The set read before a re-ingest is not consulted after it: the added row is found."""
    store, seen = open_recorded(url, monkeypatch)
    with store:
        answers = [counted(store, seen, leaf(tokens)) for tokens in (5, 7, 12)]
        assert [n for _, n in answers] == [1, 2, 0]
        engine = make_engine(url)
        try:
            ingest_path(engine, write(tmp_path / "again", {**CSV_LATENCY, 6: 7.5}))
        finally:
            engine.dispose()
        added = store.lookup(leaf(6), "v0.18")
    assert (added.latency_us, added.source) == (7.5, QuerySource.MEASURED)
    assert (added.details["method"], added.details["exact_key"]) == ("base_exact", key_of(6))
