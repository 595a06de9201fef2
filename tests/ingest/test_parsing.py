"""Kernel CSV parsing: slot positions, FRACTAL_NZ, quoting, every latency column kept."""

from __future__ import annotations

import json
import math

import pytest
from profstore.ingest.csvfile import Accepted, read_kernel_csv
from profstore.ingest.sql_writer import latencies_json
from profstore.model.mapping import KernelPolicy
from profstore.storage import schema as t
from sqlalchemy import select

from tests.support.perfdb import BASE_HEADER, Row, build_store, csv_text, write_version

POLICY = KernelPolicy()


def only_row(text: str, kernel: str = "K") -> Accepted:
    readout = read_kernel_csv(text.encode(), kernel, POLICY)
    assert (len(readout.accepted), readout.rejected) == (1, [])
    return readout.accepted[0]


@pytest.mark.no_database
def test_empty_slots_keep_their_argument_positions():
    row = only_row(csv_text([Row([[64, 7168], None, [8], []], ["DT_BF16", "", "INT32", "INT64"],
                                 [[64, 7168]], ["DT_BF16"], 5.0)])).row
    assert [s.shape for s in row.inputs] == [(64, 7168), None, (8,), ()]
    assert [s.dtype for s in row.inputs] == ["DT_BF16", "", "INT32", "INT64"]
    assert [s.shape for s in row.present_inputs()] == [(64, 7168), (8,), ()]


def test_fractal_nz_keeps_the_raw_shape_and_restores_the_logical_one(tmp_path):
    raw = [7, 3, 5, 16, 32]
    rows = [Row([[96, 80], raw], ["DT_BF16", "INT8"], [[96, 7]], ["DT_BF16"], 9.0,
                formats=["ND", "FRACTAL_NZ"])]
    accepted = only_row(csv_text(rows))
    weight = accepted.row.inputs[1]
    assert (weight.raw_shape, weight.shape, weight.format) == (
        (7, 3, 5, 16, 32), (7, 96, 80), "FRACTAL_NZ")
    assert accepted.row.inputs[0].raw_shape == accepted.row.inputs[0].shape == (96, 80)
    write_version(tmp_path / "data", {"QuantBatchMatmulV3": rows})
    with build_store(tmp_path) as store, store.engine.connect() as conn:
        stored = conn.execute(select(t.sample.c.input_shapes, t.sample.c.input_formats)).one()
    assert tuple(stored) == ('"96,80;7,3,5,16,32"', "ND;FRACTAL_NZ")


@pytest.mark.no_database
def test_quoted_fields_keep_commas_and_doubled_quotes():
    header = [*BASE_HEADER, "Average Duration(us)", "Runtime note"]
    line = ('dynamic,AI_CORE,"""4,128;4,128""",DT_BF16;DT_BF16,ND;ND,"""4,128""",DT_BF16,ND,'
            '3.5,"a, ""quoted"" note"')
    accepted = only_row(",".join(header) + "\r\n" + line + "\r\n")
    assert [s.shape for s in accepted.row.inputs] == [(4, 128), (4, 128)]
    assert accepted.row.extras == {"Runtime note": 'a, "quoted" note'}
    assert accepted.raw_text == line
    assert accepted.row.latency_us == 3.5


def test_every_duration_column_is_kept_and_the_choice_follows_the_policy(tmp_path):
    columns = {"Average Duration(us)": "", "Median Duration(us)": "7.25",
               "Std Duration(us)": "nan", "Profiling Average Duration(us)": "6.5",
               "Profiling Median Duration(us)": "6.25", "Profiling Std Duration(us)": "0.5",
               "MicroBench aiv_time(us)": "4.0"}
    rows = [Row([[8, 16]], ["DT_BF16"], [[8, 16]], ["DT_BF16"], columns=columns)]
    accepted = only_row(csv_text(rows))
    assert (accepted.row.latency_us, accepted.row.latency_column) == (
        6.5, "Profiling Average Duration(us)")
    write_version(tmp_path / "data", {"Cast": rows})
    with build_store(tmp_path) as store, store.engine.connect() as conn:
        stored = json.loads(conn.execute(select(t.sample.c.latencies)).scalar())
    assert list(stored) == [c for c in columns if c.endswith("Duration(us)")]
    assert stored["Average Duration(us)"] is None
    assert math.isnan(stored["Std Duration(us)"])
    assert {k: v for k, v in stored.items() if k not in ("Average Duration(us)",
                                                         "Std Duration(us)")} == {
        "Median Duration(us)": 7.25, "Profiling Average Duration(us)": 6.5,
        "Profiling Median Duration(us)": 6.25, "Profiling Std Duration(us)": 0.5}


@pytest.mark.no_database
@pytest.mark.parametrize("latencies", [
    {},
    {"Average Duration(us)": 4.795961, "Median Duration(us)": None},
    {"A Duration(us)": math.nan, "B Duration(us)": math.inf, "C Duration(us)": -math.inf},
    {"Ünïcode Duration(us)": 1e-300, "x": 1e300, "y": 0.1 + 0.2, "z": 5.0},
])
def test_latencies_json_is_exactly_what_json_dumps_writes(latencies):
    assert latencies_json(latencies) == json.dumps(latencies)


@pytest.mark.no_database
def test_blank_lines_are_not_data_rows_and_line_numbers_stay_physical():
    text = csv_text([Row([[2, 4]], ["FLOAT"], [[2, 4]], ["FLOAT"], 1.0),
                     Row([[3, 4]], ["FLOAT"], [[3, 4]], ["FLOAT"], 2.0)])
    header, first, second = text.strip().split("\r\n")
    readout = read_kernel_csv(f"\r\n{header}\r\n\r\n  \r\n{first}\r\n\r\n{second}".encode(),
                              "Cast", POLICY)
    assert readout.rows_read == 2
    assert [(a.row.line_no, a.raw_text) for a in readout.accepted] == [(5, first), (7, second)]


@pytest.mark.no_database
def test_a_header_only_or_empty_file_reads_no_rows():
    assert read_kernel_csv(b"", "K", POLICY).rows_read == 0
    header_only = read_kernel_csv((",".join(BASE_HEADER) + "\n").encode(), "K", POLICY)
    assert (header_only.rows_read, header_only.refusal) == (0, None)
