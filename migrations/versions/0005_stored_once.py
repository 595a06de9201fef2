"""each value stored once: sample_key is its lookup key, sample_point its regime and sample

On v0.18 the database was 5.2 times its CSVs. ``sample_key`` was stored twice (the table
and a covering index of all its columns) with a copy of its sample's latency;
``sample_point`` still held its regime's kernel, path and key text (in ``regime`` since
0004) and a copy of its sample's latency; ``sample.latencies`` / ``extras`` repeated the
file's JSON keys on every row. Now:

- ``sample_key``: primary key (kernel_file_id, exact_key, sample_id), the kernel by its
  file; on SQLite a ``WITHOUT ROWID`` table, so the key's b-tree is the table; no kernel
  or latency text, no sample-id index and no foreign key to ``sample`` (see
  ``key_table`` in profstore's storage schema).
- ``sample_point``: id, profile, regime id, sample id, semantic key, axes; the coordinate
  index is (regime_id, axis_0, axis_1, axis_2).
- ``sample``: ``latencies_packed`` / ``extras_packed`` (each known JSON key one control
  character; ``_replaced`` below, read back today by ``profstore.storage.packed_json``).

The views read kernel, path and key from ``regime`` and the latency from ``sample`` (same
columns). Downgrade restores revision 0004's tables.

Self-contained: the key packing, its name lists and the view SQL are frozen copies, as of
this revision, on purpose (docs/adr/0108-self-contained-migrations.md); it imports nothing
of profstore.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 13:50:00
"""
from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

# Frozen as of this revision on purpose (copies, not imports; docs/adr/0108): the JSON key
# packing, its two name lists and the view text exactly as this revision applies them, so
# that a later change to live code cannot change what this revision does.

LATENCY_NAMES: tuple[str, ...] = (
    "Average Duration(us)", "Profiling Average Duration(us)", "Profiling Median Duration(us)",
    "Profiling Std Duration(us)", "Median Duration(us)", "Std Duration(us)", "Duration(us)",
)
"""The packed latency keys of revision 0005: a key's code is ``chr(1 + position)``."""

EXTRA_NAMES: tuple[str, ...] = tuple(f"Runtime {name}" for name in (
    "sparse_mode", "source_profile", "phase", "num_key_value_heads", "num_heads",
    "metadata_completeness", "kv_cache_mode", "input_layout", "block_table_valid_blocks",
    "block_table_shape", "block_size", "batch_size", "avg_seq_len",
    "actual_seq_lengths_values", "actual_seq_lengths_shape", "actual_seq_lengths_kv_values",
    "actual_seq_lengths_kv_shape", "topk", "case_id", "cache_layout",
    "sparse_indices_valid_count", "sparse_indices_pattern", "sparse_block_size",
    "quant_mode", "operator_input_shapes_raw", "attn_state",
)) + ("EP Size", "avg_seq_len")
"""The packed extra keys of revision 0005 (codes as above)."""


def _replaced(column: sa.ColumnElement, names: Sequence[str], packing: bool
              ) -> sa.ColumnElement:
    """SQL of a JSON text column with each known key (as ``json.dumps`` spells it, with its
    ``": "``) replaced by its one-character code (``packing``), or the reverse."""
    expression = column
    for i, name in enumerate(names):
        spelled, code = json.dumps(name) + ": ", chr(1 + i)
        old, new = (spelled, code) if packing else (code, spelled)
        expression = sa.func.replace(expression, sa.literal(old), sa.literal(new))
    return expression


REGIMES_VIEW_SQL = """
CREATE VIEW regimes AS
SELECT p.alias AS version, g.kernel_type, g.path, g.regime_key,
       COUNT(*) AS points,
       COUNT(DISTINCT s.latency_column) AS latency_columns,
       MIN(sp.axis_0) AS axis_0_min, MAX(sp.axis_0) AS axis_0_max,
       MIN(sp.axis_1) AS axis_1_min, MAX(sp.axis_1) AS axis_1_max,
       MIN(sp.axis_2) AS axis_2_min, MAX(sp.axis_2) AS axis_2_max
FROM sample_point sp JOIN regime g ON g.id = sp.regime_id
     JOIN sample s ON s.id = sp.sample_id
     JOIN profile_set p ON p.id = g.profile_id
GROUP BY p.alias, g.kernel_type, g.path, g.regime_key
"""
"""The ``regimes`` view as revision 0005 creates it (the same columns as before, read from
``regime`` and ``sample``; frozen)."""

DUPLICATES_VIEW_SQL = """
CREATE VIEW duplicates AS
WITH ranked AS (
  SELECT g.profile_id, g.kernel_type, g.path, g.regime_key,
         sp.axis_0, sp.axis_1, sp.axis_2, s.latency_column, s.latency_us, s.line_no,
         ROW_NUMBER() OVER w AS rn,
         COUNT(*) OVER (PARTITION BY g.profile_id, g.kernel_type, g.path, g.regime_key,
                        sp.axis_0, sp.axis_1, sp.axis_2, s.latency_column) AS n
  FROM sample_point sp JOIN regime g ON g.id = sp.regime_id
       JOIN sample s ON s.id = sp.sample_id
  WINDOW w AS (PARTITION BY g.profile_id, g.kernel_type, g.path, g.regime_key,
               sp.axis_0, sp.axis_1, sp.axis_2, s.latency_column ORDER BY s.latency_us)
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
"""The ``duplicates`` view as revision 0005 creates it (frozen)."""

OLD_REGIMES_VIEW_SQL = """
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
"""The ``regimes`` view as revision 0004 left it (what the downgrade recreates; frozen)."""

OLD_DUPLICATES_VIEW_SQL = """
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
"""The ``duplicates`` view as revision 0004 left it (what the downgrade recreates; frozen)."""

KEY_COLUMNS = ['kernel_file_id', 'exact_key', 'sample_id']
OLD_KEY_LOOKUP = ['profile_id', 'kernel_type', 'exact_key', 'latency_column', 'latency_us',
                  'sample_id']
OLD_COORDINATE = ['regime_id', 'axis_0', 'axis_1', 'axis_2', 'latency_column', 'latency_us']
NEW_COORDINATE = ['regime_id', 'axis_0', 'axis_1', 'axis_2']
POINT_COPIES = {"kernel_type": "regime", "path": "regime", "regime_key": "regime",
                "latency_us": "sample", "latency_column": "sample"}
"""Columns 0004's ``sample_point`` had that 0005 reads from its regime or sample."""
JSON_COLUMNS = (("latencies", LATENCY_NAMES), ("extras", EXTRA_NAMES))


def _label(length: int) -> sa.types.TypeEngine:
    return sa.String(length).with_variant(sa.Text(), "postgresql")


def _sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"


def _views(sql: Sequence[str]) -> None:
    op.execute("DROP VIEW IF EXISTS duplicates")
    op.execute("DROP VIEW IF EXISTS regimes")
    for text in sql:
        op.execute(text)


def _add_text(table: str, name: str, nullable: bool = False) -> None:
    """A NOT NULL text column (SQLite can add one only with a default; it is filled next)."""
    if _sqlite() and not nullable:
        op.execute(f"ALTER TABLE {table} ADD COLUMN {name} TEXT NOT NULL DEFAULT ''")
    else:
        op.add_column(table, sa.Column(name, sa.Text(), nullable=True))


def _set_not_null(table: str, name: str, type_: sa.types.TypeEngine) -> None:
    if not _sqlite():
        op.alter_column(table, name, existing_type=type_, nullable=False)


def _drop_columns(table: str, names: Sequence[str]) -> None:
    for name in names:
        op.execute(f"ALTER TABLE {table} DROP COLUMN {name}")


def _repack(names_from: Sequence[str], names_to: Sequence[str], packing: bool) -> None:
    sample = sa.table("sample", *[sa.column(n) for n in (*names_from, *names_to)])
    values = {}
    for (_, codebook), source, target in zip(JSON_COLUMNS, names_from, names_to):
        column = sample.c[source]
        values[target] = _replaced(column, codebook, packing)
    op.execute(sample.update().values(values))


def upgrade() -> None:
    _views([])
    for name, _ in JSON_COLUMNS:
        _add_text("sample", f"{name}_packed")
    _repack([n for n, _ in JSON_COLUMNS], [f"{n}_packed" for n, _ in JSON_COLUMNS], True)
    for name, _ in JSON_COLUMNS:
        _set_not_null("sample", f"{name}_packed", sa.Text())
    _drop_columns("sample", [n for n, _ in JSON_COLUMNS])

    op.drop_index('ix_sample_point_coordinate', table_name='sample_point')
    _drop_columns("sample_point", list(POINT_COPIES))
    op.create_index('ix_sample_point_coordinate', 'sample_point', NEW_COORDINATE)

    if _sqlite():
        _rebuild_keys_sqlite()
    else:
        _narrow_keys_postgresql()
    _views([REGIMES_VIEW_SQL, DUPLICATES_VIEW_SQL])


def _rebuild_keys_sqlite() -> None:
    """A new WITHOUT ROWID table filled in key order (so its pages are full)."""
    op.execute("ALTER TABLE sample_key RENAME TO sample_key_0004")
    op.create_table(
        'sample_key',
        sa.Column('kernel_file_id', sa.Integer(), nullable=False),
        sa.Column('exact_key', sa.Text(), nullable=False),
        sa.Column('sample_id', sa.Integer(), nullable=False),
        sa.Column('profile_id', sa.Integer(), nullable=False),
        sa.Column('id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['kernel_file_id'], ['kernel_file.id'],
                                name=op.f('fk_sample_key_kernel_file_id_kernel_file')),
        sa.ForeignKeyConstraint(['profile_id'], ['profile_set.id'],
                                name=op.f('fk_sample_key_profile_id_profile_set')),
        sa.PrimaryKeyConstraint(*KEY_COLUMNS, name=op.f('pk_sample_key')),
        sqlite_with_rowid=False,
    )
    op.execute("INSERT INTO sample_key (kernel_file_id, exact_key, sample_id, profile_id, id) "
               "SELECT s.kernel_file_id, k.exact_key, k.sample_id, k.profile_id, k.id "
               "FROM sample_key_0004 k JOIN sample s ON s.id = k.sample_id "
               "ORDER BY s.kernel_file_id, k.exact_key, k.sample_id")
    op.execute("DROP TABLE sample_key_0004")


def _narrow_keys_postgresql() -> None:
    """In place: the id column keeps its sequence (``sample_key_id_seq``)."""
    op.drop_index('ix_sample_key_lookup', table_name='sample_key')
    op.drop_index('ix_sample_key_sample', table_name='sample_key')
    op.drop_constraint('fk_sample_key_sample_id_sample', 'sample_key', type_='foreignkey')
    op.drop_constraint('pk_sample_key', 'sample_key', type_='primary')
    op.add_column('sample_key', sa.Column('kernel_file_id', sa.Integer(), nullable=True))
    op.execute("UPDATE sample_key SET kernel_file_id = s.kernel_file_id FROM sample s "
               "WHERE s.id = sample_key.sample_id")
    op.alter_column('sample_key', 'kernel_file_id', existing_type=sa.Integer(), nullable=False)
    op.create_foreign_key('fk_sample_key_kernel_file_id_kernel_file', 'sample_key',
                          'kernel_file', ['kernel_file_id'], ['id'])
    _drop_columns("sample_key", ["kernel_type", "latency_us", "latency_column"])
    op.create_primary_key('pk_sample_key', 'sample_key', KEY_COLUMNS)


def downgrade() -> None:
    _views([])
    for name, _ in JSON_COLUMNS:
        _add_text("sample", name)
    _repack([f"{n}_packed" for n, _ in JSON_COLUMNS], [n for n, _ in JSON_COLUMNS], False)
    for name, _ in JSON_COLUMNS:
        _set_not_null("sample", name, sa.Text())
    _drop_columns("sample", [f"{n}_packed" for n, _ in JSON_COLUMNS])

    _restore_point_columns()
    if _sqlite():
        _restore_keys_sqlite()
    else:
        _restore_keys_postgresql()
    _views([OLD_REGIMES_VIEW_SQL, OLD_DUPLICATES_VIEW_SQL])


def _point_column_types() -> dict[str, sa.types.TypeEngine]:
    return {"kernel_type": _label(128), "path": _label(48), "regime_key": sa.Text(),
            "latency_us": sa.Float(), "latency_column": _label(64)}


def _restore_point_columns() -> None:
    types = _point_column_types()
    for name, type_ in types.items():
        if _sqlite():
            default = "0" if name == "latency_us" else "''"
            op.execute(f"ALTER TABLE sample_point ADD COLUMN {name} "
                       f"{type_.compile(op.get_bind().dialect)} NOT NULL DEFAULT {default}")
        else:
            op.add_column('sample_point', sa.Column(name, type_, nullable=True))
    assignments = ", ".join(
        f"{name} = (SELECT {source}.{name} FROM {source} WHERE {source}.id = "
        f"sample_point.{source}_id)" for name, source in POINT_COPIES.items())
    op.execute(f"UPDATE sample_point SET {assignments}")
    for name, type_ in types.items():
        _set_not_null("sample_point", name, type_)
    op.drop_index('ix_sample_point_coordinate', table_name='sample_point')
    op.create_index('ix_sample_point_coordinate', 'sample_point', OLD_COORDINATE)


KEY_COPY = ("INSERT INTO sample_key (id, profile_id, sample_id, kernel_type, exact_key, "
            "latency_us, latency_column) SELECT k.id, k.profile_id, k.sample_id, f.kernel_type, "
            "k.exact_key, s.latency_us, s.latency_column FROM {source} k "
            "JOIN sample s ON s.id = k.sample_id JOIN kernel_file f ON f.id = k.kernel_file_id "
            "ORDER BY k.id")


def _restore_keys_sqlite() -> None:
    op.execute("ALTER TABLE sample_key RENAME TO sample_key_0005")
    op.create_table(
        'sample_key',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('profile_id', sa.Integer(), nullable=False),
        sa.Column('sample_id', sa.Integer(), nullable=False),
        sa.Column('kernel_type', _label(128), nullable=False),
        sa.Column('exact_key', sa.Text(), nullable=False),
        sa.Column('latency_us', sa.Float(), nullable=False),
        sa.Column('latency_column', _label(64), nullable=False),
        sa.ForeignKeyConstraint(['profile_id'], ['profile_set.id'],
                                name=op.f('fk_sample_key_profile_id_profile_set')),
        sa.ForeignKeyConstraint(['sample_id'], ['sample.id'],
                                name=op.f('fk_sample_key_sample_id_sample')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_sample_key')),
    )
    op.execute(KEY_COPY.format(source="sample_key_0005"))
    op.execute("DROP TABLE sample_key_0005")
    _old_key_indexes()


def _restore_keys_postgresql() -> None:
    op.drop_constraint('pk_sample_key', 'sample_key', type_='primary')
    restored = (("kernel_type", _label(128)), ("latency_us", sa.Float()),
                ("latency_column", _label(64)))
    for name, type_ in restored:
        op.add_column('sample_key', sa.Column(name, type_, nullable=True))
    op.execute("UPDATE sample_key SET kernel_type = f.kernel_type, latency_us = s.latency_us, "
               "latency_column = s.latency_column FROM sample s, kernel_file f "
               "WHERE s.id = sample_key.sample_id AND f.id = sample_key.kernel_file_id")
    for name, type_ in restored:
        op.alter_column('sample_key', name, existing_type=type_, nullable=False)
    op.drop_constraint('fk_sample_key_kernel_file_id_kernel_file', 'sample_key',
                       type_='foreignkey')
    op.drop_column('sample_key', 'kernel_file_id')
    op.create_primary_key('pk_sample_key', 'sample_key', ['id'])
    op.create_foreign_key('fk_sample_key_sample_id_sample', 'sample_key', 'sample',
                          ['sample_id'], ['id'])
    _old_key_indexes()


def _old_key_indexes() -> None:
    op.create_index('ix_sample_key_lookup', 'sample_key', OLD_KEY_LOOKUP)
    op.create_index('ix_sample_key_sample', 'sample_key', ['sample_id'])
