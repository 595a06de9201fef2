"""store/lookup/nearest_regime.py without a database: which regimes are nearest and how a miss
spells what differs."""

from __future__ import annotations

import json

import pytest
from profstore.lookup.attempt import Attempt
from profstore.lookup.nearest_regime import (
    MAX_NEAREST,
    RegimeAnswer,
    closest,
    differences,
    nearest_regimes,
    spell_differs,
)
from profstore.model.result import QueryResult, Reason
from profstore.paths.base import Extraction

pytestmark = pytest.mark.no_database

TARGET = {"kernel": "K", "dtype": "DT_FLOAT16", "scale_mode": "per_tensor", "block": None}


def key(**changes) -> str:
    return json.dumps({**TARGET, **changes}, sort_keys=True)


def test_differences_name_both_values_and_a_missing_field_as_null():
    assert differences(TARGET, {**TARGET, "scale_mode": "per_token"}) == {
        "scale_mode": ["per_tensor", "per_token"]}
    assert differences(TARGET, {"kernel": "K", "dtype": "DT_FLOAT16",
                                "scale_mode": "per_tensor", "extra": 1}) == {
        "extra": [None, 1]}
    assert differences(TARGET, dict(TARGET)) == {}


def test_closest_keeps_the_ties_at_the_fewest_differences_in_key_order():
    regimes = [(key(dtype="DT_BF16", scale_mode="per_token"), 10),
               (key(scale_mode="per_token"), 476),
               (key(dtype="DT_BF16"), 5),
               (key(), 3)]  # the target's own regime: not a neighbour
    found = closest(TARGET, regimes)
    assert [(r["dtype"], r["scale_mode"], n) for r, n, _ in found] == [
        ("DT_BF16", "per_tensor", 5), ("DT_FLOAT16", "per_token", 476)]
    assert [d for _, _, d in found] == [{"dtype": ["DT_FLOAT16", "DT_BF16"]},
                                        {"scale_mode": ["per_tensor", "per_token"]}]


def test_closest_answers_at_most_max_nearest_and_skips_empty_regimes():
    regimes = [(key(block=b), 1) for b in range(MAX_NEAREST + 2)] + [(key(dtype="X"), 0)]
    found = closest(TARGET, regimes)
    assert len(found) == MAX_NEAREST
    assert [r["block"] for r, _, _ in found] == [0, 1, 2]


def test_the_regimes_that_answer_come_first_with_their_answer():
    regimes = [(key(dtype="DT_BF16"), 5), (key(scale_mode="per_token"), 476)]

    def answer(other: Extraction) -> RegimeAnswer:
        assert other.axes == (12.0, 2048.0)
        if other.regime["dtype"] == "DT_BF16":
            return RegimeAnswer.of(Attempt("K", reason=Reason.DEGENERATE_CANDIDATES))
        return RegimeAnswer.of(
            Attempt("K", result=QueryResult.measured(5.617396, method="exact_coordinate")))

    found = nearest_regimes("K", Extraction(TARGET, (12.0, 2048.0)), regimes, answer)
    assert [(n.differs, n.latency_us, n.source, n.method, n.miss_reason) for n in found] == [
        ({"scale_mode": ["per_tensor", "per_token"]}, 5.617396, "MEASURED", "exact_coordinate",
         None),
        ({"dtype": ["DT_FLOAT16", "DT_BF16"]}, None, None, None, "degenerate_candidates")]
    assert found[1].to_json()["miss_reason"] == "degenerate_candidates"
    assert "miss_reason" not in found[0].to_json()


def test_spelled_differences_clip_long_values():
    assert spell_differs({"scale_mode": ["per_tensor", "per_token"], "block": [None, 32]}) == \
        "scale_mode per_tensor → per_token, block null → 32"
    assert spell_differs({"dtypes": ["A;" * 10, "B"]}, clip=6) == "dtypes A;A;A… → B"


def test_closest_compares_values_as_json_text_whatever_their_type():
    """A list and a tuple of the same items are the same regime value; 1 and 1.0, or 1 and
    True, are not (their JSON texts differ), and a cached answer keeps them apart (ties in
    key order: '{"block": 1,' sorts before '{"block": 1.0')."""
    regimes = [(key(block=[8, 16]), 4), (key(block=1, dtype="DT_BF16"), 2)]
    tuple_target = {**TARGET, "block": (8, 16)}
    assert closest(tuple_target, regimes) == [
        ({**TARGET, "block": 1, "dtype": "DT_BF16"}, 2,
         {"block": [(8, 16), 1], "dtype": ["DT_FLOAT16", "DT_BF16"]})]
    regimes = [(key(block=1), 4), (key(block=1.0, scale_mode="per_token"), 2)]
    for block, expected in ((1, [({**TARGET, "block": 1.0, "scale_mode": "per_token"}, 2,
                                  {"block": [1, 1.0],
                                   "scale_mode": ["per_tensor", "per_token"]})]),
                            (1.0, [({**TARGET, "block": 1}, 4, {"block": [1.0, 1]}),
                                   ({**TARGET, "block": 1.0, "scale_mode": "per_token"}, 2,
                                    {"scale_mode": ["per_tensor", "per_token"]})]),
                            (True, [({**TARGET, "block": 1}, 4, {"block": [True, 1]})])):
        assert closest({**TARGET, "block": block}, regimes) == expected


def test_each_call_of_closest_hands_back_its_own_copies():
    regimes = [(key(dtype="DT_BF16"), 5)]
    first = closest(TARGET, regimes)
    first[0][0]["dtype"] = "changed"
    first[0][2]["dtype"].append("changed")
    assert closest(TARGET, regimes) == [({**TARGET, "dtype": "DT_BF16"}, 5,
                                         {"dtype": ["DT_FLOAT16", "DT_BF16"]})]


def test_a_negative_zero_is_the_same_value_as_zero():
    """-0.0 == 0.0 (one type, equal) though their JSON texts differ; 0 is an int, not the
    same value as 0.0 (texts "0" and "0.0")."""
    regimes = [(key(block=-0.0, scale_mode="per_token"), 4),
               (key(block=0, dtype="DT_BF16"), 2)]
    for zero, other in ((0.0, -0.0), (-0.0, 0.0)):
        target = {**TARGET, "block": zero}
        assert closest(target, regimes) == [
            ({**TARGET, "block": -0.0, "scale_mode": "per_token"}, 4,
             {"scale_mode": ["per_tensor", "per_token"]})]
        assert closest(target, [(key(block=other), 3), (key(dtype="DT_BF16"), 1)]) == [
            ({**TARGET, "dtype": "DT_BF16"}, 1,
             {"block": [zero, None], "dtype": ["DT_FLOAT16", "DT_BF16"]})]


def test_a_field_only_the_target_has_differs_unless_it_is_null():
    """No regime has "extra": the target's 7 differs from their null in every regime; the
    target's null does not, so key() is the target's own regime."""
    regimes = [(key(), 3), (key(scale_mode="per_token"), 5)]
    assert closest({**TARGET, "extra": 7}, regimes) == [
        (dict(TARGET), 3, {"extra": [7, None]})]
    assert closest({**TARGET, "extra": None}, regimes) == [
        ({**TARGET, "scale_mode": "per_token"}, 5,
         {"scale_mode": ["per_tensor", "per_token"]})]


def test_a_field_only_regimes_have_differs_from_the_targets_null():
    """The target has no "extra": a regime's 1 there is a difference, its null is not. Key
    order puts '"dtype": "DT_BF16"' before '"dtype": "DT_FLOAT16"'."""
    regimes = [(key(extra=1), 6),
               (key(extra=None, dtype="DT_BF16"), 2),
               (key(dtype="DT_BF16", scale_mode="per_token"), 9)]
    assert closest(TARGET, regimes) == [
        ({**TARGET, "extra": None, "dtype": "DT_BF16"}, 2,
         {"dtype": ["DT_FLOAT16", "DT_BF16"]}),
        ({**TARGET, "extra": 1}, 6, {"extra": [None, 1]})]


def test_inside_a_list_numbers_are_the_same_as_equality_sees_them():
    """[True, 0.0] == [1, 0] == [1.0, -0.0] (True == 1 == 1.0, 0.0 == -0.0) though their
    texts differ; a tuple is never of a list's type, so only its text counts:
    "[true, 0.0]" is neither "[1, 0]" nor "[1.0, -0.0]". Key order: '[1, 0]' < '[1.0, '
    ("," before ".") < '[2, 0]'."""
    regimes = [(key(block=[1.0, -0.0], dtype="DT_BF16"), 1),
               (key(block=[1, 0], scale_mode="per_token"), 2),
               (key(block=[2, 0]), 3)]
    assert closest({**TARGET, "block": [True, 0.0]}, regimes) == [
        ({**TARGET, "block": [1, 0], "scale_mode": "per_token"}, 2,
         {"scale_mode": ["per_tensor", "per_token"]}),
        ({**TARGET, "block": [1.0, -0.0], "dtype": "DT_BF16"}, 1,
         {"dtype": ["DT_FLOAT16", "DT_BF16"]}),
        ({**TARGET, "block": [2, 0]}, 3, {"block": [[True, 0.0], [2, 0]]})]
    assert closest({**TARGET, "block": (True, 0.0)}, regimes) == [
        ({**TARGET, "block": [2, 0]}, 3, {"block": [(True, 0.0), [2, 0]]})]


def test_a_tuple_is_the_same_as_a_list_of_the_same_text_only():
    """A tuple is never of a list's type, so only texts count: (1, 0.0) is "[1, 0.0]",
    the same as [1, 0.0] and not as [1.0, 0] (though [1, 0.0] == [1.0, 0]). Key order:
    '[1, 0.0]' < '[1.0, 0]' ("," before ".")."""
    regimes = [(key(block=[1.0, 0]), 6), (key(block=[1, 0.0], dtype="DT_BF16"), 5)]
    assert closest({**TARGET, "block": (1, 0.0)}, regimes) == [
        ({**TARGET, "block": [1, 0.0], "dtype": "DT_BF16"}, 5,
         {"dtype": ["DT_FLOAT16", "DT_BF16"]}),
        ({**TARGET, "block": [1.0, 0]}, 6, {"block": [(1, 0.0), [1.0, 0]]})]
