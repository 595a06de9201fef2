"""Counts the bytecodes every process of a ``profstore tensorcast`` command runs inside its
lookups (``ProfstoreDataSource.lookup``), then runs the command.

    python bench/opcode_probe.py OUT_DIR tensorcast throughput-optimizer --db ... -- ...

Run as a script by path, so that it counts whichever ``profstore`` is first on the path (the
current tree or a baseline's). The count is exact and repeatable where the wall clock of
this machine varies by a quarter between identical runs: it is the figure a change to the
lookups' Python code moves. It counts no C work (SQLite, numpy), and tracing makes the
command several times slower, so it measures no time.

Each process that looked up writes ``OUT_DIR/opcodes-<pid>.json`` when it exits: its
lookups, the bytecodes run inside them and those of each function (its own, not its
callees'). Forked workers inherit the counting; a spawned worker (``--disagg``) does not.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any


class OpcodeCount:
    """Bytecodes run while ``counting`` wraps a call, in total and per function."""

    def __init__(self) -> None:
        self.total = 0
        self.calls = 0
        self.by_function: Counter[tuple[str, int, str]] = Counter()

    def reset(self) -> None:
        """Forget what was counted (a forked child counts its own lookups only)."""
        self.total = self.calls = 0
        self.by_function.clear()

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            self.total += 1
            code = frame.f_code
            self.by_function[(code.co_filename, code.co_firstlineno, code.co_name)] += 1
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        return self._local

    def counting(self, call: Any, *args: Any) -> Any:
        """``call(*args)``, its bytecodes counted."""
        self.calls += 1
        sys.settrace(self._global)
        try:
            return call(*args)
        finally:
            sys.settrace(None)

    def to_json(self, top: int = 40) -> dict[str, Any]:
        return {"lookups": self.calls, "opcodes": self.total,
                "functions": [{"file": _short(f), "line": line, "name": name, "opcodes": n}
                              for (f, line, name), n in self.by_function.most_common(top)]}


def _short(filename: str) -> str:
    """A file name from its package on (``profstore/lookup/dispatch.py``)."""
    for marker in ("/profstore/", "/lib/python"):
        if marker in filename:
            return filename[filename.index(marker) + 1:]
    return filename


def install(out_dir: Path) -> OpcodeCount:
    """Count inside ``ProfstoreDataSource.lookup`` in this process and its forked children,
    each writing its count when it exits."""
    from multiprocessing import util

    from profstore.tensorcast.data_source import ProfstoreDataSource

    count = OpcodeCount()
    lookup = ProfstoreDataSource.lookup

    def counted(self: ProfstoreDataSource, op_invoke_info: Any) -> Any:
        return count.counting(lookup, self, op_invoke_info)

    ProfstoreDataSource.lookup = counted  # type: ignore[method-assign]

    def write() -> None:
        if count.calls:
            path = out_dir / f"opcodes-{os.getpid()}.json"
            path.write_text(json.dumps(count.to_json()))

    def forked(_: OpcodeCount) -> None:
        count.reset()
        util.Finalize(None, write, exitpriority=0)  # a pool worker ends in os._exit

    util.register_after_fork(count, forked)  # after the child's finalizers are cleared
    util.Finalize(None, write, exitpriority=0)
    return count


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit("usage: python bench/opcode_probe.py OUT_DIR PROFSTORE_ARG ...")
    install(Path(argv[0]))
    sys.argv = ["profstore", *argv[1:]]
    runpy.run_module("profstore", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
