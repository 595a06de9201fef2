"""Where TensorCast is, and its commands by their own names.

Found through ``--tensorcast-root DIR`` (the folder holding ``tensor_cast/`` and
``cli/``), else ``$TENSORCAST_ROOT``, else an importable ``tensor_cast``. Whatever fails
is one ``UpstreamError`` line naming where it looked and what was missing.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

COMMANDS = {
    "text-generate": "cli.inference.text_generate",
    "throughput-optimizer": "cli.inference.throughput_optimizer",
}
"""profstore's command name (upstream's own) → upstream's module with ``main()``."""

ROOT_ENVIRONMENT = "TENSORCAST_ROOT"


class UpstreamError(ValueError):
    """TensorCast cannot be found or imported, or refused its arguments."""


def command_module(command: str, root: str | None) -> ModuleType:
    """Import upstream's module of ``command`` (the root put first on ``sys.path``)."""
    if command not in COMMANDS:
        raise UpstreamError(f"unknown TensorCast command {command!r}; known: "
                            f"{', '.join(COMMANDS)}")
    where = _root(root)
    try:
        importlib.import_module("tensor_cast")
        return importlib.import_module(COMMANDS[command])
    except ImportError as error:
        place = f"in {where}" if where else "(no --tensorcast-root, no $TENSORCAST_ROOT)"
        raise UpstreamError(f"TensorCast is not importable {place}: "
                            f"{type(error).__name__}: {error}") from None


def _root(given: str | None) -> str | None:
    root = given or os.environ.get(ROOT_ENVIRONMENT) or None
    if root is None:
        return None
    path = Path(root).resolve()
    if not (path / "tensor_cast").is_dir():
        source = "--tensorcast-root" if given else f"${ROOT_ENVIRONMENT}"
        raise UpstreamError(f"{source} {root}: no tensor_cast/ folder there")
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    return str(path)
