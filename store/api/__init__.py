"""The library's entry point, ``Store`` (store/api/store.py).

Beside it: how a store opens a database (``opening.py``), how it keys and holds its answers
(``answers.py``) and what it reads about its versions rather than answers: their profiles,
their aliases and the input shapes of stored rows (``versions.py``).
"""

from profstore.api.store import Store

__all__ = ["Store"]
