"""profstore.tensorcast.run_stats: the run's fallbacks summed over its processes."""

from __future__ import annotations

import pytest
from profstore.tensorcast.run_stats import Fallback, ProcessStats, RunSummary

pytestmark = pytest.mark.no_database

MUL = {"op": "aten.mul.Tensor", "args": [{"shape": [8, 5120], "dtype": "bfloat16"}]}
ADD = {"op": "aten.add.Tensor", "args": [{"shape": [8, 5120], "dtype": "bfloat16"}]}


def _process(pid: int, mul_calls: int) -> ProcessStats:
    stats = ProcessStats(pid)
    stats.fallbacks["mul"] = Fallback("aten.mul.Tensor", MUL, "regime_mismatch", "miss", 2.0,
                                      calls=mul_calls, nearest_us=1.5)
    return stats


def test_an_op_that_fell_back_in_two_processes_sums_its_calls():
    first, second = _process(1, 3), _process(2, 4)
    second.fallbacks["add"] = Fallback("aten.add.Tensor", ADD, "unmapped", "miss", 20.0, calls=1)
    merged = RunSummary([first, second]).fallbacks()
    # add: 20.0 us x 1 call = 20 us of simulated time; mul: 2.0 us x (3 + 4) calls = 14 us
    assert [(f.op, f.calls, f.time_us, f.nearest_time_us) for f in merged] == [
        ("aten.add.Tensor", 1, 20.0, None), ("aten.mul.Tensor", 7, 14.0, 10.5)]


def test_summing_leaves_each_process_count_as_it_was():
    first, second = _process(1, 3), _process(2, 4)
    summary = RunSummary([first, second])
    summary.fallbacks()
    again = summary.fallbacks()
    assert [f.calls for f in again] == [7]
    assert (first.fallbacks["mul"].calls, second.fallbacks["mul"].calls) == (3, 4)
