"""A kernel's measured regimes as a table for ``nearest_regime.closest``: one row per regime
with points, one column per field, each value coded by its JSON text, so one array
comparison per field counts every regime's differences from a target. A miss compares its
target with every regime of its kernel (hundreds, for some), and a search misses a new
target of the same kernel at every new shape (docs/adr/0125)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from profstore.lookup.regime_values import PLAIN_TYPES, parsed_regime, value_text
from profstore.model.clock_cache import ClockCache

_LOOSE = (float, list, dict)
"""Types whose values can be ``same_value`` with different JSON texts (``0.0`` and ``-0.0``,
``[1, 0]`` and ``[True, 0.0]``): for the others, same means same text."""


def _token(value: Any) -> Any:
    """Equal exactly when the JSON texts are: a value of a plain type stands for its own
    text (its type and value fix it), any other is spelled."""
    kind = type(value)
    return (kind, value) if kind in PLAIN_TYPES else value_text(value)


@dataclass(frozen=True)
class Column:
    """One field's values across a kernel's regimes, each coded by its JSON text."""

    codes: Mapping[Any, int]
    """By ``_token``."""
    loose: Mapping[type, tuple[tuple[Any, int], ...]]
    """The values of the ``_LOOSE`` types with their codes, by type."""

    def same_as(self, value: Any) -> list[int]:
        """The codes whose values are ``same_value`` as ``value``."""
        code = self.codes.get(_token(value))
        same = [] if code is None else [code]
        for other, code in self.loose.get(type(value), ()):
            if other == value:
                same.append(code)
        return same


@dataclass(frozen=True)
class RegimeTable:
    """A kernel's measured regimes (with points), one row each, one column per field."""

    keys: tuple[str, ...]
    points: tuple[int, ...]
    columns: Mapping[str, Column]
    codes: np.ndarray
    """``codes[row, column]``: the code of that regime's value (null where it has none),
    numbered across the columns (each column's codes follow the previous column's), so
    one gather reads every field of every regime."""
    starts: tuple[int, ...]
    """Where each column's codes start."""
    width: int
    """How many codes the columns have in all."""

    @classmethod
    def of(cls, regimes: Sequence[tuple[str, int]]) -> RegimeTable:
        kept = [(key, points) for key, points in regimes if points > 0]
        parsed = [parsed_regime(key) for key, _ in kept]
        names = sorted({name for regime in parsed for name in regime})
        columns, starts, start = {}, [], 0
        codes = np.zeros((len(kept), len(names)), dtype=np.int32)
        for j, name in enumerate(names):
            tokens: dict[Any, int] = {}
            loose: dict[type, list[tuple[Any, int]]] = {}
            for i, regime in enumerate(parsed):
                value = regime.get(name)
                token = _token(value)
                code = tokens.get(token)
                if code is None:
                    code = tokens[token] = len(tokens)
                    if isinstance(value, _LOOSE):
                        loose.setdefault(type(value), []).append((value, code))
                codes[i, j] = start + code
            columns[name] = Column(tokens, {t: tuple(v) for t, v in loose.items()})
            starts.append(start)
            start += len(tokens)
        return cls(tuple(k for k, _ in kept), tuple(p for _, p in kept), columns, codes,
                   tuple(starts), start)

    def distances(self, target: Mapping[str, Any]) -> np.ndarray:
        """How many fields of each regime differ from the target's (as
        ``nearest_regime.differences`` counts them)."""
        same = np.zeros(self.width, dtype=np.int32)
        for start, (name, column) in zip(self.starts, self.columns.items()):
            for code in column.same_as(target.get(name)):
                same[start + code] = 1
        shared = same[self.codes].sum(axis=1)
        only_target = sum(1 for name, value in target.items()
                          if name not in self.columns and value is not None)
        return len(self.columns) - shared + only_target

    def nearest(self, target: Mapping[str, Any]) -> list[int]:
        """The rows with the fewest differing fields (none: the target's own regime is not
        a neighbour), in key order."""
        distances = self.distances(target)
        differing = distances[distances > 0]
        if not differing.size:
            return []
        return sorted(np.flatnonzero(distances == differing.min()).tolist(),
                      key=self.keys.__getitem__)


_TABLES: ClockCache[tuple[tuple[str, int], ...], RegimeTable] = ClockCache(1024)


def table_of(regimes: tuple[tuple[str, int], ...]) -> RegimeTable:
    """The table of these (regime key, points), made once."""
    table = _TABLES.get(regimes)
    if table is None:
        table = RegimeTable.of(regimes)
        _TABLES.put(regimes, table)
    return table
