"""TensorCast's own interpolation suites, unmodified, run against profstore.

The four files of ``../shared/third_party/msmodeling-84fec85/tests/regression/tensor_cast/``
named in ``SUITES`` are collected from where they are (nothing is copied). Before they
are imported, upstream's ``ProfilingDataSource`` and ``InterpolatingDataSource`` are
replaced by ``tests.upstream.sources`` (each constructor argument's mapping is documented
there), so every data source the suites build is a ``ProfstoreDataSource`` over a
temporary store holding the suite's fixture directory. The names are put back once the
suites are imported (they hold their own references), so other tests that run upstream's
real classes (tests/tensorcast/test_simulator.py) still get them.

``classification.txt`` holds one line per upstream test, and is enforced:

- ``pass``: runs and must pass;
- ``differs-rfc <section> "<sentence>"`` / ``differs-contract <what>``: runs and must
  fail with an assertion (or a missing detail key); an unexpected pass fails too
  (strict xfail), so a line that stops describing profstore is caught;
- ``n/a <why>``: not run (upstream's private helpers, mocks of its internals, LFS data).

An upstream test without a line fails, and so does a line naming no upstream test
(``test_classification_is_current``). ``PROFSTORE_UPSTREAM_TRIAGE=1`` runs every test
plainly, ignoring the classification (to re-classify after a change);
``PROFSTORE_UPSTREAM_TRIAGE=<file.tsv>`` also writes each test's outcome and whether it
built a data source at all (a test that builds none exercises only upstream's code).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import PERFDB, SHARED
from tests.support.prerequisites import in_ci, require
from tests.upstream.sources import STORES, interpolating_data_source, profiling_data_source

UPSTREAM = SHARED / "third_party" / "msmodeling-84fec85"
SUITE_DIR = UPSTREAM / "tests" / "regression" / "tensor_cast"
SUITES = ("test_specialized_operator_interpolation.py", "test_interpolating_data_source.py",
          "test_profiling_interpolation_phase1.py", "test_interpolation_math.py")
CLASSIFICATION = Path(__file__).with_name("classification.txt")
PACKAGE = "tensorcast_upstream_suites"
CLASSES = ("pass", "differs-rfc", "differs-contract", "n/a")
TRIAGE = os.environ.get("PROFSTORE_UPSTREAM_TRIAGE", "")
_DB = "profiling_database"


@dataclass(frozen=True)
class Verdict:
    kind: str
    note: str


def read_classification(path: Path = CLASSIFICATION) -> dict[str, Verdict]:
    """``<file>::<test id> <class> [note]`` per line; ``#`` comments and blank lines skipped."""
    verdicts: dict[str, Verdict] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        test_id, _, rest = line.partition(" ")
        kind, _, note = rest.strip().partition(" ")
        if kind not in CLASSES or test_id in verdicts:
            raise ValueError(f"{path.name}:{number}: bad or repeated line {line!r}")
        if kind != "pass" and not note.strip():
            raise ValueError(f"{path.name}:{number}: {kind} needs a reason")
        verdicts[test_id] = Verdict(kind, note.strip())
    return verdicts


def _missing_prerequisite() -> str | None:
    if not SUITE_DIR.is_dir():
        return f"TensorCast's export is not beside the checkout ({UPSTREAM})"
    try:
        import pandas  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as error:
        return (f"TensorCast's runtime packages are not installed ({error}): "
                "pip install -e '.[tensorcast]'")
    return None


def _install_shims() -> Callable[[], None]:
    """Import upstream's profiling_database and put profstore's constructors in place;
    returns the function that puts upstream's own back."""
    STORES.export, STORES.corpus = UPSTREAM, PERFDB
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if str(UPSTREAM) not in sys.path:
        sys.path.insert(0, str(UPSTREAM))
    base = f"tensor_cast.performance_model.{_DB}"
    package = importlib.import_module(base)
    modules = (package, importlib.import_module(f"{base}.profiling_data_source"),
               importlib.import_module(f"{base}.interpolating_data_source"))
    replacements = {"ProfilingDataSource": profiling_data_source,
                    "InterpolatingDataSource": interpolating_data_source}
    saved = [(module, name, getattr(module, name)) for module in modules
             for name in replacements if hasattr(module, name)]
    for module, name, _ in saved:
        setattr(module, name, replacements[name])

    def restore() -> None:
        for module, name, original in saved:
            setattr(module, name, original)
    return restore


def _suite_package() -> str:
    """A package whose path is upstream's suite folder, so the suites import under a name
    of their own (upstream's ``tests`` package would collide with ours) and pytest still
    rewrites their assertions."""
    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE)
        package.__path__ = [str(SUITE_DIR)]
        sys.modules[PACKAGE] = package
    return PACKAGE


class UpstreamModule(pytest.Module):
    def _getobj(self) -> types.ModuleType:
        return importlib.import_module(f"{_suite_package()}.{self.path.stem}")


class ClassificationCheck(pytest.Item):
    """Fails when a classified test no longer exists upstream."""

    def runtest(self) -> None:
        collected = self.config.stash.get(_COLLECTED, None)
        require(collected is not None, "the upstream suites' collection in this run")
        assert collected is not None
        stale = sorted(set(read_classification()) - collected)
        assert not stale, f"classification.txt names tests upstream does not have: {stale}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, "test_classification_is_current"


class UpstreamSuites(pytest.File):
    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        problem = _missing_prerequisite()
        if problem:
            if in_ci():
                raise pytest.UsageError(problem)
            pytest.skip(problem)
        restore = _install_shims()
        try:  # the suites bind the names at import; other tests keep upstream's classes
            for name in SUITES:
                importlib.import_module(f"{_suite_package()}.{Path(name).stem}")
        finally:
            restore()
        for name in SUITES:
            yield UpstreamModule.from_parent(self, path=SUITE_DIR / name, name=name)
        yield ClassificationCheck.from_parent(self, name="test_classification_is_current")


_COLLECTED = pytest.StashKey[set]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path == CLASSIFICATION:
        return UpstreamSuites.from_parent(parent, path=file_path)
    return None


def _upstream_id(item: pytest.Item) -> str | None:
    module = item.getparent(UpstreamModule)
    if module is None:
        return None
    return f"{module.name}::{item.nodeid.split('::', 2)[-1]}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ids = {item: _upstream_id(item) for item in items}
    upstream = {i for i in ids.values() if i is not None}
    if not upstream:
        return
    config.stash[_COLLECTED] = upstream
    if TRIAGE:
        return
    verdicts = read_classification()
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        test_id = ids[item]
        verdict = verdicts.get(test_id) if test_id else None
        if test_id is None or (verdict and verdict.kind == "pass"):
            kept.append(item)
        elif verdict is None:
            item.add_marker(pytest.mark.upstream_unclassified)
            kept.append(item)
        elif verdict.kind == "n/a":
            deselected.append(item)
        else:
            item.add_marker(pytest.mark.xfail(strict=True, raises=(AssertionError, KeyError),
                                              reason=f"{verdict.kind} {verdict.note}"))
            kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


class RunHooks:
    """Per-test hooks for the upstream items. Registered as a plugin: a conftest's own
    run hooks reach only items under its folder, and the suites live in ../shared."""

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.get_closest_marker("upstream_unclassified"):
            pytest.fail(f"{_upstream_id(item)} has no line in tests/upstream/classification.txt",
                        pytrace=False)

    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        if item.getparent(UpstreamModule) is not None:
            if TRIAGE.endswith(".tsv"):
                _record_misses(item)
            STORES.close_all()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Triage record: ``<id> <outcome> <data sources built so far>`` per upstream test."""
        if not TRIAGE.endswith(".tsv") or "classification.txt::" not in report.nodeid:
            return
        if report.when == "call" or report.failed:
            test_id = report.nodeid.split("classification.txt::", 1)[1]
            with open(TRIAGE, "a", encoding="utf-8") as out:
                out.write(f"{test_id}\t{report.outcome}\t{STORES.count}\n")


def _record_misses(item: pytest.Item) -> None:
    """Triage: the last miss of every source the test built, beside the outcome file."""
    with open(TRIAGE + ".misses", "a", encoding="utf-8") as out:
        for source in STORES.opened:
            if source.last_miss_reason:
                message = json.dumps(source.last_miss_details, default=str)[:600]
                out.write(f"{_upstream_id(item)}\t{source.last_miss_reason}\t{message}\n")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "upstream_unclassified: an upstream test with no line "
                                       "in tests/upstream/classification.txt")
    if not config.pluginmanager.has_plugin("profstore-upstream-runs"):
        config.pluginmanager.register(RunHooks(), "profstore-upstream-runs")


def pytest_unconfigure(config: pytest.Config) -> None:
    STORES.remove()
