"""profstore inside TensorCast: the data source its empirical model asks, and the commands
that run TensorCast's own entry points on it.

- ``ProfstoreDataSource`` (``data_source``): answers ``lookup(op_invoke_info)``;
  ``leaf_from_invocation`` (``convert``) is the op-to-descriptor rule it applies;
  ``TensorCastResult`` (``result``) is what it hands back.
- ``install(db, version, ...)`` / ``uninstall()`` (``installation``): every ``ModelRunner`` the
  process builds uses profstore; ``profstore tensorcast`` (``commands``) runs upstream's
  own commands so, workers included (``worker``, ``settings``), and sums up the run
  (``run_stats``, ``summary``; ``compare`` and ``differences`` for ``--compare``).

The module never imports torch or TensorCast: they are the host's.

Examples:
    >>> import profstore.tensorcast
    >>> sorted(profstore.tensorcast.__all__)[:3]
    ['MAX_VALUE_ELEMENTS', 'ProfstoreDataSource', 'ShapeMatchInfo']
"""

from profstore.tensorcast.convert import MAX_VALUE_ELEMENTS, leaf_from_invocation
from profstore.tensorcast.data_source import ProfstoreDataSource
from profstore.tensorcast.installation import install, uninstall
from profstore.tensorcast.result import ShapeMatchInfo, SubKernelShapeInfo, TensorCastResult

__all__ = [
    "MAX_VALUE_ELEMENTS",
    "ProfstoreDataSource",
    "ShapeMatchInfo",
    "SubKernelShapeInfo",
    "TensorCastResult",
    "install",
    "leaf_from_invocation",
    "uninstall",
]
