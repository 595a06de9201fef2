"""Write each regime's points as one ``regime_points`` row (``profstore.regime_pack``).

The packs are derived data, like an index: built from what ``sample_point`` and
``sample`` hold once a writer has flushed its points, in the writer's transaction, so a
version's packs commit (or roll back) with its rows. A regime that gains points (the
gap plan's stand-in adds rows to a stored version) has its pack rebuilt whole.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any

from profstore import schema as t
from profstore.ingest.bulk import bulk_insert
from profstore.regime_pack import PACK_COLUMNS, encode
from profstore.regime_slice import build_slice
from sqlalchemy import Connection, delete, select

CHUNK = 500
"""Regime ids per ``IN`` list when only some regimes are rebuilt."""


def _point_rows():
    """(regime id, then the columns ``build_slice`` reads) of every point."""
    p, s, f = t.point.c, t.sample_table.c, t.kernel_file.c
    return (select(p.regime_id, p.sample_id, s.latency_us, s.latency_column, s.line_no,
                   f.file_name, p.axis_0, p.axis_1, p.axis_2, p.semantic_key, p.id)
            .select_from(t.point.join(t.sample_table, s.id == p.sample_id)
                         .join(t.kernel_file, f.id == s.kernel_file_id)))


def _packs(profile_id: int, rows: Iterable[Sequence[Any]]) -> Iterator[tuple[Any, ...]]:
    for regime_id, points in groupby(rows, key=itemgetter(0)):
        yield encode(regime_id, profile_id, build_slice([r[1:] for r in points]))


def write_packs(conn: Connection, profile_id: int,
                regime_ids: Collection[int] | None = None) -> int:
    """(Re)write the packs of a profile's regimes (all of them when ``regime_ids`` is None);
    returns how many were written."""
    p, g = t.point.c, t.regime_points.c
    if regime_ids is None:
        return _write(conn, profile_id, p.profile_id == profile_id)
    ids, written = sorted(regime_ids), 0
    for part in (ids[i:i + CHUNK] for i in range(0, len(ids), CHUNK)):
        conn.execute(delete(t.regime_points).where(g.regime_id.in_(part)))
        written += _write(conn, profile_id, p.regime_id.in_(part))
    return written


def _write(conn: Connection, profile_id: int, where: Any) -> int:
    rows = conn.execute(_point_rows().where(where).order_by(t.point.c.regime_id))
    packs = list(_packs(profile_id, rows))
    if packs:
        bulk_insert(conn, t.regime_points, PACK_COLUMNS, packs)
    return len(packs)
