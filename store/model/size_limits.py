"""Size limits on a leaf descriptor: anything a simulator could send must answer with a
precise ``ValueError`` naming the field, never an ``OverflowError``/``RecursionError``.

The limits sit far above any real operator (a dimension or integer argument fits a
signed 64-bit integer, as in torch; a tensor has fewer than 2^63 elements; arguments nest
a few levels) and far below what breaks Python or the geometry's floats.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_INT = 2**63 - 1
"""Largest dimension, element count or integer argument (torch's int64)."""
MAX_NESTING = 32
"""Deepest list nesting inside one argument."""
MAX_DESCRIPTOR_CHARS = 1 << 20
"""Longest descriptor text (1 MiB) the JSON parser is given."""


class OversizeInt(int):
    """A JSON integer literal too long for int64, parsed to a placeholder (one past the
    range, so every bound check refuses it) that remembers its digit count: the field
    that holds it is named in the error rather than the parser failing on the line."""

    digits: int

    def __new__(cls, literal: str) -> OversizeInt:
        number = super().__new__(cls, MAX_INT + 1)
        number.digits = len(literal.lstrip("-"))
        return number


def _json_int(literal: str) -> int:
    return int(literal) if len(literal) <= 20 else OversizeInt(literal)


def bounded_int(value: int, path: str, what: str = "value") -> int:
    if not -MAX_INT <= value <= MAX_INT:
        size = (f"{value.digits} digits" if isinstance(value, OversizeInt)
                else f"{value.bit_length()} bits")
        raise ValueError(f"{path}: {what} of {size} is beyond the int64 range "
                         f"(|{what}| <= 2^63-1)")
    return int(value)


def bounded_numel(shape: tuple[int, ...], path: str) -> None:
    if math.prod(shape) > MAX_INT:
        raise ValueError(f"{path}: {list(shape)} has more than 2^63-1 elements")


def valid_text(value: str, path: str) -> str:
    """``value`` when it is encodable Unicode (a lone surrogate from JSON ``\\ud800`` is not)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = value[error.start]
        raise ValueError(f"{path}: {ascii(bad)} at position {error.start} is a lone "
                         f"surrogate, not Unicode text") from None
    return value


def check_nesting(depth: int, path: str) -> None:
    if depth > MAX_NESTING:
        raise ValueError(f"{path}: lists nested deeper than {MAX_NESTING} levels")


def load_json(text: str, what: str = "descriptor") -> Any:
    """``json.loads`` with every failure (bad syntax, an integer over 4300 digits, nesting
    past the interpreter's recursion limit, oversize text) as one ``ValueError``."""
    if len(text) > MAX_DESCRIPTOR_CHARS:
        raise ValueError(f"{what}: {len(text)} characters, more than the "
                         f"{MAX_DESCRIPTOR_CHARS} a descriptor may have")
    try:
        return json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as error:
        raise ValueError(f"{what}: invalid JSON: {error}") from None
    except RecursionError:
        raise ValueError(f"{what}: nested too deeply to parse") from None
