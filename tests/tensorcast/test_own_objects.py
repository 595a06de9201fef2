"""store/tensorcast/own_objects.py: profstore's objects frozen before TensorCast arrives, the
model runner's imports right after they arrive, nothing where TensorCast came first.

Each case runs in its own interpreter: a freeze is for the life of a process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.no_database

PROBE = """
import gc, json, sys, types
if {tensor_cast_first}:
    sys.modules["tensor_cast"] = types.ModuleType("tensor_cast")
from profstore.tensorcast import own_objects
seen = []
def note(result):
    seen.append([result, own_objects.stage().value, gc.get_freeze_count()])
if {set_aside_first}:
    note(own_objects.set_aside())
    imported = [[i] for i in range(1000)]  # stands for what the runner's import brings
    note(own_objects.set_aside())
note(own_objects.set_aside_imports())
later = [[i] for i in range(1000)]  # a model built after: never frozen
note(own_objects.set_aside_imports())
print(json.dumps(seen))
"""


def _run(*, tensor_cast_first: bool, set_aside_first: bool = True) -> list[list]:
    code = PROBE.format(tensor_cast_first=tensor_cast_first, set_aside_first=set_aside_first)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def test_own_objects_then_the_runners_imports_are_frozen_once_each():
    (own, own_count), (again, again_count), (imports, imports_count), (later, later_count) = (
        (row[:2], row[2]) for row in _run(tensor_cast_first=False))
    assert own == [True, "own"] and again == [True, "own"]
    assert own_count > 1000  # the interpreter's and profstore's modules at least
    assert again_count == own_count  # set_aside froze nothing more the second time
    assert imports == [True, "imports"]
    assert imports_count >= own_count + 1001  # the 1,000 lists and the list holding them
    assert later == [False, "imports"] and later_count == imports_count


def test_imports_are_not_frozen_unless_own_objects_were_set_aside_first():
    # a library user's process: install() alone never froze profstore's objects
    assert _run(tensor_cast_first=False, set_aside_first=False) == [
        [False, "none", 0], [False, "none", 0]]


def test_once_tensorcast_is_imported_nothing_is_frozen():
    assert _run(tensor_cast_first=True) == [
        [False, "none", 0], [False, "none", 0], [False, "none", 0], [False, "none", 0]]
