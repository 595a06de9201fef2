"""Read one kernel CSV: every data row becomes an accepted row or a rejected row with a reason.

Nothing is lost: for every file, rows read = rows accepted + rows rejected. A file
that cannot be read at all (a Git LFS pointer, undecodable bytes, missing required
columns) rejects each of its lines with the file-level reason.
"""

from __future__ import annotations

import csv
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from store.dtypes import is_known_profiler_dtype
from store.latency import LatencyError, select_latency
from store.mapping import KernelPolicy
from store.rows import CsvRow, Slot
from store.shapes import ShapeParseError, parse_list_cell, parse_shape_cell

BASE_COLUMNS = (
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
)
LFS_MARKER = "version https://git-lfs.github.com/spec/"
LFS_MESSAGE = "this is a Git LFS pointer, not CSV content; run git lfs pull"


class RejectCode(str, enum.Enum):
    COLUMN_COUNT = "column_count"
    CSV_SYNTAX = "csv_syntax"
    SHAPE_UNPARSABLE = "shape_unparsable"
    SLOT_COUNT_MISMATCH = "slot_count_mismatch"
    UNKNOWN_DTYPE = "unknown_dtype"
    LATENCY_INVALID = "latency_invalid"
    LFS_POINTER = "lfs_pointer"
    UNREADABLE_FILE = "unreadable_file"
    MISSING_COLUMNS = "missing_columns"
    FIELD_INVALID = "field_invalid"
    MAPPING_PROBLEM = "mapping_problem"


@dataclass(frozen=True)
class Rejected:
    line_no: int
    raw_text: str
    code: RejectCode
    reason: str


@dataclass(frozen=True)
class Accepted:
    row: CsvRow
    raw_text: str
    cells: Mapping[str, str]
    latencies: Mapping[str, float | None]


@dataclass
class FileReadout:
    """What one CSV yielded. ``refusal`` is set when the whole file was refused."""

    columns: tuple[str, ...] = ()
    accepted: list[Accepted] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    refusal: str | None = None

    @property
    def rows_read(self) -> int:
        return len(self.accepted) + len(self.rejected)


def data_lines(raw: bytes) -> tuple[str | None, list[tuple[int, str]]] | Rejected:
    """Decode and split a file into (header, [(line_no, text), ...]); blank lines are skipped."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Rejected(0, "", RejectCode.UNREADABLE_FILE, f"not UTF-8 text: {exc}")
    lines = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    if not lines:
        return None, []
    return lines[0][1], lines[1:]


def refuse_file(readout: FileReadout, lines: Sequence[tuple[int, str]], code: RejectCode,
                reason: str) -> FileReadout:
    readout.refusal = reason
    readout.rejected.extend(Rejected(no, text, code, reason) for no, text in lines)
    return readout


def read_kernel_csv(raw: bytes, kernel_type: str, policy: KernelPolicy) -> FileReadout:
    readout = FileReadout()
    split = data_lines(raw)
    if isinstance(split, Rejected):
        readout.refusal = split.reason
        readout.rejected.append(split)
        return readout
    header_text, lines = split
    if header_text is None:
        return readout
    if header_text.startswith(LFS_MARKER):
        return refuse_file(readout, [(1, header_text), *lines], RejectCode.LFS_POINTER,
                           LFS_MESSAGE)
    columns = tuple(next(csv.reader([header_text])))
    readout.columns = columns
    missing = [c for c in BASE_COLUMNS if c not in columns]
    if missing:
        return refuse_file(readout, lines, RejectCode.MISSING_COLUMNS,
                           f"file lacks required columns {missing}")
    for line_no, text in lines:
        outcome = parse_kernel_line(line_no, text, columns, kernel_type, policy)
        (readout.accepted if isinstance(outcome, Accepted) else readout.rejected).append(outcome)
    return readout


def split_cells(line_no: int, text: str, columns: Sequence[str]) -> dict[str, str] | Rejected:
    try:
        cells = next(csv.reader([text], strict=True))
    except csv.Error as exc:
        return Rejected(line_no, text, RejectCode.CSV_SYNTAX, f"CSV syntax error: {exc}")
    if len(cells) != len(columns):
        return Rejected(line_no, text, RejectCode.COLUMN_COUNT,
                        f"expected {len(columns)} columns, got {len(cells)}")
    return dict(zip(columns, cells))


def parse_kernel_line(line_no: int, text: str, columns: Sequence[str], kernel_type: str,
                      policy: KernelPolicy) -> Accepted | Rejected:
    cells = split_cells(line_no, text, columns)
    if isinstance(cells, Rejected):
        return cells
    try:
        inputs = _slots(cells, "Input")
        outputs = _slots(cells, "Output")
    except _RowError as exc:
        return Rejected(line_no, text, exc.code, str(exc))
    latencies = latency_cells(cells)
    try:
        choice = select_latency(cells, latencies, policy)
    except LatencyError as exc:
        return Rejected(line_no, text, RejectCode.LATENCY_INVALID, str(exc))
    extras = {c: v for c, v in cells.items() if is_extra_column(c)}
    row = CsvRow(kernel_type, inputs, outputs, choice.value, choice.column, line_no, extras)
    return Accepted(row, text, cells, latencies)


class _RowError(ValueError):
    def __init__(self, code: RejectCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _slots(cells: Mapping[str, str], side: str) -> tuple[Slot, ...]:
    try:
        shapes = parse_shape_cell(cells[f"{side} Shapes"])
    except ShapeParseError as exc:
        raise _RowError(RejectCode.SHAPE_UNPARSABLE, str(exc)) from exc
    dtypes = parse_list_cell(cells[f"{side} Data Types"])
    formats = parse_list_cell(cells[f"{side} Formats"])
    if not (len(shapes) == len(dtypes) == len(formats)):
        raise _RowError(
            RejectCode.SLOT_COUNT_MISMATCH,
            f"{side.lower()} slots disagree: {len(shapes)} shapes, {len(dtypes)} dtypes, "
            f"{len(formats)} formats",
        )
    for dtype in dtypes:
        if dtype and not is_known_profiler_dtype(dtype):
            raise _RowError(RejectCode.UNKNOWN_DTYPE, f"unknown {side.lower()} dtype {dtype!r}")
    return tuple(Slot.from_cells(s, d, f) for s, d, f in zip(shapes, dtypes, formats))


def is_latency_column(column: str) -> bool:
    return column.endswith("Duration(us)")


def is_metric_column(column: str) -> bool:
    return (
        column.startswith(("MicroBench ", "Profiling Average ", "Average "))
        and not is_latency_column(column)
    )


def is_extra_column(column: str) -> bool:
    """Columns that carry semantics rather than measurements (``EP Size``, ``Runtime …``)."""
    return (
        column not in BASE_COLUMNS
        and column not in ("OP State", "Accelerator Core")
        and not is_latency_column(column)
        and not is_metric_column(column)
    )


def latency_cells(cells: Mapping[str, str]) -> dict[str, float | None]:
    """Every latency column as a float (None when blank or not a number)."""
    return {c: to_float(v) for c, v in cells.items() if is_latency_column(c)}


def to_float(text: str) -> float | None:
    """A cell as a float; None when blank or not a number (NaN stays NaN for the guard)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
