"""A regime's values as a nearest-regime comparison reads them: a regime key parsed, a value
spelled as JSON text, and when two values are the same one."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


def value_text(value: Any) -> str:
    """A regime value as JSON text (tuples as lists, keys sorted)."""
    return json.dumps(value, sort_keys=True, default=list)


PLAIN_TYPES = frozenset({str, int, bool, type(None)})
"""Types whose JSON text is fixed by type and value: two such values are one value exactly
when they are of one type and equal (no JSON needed to tell)."""


def same_value(mine: Any, theirs: Any) -> bool:
    """One regime value: of one type and equal, or equal as JSON text (so ``[1, 0]`` and
    ``[True, 0.0]``, or ``0.0`` and ``-0.0``, are one value; ``1`` and ``1.0`` are not)."""
    if type(mine) is type(theirs) and mine == theirs:
        return True
    if type(mine) in PLAIN_TYPES and type(theirs) in PLAIN_TYPES:
        return False
    return value_text(mine) == value_text(theirs)


@functools.lru_cache(maxsize=16384)
def parsed_regime(key: str) -> Mapping[str, Any]:
    """A regime key's fields, parsed once per key (read only: copied where it is kept)."""
    return MappingProxyType(json.loads(key))
