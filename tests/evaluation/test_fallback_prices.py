"""evaluation/fallback_prices.py: misses grouped per op and differing fields, priced by hand."""

from __future__ import annotations

import pytest
from profstore.evaluation.fallback_prices import PricedMiss, lines_of, price_lines, prices

SYM = "tensor_cast.dynamic_quantize_symmetric.default"
SCALE = {"scale_mode": ["per_tensor", "per_token"]}


def test_misses_of_one_op_and_difference_add_up_largest_difference_first():
    found = prices([
        PricedMiss("aten.cat.default", 256, 2.0, 5.0, {"input_count": [1, 2]}),
        PricedMiss(SYM, 512, 2.0, 5.581614, SCALE),
        PricedMiss(SYM, 6, 2.0, 5.442086, SCALE),
        PricedMiss(SYM, 256, 2.0, None, None),
        PricedMiss("aten.silu.default", 10, 100.0, None, None),
    ])
    assert [(p.op, p.differs, p.calls) for p in found] == [
        (SYM, "scale_mode per_tensor → per_token", 518),
        ("aten.cat.default", "input_count 1 → 2", 256),
        ("aten.silu.default", "", 10),  # no nearest regime: after, the most time first
        (SYM, "", 256)]
    top = found[0]
    assert top.time_us == pytest.approx(518 * 2.0)
    assert top.nearest_time_us == pytest.approx(512 * 5.581614 + 6 * 5.442086)
    assert top.difference_us == pytest.approx(512 * 3.581614 + 6 * 3.442086)
    assert found[2].nearest_time_us is None and found[2].difference_us is None


def test_a_nearest_regime_cheaper_than_the_run_is_sorted_by_its_size():
    found = prices([PricedMiss("a", 1, 10.0, 9.0, {"f": [1, 2]}),
                    PricedMiss("b", 1, 10.0, 1.0, {"f": [1, 2]})])
    assert [(p.op, p.difference_us) for p in found] == [("b", -9.0), ("a", -1.0)]


def test_the_table_lines_and_their_json_round_trip():
    found = prices([PricedMiss(SYM, 2, 2.0, 5.5, SCALE)])
    lines = price_lines(found, "analytic")
    assert "ANALYTIC_US" in lines[1]
    assert lines[2].split() == [SYM, "2", "4.0", "11.0", "+7.0", "scale_mode", "per_tensor",
                                "→", "per_token"]
    assert lines_of([p.to_json() for p in found], "analytic") == lines
    assert price_lines([], "analytic") == []
