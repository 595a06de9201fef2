"""``TensorSpec`` on its own: constructor errors name the field, a defaulted format is ND."""

from __future__ import annotations

import pytest
from profstore.model.tensor_spec import TensorSpec


def test_a_defaulted_format_is_nd_only() -> None:
    with pytest.raises(ValueError, match="format_defaulted: True only with format 'ND'"):
        TensorSpec((2,), "int8", "FRACTAL_NZ", format_defaulted=True)


def test_constructor_errors_use_field_names() -> None:
    with pytest.raises(ValueError, match=r"^shape: dimension -1 is negative"):
        TensorSpec((-1,), "int8")
    with pytest.raises(ValueError, match=r"^dtype: unknown dtype 'bf17'"):
        TensorSpec((1,), "bf17")


def test_from_json_names_the_tensor_path_and_round_trips() -> None:
    with pytest.raises(ValueError, match=r"^outputs\[1\]\.shape: dimension -2 is negative"):
        TensorSpec.from_json({"shape": [-2], "dtype": "int8"}, "outputs[1]")
    spec = TensorSpec((3, 5), "float16", "FRACTAL_NZ")
    assert spec.to_json() == {"shape": [3, 5], "dtype": "float16", "format": "FRACTAL_NZ"}
    assert TensorSpec.from_json(spec.to_json()) == spec
