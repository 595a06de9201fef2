"""``profstore`` CLI run as a user runs it, printing (stderr) which modules the parent holds
when upstream's ``main()`` is about to run: one line ``PARENT_MODULES <json list>`` of the
modules below (the model runner, --draws, --compare, the web view) that are imported; and
one line ``FREEZES <json list>`` of the ``gc.freeze()`` calls the parent made until then;
and when the command is done, ``FREEZES_AT_EXIT <json list>`` of all it made. For each
freeze: whether TensorCast and its model runner's module were imported at that moment, and
how many ``ModelRunner`` objects existed.

    python tests/tensorcast/parent_probe.py tensorcast text-generate --db ... -- MODEL ...
"""

from __future__ import annotations

import gc
import json
import sys
from types import ModuleType

WATCHED = ("tensor_cast.core.model_runner", "profstore.tensorcast.draws",
           "profstore.tensorcast.draw_search", "profstore.tensorcast.compare",
           "profstore.tensorcast.differences", "profstore.web")
MARK = "PARENT_MODULES "
FREEZES = "FREEZES "
FREEZES_AT_EXIT = "FREEZES_AT_EXIT "
RUNNER = "tensor_cast.core.model_runner"


def _moment() -> dict[str, object]:
    runners = sum(type(o).__name__ == "ModelRunner" for o in gc.get_objects()
                  ) if RUNNER in sys.modules else 0
    return {"tensor_cast": "tensor_cast" in sys.modules, "runner_module": RUNNER in sys.modules,
            "runners": runners}


def main() -> int:
    from profstore.cli.main import main as profstore_main
    from profstore.tensorcast import commands

    run_main, freeze = commands._run_main, gc.freeze
    freezes: list[dict[str, object]] = []

    def probed(module: ModuleType, argv: list[str]) -> int:
        imported = sorted(name for name in sys.modules if name.startswith(WATCHED))
        print(MARK + json.dumps(imported), file=sys.stderr, flush=True)
        print(FREEZES + json.dumps(freezes), file=sys.stderr, flush=True)
        return run_main(module, argv)

    def watched_freeze() -> None:
        freezes.append(_moment())
        freeze()

    commands._run_main = probed
    gc.freeze = watched_freeze
    code = profstore_main(sys.argv[1:])
    print(FREEZES_AT_EXIT + json.dumps(freezes), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
