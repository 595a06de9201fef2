"""a regime table; sample_point keeps the regime's id instead of its columns

Every ``sample_point`` row held 17 regime columns, and its covering index began with the
regime key's text (about 150 bytes of JSON): on the corpus a third of the database. The
regime's inspection columns now live once in ``regime`` (integer id, unique on profile,
kernel, path and key); ``sample_point`` keeps the columns the ``regimes`` and ``duplicates``
views read, gains ``regime_id`` and is indexed by it. The views are dropped and recreated
around the change (same text).

Self-contained: the SQL this revision executes is a frozen copy, as of this revision, on
purpose (docs/adr/0108-self-contained-migrations.md); it imports nothing of profstore.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 10:50:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

REGIMES_VIEW_SQL = """
CREATE VIEW regimes AS
SELECT p.alias AS version, sp.kernel_type, sp.path, sp.regime_key,
       COUNT(*) AS points,
       COUNT(DISTINCT sp.latency_column) AS latency_columns,
       MIN(sp.axis_0) AS axis_0_min, MAX(sp.axis_0) AS axis_0_max,
       MIN(sp.axis_1) AS axis_1_min, MAX(sp.axis_1) AS axis_1_max,
       MIN(sp.axis_2) AS axis_2_min, MAX(sp.axis_2) AS axis_2_max
FROM sample_point sp JOIN profile_set p ON p.id = sp.profile_id
GROUP BY p.alias, sp.kernel_type, sp.path, sp.regime_key
"""
"""The ``regimes`` view as revision 0004 recreates it. Frozen here on purpose (a copy, not an
import): a later change to live code must not change what this revision does."""

DUPLICATES_VIEW_SQL = """
CREATE VIEW duplicates AS
WITH ranked AS (
  SELECT sp.profile_id, sp.kernel_type, sp.path, sp.regime_key,
         sp.axis_0, sp.axis_1, sp.axis_2, sp.latency_column, sp.latency_us, s.line_no,
         ROW_NUMBER() OVER w AS rn,
         COUNT(*) OVER (PARTITION BY sp.profile_id, sp.kernel_type, sp.path, sp.regime_key,
                        sp.axis_0, sp.axis_1, sp.axis_2, sp.latency_column) AS n
  FROM sample_point sp JOIN sample s ON s.id = sp.sample_id
  WINDOW w AS (PARTITION BY sp.profile_id, sp.kernel_type, sp.path, sp.regime_key,
               sp.axis_0, sp.axis_1, sp.axis_2, sp.latency_column ORDER BY sp.latency_us)
)
SELECT p.alias AS version, r.kernel_type, r.path, r.regime_key,
       r.axis_0, r.axis_1, r.axis_2, r.latency_column,
       MAX(r.n) AS rows_at_coordinate,
       MIN(r.latency_us) AS latency_min,
       AVG(CASE WHEN r.rn IN ((r.n + 1) / 2, (r.n + 2) / 2) THEN r.latency_us END)
           AS latency_median,
       MAX(r.latency_us) AS latency_max,
       MIN(r.line_no) AS first_line
FROM ranked r JOIN profile_set p ON p.id = r.profile_id
WHERE r.n > 1
GROUP BY p.alias, r.kernel_type, r.path, r.regime_key, r.axis_0, r.axis_1, r.axis_2,
         r.latency_column
"""
"""The ``duplicates`` view as revision 0004 recreates it (frozen here on purpose, as above)."""

REGIME_COLUMNS = (
    "input_count", "dtypes", "shape_signature", "ep_size", "topk", "activation_dtype",
    "weight_dtype", "cache_dtype", "cache_shape", "gmm1_shape", "gmm2_shape", "quant_subtype",
    "scale_mode", "output_signature", "broadcast_pattern", "request_grouping", "sparse_phase",
)
"""Frozen here: the columns revision 0003's ``sample_point`` had."""
INT_COLUMNS = {"input_count", "ep_size", "topk"}
OLD_COORDINATE = ['profile_id', 'kernel_type', 'path', 'regime_key', 'axis_0', 'axis_1',
                  'axis_2', 'latency_column', 'latency_us']
NEW_COORDINATE = ['regime_id', 'axis_0', 'axis_1', 'axis_2', 'latency_column', 'latency_us']
SAME_REGIME = ("regime.profile_id = sample_point.profile_id "
               "AND regime.kernel_type = sample_point.kernel_type "
               "AND regime.path = sample_point.path "
               "AND regime.regime_key = sample_point.regime_key")


def _label(length: int) -> sa.types.TypeEngine:
    return sa.String(length).with_variant(sa.Text(), "postgresql")


def _regime_columns() -> list[sa.Column]:
    return [sa.Column(name, sa.Integer() if name in INT_COLUMNS else sa.Text(), nullable=True)
            for name in REGIME_COLUMNS]


def _drop_views() -> None:
    op.execute("DROP VIEW IF EXISTS duplicates")
    op.execute("DROP VIEW IF EXISTS regimes")


def _create_views() -> None:
    op.execute(REGIMES_VIEW_SQL)
    op.execute(DUPLICATES_VIEW_SQL)


def upgrade() -> None:
    _drop_views()
    op.create_table(
        'regime',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('profile_id', sa.Integer(), nullable=False),
        sa.Column('kernel_type', _label(128), nullable=False),
        sa.Column('path', _label(48), nullable=False),
        sa.Column('regime_key', sa.Text(), nullable=False),
        *_regime_columns(),
        sa.ForeignKeyConstraint(['profile_id'], ['profile_set.id'],
                                name=op.f('fk_regime_profile_id_profile_set')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_regime')),
    )
    kept = ", ".join(f"MIN({c})" for c in REGIME_COLUMNS)
    op.execute(f"INSERT INTO regime (profile_id, kernel_type, path, regime_key, "
               f"{', '.join(REGIME_COLUMNS)}) "
               f"SELECT profile_id, kernel_type, path, regime_key, {kept} FROM sample_point "
               f"GROUP BY profile_id, kernel_type, path, regime_key ORDER BY MIN(id)")
    op.create_index('ix_regime_lookup', 'regime',
                    ['profile_id', 'kernel_type', 'path', 'regime_key'], unique=True)
    op.add_column('sample_point', sa.Column('regime_id', sa.Integer(), nullable=True))
    op.execute(f"UPDATE sample_point SET regime_id = "
               f"(SELECT regime.id FROM regime WHERE {SAME_REGIME})")
    op.drop_index('ix_sample_point_coordinate', table_name='sample_point')
    with op.batch_alter_table('sample_point', recreate='auto') as batch:
        for name in REGIME_COLUMNS:
            batch.drop_column(name)
        batch.alter_column('regime_id', existing_type=sa.Integer(), nullable=False)
        batch.create_foreign_key(op.f('fk_sample_point_regime_id_regime'), 'regime',
                                 ['regime_id'], ['id'])
    op.create_index('ix_sample_point_coordinate', 'sample_point', NEW_COORDINATE)
    _create_views()


def downgrade() -> None:
    _drop_views()
    for column in _regime_columns():
        op.add_column('sample_point', column)
    assignments = ", ".join(f"{c} = (SELECT regime.{c} FROM regime "
                            f"WHERE regime.id = sample_point.regime_id)" for c in REGIME_COLUMNS)
    op.execute(f"UPDATE sample_point SET {assignments}")
    op.drop_index('ix_sample_point_coordinate', table_name='sample_point')
    with op.batch_alter_table('sample_point', recreate='auto') as batch:
        batch.drop_constraint(op.f('fk_sample_point_regime_id_regime'), type_='foreignkey')
        batch.drop_column('regime_id')
    op.create_index('ix_sample_point_coordinate', 'sample_point', OLD_COORDINATE)
    op.drop_index('ix_regime_lookup', table_name='regime')
    op.drop_table('regime')
    _create_views()
