"""The single definition of the database (SQLAlchemy Core). Alembic revisions create it.

Layout, from coarse to fine:

- ``profile_set``: one ingested version directory (vLLM-Ascend version or HCCL set).
- ``kernel_file``: one CSV of a version, with its row accounting.
- ``sample``: one accepted CSV data row, raw text kept, with its selected latency.
  (``sample_table`` in Core; ``sample`` in Core reads ``latencies`` / ``extras`` as JSON.)
- ``sample_key``: the base exact-lookup keys of a sample (input signature prefixes), by
  kernel file. (``key_table`` in Core; ``sample_key`` in Core adds kernel and latency.)
- ``regime``: one (profile, kernel, path, regime key), with the key's inspection columns.
- ``sample_point``: one path's interpretation of a sample: its regime (by id) + up to three
  axes. A CSV row can feed several paths (generic compute and a Phase 2 path), so it may
  have several points; each is a row of its own. (``point`` in Core; ``sample_point`` in
  Core joins ``regime`` and ``sample``: every column the table had before 0004.)

The Core names of the tables before 0005 (``sample``, ``sample_key``, ``sample_point``)
are read-only selectables with the old columns; each value is stored once (0005).
- ``path_refusal``: a sample that one path cannot use, with the reason.
- ``rejected_row``: a data row that could not become a sample at all, with the reason.
- ``op_mapping`` / ``interpolation_policy``: the version's op_mapping.yaml, normalised.
- ``comm_sample``: HCCL communication measurements.
"""

from __future__ import annotations

from profstore.storage.packed_json import EXTRA_NAMES, LATENCY_NAMES, unpacked
from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
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

sample_table = Table(
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
    Column("latencies_packed", Text, nullable=False),
    Column("extras_packed", Text, nullable=False),
    Column("latency_us", Float, nullable=False),
    Column("latency_column", Label(64), nullable=False),
    Index("ix_sample_profile_kernel", "profile_id", "kernel_type"),
    Index("ix_sample_file_line", "kernel_file_id", "line_no"),
)
"""The ``sample`` table as stored since migration 0005: ``latencies`` and ``extras`` are
kept packed (``profstore.storage.packed_json``: each known JSON key is one control character)."""

_S = sample_table.c
sample = (
    select(_S.id, _S.profile_id, _S.kernel_file_id, _S.kernel_type, _S.line_no, _S.raw_text,
           _S.input_shapes, _S.input_dtypes, _S.input_formats, _S.output_shapes,
           _S.output_dtypes, _S.output_formats,
           unpacked(_S.latencies_packed, LATENCY_NAMES).label("latencies"),
           unpacked(_S.extras_packed, EXTRA_NAMES).label("extras"),
           _S.latency_us, _S.latency_column)
    .subquery("sample")
)
"""Every column ``sample`` had before migration 0005, ``latencies`` and ``extras`` as the
JSON text ``json.dumps`` wrote, for reading in Core. Writes go to ``sample_table``."""

key_table = Table(
    "sample_key",
    metadata,
    Column("kernel_file_id", Integer, ForeignKey("kernel_file.id"), primary_key=True),
    Column("exact_key", Text, primary_key=True),
    Column("sample_id", Integer, primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("id", Integer, nullable=False),
    sqlite_with_rowid=False,
)
"""The ``sample_key`` table as stored since migration 0005: the lookup columns are the
primary key, and on SQLite the table is that key's b-tree (``WITHOUT ROWID``), so each
key is stored once instead of in a table and again in its covering index. The kernel is
its file's (``kernel_file`` by profile and kernel, then this key), a key's latency its
sample's (both were copies). ``sample_id`` has no foreign key: with SQLite's
``foreign_keys=ON`` (and on PostgreSQL) deleting a sample would search this table by
sample id, which needs an index as large as the table; the writer adds a sample and its
keys in one transaction and deletes both by profile."""

_K, _F = key_table.c, kernel_file.c
sample_key = (
    select(_K.id, _K.profile_id, _K.sample_id, _F.kernel_type, _K.exact_key, _S.latency_us,
           _S.latency_column)
    .select_from(key_table.join(sample_table, _S.id == _K.sample_id)
                 .join(kernel_file, _F.id == _K.kernel_file_id))
    .subquery("sample_key")
)
"""Every column ``sample_key`` had before migration 0005 (kernel from the file, latency from
the sample), for reading in Core. Writes go to ``key_table``."""

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
    Column("semantic_key", Text),
    Column("axis_0", Float),
    Column("axis_1", Float),
    Column("axis_2", Float),
    Index("ix_sample_point_coordinate", "regime_id", "axis_0", "axis_1", "axis_2"),
    Index("ix_sample_point_sample", "sample_id"),
)
"""The ``sample_point`` table as stored since migration 0005: a point's regime by id
(kernel, path, key and inspection columns live once in ``regime``, since 0004) and its
sample (latency and latency column are the sample's, since 0005)."""

regime_points = Table(
    "regime_points",
    metadata,
    Column("regime_id", Integer, ForeignKey("regime.id"), primary_key=True),
    Column("profile_id", Integer, ForeignKey("profile_set.id"), nullable=False),
    Column("points", Integer, nullable=False),
    Column("width", Integer, nullable=False),
    Column("axes", LargeBinary, nullable=False),
    Column("latency_us", LargeBinary, nullable=False),
    Column("sample_ids", LargeBinary, nullable=False),
    Column("line_nos", LargeBinary, nullable=False),
    Column("latency_columns", Text, nullable=False),
    Column("latency_column_codes", LargeBinary),
    Column("kernel_files", Text, nullable=False),
    Column("kernel_file_codes", LargeBinary),
    Column("semantic_keys", Text, nullable=False),
    Column("semantic_codes", LargeBinary),
)
"""Every point of a regime in one row (since migration 0006), in point order: what a
lookup reads when the regime is not cached, one row instead of one per point (reading
156 point rows cost 260 µs, nearly all of it making a Python row per point). Written by
ingest from ``sample_point`` and ``sample`` after a version's points
(``profstore.ingest.packs``); the format is ``profstore.storage.regime_pack``'s."""

_P, _G = point.c, regime.c
sample_point = (
    select(_P.id, _P.profile_id, _P.sample_id, _G.kernel_type, _G.path, _G.regime_key,
           *[_G[name] for name in REGIME_COLUMNS], _P.semantic_key, _P.axis_0, _P.axis_1,
           _P.axis_2, _S.latency_us, _S.latency_column)
    .select_from(point.join(regime, _G.id == _P.regime_id)
                 .join(sample_table, _S.id == _P.sample_id))
    .subquery("sample_point")
)
"""Every column ``sample_point`` had before migration 0004 (the regime columns joined in
from ``regime``, the latency from ``sample``), for reading in Core:
``t.sample_point.c.ep_size`` as before. Writes go to ``point`` and ``regime``."""

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
    regime_points,
    regime,
    key_table,
    sample_table,
    kernel_file,
)
"""Every table that hangs off a profile set, children first (the order to delete in)."""

# The ``regimes`` and ``duplicates`` views (profstore regimes / duplicates, and SQL users) are
# created by revision 0005 (migrations/versions/0005_stored_once.py), which carries their text.
