"""Write each regime's points as one ``regime_points`` row (``profstore.storage.regime_pack``).

The packs are derived data, like an index, written in the writer's transaction, so a
version's packs commit (or roll back) with its rows. A new version's points are collected
as its writer flushes them (``PointCollector``: each point with its sample's latency,
column, line and file, numbered in the order they are inserted) and packed at the end
without reading anything back. A regime that gains points later (the gap plan's stand-in
adds rows to a stored version) and every regime of a database migrated to 0006 are packed
from what ``sample_point`` and ``sample`` hold (``write_packs``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from profstore.ingest.bulk import bulk_insert
from profstore.storage import schema as t
from profstore.storage.regime_pack import PACK_COLUMNS, encode
from profstore.storage.regime_slice import PointColumns, ValueCodes, point_rows, slices_of
from sqlalchemy import Connection, delete

CHUNK = 500
"""Regime ids per ``IN`` list when only some regimes are rebuilt."""


def _insert(conn: Connection, profile_id: int, points: PointColumns) -> int:
    packs = [encode(regime_id, profile_id, s) for regime_id, s in slices_of(points)]
    if packs:
        bulk_insert(conn, t.regime_points, PACK_COLUMNS, packs)
    return len(packs)


class PointCollector:
    """A new version's points, collected from each batch of rows its writer flushes
    (``columns``: the writer's column order per table)."""

    def __init__(self, columns: Mapping[str, Sequence[str]]) -> None:
        sample, point = columns["sample"], columns["sample_point"]
        self._sample = tuple(sample.index(c) for c in
                             ("kernel_file_id", "line_no", "latency_us", "latency_column"))
        self._point = tuple(point.index(c) for c in
                            ("regime_id", "sample_id", "semantic_key", "axis_0"))
        self._file_name = columns["kernel_file"].index("file_name")
        self._files: dict[int, str] = {}
        self._codes = (ValueCodes(), ValueCodes(), ValueCodes())
        self._parts: list[tuple[np.ndarray, ...]] = []
        self._count = 0

    def add(self, buffers: Mapping[str, Sequence[tuple]]) -> None:
        """The points (and their samples and files) of one batch, before it is written."""
        for row in buffers.get("kernel_file", ()):
            self._files[row[0]] = row[self._file_name]
        points = buffers.get("sample_point")
        if not points:
            return
        regime, sample_id, semantic, axis = self._point
        file_id, line, latency, column = self._sample
        by_id = {row[0]: row for row in buffers["sample"]}
        p = list(zip(*points))
        s = list(zip(*[by_id[i] for i in p[sample_id]]))
        columns, files, semantics = self._codes
        self._parts.append((
            np.array(p[regime], dtype=np.int64), np.array(p[sample_id], dtype=np.int64),
            np.array(s[latency], dtype=float), columns.of(s[column]),
            np.array(s[line], dtype=np.int64), files.of([self._files[f] for f in s[file_id]]),
            np.array([_floats(p[axis + i]) for i in range(3)]), semantics.of(p[semantic]),
            np.arange(self._count, self._count + len(points)),
        ))
        self._count += len(points)

    def write(self, conn: Connection, profile_id: int) -> int:
        """Every collected regime's pack; returns how many were written."""
        if not self._parts:
            return 0
        (regimes, sample_ids, latency, columns, lines, files, coords, semantics,
         order) = [np.concatenate(part, axis=-1) for part in zip(*self._parts)]
        self._parts = []
        names, file_names, semantic_keys = self._codes
        return _insert(conn, profile_id, PointColumns(
            regimes, sample_ids, latency, names.categories(columns), lines,
            file_names.categories(files), coords, semantic_keys.categories(semantics), order))


def _floats(values: Sequence[float | None]) -> np.ndarray:
    """An axis column, NULL as NaN (a column of NULLs without a per-value conversion)."""
    if values.count(None) == len(values):
        return np.full(len(values), np.nan)
    if None in values:
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    return np.array(values, dtype=float)


def write_packs(conn: Connection, profile_id: int,
                regime_ids: Collection[int] | None = None) -> int:
    """(Re)write, from the stored points, the packs of a profile's regimes (all of them
    when ``regime_ids`` is None); returns how many were written."""
    p, g = t.point.c, t.regime_points.c
    if regime_ids is None:
        return _write_stored(conn, profile_id, p.profile_id == profile_id)
    ids, written = sorted(regime_ids), 0
    for part in (ids[i:i + CHUNK] for i in range(0, len(ids), CHUNK)):
        conn.execute(delete(t.regime_points).where(g.regime_id.in_(part)))
        written += _write_stored(conn, profile_id, p.regime_id.in_(part))
    return written


def _write_stored(conn: Connection, profile_id: int, where: Any) -> int:
    rows = conn.execute(point_rows().where(where)).all()
    if not rows:
        return 0
    return _insert(conn, profile_id, PointColumns.of_rows([r[1:] for r in rows],
                                                          [r[0] for r in rows]))
