"""The suite's one skip mechanism: a missing corpus skips on a developer machine and fails
the run with CI=true (a skip in CI would hide a missing ../shared)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.no_database

def run_probe(tmp_path, ci: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PROFSTORE_SHARED"] = str(tmp_path / "no-shared-here")
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "tests/ingest/test_corpus.py::test_stored_rows_match_the_file_accounting_and_the_file_text"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_missing_corpus_skips_with_its_location_outside_ci(tmp_path):
    done = run_probe(tmp_path, ci=None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " skipped" in done.stdout and " passed" not in done.stdout
    assert "no-shared-here" in done.stdout


def test_missing_corpus_fails_the_run_in_ci(tmp_path):
    done = run_probe(tmp_path, ci="true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"\b1 (failed|error)\b", done.stdout) and " skipped" not in done.stdout
    assert "CI=true and the profiling corpus beside the checkout" in done.stdout
