"""The one way a test says it needs something the machine may lack.

Outside CI a missing prerequisite skips the test with a reason a developer can act on.
With ``CI=true`` it fails the test instead: CI installs everything the suite needs, so a
skip there would hide a missing install step or a missing ``../shared`` corpus.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(available: bool, what: str) -> None:
    """Skip (developer machine) or fail (CI) unless ``available``; ``what`` names the need."""
    if available:
        return
    if in_ci():
        pytest.fail(f"CI=true and {what} is missing: CI must provide it", pytrace=False)
    pytest.skip(f"{what} is missing", allow_module_level=True)
