"""What a ``profstore tensorcast`` process holds for its whole life, set aside from the
collector (``gc.freeze``) at the two moments it is known.

Python's full collections walk every tracked object. Two sets of objects in a
``profstore tensorcast`` process live as long as it does and would be walked at each of
them for nothing:

- before TensorCast's first import, profstore's own (its modules, SQLAlchemy's, the opened
  store): ``set_aside`` (docs/adr/0128);
- right after TensorCast's model runner module is imported, the modules it brought (torch,
  transformers, TensorCast's model zoo), before any model exists: ``set_aside_imports``
  (docs/adr/0129). A throughput search's parent imports it before it forks its workers,
  which inherit the frozen objects; a spawned worker imports it, and freezes, itself.

Everything TensorCast creates after that (models, search results) is collected as in its
own command. Nothing is frozen where TensorCast was imported before profstore's command
set up (a library user's process, a second run in one process).
"""

from __future__ import annotations

import enum
import gc
import sys
from dataclasses import dataclass


class Stage(enum.Enum):
    """How far this process's objects have been set aside."""

    NONE = "none"
    """Nothing frozen (yet, or ever: TensorCast was imported first)."""
    OWN = "own"
    """profstore's own objects frozen, TensorCast not yet imported."""
    IMPORTS = "imports"
    """The model runner's imports frozen too."""


@dataclass
class _Progress:
    stage: Stage = Stage.NONE
    asked: bool = False
    """``set_aside`` was called: it decides once, even if it froze nothing."""


_PROGRESS = _Progress()


def stage() -> Stage:
    """How far this process (or the parent it was forked from) has set its objects aside."""
    return _PROGRESS.stage


def set_aside() -> bool:
    """Collect, then freeze this process's objects, once, unless TensorCast is already
    imported (its objects would be frozen too, and they are the host's memory to manage);
    whether it is frozen. A collection first, so nothing frozen is garbage already."""
    if not _PROGRESS.asked:
        _PROGRESS.asked = True
        if "tensor_cast" not in sys.modules:
            gc.collect()
            gc.freeze()
            _PROGRESS.stage = Stage.OWN
    return stage() is not Stage.NONE


def set_aside_imports() -> bool:
    """Freeze what the process holds now that the model runner's module is imported, once,
    and only after ``set_aside`` froze before TensorCast arrived (so the only TensorCast
    objects are those its imports made); whether it froze now.

    No collection first: at this point one finds nothing (none in the runs measured,
    docs/adr/0129) and costs 0.3 s, a full walk of what the imports brought."""
    if stage() is not Stage.OWN:
        return False
    gc.freeze()
    _PROGRESS.stage = Stage.IMPORTS
    return True
