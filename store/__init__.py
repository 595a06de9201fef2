"""profstore: an indexed SQL store of measured operator latencies.

The public API is importable from the top package; names (``__version__`` too) are
resolved on first use so that ``import profstore`` (and the CLI's start-up) stays cheap.

>>> from profstore import Store, LeafOp
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Store": "profstore.api",
    "LeafOp": "profstore.model.leaf",
    "TensorSpec": "profstore.model.leaf",
    "LeafContext": "profstore.model.leaf_context",
    "QueryResult": "profstore.model.result",
    "QuerySource": "profstore.model.result",
    "Reason": "profstore.model.result",
    "ProfstoreDataSource": "profstore.tensorcast",
}

__all__ = [
    "LeafContext", "LeafOp", "ProfstoreDataSource", "QueryResult", "QuerySource", "Reason",
    "Store", "TensorSpec", "__version__",
]

if TYPE_CHECKING:
    __version__: str
    from profstore.api import Store
    from profstore.model.leaf import LeafOp, TensorSpec
    from profstore.model.leaf_context import LeafContext
    from profstore.model.result import QueryResult, QuerySource, Reason
    from profstore.tensorcast import ProfstoreDataSource


def _installed_version() -> str:
    """The distribution's version; read on first use (importlib.metadata costs tens of ms)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("profstore")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _installed_version()
    elif name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'profstore' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
