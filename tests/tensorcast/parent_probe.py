"""``profstore`` CLI run as a user runs it, printing (stderr) which modules the parent holds
when upstream's ``main()`` is about to run: one line ``PARENT_MODULES <json list>`` of the
modules below (the model runner, --draws, --compare, the web view) that are imported; and
one line ``FREEZES <json list>``, for each ``gc.freeze()`` the parent made until then,
whether TensorCast was imported at that moment.

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


def main() -> int:
    from profstore.cli.main import main as profstore_main
    from profstore.tensorcast import commands

    run_main, freeze = commands._run_main, gc.freeze
    freezes: list[bool] = []

    def probed(module: ModuleType, argv: list[str]) -> int:
        imported = sorted(name for name in sys.modules if name.startswith(WATCHED))
        print(MARK + json.dumps(imported), file=sys.stderr, flush=True)
        print(FREEZES + json.dumps(freezes), file=sys.stderr, flush=True)
        return run_main(module, argv)

    def watched_freeze() -> None:
        freezes.append("tensor_cast" in sys.modules)
        freeze()

    commands._run_main = probed
    gc.freeze = watched_freeze
    return profstore_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
