"""No Alembic revision imports profstore: each carries a frozen copy of the SQL and data
logic it runs (docs/adr/0108-self-contained-migrations.md), so a change to live code
cannot change what an old revision does to a database."""

from __future__ import annotations

import ast

import pytest

from tests.support.paths import REPO

VERSIONS = REPO / "migrations" / "versions"

pytestmark = pytest.mark.no_database


def profstore_imports(source: str) -> list[str]:
    """Each import of profstore in ``source`` (and each relative import, which inside the
    installed package is one), as ``line N: statement``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")] if node.level else [node.module or ""]
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in {"importlib.import_module", "import_module",
                                              "__import__"}):
            names = [node.args[0].value]
        else:
            continue
        bad = [n for n in names if n == "profstore" or n.startswith(("profstore.", "."))]
        if bad:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_each_kind_of_profstore_import():
    source = ("import json\nimport profstore.storage.schema\n"
              "from profstore.ingest.packs import write_packs\nfrom .. import legacy_views\n"
              "from alembic import op\nimportlib.import_module('profstore.x')\n")
    assert profstore_imports(source) == [
        "line 2: import profstore.storage.schema",
        "line 3: from profstore.ingest.packs import write_packs",
        "line 4: from .. import legacy_views",
        "line 6: importlib.import_module('profstore.x')"]


def test_no_revision_imports_profstore():
    revisions = sorted(VERSIONS.glob("[0-9][0-9][0-9][0-9]_*.py"))
    assert [p.name[:4] for p in revisions] == ["0001", "0002", "0003", "0004", "0005", "0006",
                                                   "0007"]
    offenders = {p.name: found for p in revisions
                 if (found := profstore_imports(p.read_text(encoding="utf-8")))}
    assert offenders == {}, f"revisions importing profstore (copy what they need): {offenders}"
