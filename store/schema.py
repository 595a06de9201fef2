"""The single definition of the database (SQLAlchemy Core). Alembic revisions create it.

Layout, from coarse to fine:

- ``profile_set``: one ingested version directory (vLLM-Ascend version or HCCL set).
- ``kernel_file``: one CSV of a version, with its row accounting.
- ``sample``: one accepted CSV data row, raw text kept, with its selected latency.
- ``sample_key``: the base exact-lookup keys of a sample (input signature prefixes).
- ``regime``: one (profile, kernel, path, regime key), with the key's inspection columns.
- ``sample_point``: one path's interpretation of a sample: its regime (by id) + up to three
  axes. A CSV row can feed several paths (generic compute and a Phase 2 path), so it may
  have several points; each is a row of its own. (``point`` in Core; ``sample_point`` in
  Core is that table joined with ``regime``, every column the table had before 0004.)
- ``path_refusal``: a sample that one path cannot use, with the reason.
- ``rejected_row``: a data row that could not become a sample at all, with the reason.
- ``op_mapping`` / ``interpolation_policy``: the version's op_mapping.yaml, normalised.
- ``comm_sample``: HCCL communication measurements.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    select,
)
from sqlalchemy.types import TypeEngine


def Label(length: int) -> TypeEngine:
    """Short text: VARCHAR(length) on SQLite, which does not enforce the length, TEXT on
    PostgreSQL, which would. Directory and file names, YAML keys and CSV cells have no
    limit, and a value SQLite stores must not fail on PostgreSQL (migration 0002)."""
    return String(length).with_variant(Text(), "postgresql")


SQL_INT_MAX = 2**31 - 1
"""The largest value an Integer column holds on every backend (PostgreSQL's INTEGER)."""

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)

profile_set = Table(
    "profile_set",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("alias", Label(64), nullable=False, unique=True),
    Column("device", Label(128), nullable=False),
    Column("framework", Label(32), nullable=False),
    Column("directory", Label(256), nullable=False),
    Column("source_path", Text, nullable=False),
    Column("content_hash", Label(64), nullable=False),
    Column("ingested_at", Label(32), nullable=False),
    Column("files", Integer, nullable=False),
    Column("rows_read", Integer, nullable=False),
    Column("rows_accepted", Integer, nullable=False),
    Column("rows_rejected", Integer, nullable=False),
    Column("mapping_document", Text),
    Column("mapping_problems", Text),
)

kernel_file = Table(
    "kernel_file",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("kernel_type", Label(128), nullable=False),
    Column("file_name", Label(256), nullable=False),
    Column("file_hash", Label(64), nullable=False),
    Column("columns", Text, nullable=False),
    Column("rows_read", Integer, nullable=False),
    Column("rows_accepted", Integer, nullable=False),
    Column("rows_rejected", Integer, nullable=False),
    Column("refusal", Text),
    Index("ix_kernel_file_profile_kernel", "profile_id", "kernel_type"),
)

sample = Table(
    "sample",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("kernel_file_id", Integer, ForeignKey("kernel_file.id"), nullable=False),
    Column("kernel_type", Label(128), nullable=False),
    Column("line_no", Integer, nullable=False),
    Column("raw_text", Text, nullable=False),
    Column("input_shapes", Text, nullable=False),
    Column("input_dtypes", Text, nullable=False),
    Column("input_formats", Text, nullable=False),
    Column("output_shapes", Text, nullable=False),
    Column("output_dtypes", Text, nullable=False),
    Column("output_formats", Text, nullable=False),
    Column("latencies", Text, nullable=False),
    Column("extras", Text, nullable=False),
    Column("latency_us", Float, nullable=False),
    Column("latency_column", Label(64), nullable=False),
    Index("ix_sample_profile_kernel", "profile_id", "kernel_type"),
)

sample_key = Table(
    "sample_key",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("sample_id", Integer, ForeignKey("sample.id"), nullable=False),
    Column("kernel_type", Label(128), nullable=False),
    Column("exact_key", Text, nullable=False),
    Column("latency_us", Float, nullable=False),
    Column("latency_column", Label(64), nullable=False),
    Index(
        "ix_sample_key_lookup",
        "profile_id",
        "kernel_type",
        "exact_key",
        "latency_column",
        "latency_us",
        "sample_id",
    ),
    Index("ix_sample_key_sample", "sample_id"),
)

REGIME_COLUMNS: tuple[str, ...] = (
    "input_count",
    "dtypes",
    "shape_signature",
    "ep_size",
    "topk",
    "activation_dtype",
    "weight_dtype",
    "cache_dtype",
    "cache_shape",
    "gmm1_shape",
    "gmm2_shape",
    "quant_subtype",
    "scale_mode",
    "output_signature",
    "broadcast_pattern",
    "request_grouping",
    "sparse_phase",
)
"""Regime fields that get a column of their own, so they can be inspected in SQL.

The canonical ``regime_key`` holds every regime field of a path; these columns copy
the ones a path sets (NULL otherwise)."""

_INT_REGIME_COLUMNS = {"input_count", "ep_size", "topk"}

regime = Table(
    "regime",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("kernel_type", Label(128), nullable=False),
    Column("path", Label(48), nullable=False),
    Column("regime_key", Text, nullable=False),
    *[
        Column(name, Integer if name in _INT_REGIME_COLUMNS else Text)
        for name in REGIME_COLUMNS
    ],
    Index("ix_regime_lookup", "profile_id", "kernel_type", "path", "regime_key", unique=True),
)

point = Table(
    "sample_point",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("regime_id", Integer, ForeignKey("regime.id"), nullable=False),
    Column("sample_id", Integer, ForeignKey("sample.id"), nullable=False),
    Column("kernel_type", Label(128), nullable=False),
    Column("path", Label(48), nullable=False),
    Column("regime_key", Text, nullable=False),
    Column("semantic_key", Text),
    Column("axis_0", Float),
    Column("axis_1", Float),
    Column("axis_2", Float),
    Column("latency_us", Float, nullable=False),
    Column("latency_column", Label(64), nullable=False),
    Index("ix_sample_point_coordinate", "regime_id", "axis_0", "axis_1", "axis_2",
          "latency_column", "latency_us"),
    Index("ix_sample_point_sample", "sample_id"),
)
"""The ``sample_point`` table as stored since migration 0004: a point's regime by id (the
regime's inspection columns live once in ``regime``), indexed by regime id rather than by
the regime key's text. It keeps every column the ``regimes`` and ``duplicates`` views read."""

sample_point = (
    select(point.c.id, point.c.profile_id, point.c.sample_id, point.c.kernel_type,
           point.c.path, point.c.regime_key, *[regime.c[name] for name in REGIME_COLUMNS],
           point.c.semantic_key, point.c.axis_0, point.c.axis_1, point.c.axis_2,
           point.c.latency_us, point.c.latency_column)
    .select_from(point.join(regime, regime.c.id == point.c.regime_id))
    .subquery("sample_point")
)
"""Every column ``sample_point`` had before migration 0004 (the regime columns joined in
from ``regime``), for reading in Core: ``t.sample_point.c.ep_size`` as before. Writes go
to ``point`` and ``regime``."""

path_refusal = Table(
    "path_refusal",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("sample_id", Integer, ForeignKey("sample.id"), nullable=False),
    Column("kernel_type", Label(128), nullable=False),
    Column("path", Label(48), nullable=False),
    Column("reason", Text, nullable=False),
    Index("ix_path_refusal_profile_kernel", "profile_id", "kernel_type", "path"),
    Index("ix_path_refusal_sample", "sample_id"),
)

rejected_row = Table(
    "rejected_row",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("kernel_file_id", Integer, ForeignKey("kernel_file.id")),
    Column("file_name", Label(256), nullable=False),
    Column("line_no", Integer, nullable=False),
    Column("raw_text", Text, nullable=False),
    Column("reason_code", Label(64), nullable=False),
    Column("reason", Text, nullable=False),
    Index("ix_rejected_row_profile", "profile_id", "reason_code"),
)

op_mapping = Table(
    "op_mapping",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("op", Label(256), nullable=False),
    Column("selector", Label(48), nullable=False),
    Column("kernel_type", Label(128)),
    Column("alternate_kernel_types", Text, nullable=False),
    Column("query_mode", Label(64)),
    Column("compute_subcategory", Label(64)),
    Column("tc_input_count", Integer),
    Column("zero_cost", Boolean, nullable=False),
    Column("accepted_miss", Text),
    Column("category", Label(64)),
    Column("composite", Boolean, nullable=False),
    Column("sub_kernels", Text, nullable=False),
    Column("raw", Text, nullable=False),
    Index("ix_op_mapping_profile_op", "profile_id", "op", unique=True),
)

interpolation_policy = Table(
    "interpolation_policy",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("kernel_type", Label(128), nullable=False),
    Column("max_interpolation_dim", Integer),
    Column("generic_axis", Label(32), nullable=False),
    Column("axis_transform", Label(32)),
    Column("prefer_profiling_rows", Boolean, nullable=False),
    Column("core_envelope_ratio", Float),
    Column("require_semantic_unique", Boolean, nullable=False),
    Index("ix_interpolation_policy_profile_kernel", "profile_id", "kernel_type", unique=True),
)

comm_sample = Table(
    "comm_sample",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("kernel_file_id", Integer, ForeignKey("kernel_file.id"), nullable=False),
    Column("collective", Label(128), nullable=False),
    Column("line_no", Integer, nullable=False),
    Column("raw_text", Text, nullable=False),
    Column("message_bytes", Float, nullable=False),
    Column("num_devices", Integer, nullable=False),
    Column("dtype", Label(32)),
    Column("topology_tier", Label(64)),
    Column("latency_us", Float, nullable=False),
    Column("bandwidth_gbps", Float),
    Index(
        "ix_comm_sample_lookup",
        "profile_id",
        "collective",
        "num_devices",
        "topology_tier",
        "message_bytes",
        "latency_us",
    ),
)

DATA_TABLES = (
    comm_sample,
    interpolation_policy,
    op_mapping,
    rejected_row,
    path_refusal,
    point,
    regime,
    sample_key,
    sample,
    kernel_file,
)
"""Every table that hangs off a profile set, children first (the order to delete in)."""

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
