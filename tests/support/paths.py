"""Where things are: the checkout and the shared data beside it."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SHARED = Path(os.environ.get("PROFSTORE_SHARED") or REPO.parent / "shared")
"""``../shared`` beside the checkout; ``PROFSTORE_SHARED`` points elsewhere."""
PERFDB = SHARED / "perfdb"
WORKLOADS = SHARED / "workloads"
SHIPPED_MAPPINGS = sorted(PERFDB.glob("*/vllm_ascend/*/op_mapping.yaml"))
"""The op_mapping.yaml of every shipped version of the corpus."""
