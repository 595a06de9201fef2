"""store/tensorcast/own_objects.py: profstore's objects frozen once, never TensorCast's.

Each case runs in its own interpreter: a freeze is for the life of a process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.no_database

PROBE = """
import gc, json, sys, types
if {fake_tensor_cast}:
    sys.modules["tensor_cast"] = types.ModuleType("tensor_cast")
from profstore.tensorcast import own_objects
first = own_objects.set_aside()
frozen = gc.get_freeze_count()
kept = [[i] for i in range(1000)]  # objects made after the freeze stay collectable
second = own_objects.set_aside()
print(json.dumps([first, frozen, second, gc.get_freeze_count()]))
"""


def _run(fake_tensor_cast: bool) -> list:
    done = subprocess.run([sys.executable, "-c", PROBE.format(fake_tensor_cast=fake_tensor_cast)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_before_tensorcast_the_process_objects_are_frozen_once():
    first, frozen, second, after = _run(False)
    assert first is True and second is True
    assert frozen > 1000  # the interpreter's and profstore's modules at least
    assert after == frozen  # the second call froze nothing more


def test_once_tensorcast_is_imported_nothing_is_frozen():
    assert _run(True) == [False, 0, False, 0]
