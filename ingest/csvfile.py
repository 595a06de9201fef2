"""Read one kernel CSV: every data row becomes an accepted row or a rejected row with a reason.

Nothing is lost: for every file, rows read = rows accepted + rows rejected. A data row
is a non-blank line after the header; blank (whitespace-only) lines are layout, not
data, and are skipped without a record. A file that cannot be read at all (a Git LFS
pointer, undecodable bytes, missing or duplicate columns) rejects each of its lines
with the file-level reason, so the rows are still accounted for.
"""

from __future__ import annotations

import csv
import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol, TypeVar

from profstore.model.csv_row import CsvRow, Slot
from profstore.model.dtypes import is_known_profiler_dtype
from profstore.model.latency_column import CORE_TIME_COLUMNS, LatencyError, select_latency
from profstore.model.mapping import KernelPolicy
from profstore.model.shapes import ShapeParseError, parse_list_cell, parse_shape_cell

BASE_COLUMNS = (
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
)
CELLS_FOR_LATENCY = ("Accelerator Core", *CORE_TIME_COLUMNS)
"""Cells the latency choice reads besides the latency columns (the core-envelope rule)."""
LFS_MARKER = "version https://git-lfs.github.com/spec/"
LFS_MESSAGE = "this is a Git LFS pointer, not CSV content; run git lfs pull"
MAX_COLUMNS = 4096
"""A kernel CSV has a few dozen columns; a wider header is refused before any row work."""


class _Refusable(Protocol):
    """A file readout that a whole-file refusal fills in (kernel or communication CSV)."""

    rejected: list[Rejected]
    refusal: str | None


_Outcome = TypeVar("_Outcome")
_Readout = TypeVar("_Readout", bound=_Refusable)


class RejectCode(str, enum.Enum):
    COLUMN_COUNT = "column_count"
    CSV_SYNTAX = "csv_syntax"
    TRUNCATED = "truncated_row"
    SHAPE_UNPARSABLE = "shape_unparsable"
    SLOT_COUNT_MISMATCH = "slot_count_mismatch"
    UNKNOWN_DTYPE = "unknown_dtype"
    LATENCY_INVALID = "latency_invalid"
    LFS_POINTER = "lfs_pointer"
    UNREADABLE_FILE = "unreadable_file"
    MISSING_COLUMNS = "missing_columns"
    DUPLICATE_COLUMNS = "duplicate_columns"
    FIELD_INVALID = "field_invalid"
    MAPPING_PROBLEM = "mapping_problem"
    TOO_MANY_COLUMNS = "too_many_columns"
    NAME_CONFLICT = "name_conflict"


@dataclass(frozen=True)
class Rejected:
    line_no: int
    raw_text: str
    code: RejectCode
    reason: str


@dataclass(frozen=True)
class Accepted:
    """An accepted row. ``cells`` holds the cells the store reads (base, latency, extra
    and core-time columns); ``raw_text`` keeps the whole line."""

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


@dataclass
class SplitText:
    """A file cut into its header and data lines (line numbers are 1-based, physical).

    ``decode_error`` is set when the bytes are not UTF-8 (the lines are then decoded
    with replacement characters, only to be rejected). ``complete`` is False when the
    last line has no line break: a cut-off last row is reported as truncated.
    """

    header: tuple[int, str] | None
    lines: list[tuple[int, str]]
    complete: bool = True
    decode_error: str | None = None


def split_text(raw: bytes) -> SplitText:
    """Split on ``\\r\\n``, ``\\n`` or a lone ``\\r``, skipping blank lines."""
    try:
        text, problem = raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        text, problem = raw.decode("utf-8-sig", "replace"), f"not UTF-8 text: {exc}"
    # any convention: Unix, Windows and CR-only (old Mac exports); str.replace is C-speed
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:  # binary, not text; and no database text column may hold a NUL
        line = text.count("\n", 0, text.index("\x00")) + 1
        problem = problem or f"not a text file: NUL byte at line {line} (kept as U+FFFD)"
        text = text.replace("\x00", "\ufffd")
    numbered = list(enumerate(text.split("\n"), start=1))
    kept = [(i, line) for i, line in numbered if line.strip()]
    complete = text == "" or text.endswith("\n") or not numbered[-1][1].strip()
    if not kept:
        return SplitText(None, [], complete, problem)
    return SplitText(kept[0], kept[1:], complete, problem)


@dataclass(frozen=True)
class FileRefusal:
    """Why a whole file cannot be read, and the lines that are rejected for it."""

    code: RejectCode
    reason: str
    lines: list[tuple[int, str]]


def file_refusal(header: tuple[int, str], split: SplitText, columns: Sequence[str],
                 required: Sequence[str]) -> FileRefusal | None:
    """None when the file can be read row by row. A Git LFS pointer has no header: all
    of its lines are rejected."""
    if split.decode_error:
        return FileRefusal(RejectCode.UNREADABLE_FILE, split.decode_error, split.lines)
    if header[1].startswith(LFS_MARKER):
        return FileRefusal(RejectCode.LFS_POINTER, LFS_MESSAGE, [header, *split.lines])
    if len(columns) > MAX_COLUMNS:
        return FileRefusal(RejectCode.TOO_MANY_COLUMNS,
                           f"header has {len(columns)} columns, more than the {MAX_COLUMNS} "
                           f"a profiling CSV may have", split.lines)
    repeated = sorted(c for c, n in Counter(columns).items() if n > 1)
    if repeated:
        return FileRefusal(RejectCode.DUPLICATE_COLUMNS,
                           f"header repeats columns {repeated}: cells would be ambiguous",
                           split.lines)
    present = set(columns)
    missing = [c for c in required if c not in present]
    if missing:
        return FileRefusal(RejectCode.MISSING_COLUMNS,
                           f"file lacks required columns {missing}", split.lines)
    return None


def header_columns(text: str) -> tuple[str, ...]:
    """The header's column names; a header past ``MAX_COLUMNS`` is returned unstripped
    (it is only counted, then refused)."""
    try:
        cells = next(csv.reader([text]))
    except csv.Error:
        return (text,)
    return tuple(cells) if len(cells) > MAX_COLUMNS else tuple(c.strip() for c in cells)


def refuse_file(readout: _Readout, refusal: FileRefusal) -> _Readout:
    readout.refusal = refusal.reason
    readout.rejected.extend(Rejected(no, text, refusal.code, refusal.reason)
                            for no, text in refusal.lines)
    return readout


@dataclass(frozen=True)
class ColumnLayout:
    """A header classified once per file: latency columns, extra columns, and the
    positions of every cell a row's parse reads."""

    columns: tuple[str, ...]
    latency: tuple[str, ...]
    extra: tuple[str, ...]
    read: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, columns: Sequence[str]) -> ColumnLayout:
        columns = tuple(columns)
        latency = tuple(c for c in columns if is_latency_column(c))
        extra = tuple(c for c in columns if is_extra_column(c))
        wanted = {*BASE_COLUMNS, *latency, *extra, *CELLS_FOR_LATENCY}
        read = tuple((c, i) for i, c in enumerate(columns) if c in wanted)
        return cls(columns, latency, extra, read)


def read_kernel_csv(raw: bytes, kernel_type: str, policy: KernelPolicy) -> FileReadout:
    readout = FileReadout()
    split = split_text(raw)
    if split.header is None:
        return readout
    columns = header_columns(split.header[1])
    refusal = file_refusal(split.header, split, columns, BASE_COLUMNS)
    if refusal is not None:
        return refuse_file(readout, refusal)
    readout.columns = columns
    layout = ColumnLayout.of(columns)
    last = split.lines[-1][0] if split.lines else None
    reader = LineReader()
    for line_no, text in split.lines:
        outcome = _parse_line(line_no, text, layout, kernel_type, policy, reader)
        if not split.complete and line_no == last:
            outcome = mark_truncated(outcome)
        if isinstance(outcome, Accepted):
            readout.accepted.append(outcome)
        else:
            readout.rejected.append(outcome)
    return readout


def mark_truncated(outcome: _Outcome) -> _Outcome | Rejected:
    """A malformed last line without a line break is a cut-off file, and says so."""
    if isinstance(outcome, Rejected) and outcome.code in (RejectCode.COLUMN_COUNT,
                                                          RejectCode.CSV_SYNTAX):
        return Rejected(outcome.line_no, outcome.raw_text, RejectCode.TRUNCATED,
                        f"file ends mid-row (last line has no line break): {outcome.reason}")
    return outcome


def split_cells(line_no: int, text: str, columns: Sequence[str],
                reader: LineReader | None = None) -> dict[str, str] | Rejected:
    values = split_values(line_no, text, len(columns), reader)
    return values if isinstance(values, Rejected) else dict(zip(columns, values))


def split_values(line_no: int, text: str, width: int,
                 reader: LineReader | None = None) -> list[str] | Rejected:
    """One physical line as CSV cells; a quote left open at the end of the line is a
    syntax error (a row never continues on the next line)."""
    try:
        values = (reader or LineReader()).parse(text)
    except csv.Error as exc:
        return Rejected(line_no, text, RejectCode.CSV_SYNTAX, f"CSV syntax error: {exc}")
    if len(values) != width:
        return Rejected(line_no, text, RejectCode.COLUMN_COUNT,
                        f"expected {width} columns, got {len(values)}")
    return values


class LineReader:
    """One strict ``csv.reader`` fed a line at a time (cheaper than a reader per line;
    one per file, not shared between threads). The feed ends after the line it was
    given, so a field cannot run into the next line.
    """

    def __init__(self) -> None:
        self._line: str | None = None
        self._reader = csv.reader(self, strict=True)

    def __iter__(self) -> LineReader:
        return self

    def __next__(self) -> str:
        line, self._line = self._line, None
        if line is None:
            raise StopIteration
        return line

    def parse(self, text: str) -> list[str]:
        self._line = text
        try:
            return next(self._reader)
        except StopIteration:
            return []
        finally:
            self._line = None



def parse_kernel_line(line_no: int, text: str, columns: Sequence[str], kernel_type: str,
                      policy: KernelPolicy) -> Accepted | Rejected:
    return _parse_line(line_no, text, ColumnLayout.of(columns), kernel_type, policy)


def _parse_line(line_no: int, text: str, layout: ColumnLayout, kernel_type: str,
                policy: KernelPolicy, reader: LineReader | None = None) -> Accepted | Rejected:
    values = split_values(line_no, text, len(layout.columns), reader)
    if isinstance(values, Rejected):
        return values
    cells = {c: values[i] for c, i in layout.read}
    try:
        inputs = _slots(cells, "Input")
        outputs = _slots(cells, "Output")
    except _RowError as exc:
        return Rejected(line_no, text, exc.code, str(exc))
    latencies = {c: to_float(cells[c]) for c in layout.latency}
    try:
        choice = select_latency(cells, latencies, policy)
    except LatencyError as exc:
        return Rejected(line_no, text, RejectCode.LATENCY_INVALID, str(exc))
    extras = {c: cells[c] for c in layout.extra}
    row = CsvRow(kernel_type, inputs, outputs, choice.value, choice.column, line_no, extras)
    return Accepted(row, text, cells, latencies)


class _RowError(ValueError):
    def __init__(self, code: RejectCode, message: str) -> None:
        super().__init__(message)
        self.code = code


_SIDE_COLUMNS = {side: (f"{side} Shapes", f"{side} Data Types", f"{side} Formats")
                 for side in ("Input", "Output")}


def _slots(cells: Mapping[str, str], side: str) -> tuple[Slot, ...]:
    shapes_column, dtypes_column, formats_column = _SIDE_COLUMNS[side]
    try:
        shapes = parse_shape_cell(cells[shapes_column])
    except ShapeParseError as exc:
        raise _RowError(RejectCode.SHAPE_UNPARSABLE, str(exc)) from exc
    dtypes = _dtype_cell(cells[dtypes_column], side)
    formats = parse_list_cell(cells[formats_column])
    if not (len(shapes) == len(dtypes) == len(formats)):
        raise _RowError(
            RejectCode.SLOT_COUNT_MISMATCH,
            f"{side.lower()} slots disagree: {len(shapes)} shapes, {len(dtypes)} dtypes, "
            f"{len(formats)} formats",
        )
    return tuple(map(_slot, shapes, dtypes, formats))


@lru_cache(maxsize=65536)
def _slot(shape: tuple[int, ...] | None, dtype: str, fmt: str) -> Slot:
    """Slots are immutable and recur across rows: one object per distinct slot."""
    return Slot.from_cells(shape, dtype, fmt)


@lru_cache(maxsize=4096)
def _dtype_cell(text: str, side: str) -> tuple[str, ...]:
    """A dtype cell split and checked (cells repeat across rows, hence the cache)."""
    dtypes = parse_list_cell(text)
    for dtype in dtypes:
        if dtype and not is_known_profiler_dtype(dtype):
            raise _RowError(RejectCode.UNKNOWN_DTYPE, f"unknown {side.lower()} dtype {dtype!r}")
    return dtypes


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


def to_float(text: str) -> float | None:
    """A cell as a float; None when blank or not a number (NaN stays NaN for the guard)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
