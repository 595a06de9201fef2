"""Data-type vocabularies: torch names (leaf descriptors) and profiler names (CSV files).

Leaf descriptors speak torch (``bfloat16``, ``int8``, ...); the profiling CSVs speak the
profiler's own names (``DT_BF16``, ``INT8``, ...). This module holds both tables, the
element sizes, and the one-way torch -> profiler translation the lookup uses (DESIGN §6).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

__all__ = [
    "PROFILER_DTYPES",
    "TORCH_DTYPES",
    "TORCH_DTYPE_ALIASES",
    "canonical_torch_dtype",
    "element_size",
    "is_known_profiler_dtype",
    "to_profiler_dtype",
]

#: Canonical torch dtype name -> bytes per element. ``int4`` packs two values per byte;
#: ``float4_e2m1fn_x2`` is torch's packed pair type, so one *element* of it is one byte.
TORCH_DTYPES: Mapping[str, float] = MappingProxyType(
    {
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
)

#: Other spellings torch itself accepts, resolved to the canonical name.
TORCH_DTYPE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "half": "float16",
        "float": "float32",
        "double": "float64",
        "long": "int64",
        "int": "int32",
    }
)

#: Profiler (CSV) dtype name -> bytes per element. ``DT_UNDEFINED`` marks an absent
#: optional input in the CSVs and has no size.
PROFILER_DTYPES: Mapping[str, float] = MappingProxyType(
    {
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
)

# torch -> profiler, without float16 (its target depends on the caller, see to_profiler_dtype).
_TORCH_TO_PROFILER: Mapping[str, str] = MappingProxyType(
    {
        "bfloat16": "DT_BF16",
        "float32": "FLOAT",
        "float64": "DOUBLE",
        "int8": "INT8",
        "uint8": "UINT8",
        "int16": "INT16",
        "int32": "INT32",
        "int64": "INT64",
        "bool": "BOOL",
        "float8_e4m3fn": "FLOAT8_E4M3FN",
        "float8_e5m2": "FLOAT8_E5M2",
        "float8_e8m0fnu": "FLOAT8_E8M0",
        "int4": "INT4",
        "float4_e2m1fn_x2": "FLOAT4_E2M1",
    }
)

_TORCH_PREFIX = "torch."


def canonical_torch_dtype(name: str) -> str:
    """Return the canonical torch dtype name for ``name``.

    A leading ``torch.`` is stripped and aliases (``half``, ``float``, ``double``,
    ``long``, ``int``) are resolved. Anything else raises ``ValueError``.
    """
    if not isinstance(name, str):
        raise ValueError(f"dtype must be a string, got {type(name).__name__} {name!r}")
    text = name.strip()
    if text.startswith(_TORCH_PREFIX):
        text = text[len(_TORCH_PREFIX) :]
    text = TORCH_DTYPE_ALIASES.get(text, text)
    if text not in TORCH_DTYPES:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(TORCH_DTYPES)}")
    return text


def is_known_profiler_dtype(name: str) -> bool:
    """True when ``name`` is a profiler (CSV) dtype name, e.g. ``DT_BF16`` or ``INT8``."""
    return isinstance(name, str) and name in PROFILER_DTYPES


@lru_cache(maxsize=256)
def to_profiler_dtype(torch_name: str, *, float16_as: str = "DT_BF16") -> str:
    """Translate a torch dtype name to the profiler's name.

    ``float16`` becomes ``float16_as``: ``DT_BF16`` by default (the Phase 1 rule, since
    TensorCast traces say float16 for models that run BF16 kernels); the compute_scale
    path passes ``float16_as="DT_FLOAT16"``. A dtype the profiler has no name for
    (``complex64``) raises ``ValueError``.
    """
    if not is_known_profiler_dtype(float16_as):
        raise ValueError(
            f"float16_as: unknown profiler dtype {float16_as!r}; "
            f"known: {', '.join(PROFILER_DTYPES)}"
        )
    canonical = canonical_torch_dtype(torch_name)
    if canonical == "float16":
        return float16_as
    try:
        return _TORCH_TO_PROFILER[canonical]
    except KeyError:
        raise ValueError(f"dtype {canonical!r} has no profiler equivalent") from None


def element_size(dtype: str) -> float:
    """Bytes per element of ``dtype``, given in either vocabulary (torch or profiler)."""
    if isinstance(dtype, str) and dtype in PROFILER_DTYPES:
        return PROFILER_DTYPES[dtype]
    try:
        return TORCH_DTYPES[canonical_torch_dtype(dtype)]
    except ValueError:
        raise ValueError(
            f"unknown dtype {dtype!r}; not a torch dtype ({', '.join(TORCH_DTYPES)}) "
            f"nor a profiler dtype ({', '.join(PROFILER_DTYPES)})"
        ) from None
