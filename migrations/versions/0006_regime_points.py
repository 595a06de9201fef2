"""every regime's points in one row (regime_points)

A lookup whose regime is not cached read the regime's points one row each: 156 rows of
RmsNorm took 260 µs, nearly all of it the Python row made per point (SQLite's own work
was 24 µs). ``regime_points`` holds each regime's points as arrays in one row, in point
order (read by ``profstore.storage.regime_pack``). Upgrade creates the table and packs every
stored regime, in the migration's transaction; downgrade drops it (nothing else changes).

Self-contained: the packing below is a frozen copy, as of this revision, on purpose
(docs/adr/0108-self-contained-migrations.md): the point order and the byte layout that
profstore's ingest wrote when this revision was made current, written out with the standard
library. It imports nothing of profstore, so a later change to ingest or to the pack format
cannot change what this revision writes (a new format needs a new revision).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 18:30:00
"""
from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

# Frozen as of this revision on purpose (a copy, not an import; docs/adr/0108).

POINT_ROWS = sa.text(
    "SELECT p.regime_id, p.sample_id, s.latency_us, s.latency_column, s.line_no, f.file_name, "
    "p.axis_0, p.axis_1, p.axis_2, p.semantic_key, p.id "
    "FROM sample_point p JOIN sample s ON s.id = p.sample_id "
    "JOIN kernel_file f ON f.id = s.kernel_file_id WHERE p.profile_id = :profile_id")
"""Every point of one profile: regime, sample, latency, latency column, line, file, three
axes, semantic key, point id (the tie-break of the point order)."""
REGIME, SAMPLE, LATENCY, COLUMN, LINE, FILE, AXES, SEMANTIC, POINT = 0, 1, 2, 3, 4, 5, 6, 9, 10

PACK = sa.table("regime_points", *[sa.column(name) for name in (
    "regime_id", "profile_id", "points", "width", "axes", "latency_us", "sample_ids",
    "line_nos", "latency_columns", "latency_column_codes", "kernel_files", "kernel_file_codes",
    "semantic_keys", "semantic_codes")])


def _axis(value: float | None) -> float:
    """An axis for ordering: NULL (and NaN) first."""
    return -math.inf if value is None or value != value else float(value)


def _point_order(row: Sequence[Any]) -> tuple:
    """Axes (NULL first), then latency column, latency and point id."""
    return (*(_axis(v) for v in row[AXES:AXES + 3]), row[COLUMN], float(row[LATENCY]),
            row[POINT])


def _int_bytes(values: Sequence[int], high: int | None = None) -> bytes:
    """Non-negative integers, little-endian, in the narrowest of 1, 2, 4 (signed) or 8
    (signed) bytes that holds the largest (``high`` when known)."""
    if high is None:
        high = max(values, default=0)
    kind = "B" if high < 1 << 8 else "H" if high < 1 << 16 else "i" if high < 1 << 31 else "q"
    return struct.pack(f"<{len(values)}{kind}", *values)


def _float_bytes(values: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(values)}d", *values)


def _axes_bytes(axes: list[list[float]]) -> bytes:
    """Point by point: whole numbers from 0 (not -0.0) below 2**31 as integers when every
    value is one, else float64."""
    flat = [v for point in axes for v in point]
    if flat and all(math.copysign(1.0, v) > 0 for v in flat):
        high = max(flat)
        if high < 1 << 31 and all(v.is_integer() for v in flat):  # False for infinity
            return _int_bytes([int(v) for v in flat], int(high))
    return _float_bytes(flat)


def _categories(values: Sequence[Any]) -> tuple[str, bytes | None]:
    """The distinct values sorted (None first) as a JSON list, and each point's index into
    it (NULL when there is one value)."""
    names = sorted(set(values), key=lambda v: (v is not None, v))
    if len(names) <= 1:
        return json.dumps(names), None
    code = {name: i for i, name in enumerate(names)}
    return json.dumps(names), _int_bytes([code[v] for v in values])


def _pack(regime_id: int, profile_id: int, rows: list[Sequence[Any]]) -> dict[str, Any]:
    """The ``regime_points`` row of one regime's point rows."""
    rows = sorted(rows, key=_point_order)
    axes = [[float(v) for v in row[AXES:AXES + 3] if v is not None and v == v] for row in rows]
    width = len(axes[0])
    if any(len(point) != width for point in axes):
        raise ValueError(f"regime {regime_id}: its points have different numbers of axes")
    latency_columns, latency_column_codes = _categories([r[COLUMN] for r in rows])
    kernel_files, kernel_file_codes = _categories([r[FILE] for r in rows])
    semantic_keys, semantic_codes = _categories([r[SEMANTIC] for r in rows])
    return {
        "regime_id": regime_id, "profile_id": profile_id, "points": len(rows), "width": width,
        "axes": _axes_bytes(axes), "latency_us": _float_bytes([float(r[LATENCY]) for r in rows]),
        "sample_ids": _int_bytes([r[SAMPLE] for r in rows]),
        "line_nos": _int_bytes([r[LINE] for r in rows]),
        "latency_columns": latency_columns, "latency_column_codes": latency_column_codes,
        "kernel_files": kernel_files, "kernel_file_codes": kernel_file_codes,
        "semantic_keys": semantic_keys, "semantic_codes": semantic_codes,
    }


def _pack_profile(conn: sa.Connection, profile_id: int) -> None:
    by_regime: dict[int, list[Sequence[Any]]] = {}
    for row in conn.execute(POINT_ROWS, {"profile_id": profile_id}):
        by_regime.setdefault(row[REGIME], []).append(row)
    packs = [_pack(regime_id, profile_id, rows) for regime_id, rows in sorted(by_regime.items())]
    if packs:
        conn.execute(PACK.insert(), packs)


def upgrade() -> None:
    op.create_table(
        'regime_points',
        sa.Column('regime_id', sa.Integer(), nullable=False),
        sa.Column('profile_id', sa.Integer(), nullable=False),
        sa.Column('points', sa.Integer(), nullable=False),
        sa.Column('width', sa.Integer(), nullable=False),
        sa.Column('axes', sa.LargeBinary(), nullable=False),
        sa.Column('latency_us', sa.LargeBinary(), nullable=False),
        sa.Column('sample_ids', sa.LargeBinary(), nullable=False),
        sa.Column('line_nos', sa.LargeBinary(), nullable=False),
        sa.Column('latency_columns', sa.Text(), nullable=False),
        sa.Column('latency_column_codes', sa.LargeBinary(), nullable=True),
        sa.Column('kernel_files', sa.Text(), nullable=False),
        sa.Column('kernel_file_codes', sa.LargeBinary(), nullable=True),
        sa.Column('semantic_keys', sa.Text(), nullable=False),
        sa.Column('semantic_codes', sa.LargeBinary(), nullable=True),
        sa.ForeignKeyConstraint(['profile_id'], ['profile_set.id'],
                                name=op.f('fk_regime_points_profile_id_profile_set')),
        sa.ForeignKeyConstraint(['regime_id'], ['regime.id'],
                                name=op.f('fk_regime_points_regime_id_regime')),
        sa.PrimaryKeyConstraint('regime_id', name=op.f('pk_regime_points')),
    )
    conn = op.get_bind()
    profiles = conn.execute(sa.text("SELECT id FROM profile_set ORDER BY id")).scalars().all()
    for profile_id in profiles:
        _pack_profile(conn, profile_id)


def downgrade() -> None:
    op.drop_table('regime_points')
