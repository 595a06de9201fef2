"""The library reference (docs/adr/0109-public-surface-and-reference.md): ``mkdocs build
--strict`` passes (no broken link or anchor), every public name is in the built site's
objects inventory, and every public docstring has the sections the reference promises."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.meta.public_api import griffe_object, griffe_package, public_names
from tests.support.paths import REPO
from tests.support.prerequisites import require

pytestmark = pytest.mark.no_database


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    require(importlib.util.find_spec("mkdocs") is not None, "mkdocs (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(out)], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def inventory(site: Path) -> set[str]:
    """The object names of the site's Sphinx inventory (version 2: a header, then zlib)."""
    data = (site / "objects.inv").read_bytes()
    header, _, body = data.partition(b"zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2"), header[:60]
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines()}


def test_every_public_name_is_in_the_built_reference(site):
    documented = inventory(site)
    assert "profstore.Store.lookup" in documented
    assert [name for name in public_names() if name not in documented] == []


def test_the_reference_pages_name_exactly_the_public_names():
    directives = {line.removeprefix("::: ").strip()
                  for page in (REPO / "docs" / "reference").glob("*.md")
                  for line in page.read_text().splitlines() if line.startswith("::: ")}
    top = {name for name in public_names() if name.count(".") == 1
           or name.startswith("profstore.tensorcast.") and name.count(".") == 2}
    assert directives == top | {"profstore", "profstore.tensorcast"}


def problems(obj, path: str) -> list[str]:
    """What the docstring of one public object lacks (Google style, as griffe parses it)."""
    if obj.docstring is None or not obj.docstring.value.strip():
        return [f"{path}: no docstring"]
    sections = {section.kind.value: section for section in obj.docstring.parsed}
    found = []
    field = obj.is_attribute and obj.parent.is_class
    if not field and "examples" not in sections:
        found.append(f"{path}: no Examples")
    callable_ = obj.is_function and "property" not in obj.labels
    constructed = (obj.is_class and "__init__" in obj.members
                   and "dataclass" not in obj.labels)  # a dataclass documents its fields
    if callable_ or constructed:
        found += signature_problems(obj, path, sections)
    return found


def signature_problems(obj, path: str, sections) -> list[str]:
    found = []
    function = obj if obj.is_function else obj.members.get("__init__")
    params = [] if function is None else [p.name for p in function.parameters
                                          if p.name not in ("self", "cls")]
    documented = [p.name.lstrip("*") for p in sections["parameters"].value] \
        if "parameters" in sections else []
    if params != documented:
        found.append(f"{path}: Args {documented} != parameters {params}")
    returns_none = obj.is_class or str(obj.returns) in ("None", "")
    if not returns_none and "returns" not in sections:
        found.append(f"{path}: no Returns")
    if "raises" not in sections and "Never raises." not in obj.docstring.value:
        found.append(f"{path}: no Raises (nor 'Never raises.')")
    return found


def test_every_public_docstring_has_args_returns_raises_and_examples():
    require(importlib.util.find_spec("griffe") is not None, "griffe (pip install -e '.[docs]')")
    package = griffe_package()
    found = [problem for path in public_names()
             for problem in problems(griffe_object(package, path), path)]
    assert found == []
