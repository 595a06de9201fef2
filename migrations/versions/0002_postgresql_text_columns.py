"""short text columns are TEXT on PostgreSQL

SQLite ignores VARCHAR lengths; PostgreSQL enforces them, so a directory name longer
than 64 characters, a Triton kernel file name longer than 128 or a long CSV cell
ingested fine on SQLite and failed on PostgreSQL. On PostgreSQL every short text column
becomes TEXT (varchar to text needs no table rewrite); the views that read them are
dropped and recreated around the change. Nothing changes on SQLite.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 23:40:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from profstore.migrations.legacy_views import DUPLICATES_VIEW_SQL, REGIMES_VIEW_SQL

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("profile_set", "alias", 64), ("profile_set", "device", 128),
    ("profile_set", "framework", 32), ("profile_set", "directory", 256),
    ("profile_set", "content_hash", 64), ("profile_set", "ingested_at", 32),
    ("interpolation_policy", "kernel_type", 128), ("interpolation_policy", "generic_axis", 32),
    ("interpolation_policy", "axis_transform", 32),
    ("kernel_file", "kernel_type", 128), ("kernel_file", "file_name", 256),
    ("kernel_file", "file_hash", 64),
    ("op_mapping", "op", 256), ("op_mapping", "selector", 48),
    ("op_mapping", "kernel_type", 128), ("op_mapping", "query_mode", 64),
    ("op_mapping", "compute_subcategory", 64), ("op_mapping", "category", 64),
    ("comm_sample", "collective", 128), ("comm_sample", "dtype", 32),
    ("comm_sample", "topology_tier", 64),
    ("rejected_row", "file_name", 256), ("rejected_row", "reason_code", 64),
    ("sample", "kernel_type", 128), ("sample", "latency_column", 64),
    ("path_refusal", "kernel_type", 128), ("path_refusal", "path", 48),
    ("sample_key", "kernel_type", 128), ("sample_key", "latency_column", 64),
    ("sample_point", "kernel_type", 128), ("sample_point", "path", 48),
    ("sample_point", "latency_column", 64),
)
"""Every String column of revision 0001, with its length (to downgrade to)."""


def _retype(to_text: bool) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP VIEW IF EXISTS duplicates")
    op.execute("DROP VIEW IF EXISTS regimes")
    for table, column, length in COLUMNS:
        new, old = (sa.Text(), sa.String(length)) if to_text else (sa.String(length), sa.Text())
        op.alter_column(table, column, type_=new, existing_type=old)
    op.execute(REGIMES_VIEW_SQL)
    op.execute(DUPLICATES_VIEW_SQL)


def upgrade() -> None:
    _retype(to_text=True)


def downgrade() -> None:
    _retype(to_text=False)
