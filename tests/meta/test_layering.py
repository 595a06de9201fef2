"""The layering contract (docs/adr/0098-layers.md): ``lint-imports`` keeps every contract of
pyproject.toml, and the graph it checks holds function-level imports too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
import tomllib

from tests.support.paths import REPO

pytestmark = pytest.mark.no_database
CONTRACTS = (
    "front ends -> evaluation -> presentation -> api -> lookup | ingest -> paths | geometry | "
    "storage -> model",
    "no import cycle between the modules or sub-packages of any package",
    "storage is the only reader of the schema: SQLAlchemy and the schema only in storage, "
    "ingest and migrations",
    "Alembic revisions are frozen: they import nothing of profstore",
)
SCHEMA_READERS = {"profstore.storage", "profstore.ingest", "profstore.migrations"}
"""The sub-packages that may import SQLAlchemy and ``profstore.storage.schema``."""


def lint_imports() -> str:
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert found, "lint-imports is not installed beside this Python (the test extra has it)"
    done = subprocess.run([found, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return " ".join(done.stdout.split())


def test_every_contract_is_kept():
    report = lint_imports()
    for name in CONTRACTS:
        assert f"{name} KEPT" in report, report[-2000:]
    assert "Contracts: 4 kept, 0 broken." in report


def test_the_checked_graph_holds_function_level_imports():
    """path_runner imports nearest_regime inside a method (only a missed lookup needs it);
    the graph import-linter checks still has that edge."""
    graph = grimp.build_graph("profstore", cache_dir=None)
    assert graph.direct_import_exists(importer="profstore.lookup.path_runner",
                                      imported="profstore.lookup.nearest_regime")
    assert not graph.direct_import_exists(importer="profstore.model.mapping",
                                          imported="profstore.lookup.path_runner")


def test_every_other_module_is_a_source_of_the_schema_contract():
    """A new sub-package or top-level module is under the contract from its first import:
    the contract's source modules are every child of profstore but the schema readers."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"]
                  if c["name"] == CONTRACTS[2]]
    graph = grimp.build_graph("profstore", cache_dir=None)
    children = graph.find_children("profstore")
    assert set(contract["source_modules"]) == children - SCHEMA_READERS
    assert contract["forbidden_modules"] == ["sqlalchemy", "profstore.storage.schema"]
