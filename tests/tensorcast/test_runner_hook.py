"""``runner_hook.when_imported``: a change applied to a module when it is imported, at once
when it already is, never twice, and not after ``forget()``. A small package written under
``tmp_path`` stands in for TensorCast's runner module (the real one: test_commands.py)."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest
from profstore.tensorcast import runner_hook


@pytest.fixture
def runner(tmp_path, monkeypatch):
    package = tmp_path / "fake_tc"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model_runner.py").write_text("FACTORY = 'upstream'\nIMPORTS = [1]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(runner_hook, "RUNNER_MODULE", "fake_tc.model_runner")
    yield "fake_tc.model_runner"
    runner_hook.forget()
    for name in ("fake_tc.model_runner", "fake_tc"):
        sys.modules.pop(name, None)


def mark(changed: list[str]):
    def change(module: ModuleType) -> None:
        changed.append(module.__name__)
        module.FACTORY = "profstore"
    return change


def test_nothing_is_imported_until_the_host_imports_the_module(runner):
    changed: list[str] = []
    runner_hook.when_imported(mark(changed))
    assert runner not in sys.modules and changed == []
    import fake_tc.model_runner as module

    assert (module.FACTORY, module.IMPORTS, changed) == ("profstore", [1], [runner])
    assert module.__spec__.origin.endswith("model_runner.py")  # its own spec, its own file


def test_an_imported_module_is_changed_at_once_and_no_finder_stays(runner):
    import fake_tc.model_runner as module

    changed: list[str] = []
    runner_hook.when_imported(mark(changed))
    assert (module.FACTORY, changed) == ("profstore", [runner])
    assert not any(isinstance(f, runner_hook._RunnerFinder) for f in sys.meta_path)


def test_a_second_registration_replaces_the_first(runner):
    first: list[str] = []
    second: list[str] = []
    runner_hook.when_imported(mark(first))
    runner_hook.when_imported(mark(second))
    import fake_tc.model_runner  # noqa: F401

    assert (first, second) == ([], [runner])
    assert sum(isinstance(f, runner_hook._RunnerFinder) for f in sys.meta_path) == 1


def test_after_forget_the_module_imports_unchanged(runner):
    changed: list[str] = []
    runner_hook.when_imported(mark(changed))
    runner_hook.forget()
    import fake_tc.model_runner as module

    assert (module.FACTORY, changed) == ("upstream", [])


def test_other_modules_pass_through(runner):
    changed: list[str] = []
    runner_hook.when_imported(mark(changed))
    import fake_tc

    assert changed == [] and fake_tc.__spec__.loader.__class__.__name__ != "_ChangingLoader"
