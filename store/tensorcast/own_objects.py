"""profstore's own long-lived objects, set aside from the collector before TensorCast runs.

Python's full collections walk every tracked object. In a ``profstore tensorcast``
process, what exists before TensorCast's first import is profstore's own (its modules,
SQLAlchemy's, the opened store): objects that live as long as the process. Left in the
collector's generations, they made the collections that run while TensorCast imports its
modules cost about 0.2 s more than in upstream's own command (docs/adr/0128). Frozen
(``gc.freeze``) once, before anything of TensorCast exists, they are never walked again;
everything TensorCast creates is collected exactly as in its own command.
"""

from __future__ import annotations

import functools
import gc
import sys


@functools.cache
def set_aside() -> bool:
    """Freeze this process's objects, once, unless TensorCast is already imported (then
    its objects would be frozen too, and that is the host's memory to manage); whether it
    froze. Garbage is collected first, so nothing frozen is already garbage."""
    if "tensor_cast" in sys.modules:
        return False
    gc.collect()
    gc.freeze()
    return True
