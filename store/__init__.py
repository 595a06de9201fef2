"""profstore: an indexed SQL store of measured operator latencies.

The public API is the names of ``__all__`` here, those of ``profstore.tensorcast`` and
the command line; every other module is internal. The names are resolved on first use
(``__version__`` too) so that ``import profstore`` (and the CLI's start-up) stays cheap.

Examples:
    The route of the reference's examples, from nothing: the demo profiling data that
    ``profstore demo`` writes (latencies from a roofline formula), ingested with
    ``profstore ingest`` into a new SQLite file, then one lookup of a measured row.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from profstore import LeafOp, Store
    >>> from profstore.cli.demo_data import write_demo_data
    >>> from profstore.cli.main import main
    >>> folder = Path(tempfile.mkdtemp())
    >>> data = write_demo_data(folder / "data")
    >>> main(["ingest", str(data), "--db", str(folder / "demo.db")])
    v0.18: 4 files, 59 rows read, 59 accepted, 0 rejected (none) in ...s
    hccl-v8.5: 1 files, 4 rows read, 4 accepted, 0 rejected (none) in ...s
    0
    >>> with Store.open(folder / "demo.db") as store:
    ...     result = store.lookup(LeafOp.from_json({
    ...         "op": "tensor_cast.rms_norm.default",
    ...         "args": [{"shape": [64, 7168], "dtype": "bfloat16"},
    ...                  {"shape": [7168], "dtype": "bfloat16"}, 1e-6]}), "v0.18")
    >>> result.latency_us, result.source.value
    (5.15584, 'MEASURED')
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
    """The installed distribution's version (``0+unknown`` in a checkout never installed).

    Examples:
        >>> from importlib.metadata import version
        >>> import profstore
        >>> profstore.__version__ == version("profstore")
        True
    """
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
