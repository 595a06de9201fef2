"""Issue #16 items 4 and 5: a CR-only CSV (old Mac exports) is read row by row, and a
header of a million columns is refused at once with a reason, every row counted."""

from __future__ import annotations

from profstore.ingest.csvfile import read_kernel_csv
from profstore.model.mapping import KernelPolicy

from tests.support.perfdb import BASE_HEADER, Row, csv_text

HEADER = [*BASE_HEADER, "Average Duration(us)"]


def rows(count: int) -> list[Row]:
    """Row i: tokens i+1 and latency (i+1)/4 us (exactly representable)."""
    return [Row([[i + 1, 8], [8]], ["DT_BF16", "DT_BF16"], [[i + 1, 8]], ["DT_BF16"],
                (i + 1) / 4) for i in range(count)]


def test_cr_only_line_endings_read_every_row():
    text = csv_text(rows(1301), HEADER).replace("\r\n", "\r")
    assert "\n" not in text
    readout = read_kernel_csv(text.encode(), "RmsNorm", KernelPolicy())
    assert (readout.rows_read, len(readout.accepted), len(readout.rejected)) == (1301, 1301, 0)
    assert [a.row.line_no for a in readout.accepted[:2]] == [2, 3]
    assert [a.row.latency_us for a in readout.accepted[-2:]] == [1300 / 4, 1301 / 4]


def test_a_cr_only_file_cut_mid_row_reports_the_last_row_truncated():
    text = csv_text(rows(3), HEADER).replace("\r\n", "\r").rstrip("\r")
    cut = text[: text.rindex(",")]
    readout = read_kernel_csv(cut.encode(), "RmsNorm", KernelPolicy())
    assert len(readout.accepted) == 2
    [last] = readout.rejected
    assert (last.line_no, last.code.value) == (4, "truncated_row")


def test_a_million_column_header_is_refused_with_every_row_counted():
    header = ",".join([*HEADER, *(f"c{i}" for i in range(1_000_000))])
    body = "\r\n".join(["a,b", "c,d", "e,f"])
    readout = read_kernel_csv(f"{header}\r\n{body}\r\n".encode(), "RmsNorm", KernelPolicy())
    assert readout.refusal == ("header has 1000009 columns, more than the 4096 a profiling "
                               "CSV may have")
    assert [(r.line_no, r.code.value) for r in readout.rejected] == [
        (2, "too_many_columns"), (3, "too_many_columns"), (4, "too_many_columns")]
    assert readout.rows_read == 3


def test_a_wide_header_below_the_limit_still_names_its_duplicates():
    wide = [*HEADER, *(f"c{i}" for i in range(4000)), "c7", "c9", "c7"]
    readout = read_kernel_csv((",".join(wide) + "\n1,2\n").encode(), "RmsNorm", KernelPolicy())
    assert readout.refusal == "header repeats columns ['c7', 'c9']: cells would be ambiguous"
