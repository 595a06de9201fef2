"""The examples of the public surface's docstrings (docs/reference/) run as doctests.

Each public name's docstring is read as the reference renders it (griffe: dataclass fields
and constants have docstrings only in the source) and its examples run in the namespace of
the module that defines it, plus ``demo_db``: the demo profiling data (store/cli/demo_data.py)
ingested once per session into a temporary SQLite file, as ``profstore demo`` does."""

from __future__ import annotations

import doctest
import importlib
import importlib.util

import pytest

from tests.meta.public_api import griffe_object, griffe_package, public_names
from tests.support.prerequisites import require

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> str:
    from profstore import Store
    from profstore.cli.demo_data import write_demo_data
    from profstore.ingest.loader import ingest_path

    folder = tmp_path_factory.mktemp("demo")
    data = write_demo_data(folder / "data")
    with Store.open(folder / "demo.db", read_only=False) as store:
        summaries = list(ingest_path(store.engine, data))
    assert [s.line().split(" in ")[0] for s in summaries] == [
        "v0.18: 4 files, 59 rows read, 59 accepted, 0 rejected (none)",
        "hccl-v8.5: 1 files, 4 rows read, 4 accepted, 0 rejected (none)"]
    return str(folder / "demo.db")


@pytest.fixture(scope="module")
def package():
    require(importlib.util.find_spec("griffe") is not None, "griffe (pip install -e '.[docs]')")
    return griffe_package()


def examples(package, path: str) -> tuple[str, str]:
    """The docstring's text and the module whose namespace its examples run in."""
    obj = griffe_object(package, path)
    module = obj if obj.is_module else obj.module
    return (obj.docstring.value if obj.docstring else ""), module.path


@pytest.mark.parametrize("path", public_names())
def test_the_examples_of_a_public_name_run(path, package, demo_db, tmp_path, monkeypatch):
    text, module_name = examples(package, path)
    test = doctest.DocTestParser().get_doctest(
        text, {**vars(importlib.import_module(module_name)), "demo_db": demo_db},
        path, module_name, 0)
    if not test.examples:
        return  # a field: the test_api_reference checks say which names need examples
    if "torch" in text:
        require(importlib.util.find_spec("torch") is not None, "torch (pip install -e '.[torch]')")
    if "tensor_cast" in text:
        from tests.tensorcast.simulation import require_tensor_cast

        require_tensor_cast()
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    try:
        runner.run(test, out=report.append)
    finally:
        if "tensor_cast" in text:
            from profstore.tensorcast.installation import uninstall
            from profstore.tensorcast.stores import close_shared

            uninstall()
            close_shared()
    assert runner.failures == 0, "".join(report)
    assert runner.tries == len(test.examples) > 0
