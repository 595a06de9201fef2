"""A change to TensorCast's model runner applied when its module is imported, not before.

Importing ``tensor_cast.core.model_runner`` costs seconds (torch, transformers, the model
zoo). Upstream's own parent process imports it only once its search or its step starts;
profstore must not import it earlier just to replace a factory on it. ``when_imported``
applies a change to the module at once if it is already imported, else as soon as
anything imports it: a finder first on ``sys.meta_path`` hands the module's own spec back
with a loader that runs the change right after the module's code. A forked worker
inherits the finder (and the changed module, if the parent had imported it); a spawned
one registers it again from its main module (``worker``).
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

RUNNER_MODULE = "tensor_cast.core.model_runner"

Change = Callable[[ModuleType], None]


class _ChangingLoader(importlib.abc.Loader):
    """The module's own loader, then the change; everything else asked of it (source,
    code, resources) goes to the module's own loader."""

    def __init__(self, inner: Any, change: Change) -> None:
        self._inner = inner
        self._change = change

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._inner.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        self._change(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _RunnerFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asks the finders after it, and wraps the loader they give."""

    def __init__(self, change: Change) -> None:
        self.change = change

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != RUNNER_MODULE:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ChangingLoader(spec.loader, self.change)
                return spec
        return None


def when_imported(change: Change) -> None:
    """Apply ``change`` to the model runner's module now if it is imported, else when it
    is; replaces the change registered before (one per process)."""
    forget()
    module = sys.modules.get(RUNNER_MODULE)
    if module is not None:
        change(module)
        return
    sys.meta_path.insert(0, _RunnerFinder(change))


def forget() -> None:
    """No change on a later import (one already applied stays: undo it yourself)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _RunnerFinder)]
