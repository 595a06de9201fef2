"""bench/opcode_probe.py and bench/lookup_opcodes.py: bytecodes counted inside the wrapped
call only, the same on every run, attributed to the function that ran them; processes
summed and the report's change against the baseline."""

from __future__ import annotations

import pytest

from bench.lookup_opcodes import render, summed
from bench.opcode_probe import OpcodeCount

pytestmark = pytest.mark.no_database


def triangle(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def test_only_the_wrapped_call_is_counted_and_the_same_each_time():
    count = OpcodeCount()
    assert count.counting(triangle, 10) == 45
    once = count.total
    triangle(1000)  # outside: not counted
    assert count.total == once
    count.counting(triangle, 10)
    assert (count.total, count.calls) == (2 * once, 2)


def test_a_longer_loop_runs_more_bytecodes_in_that_function():
    short, long = OpcodeCount(), OpcodeCount()
    short.counting(triangle, 10)
    long.counting(triangle, 20)
    mine = [key for key in long.by_function if key[2] == "triangle"]
    assert len(mine) == 1
    # ten more iterations, each the same few bytecodes of triangle's loop
    per_iteration = (long.by_function[mine[0]] - short.by_function[mine[0]]) / 10
    assert per_iteration == int(per_iteration) and per_iteration > 0
    assert long.total - short.total == 10 * per_iteration


def test_processes_are_summed_function_by_function():
    one = {"lookups": 3, "opcodes": 100, "functions": [
        {"file": "profstore/a.py", "line": 1, "name": "f", "opcodes": 60},
        {"file": "profstore/b.py", "line": 5, "name": "g", "opcodes": 40}]}
    two = {"lookups": 2, "opcodes": 50, "functions": [
        {"file": "profstore/b.py", "line": 5, "name": "g", "opcodes": 50}]}
    total = summed([one, two])
    assert (total["processes"], total["lookups"], total["opcodes"]) == (2, 5, 150)
    assert [(f["name"], f["opcodes"]) for f in total["functions"]] == [("g", 90), ("f", 60)]


def test_the_report_gives_the_change_against_the_baseline():
    this = {"processes": 2, "lookups": 4, "opcodes": 900, "functions": [
        {"file": "profstore/a.py", "line": 1, "name": "f", "opcodes": 450}]}
    base = {"processes": 2, "lookups": 4, "opcodes": 1000, "functions": []}
    text = render({"this": this, "baseline": base}, "abc1234")
    assert "| this | 2 | 4 | 900 | 225 |" in text
    assert "| baseline | 2 | 4 | 1,000 | 250 |" in text
    assert "This tree against the baseline: -10.0 % bytecodes." in text
    assert "| 50.00 % | 450 | `profstore/a.py:1` f |" in text
