"""store/lookup/regime_table.py: a kernel's regimes as a table, each target's nearest rows."""

from __future__ import annotations

import json
import random

import pytest
from profstore.lookup.nearest_regime import MAX_NEAREST, closest, differences
from profstore.lookup.regime_table import table_of
from profstore.lookup.regime_values import same_value

pytestmark = pytest.mark.no_database


def test_same_value_is_one_type_and_equal_or_one_text() -> None:
    assert same_value([1, 0], [True, 0.0]) and same_value(-0.0, 0.0)
    assert same_value((1, 0.0), [1, 0.0]) and not same_value((1, 0.0), [1.0, 0])
    assert not same_value(1, 1.0) and not same_value(1, True) and not same_value("1", 1)


def test_a_regime_without_points_is_no_row_and_the_targets_own_is_no_neighbour() -> None:
    own = json.dumps({"dtype": "A", "kind": "k"}, sort_keys=True)
    other = json.dumps({"dtype": "B", "kind": "k"}, sort_keys=True)
    empty = json.dumps({"dtype": "C", "kind": "k"}, sort_keys=True)
    table = table_of(((own, 3), (other, 2), (empty, 0)))
    assert table.keys == (own, other) and table.points == (3, 2)
    assert table.distances({"dtype": "A", "kind": "k"}).tolist() == [0, 1]
    assert [table.keys[i] for i in table.nearest({"dtype": "A", "kind": "k"})] == [other]


def test_the_nearest_rows_are_those_differences_ranks_first() -> None:
    """The table counts every regime's differing fields at once (one column per field);
    ``differences`` compares one pair. Over 300 regimes of values that are the same under
    equality but not as text (1 and True, 0.0 and -0.0, [1, 0] and [1.0, -0.0]), absent
    fields and regimes without points, the nearest are those ``differences`` ranks first:
    the fewest fields, ties in key order, at most three."""
    pool = ["a", "b", 1, True, 1.0, 0.0, -0.0, None, [1, 0], [1.0, -0.0], [True, 0.0],
            {"x": 1}, {"x": 1.0}]
    rng = random.Random(7)
    fields = ["f0", "f1", "f2", "f3", "f4"]

    def regime() -> dict:
        return {f: rng.choice(pool) for f in fields if rng.random() < 0.8}

    for _ in range(40):
        regimes = sorted({(json.dumps(regime(), sort_keys=True), rng.choice([0, 1, 5]))
                          for _ in range(300)})
        target = {**regime(), **({"extra": 2} if rng.random() < 0.3 else {})}
        if rng.random() < 0.5:
            target["f1"] = tuple(target["f1"]) if isinstance(target.get("f1"), list) else 1
        scored = sorted((len(d), key, points, d) for key, points in regimes
                        if points > 0 and (d := differences(target, json.loads(key))))
        fewest = [s for s in scored if s[0] == scored[0][0]][:MAX_NEAREST] if scored else []
        table = table_of(tuple(regimes))
        assert [table.keys[i] for i in table.nearest(target)][:MAX_NEAREST] == [
            key for _, key, _, _ in fewest]
        assert closest(target, regimes) == [(json.loads(key), points, d)
                                            for _, key, points, d in fewest]
