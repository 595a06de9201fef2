"""Turn readouts into table rows and write them in batches (executemany).

The bulky tables are buffered as plain tuples in a fixed column order and written by
``ingest.bulk.bulk_insert`` (executemany on SQLite, COPY on PostgreSQL). The small
mapping tables (Boolean columns) take SQLAlchemy's ordinary ``insert``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import astuple

from profstore.ingest.bulk import bulk_insert
from profstore.ingest.csvfile import Accepted, FileReadout, RejectCode, Rejected
from profstore.ingest.hccl import CommReadout
from profstore.ingest.packs import PointCollector, write_packs
from profstore.model.exact_keys import StrippedKeyPlanner, prefix_keys, row_output_keys
from profstore.model.mapping import VersionMapping
from profstore.paths.base import Extraction, Refusal, RowContext
from profstore.paths.registry import ingest_paths, selector_of, tc_input_counts
from profstore.storage import schema as t
from profstore.storage.packed_json import EXTRA_NAMES, LATENCY_NAMES, pack
from profstore.storage.schema import SQL_INT_MAX
from sqlalchemy import Connection, Table, func, insert, inspect, select

MAPPING_FILE_NAME = "op_mapping.yaml"

COLUMNS: dict[str, tuple[str, ...]] = {
    "kernel_file": ("id", "profile_id", "kernel_type", "file_name", "file_hash", "columns",
                    "rows_read", "rows_accepted", "rows_rejected", "refusal"),
    "sample": ("id", "profile_id", "kernel_file_id", "kernel_type", "line_no", "raw_text",
               "input_shapes", "input_dtypes", "input_formats", "output_shapes",
               "output_dtypes", "output_formats", "latencies_packed", "extras_packed",
               "latency_us", "latency_column"),
    "sample_key": ("kernel_file_id", "exact_key", "sample_id", "profile_id", "id"),
    "regime": ("id", "profile_id", "kernel_type", "path", "regime_key", *t.REGIME_COLUMNS),
    "sample_point": ("profile_id", "regime_id", "sample_id", "semantic_key", "axis_0", "axis_1",
                     "axis_2"),
    "path_refusal": ("profile_id", "sample_id", "kernel_type", "path", "reason"),
    "rejected_row": ("profile_id", "kernel_file_id", "file_name", "line_no", "raw_text",
                     "reason_code", "reason"),
    "comm_sample": ("profile_id", "kernel_file_id", "collective", "line_no", "raw_text",
                    "message_bytes", "num_devices", "dtype", "topology_tier", "latency_us",
                    "bandwidth_gbps"),
}
LEGACY_COLUMNS: dict[str, tuple[str, ...]] = {
    "sample": (*COLUMNS["sample"][:12], "latencies", "extras", "latency_us", "latency_column"),
    "sample_key": ("profile_id", "sample_id", "kernel_type", "exact_key", "latency_us",
                   "latency_column"),
    "sample_point": ("profile_id", "regime_id", "sample_id", "kernel_type", "path",
                     "regime_key", "semantic_key", "axis_0", "axis_1", "axis_2", "latency_us",
                     "latency_column"),
}
"""Tables as revision 0004 made them (JSON text, keys and points with their latency): a
database not yet migrated is written in its own layout."""
WIDE_POINT_COLUMNS = ("profile_id", "sample_id", "kernel_type", "path", "regime_key",
                      *t.REGIME_COLUMNS, "semantic_key", "axis_0", "axis_1", "axis_2",
                      "latency_us", "latency_column")
"""``sample_point`` as revisions 0001-0003 made it, with the regime's columns on every point."""
FLUSH_ORDER = (t.kernel_file, t.sample_table, t.key_table, t.regime, t.point, t.path_refusal,
               t.rejected_row, t.comm_sample, t.op_mapping, t.interpolation_policy)
SAMPLE_CELLS = ("Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                "Output Data Types", "Output Formats")


class RowWriter:
    """Buffers the rows of one version and writes them table by table."""

    def __init__(self, conn: Connection, profile_id: int) -> None:
        self.conn = conn
        self.profile_id = profile_id
        self.buffers: dict[str, list[tuple]] = {}
        self.dicts: dict[str, list[dict]] = {}
        self.keys: StrippedKeyPlanner[tuple[int, float, str, int]] = StrippedKeyPlanner()
        self.regimes = RegimeMemo()
        inspector = inspect(conn)
        self.wide_points = not inspector.has_table(t.regime.name)
        self.legacy = self.wide_points or "latencies" in {
            c["name"] for c in inspector.get_columns(t.sample_table.name)}
        """A database before 0005: JSON text, and keys and points with their latency."""
        self._regime_ids = {} if self.wide_points else _existing_regimes(conn, profile_id)
        self.packs = inspector.has_table(t.regime_points.name)
        """Since 0006: each regime's points are also stored as one row (``write_packs``)."""
        self._collector = PointCollector(COLUMNS) if self.packs and not self._regime_ids \
            else None
        """A new version's points, packed from what the writer flushed."""
        self._touched: set[int] = set()
        """Otherwise: the regimes that gained points, packed again from the database."""
        self._next_id = {
            name: (conn.execute(select(func.max(column))).scalar() or 0) + 1
            for name, column in (("kernel_file", t.kernel_file.c.id),
                                 ("sample", t.sample_table.c.id), ("regime", t.regime.c.id),
                                 ("sample_key", t.key_table.c.id))
            if (name != "regime" or not self.wide_points)
            and (name != "sample_key" or not self.legacy)
        }

    def _take_id(self, name: str) -> int:
        return self.reserve_ids(name, 1)

    @property
    def id_tables(self) -> tuple[str, ...]:
        """The tables whose ids this writer gives out (on this database's layout)."""
        return tuple(self._next_id)

    def reserve_ids(self, name: str, count: int) -> int:
        """Take the next ``count`` ids of table ``name``; returns the first."""
        first = self._next_id[name]
        self._next_id[name] = first + count
        return first

    def _add(self, table: Table, row: tuple) -> None:
        self.buffers.setdefault(table.name, []).append(row)

    def columns(self, table: Table) -> tuple[str, ...]:
        """The columns, in buffer order, of ``table``'s rows on this database."""
        if table is t.point and self.wide_points:
            return WIDE_POINT_COLUMNS
        if self.legacy and table.name in LEGACY_COLUMNS:
            return LEGACY_COLUMNS[table.name]
        return COLUMNS[table.name]

    def flush(self) -> None:
        if self._collector is not None:
            self._collector.add(self.buffers)
        for table in FLUSH_ORDER:
            rows = self.buffers.pop(table.name, None)
            if rows:
                if table is t.key_table and not self.legacy:
                    rows.sort()  # primary-key order: appended to the b-tree, pages stay full
                if table is t.point and self.packs and self._collector is None:
                    self._touched.update(row[1] for row in rows)
                bulk_insert(self.conn, table, self.columns(table), rows)
            records = self.dicts.pop(table.name, None)
            if records:
                self.conn.execute(insert(table), records)

    def write_packs(self) -> int:
        """After the last ``flush``: the packs of every regime this writer added points to;
        returns how many were written."""
        if self._collector is not None:
            return self._collector.write(self.conn, self.profile_id)
        touched, self._touched = self._touched, set()
        return write_packs(self.conn, self.profile_id, touched) if touched else 0

    def write_kernel_file(self, name: str, kernel: str, digest: str, readout: FileReadout,
                          mapping: VersionMapping) -> None:
        file_id = self._file_row(name, kernel, digest, readout)
        ctx = RowContext(kernel, mapping.policy(kernel), tc_input_counts(kernel, mapping),
                         tuple(mapping.entries_for_kernel(kernel)))
        paths = ingest_paths(kernel, mapping)
        for accepted in readout.accepted:
            self._sample(file_id, kernel, accepted, ctx, paths)
        self._rejects(file_id, name, readout.rejected)

    def write_comm_file(self, name: str, collective: str, digest: str,
                        readout: CommReadout) -> None:
        file_id = self._file_row(name, collective, digest, readout)
        for row in readout.accepted:
            self._add(t.comm_sample, (self.profile_id, file_id, collective, *astuple(row)))
        self._rejects(file_id, name, readout.rejected)

    def _file_row(self, name: str, kernel: str, digest: str,
                  readout: FileReadout | CommReadout) -> int:
        file_id = self._take_id("kernel_file")
        self._add(t.kernel_file, (
            file_id, self.profile_id, kernel, name, digest, json.dumps(list(readout.columns)),
            readout.rows_read, len(readout.accepted), len(readout.rejected), readout.refusal,
        ))
        return file_id

    def _sample(self, file_id: int, kernel: str, accepted: Accepted, ctx: RowContext,
                paths: Iterable) -> None:
        row, cells = accepted.row, accepted.cells
        sample_id = self._take_id("sample")
        latency, column = row.latency_us, row.latency_column
        extras = json.dumps(dict(row.extras)) if row.extras else "{}"
        if self.legacy:
            latencies = latencies_json(accepted.latencies)
        else:
            latencies = latencies_json(accepted.latencies, _PACKED_KEYS)
            extras = pack(extras, EXTRA_NAMES) if row.extras else extras
        self._add(t.sample_table, (
            sample_id, self.profile_id, file_id, kernel, row.line_no, accepted.raw_text,
            *(cells[c] for c in SAMPLE_CELLS), latencies, extras, latency, column,
        ))
        held = (sample_id, latency, column, file_id)
        keys, released = self.keys.admit(kernel, prefix_keys(row), held)
        self._keys(kernel, [(key, *held) for key in keys + row_output_keys(row)])
        self._keys(kernel, [(key, *earlier) for key, earlier in released])
        for path in paths:
            self._points(sample_id, kernel, path, row, ctx)

    def _keys(self, kernel: str, keys: list[tuple[str, int, float, str, int]]) -> None:
        """Key rows from (key, sample id, latency, latency column, file id)."""
        rows = self.buffers.setdefault(t.key_table.name, [])
        if self.legacy:
            rows += [(self.profile_id, sample_id, kernel, key, latency, column)
                     for key, sample_id, latency, column, _ in keys]
            return
        for key, sample_id, _, _, file_id in keys:
            rows.append((file_id, key, sample_id, self.profile_id, self._take_id("sample_key")))

    def _points(self, sample_id: int, kernel: str, path, row, ctx: RowContext) -> None:
        outcome = path.row_regime(row, ctx)
        if isinstance(outcome, Refusal):
            self._add(t.path_refusal, (self.profile_id, sample_id, kernel, path.name,
                                       f"{outcome.reason.value}: {outcome.message}"))
            return
        for extraction in outcome:
            axes = (*extraction.axes, None, None, None)[:3]
            if self.wide_points:
                self._add(t.point, (
                    self.profile_id, sample_id, kernel, path.name, *self.regimes(extraction),
                    extraction.semantic, *axes, row.latency_us, row.latency_column))
                continue
            regime_id, regime_key = self._regime(kernel, path.name, extraction)
            if self.legacy:
                self._add(t.point, (
                    self.profile_id, regime_id, sample_id, kernel, path.name, regime_key,
                    extraction.semantic, *axes, row.latency_us, row.latency_column))
                continue
            self._add(t.point, (self.profile_id, regime_id, sample_id, extraction.semantic,
                                *axes))

    def _regime(self, kernel: str, path: str, extraction: Extraction) -> tuple[int, str]:
        """The id and key of the extraction's regime, written on its first point."""
        values = self.regimes(extraction)
        regime_key = str(values[0])
        key = (kernel, path, regime_key)
        found = self._regime_ids.get(key)
        if found is None:
            found = self._regime_ids[key] = self._take_id("regime")
            self._add(t.regime, (found, self.profile_id, kernel, path, *values))
        return found, regime_key

    def _rejects(self, file_id: int | None, name: str, rejected: Iterable[Rejected]) -> None:
        for r in rejected:
            self._add(t.rejected_row, (self.profile_id, file_id, name, r.line_no, r.raw_text,
                                       r.code.value, r.reason))

    def reject_mapping(self, code: RejectCode, reason: str) -> None:
        self._rejects(None, MAPPING_FILE_NAME, [Rejected(0, "", code, reason)])

    def write_mapping(self, mapping: VersionMapping) -> None:
        entries = self.dicts.setdefault(t.op_mapping.name, [])
        for op, entry in mapping.entries.items():
            entries.append({
                "profile_id": self.profile_id, "op": op, "selector": selector_of(entry),
                "kernel_type": entry.kernel_type,
                "alternate_kernel_types": json.dumps(list(entry.alternate_kernel_types)),
                "query_mode": entry.query_mode,
                "compute_subcategory": entry.compute_subcategory,
                "tc_input_count": entry.tc_input_count, "zero_cost": entry.zero_cost,
                "accepted_miss": entry.accepted_miss, "category": entry.category,
                "composite": entry.composite, "sub_kernels": json.dumps(list(entry.sub_kernels)),
                "raw": json.dumps(dict(entry.raw), sort_keys=True, default=str),
            })
        policies = self.dicts.setdefault(t.interpolation_policy.name, [])
        for kernel, policy in mapping.policies.items():
            policies.append({
                "profile_id": self.profile_id, "kernel_type": kernel,
                "max_interpolation_dim": policy.max_interpolation_dim,
                "generic_axis": policy.generic_axis, "axis_transform": policy.axis_transform,
                "prefer_profiling_rows": policy.prefer_profiling_rows,
                "core_envelope_ratio": policy.core_envelope_ratio,
                "require_semantic_unique": policy.require_semantic_unique,
            })


def _existing_regimes(conn: Connection, profile_id: int) -> dict[tuple[str, str, str], int]:
    """Regimes the profile already has (a writer adding rows to a stored version reuses
    them; a new version has none)."""
    g = t.regime.c
    rows = conn.execute(select(g.kernel_type, g.path, g.regime_key, g.id)
                        .where(g.profile_id == profile_id))
    return {(kernel, path, key): regime_id for kernel, path, key, regime_id in rows}


class _JsonKeys(dict):
    """``"name": `` of each latency column, as ``json.dumps`` spells it."""

    def __missing__(self, name: str) -> str:
        self[name] = found = json.dumps(name) + ": "
        return found


class _PackedKeys(dict):
    """The same, packed (``profstore.storage.packed_json``): one character for a known column."""

    def __missing__(self, name: str) -> str:
        self[name] = found = pack(_JSON_KEYS[name], LATENCY_NAMES)
        return found


_JSON_KEYS, _PACKED_KEYS = _JsonKeys(), _PackedKeys()


def latencies_json(latencies: Mapping[str, float | None],
                   keys: Mapping[str, str] = _JSON_KEYS) -> str:
    """The text ``json.dumps(latencies)`` gives, without the encoder's per-call cost (with
    ``_PACKED_KEYS``: that text packed, as ``pack`` would make it)."""
    return "{" + ", ".join([keys[name] + _json_float(value)
                            for name, value in latencies.items()]) + "}"


def _json_float(value: float | None) -> str:
    if value is None:
        return "null"
    if math.isfinite(value):
        return float.__repr__(value)
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


_REGIME_INDEX = {name: i for i, name in enumerate(t.REGIME_COLUMNS)}


class RegimeMemo:
    """``(regime_key, *regime column values)`` of an extraction, computed once per distinct
    regime of a version (a version has thousands of points per regime, and the key's
    canonical JSON is costly). Regimes are told apart by ``repr`` of their items, which
    separates ``1``/``1.0``/``True`` and ``0.0``/``-0.0`` as the JSON does."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[object, ...]] = {}

    def __call__(self, extraction: Extraction) -> tuple[object, ...]:
        if type(extraction).regime_key is not Extraction.regime_key:
            return (extraction.regime_key, *regime_columns(extraction.regime))
        memo = repr(tuple(extraction.regime.items()))
        found = self._seen.get(memo)
        if found is None:
            found = (extraction.regime_key, *regime_columns(extraction.regime))
            self._seen[memo] = found
        return found


def regime_columns(regime: Mapping[str, object]) -> list[object]:
    """The values of ``t.REGIME_COLUMNS`` a regime sets, None for the others."""
    values: list[object] = [None] * len(_REGIME_INDEX)
    for name, value in regime.items():
        index = _REGIME_INDEX.get(name)
        if index is not None:
            values[index] = _column_value(value)
    return values


def _column_value(value: object) -> object:
    """A regime field as its inspection column holds it; an integer no backend's column
    can hold is left out (the regime key, which lookups match on, keeps it)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return value if -SQL_INT_MAX - 1 <= value <= SQL_INT_MAX else None
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, default=list)
