"""``profstore`` CLI run as a user runs it, printing (stderr) which modules the parent holds
when upstream's ``main()`` is about to run: one line ``PARENT_MODULES <json list>`` of the
modules below (the model runner, --draws, --compare, the web view) that are imported.

    python tests/tensorcast/parent_probe.py tensorcast text-generate --db ... -- MODEL ...
"""

from __future__ import annotations

import json
import sys
from types import ModuleType

WATCHED = ("tensor_cast.core.model_runner", "profstore.tensorcast.draws",
           "profstore.tensorcast.draw_search", "profstore.tensorcast.compare",
           "profstore.tensorcast.differences", "profstore.web")
MARK = "PARENT_MODULES "


def main() -> int:
    from profstore.cli.main import main as profstore_main
    from profstore.tensorcast import commands

    run_main = commands._run_main

    def probed(module: ModuleType, argv: list[str]) -> int:
        imported = sorted(name for name in sys.modules if name.startswith(WATCHED))
        print(MARK + json.dumps(imported), file=sys.stderr, flush=True)
        return run_main(module, argv)

    commands._run_main = probed
    return profstore_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
