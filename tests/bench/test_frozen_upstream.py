"""bench/frozen_upstream.py: upstream's module run as ``__main__`` after profstore's first
freeze, the second right after the model runner's module is imported, and nothing of
profstore's package (SQLAlchemy, numpy) imported on the way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.no_database

REPO = Path(__file__).resolve().parents[2]

RUNNER = "import gc\nBEFORE = gc.get_freeze_count()\nMADE = [[i] for i in range(500)]\n"
COMMAND = """import gc, json, sys
print(json.dumps({"argv": sys.argv[1:], "frozen_before_import": gc.get_freeze_count()}))
import tensor_cast.core.model_runner as runner
print(json.dumps({"runner_saw": runner.BEFORE, "after": gc.get_freeze_count(),
                  "profstore_package": [m for m in ("profstore", "sqlalchemy", "numpy")
                                        if m in sys.modules]}))
"""


def _fake_upstream(root: Path) -> None:
    core = root / "tensor_cast" / "core"
    core.mkdir(parents=True)
    for package in (root / "tensor_cast", core):
        (package / "__init__.py").write_text("")
    (core / "model_runner.py").write_text(RUNNER)
    (root / "fake_command.py").write_text(COMMAND)


def test_upstream_runs_with_both_freezes_and_without_profstores_package(tmp_path):
    _fake_upstream(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(tmp_path), str(REPO)))}
    done = subprocess.run([sys.executable, "-m", "bench.frozen_upstream", "fake_command",
                           "--flag", "x"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, check=True)
    start, end = (json.loads(line) for line in done.stdout.splitlines())
    assert start["argv"] == ["--flag", "x"]
    assert start["frozen_before_import"] > 0  # the interpreter's start-up, frozen first
    # the runner's module ran with only that first freeze, and its 500 lists were frozen
    # right after it: the count grew by at least them and the list holding them
    assert end["runner_saw"] == start["frozen_before_import"]
    assert end["after"] >= end["runner_saw"] + 501
    assert end["profstore_package"] == []
