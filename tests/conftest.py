"""Shared test configuration: where the real corpus lives."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
PERFDB = SHARED / "perfdb"
WORKLOADS = SHARED / "workloads"

requires_perfdb = pytest.mark.skipif(
    not (PERFDB / "ATLAS_800_A3_752T_128G_DIE").is_dir(),
    reason=f"the profiling corpus is not beside the checkout ({PERFDB})",
)
