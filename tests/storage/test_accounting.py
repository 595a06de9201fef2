"""Ingest's accounting of the readers' fixture (tests/storage/conftest.py), each figure
counted by hand from its CSV rows: RmsNorm 8 lines (one NaN latency), Add 3 (the last
cut short), Range 1 (no input tensors: refused by the generic path)."""

from __future__ import annotations

from profstore.storage.accounting import (
    KernelFile,
    KernelPathCount,
    RejectedCount,
    duplicate_coordinate_counts,
    kernel_files,
    kernel_path_counts,
    kernels_with_files,
    points_per_path,
    refusal_counts,
    rejected_by_reason,
    rejected_by_reason_and_file,
    rejected_rows,
)

from tests.support.cli_fixture import add_text


def test_kernel_files_by_kernel_type(conn, v18):
    assert kernel_files(conn, v18) == [
        KernelFile("Add", "Add.csv", 3, 2, 1, None),
        KernelFile("Range", "Range.csv", 1, 1, 0, None),
        KernelFile("RmsNorm", "RmsNorm.csv", 8, 7, 1, None),
    ]
    assert kernels_with_files(conn, v18) == {"Add", "Range", "RmsNorm"}


def test_points_and_regimes_per_kernel_and_path(conn, v18):
    # RmsNorm: 7 rows, hidden 7168 (5 rows) and 4096 (2 rows); Add: 2 rows of width 128
    assert sorted(kernel_path_counts(conn, v18), key=lambda c: c.kernel) == [
        KernelPathCount("Add", "generic", 2, 1), KernelPathCount("RmsNorm", "generic", 7, 2)]
    assert points_per_path(conn, v18) == {"generic": 9}


def test_the_refused_row_and_the_duplicate_coordinate(conn, v18):
    [refusal] = refusal_counts(conn, v18)
    assert (refusal.kernel, refusal.path, refusal.count) == ("Range", "generic", 1)
    assert refusal.reason.startswith("target_unavailable: ")
    # tokens 64 of hidden 7168 measured three times
    assert duplicate_coordinate_counts(conn, v18) == {("RmsNorm", "generic"): 1}


def test_rejected_rows_counted_and_listed(conn, v18):
    assert rejected_by_reason(conn, v18) == {"column_count": 1, "latency_invalid": 1}
    assert rejected_by_reason_and_file(conn, v18) == [
        RejectedCount("column_count", "Add.csv", 1),
        RejectedCount("latency_invalid", "RmsNorm.csv", 1)]
    cut = add_text().splitlines()[-1]
    [first] = rejected_rows(conn, v18, limit=1)
    assert (first.file, first.line, first.reason_code, first.raw_text) == (
        "Add.csv", 4, "column_count", cut)
    assert [(r.file, r.line) for r in rejected_rows(conn, v18, limit=5)] == [
        ("Add.csv", 4), ("RmsNorm.csv", 7)]
