"""short text columns are TEXT on PostgreSQL

SQLite ignores VARCHAR lengths; PostgreSQL enforces them, so a directory name longer
than 64 characters, a Triton kernel file name longer than 128 or a long CSV cell
ingested fine on SQLite and failed on PostgreSQL. On PostgreSQL every short text column
becomes TEXT (varchar to text needs no table rewrite); the views that read them are
dropped and recreated around the change. Nothing changes on SQLite.

Self-contained: the SQL this revision executes is a frozen copy, as of this revision, on
purpose (docs/adr/0108-self-contained-migrations.md); it imports nothing of profstore.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 23:40:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
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
"""The ``regimes`` view as revision 0002 recreates on PostgreSQL it. Frozen here on purpose (a copy, not an
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
"""The ``duplicates`` view as revision 0002 recreates on PostgreSQL it (frozen here on purpose, as above)."""

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
