"""bench/answer_dump.py's comparison: equal dumps, the first differing line, a dump cut short."""

from __future__ import annotations

import pytest

from bench.answer_dump import first_difference

pytestmark = pytest.mark.no_database


def test_equal_dumps_have_no_difference(tmp_path):
    before, after = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    before.write_bytes(b'{"latency_us": "5.0"}\n{"latency_us": null}\n')
    after.write_bytes(b'{"latency_us": "5.0"}\n{"latency_us": null}\n')
    assert first_difference(before, after) is None


def test_the_first_differing_line_is_named_with_both_texts(tmp_path):
    before, after = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    before.write_bytes(b'{"x": 1}\n{"latency_us": "5.0"}\n{"y": 1}\n')
    after.write_bytes(b'{"x": 1}\n{"latency_us": "5.000000000000001"}\n{"y": 2}\n')
    assert first_difference(before, after) == (
        'line 2:\n  before {"latency_us": "5.0"}\n  after  {"latency_us": "5.000000000000001"}')


def test_a_dump_cut_short_differs_in_its_line_count(tmp_path):
    before, after = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    before.write_bytes(b'{"x": 1}\n{"x": 2}\n')
    after.write_bytes(b'{"x": 1}\n')
    assert first_difference(before, after) == "2 lines before, 1 after"
