"""Turn readouts into table rows and write them in batches (executemany)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict

from sqlalchemy import Connection, Table, func, insert, select

from ingest.csvfile import Accepted, FileReadout, RejectCode, Rejected
from ingest.hccl import CommReadout
from store import schema as t
from store.exact_keys import row_keys, row_output_keys
from store.mapping import VersionMapping
from store.paths.base import Refusal, RowContext
from store.paths.registry import ingest_paths, tc_input_counts

MAPPING_FILE_NAME = "op_mapping.yaml"


class RowWriter:
    """Buffers the rows of one version and writes them table by table."""

    def __init__(self, conn: Connection, profile_id: int) -> None:
        self.conn = conn
        self.profile_id = profile_id
        self.buffers: dict[str, list[dict]] = {}
        self._next_id = {
            name: (conn.execute(select(func.max(table.c.id))).scalar() or 0) + 1
            for name, table in (("kernel_file", t.kernel_file), ("sample", t.sample))
        }

    def _take_id(self, name: str) -> int:
        value = self._next_id[name]
        self._next_id[name] = value + 1
        return value

    def _add(self, table: Table, row: dict) -> None:
        self.buffers.setdefault(table.name, []).append(row)

    def flush(self) -> None:
        order = (t.kernel_file, t.sample, t.sample_key, t.sample_point, t.path_refusal,
                 t.rejected_row, t.comm_sample, t.op_mapping, t.interpolation_policy)
        for table in order:
            rows = self.buffers.pop(table.name, None)
            if rows:
                self.conn.execute(insert(table), rows)

    def write_kernel_file(self, name: str, kernel: str, digest: str, readout: FileReadout,
                          mapping: VersionMapping) -> None:
        file_id = self._file_row(name, kernel, digest, readout)
        ctx = RowContext(kernel, mapping.policy(kernel), tc_input_counts(kernel, mapping))
        paths = ingest_paths(kernel, mapping)
        for accepted in readout.accepted:
            self._sample(file_id, kernel, accepted, ctx, paths)
        self._rejects(file_id, name, readout.rejected)

    def write_comm_file(self, name: str, collective: str, digest: str,
                        readout: CommReadout) -> None:
        file_id = self._file_row(name, collective, digest, readout)
        for row in readout.accepted:
            record = asdict(row)
            record.update(profile_id=self.profile_id, kernel_file_id=file_id,
                          collective=collective)
            self._add(t.comm_sample, record)
        self._rejects(file_id, name, readout.rejected)

    def _file_row(self, name: str, kernel: str, digest: str,
                  readout: FileReadout | CommReadout) -> int:
        file_id = self._take_id("kernel_file")
        self._add(t.kernel_file, {
            "id": file_id,
            "profile_id": self.profile_id,
            "kernel_type": kernel,
            "file_name": name,
            "file_hash": digest,
            "columns": json.dumps(list(readout.columns)),
            "rows_read": readout.rows_read,
            "rows_accepted": len(readout.accepted),
            "rows_rejected": len(readout.rejected),
            "refusal": readout.refusal,
        })
        return file_id

    def _sample(self, file_id: int, kernel: str, accepted: Accepted, ctx: RowContext,
                paths: Iterable) -> None:
        row, cells = accepted.row, accepted.cells
        sample_id = self._take_id("sample")
        self._add(t.sample, {
            "id": sample_id,
            "profile_id": self.profile_id,
            "kernel_file_id": file_id,
            "kernel_type": kernel,
            "line_no": row.line_no,
            "raw_text": accepted.raw_text,
            "input_shapes": cells["Input Shapes"],
            "input_dtypes": cells["Input Data Types"],
            "input_formats": cells["Input Formats"],
            "output_shapes": cells["Output Shapes"],
            "output_dtypes": cells["Output Data Types"],
            "output_formats": cells["Output Formats"],
            "latencies": json.dumps(accepted.latencies),
            "extras": json.dumps(dict(row.extras)),
            "latency_us": row.latency_us,
            "latency_column": row.latency_column,
        })
        common = {"profile_id": self.profile_id, "sample_id": sample_id, "kernel_type": kernel}
        for key in row_keys(row) + row_output_keys(row):
            self._add(t.sample_key, {**common, "exact_key": key, "latency_us": row.latency_us,
                                     "latency_column": row.latency_column})
        for path in paths:
            self._points(common, path, row, ctx)

    def _points(self, common: dict, path, row, ctx: RowContext) -> None:  # noqa: ANN001
        outcome = path.row_regime(row, ctx)
        if isinstance(outcome, Refusal):
            self._add(t.path_refusal, {**common, "path": path.name,
                                       "reason": f"{outcome.reason.value}: {outcome.message}"})
            return
        for extraction in outcome:
            axes = list(extraction.axes) + [None] * (3 - len(extraction.axes))
            record = {**common, "path": path.name, "regime_key": extraction.regime_key,
                      "semantic_key": extraction.semantic, "axis_0": axes[0],
                      "axis_1": axes[1], "axis_2": axes[2], "latency_us": row.latency_us,
                      "latency_column": row.latency_column}
            for column in t.REGIME_COLUMNS:
                record[column] = _column_value(extraction.regime.get(column))
            self._add(t.sample_point, record)

    def _rejects(self, file_id: int | None, name: str, rejected: Iterable[Rejected]) -> None:
        for r in rejected:
            self._add(t.rejected_row, {
                "profile_id": self.profile_id, "kernel_file_id": file_id, "file_name": name,
                "line_no": r.line_no, "raw_text": r.raw_text, "reason_code": r.code.value,
                "reason": r.reason,
            })

    def reject_mapping(self, code: RejectCode, reason: str) -> None:
        self._rejects(None, MAPPING_FILE_NAME, [Rejected(0, "", code, reason)])

    def write_mapping(self, mapping: VersionMapping) -> None:
        for op, entry in mapping.entries.items():
            self._add(t.op_mapping, {
                "profile_id": self.profile_id, "op": op, "selector": entry.selector,
                "kernel_type": entry.kernel_type,
                "alternate_kernel_types": json.dumps(list(entry.alternate_kernel_types)),
                "query_mode": entry.query_mode,
                "compute_subcategory": entry.compute_subcategory,
                "tc_input_count": entry.tc_input_count, "zero_cost": entry.zero_cost,
                "accepted_miss": entry.accepted_miss, "category": entry.category,
                "composite": entry.composite, "sub_kernels": json.dumps(list(entry.sub_kernels)),
                "raw": json.dumps(dict(entry.raw), sort_keys=True, default=str),
            })
        for kernel, policy in mapping.policies.items():
            self._add(t.interpolation_policy, {
                "profile_id": self.profile_id, "kernel_type": kernel,
                "max_interpolation_dim": policy.max_interpolation_dim,
                "generic_axis": policy.generic_axis, "axis_transform": policy.axis_transform,
                "prefer_profiling_rows": policy.prefer_profiling_rows,
                "core_envelope_ratio": policy.core_envelope_ratio,
                "require_semantic_unique": policy.require_semantic_unique,
            })


def _column_value(value: object) -> object:
    if value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return json.dumps(value, default=list)
