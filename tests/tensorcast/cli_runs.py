"""Running the ``profstore`` CLI and TensorCast's own commands in subprocesses, as a user
does: offline, TensorCast found through ``$TENSORCAST_ROOT``, model configs copied into a
0755 folder (TensorCast refuses group- or world-writable ones)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.tensorcast.parent_probe import FREEZES, FREEZES_AT_EXIT, MARK
from tests.tensorcast.simulation import TENSOR_CAST

PROBE = Path(__file__).with_name("parent_probe.py")

TOP_ROW = re.compile(r"^\|\s*1\s*\|\s*(?:\x1b\[1m)?([0-9.]+)(?:\x1b\[0m)?\s*\|.*?\|\s*"
                     r"(TP=\d+ \| PP=\d+ \| DP=\d+)\s*\|\s*(\d+)\s*\|", re.M)
"""The Top 1 row of upstream's throughput table: throughput, parallel column, batch."""


def environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TENSORCAST_ROOT": str(TENSOR_CAST)}


def profstore(*words: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profstore", *words], capture_output=True,
                          text=True, env=environment(), cwd=cwd, timeout=900)


def profstore_probed(*words: str) -> subprocess.CompletedProcess[str]:
    """``profstore`` as ``profstore()`` runs it, through ``parent_probe`` (its stderr also
    names the watched modules the parent held before upstream's ``main()``)."""
    return subprocess.run([sys.executable, str(PROBE), *words], capture_output=True,
                          text=True, env=environment(), timeout=900)


def parent_modules(stderr: str) -> list[str]:
    """The watched modules ``parent_probe`` found imported before upstream's ``main()``."""
    lines = [line for line in stderr.splitlines() if line.startswith(MARK)]
    assert len(lines) == 1, stderr[-2000:]
    found: list[str] = json.loads(lines[0].removeprefix(MARK))
    return found


def parent_freezes(stderr: str, *, at_exit: bool = False) -> list[dict[str, object]]:
    """For each ``gc.freeze()`` the parent made before upstream's ``main()`` (``at_exit``:
    in the whole command), what was imported and built then (``parent_probe``)."""
    mark = FREEZES_AT_EXIT if at_exit else FREEZES
    lines = [line for line in stderr.splitlines() if line.startswith(mark)]
    assert len(lines) == 1, stderr[-2000:]
    found: list[dict[str, object]] = json.loads(lines[0].removeprefix(mark))
    return found


def upstream(module: str, *words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *words], capture_output=True,
                          text=True, env={**environment(), "PYTHONPATH": str(TENSOR_CAST)},
                          cwd=TENSOR_CAST, timeout=900)


def best(stdout: str) -> tuple[float, str, int]:
    """The Top 1 row of a throughput search's output."""
    found = TOP_ROW.search(stdout)
    assert found, stdout[-2000:]
    return float(found.group(1)), found.group(2), int(found.group(3))
