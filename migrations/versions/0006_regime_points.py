"""every regime's points in one row (regime_points)

A lookup whose regime is not cached read the regime's points one row each: 156 rows of
RmsNorm took 260 µs, nearly all of it the Python row made per point (SQLite's own work
was 24 µs). ``regime_points`` holds each regime's points as arrays in one row, in point
order (``profstore.storage.regime_pack``). Upgrade creates the table and packs every stored
regime, in the migration's transaction, with the ingest code that packs a new version
(``profstore.ingest.packs``); downgrade drops it (nothing else changes).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 18:30:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from profstore.ingest.packs import write_packs

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


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
        write_packs(conn, profile_id)


def downgrade() -> None:
    op.drop_table('regime_points')
