"""Base exact keys: rows store a stripped key only where it can change an answer, and
lookups answer exactly as if every row stored both keys."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profstore.model.csv_row import CsvRow, Slot
from profstore.model.exact_keys import (
    RAW,
    STRIPPED,
    StrippedKeyPlanner,
    prefix_keys,
    row_keys,
    signature_key,
    target_keys,
)
from profstore.model.leaf import LeafOp
from profstore.model.shapes import Shape
from profstore.storage import schema as t
from profstore.storage.engines import make_engine
from sqlalchemy import select

from tests.support.perfdb import Row, build_database, mapping_doc, write_version

OP = "tensor_cast.rms_norm.default"
BF16 = "DT_BF16"


def csv_row(shapes: Sequence[Shape | None], dtypes: Sequence[str] | None = None) -> CsvRow:
    dtypes = dtypes or ["A"] * len(shapes)
    slots = tuple(Slot(s, d, "ND", s) for s, d in zip(shapes, dtypes))
    return CsvRow("K", slots, (), 1.0, "Average Duration(us)")


@pytest.mark.no_database
def test_row_keys_spell_every_prefix_raw_and_stripped():
    row = csv_row([(1, 4, 8), None, (8,), (1, 2)], ["A", "", "B", "C"])
    assert row_keys(row) == [
        "x1|1,4,8:A", "b1|4,8:A",
        "x2|1,4,8:A;8:B", "b2|4,8:A;8:B",
        "x3|1,4,8:A;8:B;1,2:C", "b3|4,8:A;8:B;2:C",
    ]
    assert [p.strippable for p in prefix_keys(row)] == [True, True, True]
    assert [p.strippable for p in prefix_keys(csv_row([(4, 8), (1, 8)]))] == [False, True]


@pytest.mark.no_database
def test_target_keys_add_the_raw_spelling_of_a_plain_stripped_signature():
    assert target_keys([(1, 4, 8)], ["A"]) == ["x1|1,4,8:A", "b1|4,8:A", "x1|4,8:A"]
    assert target_keys([(4, 8)], ["A"]) == ["x1|4,8:A", "b1|4,8:A"]
    assert target_keys([(1, 1, 8)], ["A"]) == ["x1|1,1,8:A", "b1|1,8:A"]


@pytest.mark.no_database
def test_planner_holds_plain_stripped_keys_until_their_class_holds_a_stripped_row():
    planner = StrippedKeyPlanner()
    plain = prefix_keys(csv_row([(4, 8)]))
    assert planner.admit("K", plain, "first") == (["x1|4,8:A"], [])
    assert planner.admit("L", prefix_keys(csv_row([(1, 4, 8)])), "other kernel") == (
        ["x1|1,4,8:A", "b1|4,8:A"], [])
    assert planner.admit("K", prefix_keys(csv_row([(1, 4, 8)])), "second") == (
        ["x1|1,4,8:A", "b1|4,8:A"], [("b1|4,8:A", "first")])
    assert planner.admit("K", plain, "third") == (["x1|4,8:A", "b1|4,8:A"], [])


def full_lookup(rows: Sequence[CsvRow], shapes: list[Shape], exclude: set[int]) -> list[int]:
    """The reference: every row stores every key; the target tries raw, then stripped."""
    stored: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        for key in row_keys(row):
            stored[key].append(i)
    dtypes = ["A"] * len(shapes)
    for key in (signature_key(RAW, shapes, dtypes), signature_key(STRIPPED, shapes, dtypes)):
        found = [i for i in stored[key] if i not in exclude]
        if found:
            return found
    return []


def planned_lookup(rows: Sequence[CsvRow], shapes: list[Shape], exclude: set[int]) -> list[int]:
    planner = StrippedKeyPlanner()
    stored: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        keys, released = planner.admit("K", prefix_keys(row), i)
        for key in keys:
            stored[key].append(i)
        for key, held in released:
            stored[key].append(held)
    for key in target_keys(shapes, ["A"] * len(shapes)):
        found = sorted(i for i in stored[key] if i not in exclude)
        if found:
            return found
    return []


BASE = st.lists(st.lists(st.sampled_from([4, 8]), min_size=1, max_size=2).map(tuple),
                min_size=1, max_size=3)


def variant(base: list[Shape], ones: list[int]) -> list[Shape]:
    """``base`` with ``ones[i]`` leading 1s put before tensor ``i``."""
    return [(1,) * n + shape for shape, n in zip(base, ones)]


@pytest.mark.no_database
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_planned_keys_answer_every_lookup_as_the_full_key_set_does(data):
    """Rows and target are variants of one signature (leading 1s added per tensor), so
    raw, stripped and mixed classes all occur; any prefix of the target is asked."""
    base = data.draw(BASE)
    ones = st.lists(st.integers(0, 2), min_size=len(base), max_size=len(base))
    rows = [csv_row(variant(base, n)) for n in data.draw(st.lists(ones, min_size=1, max_size=8))]
    target = variant(base, data.draw(ones))[:data.draw(st.integers(1, len(base)))]
    exclude = data.draw(st.sets(st.integers(0, len(rows) - 1), max_size=3))
    assert planned_lookup(rows, target, exclude) == full_lookup(rows, target, exclude)


def rms(shape: list[int], latency: float) -> Row:
    return Row([shape, [7168]], [BF16, BF16], [shape], [BF16], latency)


def leaf(shape: list[int]) -> LeafOp:
    return LeafOp.from_json({
        "op": OP, "args": [{"shape": shape, "dtype": "bfloat16"},
                           {"shape": [7168], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": shape, "dtype": "bfloat16"}]})


def open_store(tmp_path, rows: list[Row]):
    from profstore.api import Store

    write_version(tmp_path / "data", {"RmsNorm": rows}, mapping_doc({OP: {"kernel_type":
                                                                           "RmsNorm"}}))
    return Store.open(build_database(tmp_path))


@pytest.mark.parametrize(("rows", "target", "latency", "key"), [
    ([rms([4, 7168], 10.0)], [1, 4, 7168], 10.0, "x2|4,7168:DT_BF16;7168:DT_BF16"),
    ([rms([1, 4, 7168], 20.0)], [4, 7168], 20.0, "b2|4,7168:DT_BF16;7168:DT_BF16"),
    ([rms([4, 7168], 10.0), rms([1, 4, 7168], 20.0)], [4, 7168], 10.0,
     "x2|4,7168:DT_BF16;7168:DT_BF16"),
    ([rms([4, 7168], 10.0), rms([1, 4, 7168], 20.0)], [1, 4, 7168], 20.0,
     "x2|1,4,7168:DT_BF16;7168:DT_BF16"),
    ([rms([1, 4, 7168], 20.0), rms([4, 7168], 10.0)], [1, 4, 7168], 20.0,
     "x2|1,4,7168:DT_BF16;7168:DT_BF16"),
])
def test_a_leading_batch_one_meets_on_either_side(tmp_path, rows, target, latency, key):
    with open_store(tmp_path, rows) as store:
        result = store.lookup(leaf(target), "v0.18")
    assert (result.latency_us, result.details["exact_key"]) == (latency, key)


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_with_the_raw_rows_held_out_the_stripped_class_answers(tmp_path, order):
    rows = [rms([4, 7168], 10.0), rms([1, 4, 7168], 20.0)]
    with open_store(tmp_path, [rows[i] for i in order]) as store:
        with store.engine.connect() as conn:
            ids = dict(conn.execute(select(t.sample.c.latency_us, t.sample.c.id)).all())
        plain = store.lookup(leaf([1, 4, 7168]), "v0.18", exclude_samples=[ids[20.0]])
        batched = store.lookup(leaf([4, 7168]), "v0.18", exclude_samples=[ids[10.0]])
    assert (plain.latency_us, plain.details["exact_key"]) == (
        10.0, "b2|4,7168:DT_BF16;7168:DT_BF16")
    assert (batched.latency_us, batched.details["exact_key"]) == (
        20.0, "b2|4,7168:DT_BF16;7168:DT_BF16")


def test_only_mixed_classes_store_the_stripped_key_of_a_plain_row(tmp_path):
    rows = [rms([4, 7168], 10.0), rms([8, 7168], 12.0), rms([1, 4, 7168], 20.0)]
    engine = make_engine(build_database(tmp_path, _write(tmp_path, rows)))
    k, s = t.sample_key.c, t.sample.c
    with engine.connect() as conn:
        stored = conn.execute(select(s.line_no, k.exact_key).join(t.sample, s.id == k.sample_id)
                              .where(k.exact_key.like("b%")).order_by(s.line_no, k.exact_key))
        stripped = [tuple(r) for r in stored]
    engine.dispose()
    assert stripped == [
        (2, "b1|4,7168:DT_BF16"), (2, "b2|4,7168:DT_BF16;7168:DT_BF16"),
        (4, "b1|4,7168:DT_BF16"), (4, "b2|4,7168:DT_BF16;7168:DT_BF16"),
    ]


def _write(tmp_path, rows: list[Row]):
    root = tmp_path / "data"
    write_version(root, {"RmsNorm": rows})
    return root
