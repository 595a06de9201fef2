"""No test module imports from another test module, and nothing imports from a conftest
module: shared helpers live in tests/support/, shared fixtures and hooks in a conftest.py.
Every tests/**/*.py is parsed with ``ast``."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.no_database


def is_test_module(module: str) -> bool:
    """``tests.<...>.test_<name>``: a module pytest collects tests from."""
    parts = module.split(".")
    return len(parts) >= 2 and parts[0] == "tests" and parts[-1].startswith("test_")


def is_conftest(module: str) -> bool:
    """``conftest`` or ``<...>.conftest``: a module pytest loads for its fixtures and hooks."""
    return module.split(".")[-1] == "conftest"


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import, ``from tests.x import test_y`` counting as the module
    ``tests.x.test_y``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


@cache
def parsed() -> tuple[tuple[Path, ast.AST], ...]:
    """Every tests/**/*.py and its syntax tree, parsed once for both tests."""
    return tuple((path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
                 for path in sorted(TESTS.rglob("*.py")))


def test_no_test_module_imports_from_another_test_module():
    offences = []
    for path, tree in parsed():
        for line, module in imported_modules(tree):
            if is_test_module(module):
                offences.append(f"{path.relative_to(TESTS.parent)}:{line} imports {module}")
    assert not offences, ("test modules import from test modules (move the helper to "
                          "tests/support/ or the fixture to a conftest.py):\n"
                          + "\n".join(offences))


def test_nothing_imports_from_a_conftest_module():
    offences = []
    for path, tree in parsed():
        for line, module in imported_modules(tree):
            if is_conftest(module):
                offences.append(f"{path.relative_to(TESTS.parent)}:{line} imports {module}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                names = [node.module or ""] + [alias.name for alias in node.names]
                if any(is_conftest(name) for name in names if name):
                    offences.append(f"{path.relative_to(TESTS.parent)}:{node.lineno} imports "
                                    f"{'.' * node.level}{node.module or ''} (a conftest)")
    assert not offences, ("modules import from conftest modules (move the helper to "
                          "tests/support/; a conftest.py keeps only fixtures and hooks):\n"
                          + "\n".join(offences))
