"""Running the suite on pytest-xdist workers (``./dev.sh test`` passes ``-n`` and
``--dist loadgroup``).

Every worker is a pytest session of its own: its own ``tmp_path_factory`` base folder,
session fixtures (the corpus ingest, PostgreSQL's template database) and
``$XDG_CACHE_HOME`` (tests/conftest.py). A module-, class- or package-scoped fixture
would be built once per worker that runs one of its tests, and some of them must not run
twice at once (tests/packaging builds the wheel in the checkout's build/ folder), so the
tests that use one are put in one ``xdist_group``: loadgroup sends a group to one worker
and spreads every other test one by one.
"""

from __future__ import annotations

import pytest

GROUPED_SCOPES = ("package", "module", "class")
"""A test using fixtures of two of them joins the package's group (the wider one)."""


def shared_fixture_group(item: pytest.Item) -> str | None:
    """The group of the widest module-, class- or package-scoped fixture ``item`` uses:
    the folder that defines a package's, the test file for a module's or class's; None
    without one."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    defs = [d for found in info.name2fixturedefs.values() for d in found
            if d.scope in GROUPED_SCOPES]
    packages = sorted(d.baseid for d in defs if d.scope == "package")
    if packages:
        return packages[0]
    return item.nodeid.split("::")[0] if defs else None


def mark_groups(items: list[pytest.Item]) -> None:
    """Put each test that shares a wider-scoped fixture in that fixture's group."""
    for item in items:
        group = shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
