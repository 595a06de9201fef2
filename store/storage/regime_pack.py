"""A regime slice as one stored row (``regime_points``) and back.

Each array is stored as its little-endian bytes: latencies as float64 (exactly the values
``sample`` holds), integers in the narrowest of 1, 2, 4 or 8 bytes that holds them (read
back by the byte count per value), coordinates as such integers when every one is a whole
number from 0 below 2**31 (token counts and dimensions: three quarters of the corpus's
coordinate bytes), else as float64. A column with
few distinct values is stored as the JSON list of its values and a code per point, the
codes left out (NULL) when the regime has one value. The point order is the slice's, so a
decoded slice equals the slice ``build_slice`` makes from the same points' rows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from profstore.model.clock_cache import ClockCache
from profstore.storage.regime_slice import Categories, RegimeSlice

PACK_COLUMNS = ("regime_id", "profile_id", "points", "width", "axes", "latency_us", "sample_ids",
                "line_nos", "latency_columns", "latency_column_codes", "kernel_files",
                "kernel_file_codes", "semantic_keys", "semantic_codes")
"""The columns of a ``regime_points`` row, in the order ``encode`` gives them."""
READ_COLUMNS = PACK_COLUMNS[2:]
"""The columns ``decode`` reads, in this order."""

_FLOAT = np.dtype("<f8")
_BY_SIZE: dict[int, np.dtype[Any]] = {1: np.dtype("u1"), 2: np.dtype("<u2"),
                                      4: np.dtype("<i4"), 8: np.dtype("<i8")}


def _int_bytes(values: np.ndarray, high: int | None = None) -> bytes:
    """Non-negative integers (ids, lines, codes, whole coordinates; ``high``: their
    largest, when known) in the narrowest of 1, 2, 4 or 8 bytes that holds them."""
    if high is None:
        high = int(values.max()) if len(values) else 0
    size = 1 if high < 1 << 8 else 2 if high < 1 << 16 else 4 if high < 1 << 31 else 8
    return values.astype(_BY_SIZE[size]).tobytes()


def _ints(blob: bytes, values: int) -> np.ndarray:
    if not values:
        return np.empty(0, dtype=np.int64)
    return np.frombuffer(blob, dtype=_BY_SIZE[len(blob) // values])


def _axes_bytes(axes: np.ndarray) -> bytes:
    """Whole numbers from 0 (not -0.0) below 2**31 as integers, anything else as float64."""
    if axes.size and not np.signbit(axes).any():
        high = axes.max()
        if high < 1 << 31:  # False for NaN and infinity
            whole = axes.astype(np.int64)
            if (whole == axes).all():
                return _int_bytes(whole.ravel(), int(high))
    return np.ascontiguousarray(axes, _FLOAT).tobytes()


def _axes(blob: bytes, points: int, width: int) -> np.ndarray:
    values = points * width
    if not values:
        return np.empty((points, width))
    size = len(blob) // values
    found = np.frombuffer(blob, _FLOAT) if size == 8 else _ints(blob, values).astype(float)
    return found.reshape(points, width)


_SPELLED: ClockCache[tuple[Any, ...], str] = ClockCache(4096)
_READ: ClockCache[str, tuple[Any, ...]] = ClockCache(4096)
"""The JSON of recent value lists and back (most regimes share their latency column and
file)."""


def _categories_out(categories: Categories) -> tuple[str, bytes | None]:
    codes = None if len(categories.names) <= 1 else _int_bytes(categories.codes)
    spelled = _SPELLED.get(categories.names)
    if spelled is None:
        spelled = json.dumps(list(categories.names))
        _SPELLED.put(categories.names, spelled)
    return spelled, codes


def _categories_in(names: str, codes: bytes | None, single: np.ndarray) -> Categories:
    """``single``: every point's code when the regime has one value (read only, shared)."""
    values = _READ.get(names)
    if values is None:
        values = tuple(json.loads(names))
        _READ.put(names, values)
    return Categories(values, single if codes is None else _ints(codes, len(single)))


def encode(regime_id: int, profile_id: int, regime_slice: RegimeSlice) -> tuple[Any, ...]:
    """The ``regime_points`` row (``PACK_COLUMNS``) of a regime's slice."""
    s = regime_slice
    return (regime_id, profile_id, len(s), s.axes.shape[1], _axes_bytes(s.axes),
            s.latency.astype(_FLOAT).tobytes(), _int_bytes(s.sample_ids),
            _int_bytes(s.line_nos), *_categories_out(s.columns), *_categories_out(s.files),
            *_categories_out(s.semantic))


def decode(row: Sequence[Any]) -> RegimeSlice:
    """The slice of a ``regime_points`` row read as ``READ_COLUMNS``."""
    (points, width, axes, latency, sample_ids, line_nos, columns, column_codes, files,
     file_codes, semantics, semantic_codes) = row
    single = np.zeros(points, dtype=np.int64)
    single.setflags(write=False)
    return RegimeSlice(_axes(axes, points, width), np.frombuffer(latency, _FLOAT),
                       _ints(sample_ids, points), _categories_in(columns, column_codes, single),
                       _ints(line_nos, points), _categories_in(files, file_codes, single),
                       _categories_in(semantics, semantic_codes, single))
