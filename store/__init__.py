"""profstore: an indexed SQL store of measured operator latencies.

The public API is importable from the top package; names are resolved on first use so
that ``import profstore`` (and the CLI's start-up) stays cheap.

>>> from profstore import Store, LeafOp
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("profstore")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"

_EXPORTS = {
    "Store": "profstore.api",
    "LeafOp": "profstore.leaf",
    "TensorSpec": "profstore.leaf",
    "LeafContext": "profstore.leaf",
    "QueryResult": "profstore.result",
    "QuerySource": "profstore.result",
    "Reason": "profstore.result",
    "ProfstoreDataSource": "profstore.tensorcast",
}

__all__ = [
    "LeafContext", "LeafOp", "ProfstoreDataSource", "QueryResult", "QuerySource", "Reason",
    "Store", "TensorSpec", "__version__",
]

if TYPE_CHECKING:
    from profstore.api import Store
    from profstore.leaf import LeafContext, LeafOp, TensorSpec
    from profstore.result import QueryResult, QuerySource, Reason
    from profstore.tensorcast import ProfstoreDataSource


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'profstore' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
