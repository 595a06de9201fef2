"""index the child sample_id columns

Replacing a version deletes its samples; with foreign keys on, every deleted sample row
made SQLite scan sample_key, sample_point and path_refusal for children, so a re-ingest
of a changed version cost several times a fresh one and held the write lock past the
busy timeout. One index per child column makes each check a lookup.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 10:30:00
"""
from __future__ import annotations

from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

CHILD_TABLES = ("sample_key", "sample_point", "path_refusal")


def upgrade() -> None:
    for table in CHILD_TABLES:
        op.create_index(f"ix_{table}_sample", table, ["sample_id"])


def downgrade() -> None:
    for table in CHILD_TABLES:
        op.drop_index(f"ix_{table}_sample", table_name=table)
