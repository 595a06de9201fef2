"""A regime slice stored as one ``regime_points`` row and read back: every point, value and
provenance as the point rows hold them, in the same order, each array in the width its
values need. The point rows are written by hand (sample id, latency, latency column, line,
kernel file, axes, semantic key, point id)."""

from __future__ import annotations

import math
import struct

import numpy as np
from profstore.storage.regime_pack import PACK_COLUMNS, READ_COLUMNS, decode, encode
from profstore.storage.regime_slice import MeasuredRow, build_slice

AVG, TOTAL = "Average Duration(us)", "Total Duration(us)"


def _stored(rows):
    packed = dict(zip(PACK_COLUMNS, encode(41, 3, build_slice(rows))))
    return packed, decode([packed[name] for name in READ_COLUMNS])


def test_every_point_reads_back_in_point_order_with_its_provenance():
    rows = [(12, 3.0, AVG, 21, "Mul.csv", 64.0, 2.0, None, "kv=1", 104),
            (11, 0.1 + 0.2, TOTAL, 20, "Mul_more.csv", 32.0, 2.0, None, None, 105),
            (13, 2.5, AVG, 22, "Mul.csv", 32.0, 1.0, None, "kv=1", 103)]
    packed, back = _stored(rows)
    assert (packed["regime_id"], packed["profile_id"], packed["points"], packed["width"]) == \
        (41, 3, 3, 2)
    assert back.rows == (
        MeasuredRow(13, 2.5, AVG, 22, "Mul.csv", (32.0, 1.0), "kv=1"),
        MeasuredRow(11, 0.30000000000000004, TOTAL, 20, "Mul_more.csv", (32.0, 2.0), None),
        MeasuredRow(12, 3.0, AVG, 21, "Mul.csv", (64.0, 2.0), "kv=1"))
    assert back.column_names == (AVG, TOTAL) and back.semantics == ("kv=1", None, "kv=1")
    assert packed["latency_us"] == struct.pack("<3d", 2.5, 0.1 + 0.2, 3.0)


def test_whole_coordinates_and_small_ids_are_stored_in_one_or_two_bytes():
    rows = [(7, 1.5, AVG, 300, "RmsNorm.csv", float(n), None, None, None, n) for n in (1, 2, 4)]
    packed, back = _stored(rows)
    assert packed["axes"] == bytes([1, 2, 4])
    assert packed["sample_ids"] == bytes([7, 7, 7])
    assert packed["line_nos"] == struct.pack("<3H", 300, 300, 300)
    assert (packed["latency_column_codes"], packed["kernel_file_codes"],
            packed["semantic_codes"]) == (None, None, None)  # one value each: no codes
    assert (packed["latency_columns"], packed["kernel_files"], packed["semantic_keys"]) == \
        (f'["{AVG}"]', '["RmsNorm.csv"]', "[null]")
    assert back.axes.tolist() == [[1.0], [2.0], [4.0]] and back.axes.dtype == np.float64


def test_fractional_negative_zero_and_large_values_keep_their_exact_bits():
    rows = [(70_000, 1.0, AVG, 2, "A.csv", -0.0, None, None, None, 1),
            (2**40, 2.0, AVG, 3, "A.csv", 0.5, None, None, None, 2),
            (5, 3.0, AVG, 4, "A.csv", 3e9, None, None, None, 3)]
    packed, back = _stored(rows)
    assert len(packed["axes"]) == 3 * 8  # not all whole numbers below 2**31: float64
    assert len(packed["sample_ids"]) == 3 * 8  # 2**40 needs eight bytes
    assert [r.sample_id for r in back.rows] == [70_000, 2**40, 5]
    assert [r.axes[0] for r in back.rows] == [-0.0, 0.5, 3e9]
    assert math.copysign(1.0, back.rows[0].axes[0]) == -1.0


def test_points_without_axes_and_an_exclusion_after_reading():
    rows = [(1, 2.0, AVG, 3, "A.csv", None, None, None, None, 2),
            (2, 2.0, AVG, 4, "A.csv", None, None, None, None, 1)]
    packed, back = _stored(rows)
    assert (packed["width"], packed["axes"]) == (0, b"")
    assert [r.sample_id for r in back.rows] == [2, 1]
    assert [r.sample_id for r in back.without(frozenset({2})).rows] == [1]
