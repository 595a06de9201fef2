"""The canonical regime text (``paths.base.regime_key``): remembered texts never mix up
regimes whose fields are equal in Python but spelled apart in JSON."""

from __future__ import annotations

import pytest
from profstore.paths.base import regime_key

pytestmark = pytest.mark.no_database


def test_remembered_text_is_the_canonical_spelling() -> None:
    regime = {"kernel": "RmsNorm", "input_count": 2, "axis": "axis_0"}
    expected = '{"axis":"axis_0","input_count":2,"kernel":"RmsNorm"}'
    assert regime_key(regime) == expected
    assert regime_key(dict(regime)) == expected  # the second call is the remembered one
    reordered = {"axis": "axis_0", "kernel": "RmsNorm", "input_count": 2}
    assert regime_key(reordered) == expected


@pytest.mark.parametrize("first, second, first_text, second_text", [
    (1, True, '{"ep":1}', '{"ep":true}'),
    (1, 1.0, '{"ep":1}', '{"ep":1.0}'),
    (0.0, -0.0, '{"ep":0.0}', '{"ep":-0.0}'),
    ((1, 2), (True, 2), '{"ep":[1,2]}', '{"ep":[true,2]}'),
    ("1", 1, '{"ep":"1"}', '{"ep":1}'),
])
def test_equal_values_spelled_apart_stay_apart(first: object, second: object,
                                               first_text: str, second_text: str) -> None:
    for _ in range(2):  # after either one was remembered
        assert regime_key({"ep": first}) == first_text
        assert regime_key({"ep": second}) == second_text


def test_keys_equal_in_python_stay_apart() -> None:
    assert regime_key({1: "a"}) == '{"1":"a"}'
    assert regime_key({True: "a"}) == '{"true":"a"}'
    assert regime_key({1: "a"}) == '{"1":"a"}'
