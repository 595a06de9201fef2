"""Dtype vocabularies: torch names, profiler names, the translation and element sizes."""

from __future__ import annotations

import pytest
from profstore.model.dtypes import (
    PROFILER_DTYPES,
    TORCH_DTYPES,
    canonical_torch_dtype,
    element_size,
    is_known_profiler_dtype,
    to_profiler_dtype,
)

TORCH_SIZES = {
    "bfloat16": 2,
    "float16": 2,
    "float32": 4,
    "float64": 8,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e8m0fnu": 1,
    "int4": 0.5,
    "float4_e2m1fn_x2": 1,
    "complex64": 8,
}

PROFILER_SIZES = {
    "DT_BF16": 2,
    "DT_FLOAT16": 2,
    "FLOAT": 4,
    "FLOAT16": 2,
    "DOUBLE": 8,
    "INT8": 1,
    "UINT8": 1,
    "INT16": 2,
    "INT32": 4,
    "INT64": 8,
    "BOOL": 1,
    "FLOAT8_E4M3FN": 1,
    "FLOAT8_E5M2": 1,
    "FLOAT8_E8M0": 1,
    "INT4": 0.5,
    "FLOAT4_E2M1": 0.5,
    "HIFLOAT8": 1,
    "DT_UNDEFINED": 0,
}

TORCH_TO_PROFILER = [
    ("bfloat16", "DT_BF16"),
    ("float32", "FLOAT"),
    ("float16", "DT_BF16"),
    ("int8", "INT8"),
    ("uint8", "UINT8"),
    ("int32", "INT32"),
    ("int64", "INT64"),
    ("bool", "BOOL"),
    ("float64", "DOUBLE"),
    ("int16", "INT16"),
    ("float8_e4m3fn", "FLOAT8_E4M3FN"),
    ("float8_e5m2", "FLOAT8_E5M2"),
    ("float8_e8m0fnu", "FLOAT8_E8M0"),
    ("int4", "INT4"),
    ("float4_e2m1fn_x2", "FLOAT4_E2M1"),
]


def test_torch_table_is_exactly_the_specified_one() -> None:
    assert dict(TORCH_DTYPES) == TORCH_SIZES


def test_profiler_table_is_exactly_the_specified_one() -> None:
    assert dict(PROFILER_DTYPES) == PROFILER_SIZES


def test_tables_are_read_only() -> None:
    with pytest.raises(TypeError):
        TORCH_DTYPES["bfloat16"] = 3  # type: ignore[index]
    with pytest.raises(TypeError):
        PROFILER_DTYPES["INT8"] = 3  # type: ignore[index]


@pytest.mark.parametrize("name", sorted(TORCH_SIZES))
def test_canonical_names_are_fixed_points(name: str) -> None:
    assert canonical_torch_dtype(name) == name
    assert canonical_torch_dtype(f"torch.{name}") == name


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("half", "float16"),
        ("float", "float32"),
        ("double", "float64"),
        ("long", "int64"),
        ("int", "int32"),
        ("torch.half", "float16"),
        ("torch.long", "int64"),
    ],
)
def test_aliases_resolve(alias: str, canonical: str) -> None:
    assert canonical_torch_dtype(alias) == canonical


@pytest.mark.parametrize("bad", ["xyz", "torch.xyz", "DT_BF16", "BFloat16", "", "torch."])
def test_unknown_torch_dtype_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ValueError, match=r"^unknown dtype '.*'; known: bfloat16, float16"):
        canonical_torch_dtype(bad)


def test_unknown_dtype_message_names_the_input() -> None:
    with pytest.raises(ValueError, match=r"unknown dtype 'xyz'; known: .*float4_e2m1fn_x2"):
        canonical_torch_dtype("xyz")


def test_non_string_dtype_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="must be a string"):
        canonical_torch_dtype(16)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(PROFILER_SIZES))
def test_known_profiler_dtypes(name: str) -> None:
    assert is_known_profiler_dtype(name)


@pytest.mark.parametrize("name", ["int8", "bfloat16", "DT_BF17", "", "dt_bf16"])
def test_unknown_profiler_dtypes(name: str) -> None:
    assert not is_known_profiler_dtype(name)


def test_non_string_is_not_a_profiler_dtype() -> None:
    assert not is_known_profiler_dtype(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("torch_name", "profiler_name"), TORCH_TO_PROFILER)
def test_to_profiler_dtype_table(torch_name: str, profiler_name: str) -> None:
    assert to_profiler_dtype(torch_name) == profiler_name
    assert to_profiler_dtype(f"torch.{torch_name}") == profiler_name
    assert is_known_profiler_dtype(profiler_name)


def test_float16_follows_the_phase1_rule_by_default() -> None:
    # TensorCast traces say float16 for models that run BF16 kernels.
    assert to_profiler_dtype("float16") == "DT_BF16"
    assert to_profiler_dtype("half") == "DT_BF16"
    assert to_profiler_dtype("torch.float16") == "DT_BF16"


def test_float16_as_is_used_by_the_compute_scale_path() -> None:
    assert to_profiler_dtype("float16", float16_as="DT_FLOAT16") == "DT_FLOAT16"
    assert to_profiler_dtype("torch.half", float16_as="DT_FLOAT16") == "DT_FLOAT16"


def test_float16_as_does_not_affect_other_dtypes() -> None:
    assert to_profiler_dtype("bfloat16", float16_as="DT_FLOAT16") == "DT_BF16"
    assert to_profiler_dtype("float32", float16_as="DT_FLOAT16") == "FLOAT"


def test_float16_as_must_be_a_profiler_dtype() -> None:
    with pytest.raises(ValueError, match=r"^float16_as: unknown profiler dtype 'fp16'"):
        to_profiler_dtype("float16", float16_as="fp16")


def test_dtype_without_profiler_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="'complex64' has no profiler equivalent"):
        to_profiler_dtype("complex64")


def test_to_profiler_dtype_rejects_unknown_torch_names() -> None:
    with pytest.raises(ValueError, match="unknown dtype 'bf17'"):
        to_profiler_dtype("bf17")


@pytest.mark.parametrize(("name", "size"), sorted(TORCH_SIZES.items()))
def test_element_size_of_torch_names(name: str, size: float) -> None:
    assert element_size(name) == size
    assert element_size(f"torch.{name}") == size


@pytest.mark.parametrize(("name", "size"), sorted(PROFILER_SIZES.items()))
def test_element_size_of_profiler_names(name: str, size: float) -> None:
    assert element_size(name) == size


@pytest.mark.parametrize(("alias", "size"), [("half", 2), ("float", 4), ("long", 8), ("int", 4)])
def test_element_size_of_aliases(alias: str, size: float) -> None:
    assert element_size(alias) == size


def test_element_sizes_of_packed_four_bit_types() -> None:
    assert element_size("int4") == 0.5
    assert element_size("INT4") == 0.5
    assert element_size("FLOAT4_E2M1") == 0.5
    # torch's float4_e2m1fn_x2 is a packed pair: one element is one byte.
    assert element_size("float4_e2m1fn_x2") == 1


@pytest.mark.parametrize("bad", ["xyz", "dt_bf16", ""])
def test_element_size_of_unknown_names(bad: str) -> None:
    with pytest.raises(ValueError, match=rf"^unknown dtype '{bad}'; not a torch dtype"):
        element_size(bad)


@pytest.mark.parametrize("torch_name", sorted(set(TORCH_SIZES) - {"complex64", "float4_e2m1fn_x2"}))
def test_translation_preserves_element_size(torch_name: str) -> None:
    # float16 maps to a 2-byte profiler type either way; the packed fp4 pair is the exception.
    assert element_size(to_profiler_dtype(torch_name)) == element_size(torch_name)


def test_element_sizes_agree_with_torch_itself():
    """An independent source for the byte sizes: torch's own ``element_size`` of every
    dtype both vocabularies know (int4 and packed fp4 have no torch element of their own)."""
    import importlib.util

    from tests.support.prerequisites import require

    require(importlib.util.find_spec("torch") is not None, "torch (the tensorcast extra)")
    import torch

    checked = 0
    for name in TORCH_DTYPES:
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype) or name in ("int4", "float4_e2m1fn_x2"):
            continue
        assert element_size(name) == torch.empty(0, dtype=dtype).element_size(), name
        checked += 1
    assert checked >= 12
