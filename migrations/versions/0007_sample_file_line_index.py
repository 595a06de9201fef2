"""index sample by kernel file and line

TensorCast reports, with every answer, the input shapes of the CSV row it used: one row
by (file, line). Without an index on those columns the store read every row of the file
to find it (21 ms for QuantBatchMatmulV3.csv of v0.18, in each worker of a search);
with it, a row is one index lookup.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05 08:00:00
"""
from __future__ import annotations

from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_sample_file_line", "sample", ["kernel_file_id", "line_no"])


def downgrade() -> None:
    op.drop_index("ix_sample_file_line", table_name="sample")
