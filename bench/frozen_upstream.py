"""Upstream's own command with the collector treatment ``profstore tensorcast`` gives its
processes, and nothing else of profstore: the bench's like-for-like reference
(``analytic-frozen``) that tells what the freezes save apart from what the lookups cost.

    python -m bench.frozen_upstream cli.inference.throughput_optimizer MODEL ... \\
        --performance-model analytic

Before upstream's module runs, the process's objects are frozen (docs/adr/0128); right after
``tensor_cast.core.model_runner`` is imported, what it brought (docs/adr/0129), by
profstore's own ``own_objects`` and ``runner_hook``. Those two modules import nothing but
the standard library and are loaded from their files, so that this process imports none of
profstore's package (SQLAlchemy, numpy) that upstream's command would not. Forked workers
inherit the freezes; a spawned worker (``--disagg``) would not have them.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path
from types import ModuleType

TENSORCAST_PACKAGE = Path(__file__).resolve().parent.parent / "store" / "tensorcast"


def _standalone(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_frozen_upstream_{name}",
                                                  TENSORCAST_PACKAGE / f"{name}.py")
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python -m bench.frozen_upstream MODULE [ARG ...]")
    own_objects, runner_hook = _standalone("own_objects"), _standalone("runner_hook")
    own_objects.set_aside()
    runner_hook.when_imported(lambda _module: own_objects.set_aside_imports())
    sys.argv = argv
    runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
