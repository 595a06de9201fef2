"""Markers shared by test modules, and the corpus check behind ``requires_perfdb``
(tests/conftest.py registers the markers and runs ``require_corpus`` before a marked test)."""

from __future__ import annotations

import pytest

from tests.support.paths import PERFDB
from tests.support.prerequisites import require

CORPUS_WHAT = f"the profiling corpus beside the checkout ({PERFDB})"

requires_perfdb = pytest.mark.requires_perfdb
"""Marks a test that reads the real corpus; see ``require_corpus``."""


def corpus_present() -> bool:
    return (PERFDB / "ATLAS_800_A3_752T_128G_DIE").is_dir()


def require_corpus() -> None:
    """Skip without the corpus on a developer machine; fail with CI=true."""
    require(corpus_present(), CORPUS_WHAT)
