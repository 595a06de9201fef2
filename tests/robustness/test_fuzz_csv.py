"""Fuzzed kernel and HCCL CSVs: every row is accepted or rejected with a code, never lost.

Inputs start from rows in the real on-disk layout (CRLF, triple-quoted shape cells,
FRACTAL_NZ weights, extra columns) and are mutated character by character and cell
by cell. A file's accounting is checked against an independent count of its lines.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from profstore.ingest.csvfile import (
    Accepted,
    RejectCode,
    Rejected,
    parse_kernel_line,
    read_kernel_csv,
)
from profstore.ingest.hccl import CommRow, read_comm_csv
from profstore.ingest.profiling_folders import Row, csv_text
from profstore.model.latency_column import is_valid_latency
from profstore.model.mapping import KernelPolicy

from tests.robustness import (
    FUZZ,
    HUGE_INT,
    csv_files,
    expected_data_lines,
    mutated,
    physical_lines,
)

pytestmark = pytest.mark.no_database

POLICIES = (
    KernelPolicy(),
    KernelPolicy(prefer_profiling_rows=True, core_envelope_ratio=1.5),
)
TIMES = {"Profiling Average Duration(us)": 12.5, "Profiling Average aicore_time(us)": 4.0}
ROWS = [
    Row([[64, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[64, 7168]], ["DT_BF16"], 10.5,
        columns=TIMES),
    Row([[8, 7168], None, [16, 448, 16, 32]], ["DT_BF16", "", "INT8"], [[8, 4096]], ["DT_BF16"],
        "nan", formats=["ND", "", "FRACTAL_NZ"], columns=TIMES, extra={"EP Size": 16},
        core="MIX_AIC"),
    Row([[]], ["INT64"], [[1]], ["INT64"], 0.75, columns={"Profiling Average Duration(us)": ""}),
]
KERNEL_TEXT = csv_text(ROWS)
KERNEL_HEADER, *KERNEL_LINES = KERNEL_TEXT.split("\r\n")[:-1]
COLUMNS = tuple(c.strip() for c in KERNEL_HEADER.split(","))
DFC_STYLE = (
    'dynamic,MIX_AIC,"""64,7168;16,7168,4096;64,8""",DT_BF16;INT8;INT32,ND;FRACTAL_NZ;ND,'
    '"""64,7168""",DT_BF16,ND,653.29,712.80,563.99,16'
)
"""A row quoted the way the corpus's MIX_AIC files quote it (shape cells in triple quotes)."""
LINE_SEEDS = [*KERNEL_LINES, DFC_STYLE]

COMM_HEADER = "message_bytes,num_devices,dtype,topology_tier,Duration(us),bandwidth_gbps"
COMM_SEEDS = ["1024,16,DT_BF16,1,35.00,0.03", "2048,16,DT_BF16,1,34.04,0.06",
              "1048576,8,,2,120.5,", "4096,2,INT8,,7,1.2"]


def physical_line(raw: bytes, line_no: int) -> str:
    text = raw.decode("utf-8-sig", "replace").replace("\x00", "\ufffd")
    return physical_lines(text)[line_no - 1]


def line_of(outcome: Accepted | Rejected | CommRow) -> int:
    return outcome.row.line_no if isinstance(outcome, Accepted) else outcome.line_no


def assert_rejection(outcome: Rejected) -> None:
    assert isinstance(outcome.code, RejectCode)
    assert isinstance(outcome.reason, str) and outcome.reason.strip()


def assert_every_line_accounted(raw: bytes, readout) -> None:
    outcomes = [*readout.accepted, *readout.rejected]
    assert readout.rows_read == len(readout.accepted) + len(readout.rejected)
    assert sorted(map(line_of, outcomes)) == expected_data_lines(raw)
    for outcome in outcomes:
        assert outcome.raw_text == physical_line(raw, line_of(outcome))
    for rejected in readout.rejected:
        assert_rejection(rejected)


@FUZZ
@given(line=mutated(LINE_SEEDS), policy=st.sampled_from(POLICIES))
def test_a_mutated_kernel_line_is_accepted_or_rejected_with_a_code(line, policy):
    outcome = parse_kernel_line(7, line, COLUMNS, "RmsNorm", policy)
    assert line_of(outcome) == 7 and outcome.raw_text == line
    if isinstance(outcome, Rejected):
        assert_rejection(outcome)
    else:
        assert isinstance(outcome, Accepted)
        assert is_valid_latency(outcome.row.latency_us)
        assert all(s.shape is None or min(s.shape, default=0) >= 0
                   for s in (*outcome.row.inputs, *outcome.row.outputs))


@FUZZ
@given(raw=csv_files(KERNEL_HEADER, LINE_SEEDS), policy=st.sampled_from(POLICIES))
def test_a_mutated_kernel_file_accounts_for_every_data_line(raw, policy):
    readout = read_kernel_csv(raw, "RmsNorm", policy)
    assert_every_line_accounted(raw, readout)
    assert all(is_valid_latency(a.row.latency_us) for a in readout.accepted)


@FUZZ
@given(raw=csv_files(COMM_HEADER, COMM_SEEDS))
def test_a_mutated_hccl_file_accounts_for_every_data_line(raw):
    readout = read_comm_csv(raw)
    assert_every_line_accounted(raw, readout)
    for row in readout.accepted:
        assert isinstance(row, CommRow)
        assert is_valid_latency(row.latency_us) and row.message_bytes > 0
        assert row.num_devices >= 1 and math.isfinite(row.message_bytes)


def test_huge_and_negative_dimensions_are_rejected_as_unparsable_shapes():
    """Found by the fuzzer: a dimension too long for ``int()`` must not escape as a bare
    ValueError; a negative one is named as such."""
    for shape, code in ((HUGE_INT, RejectCode.SHAPE_UNPARSABLE),
                        ("-4", RejectCode.SHAPE_UNPARSABLE)):
        line = KERNEL_LINES[0].replace('"64,7168;7168"', f'"64,{shape};7168"', 1)
        outcome = parse_kernel_line(2, line, COLUMNS, "RmsNorm", KernelPolicy())
        assert isinstance(outcome, Rejected) and outcome.code is code, outcome

