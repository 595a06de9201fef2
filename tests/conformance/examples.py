"""Every registered capability path's conformance example, by path name.

Adding a path: its module in store/paths/, its example here (a ``PathExample`` in
examples_compute.py or examples_attention.py, listed below), and its specialised tests.
``test_every_registered_path_has_an_example`` fails until the example exists.
"""

from __future__ import annotations

from tests.conformance.examples_attention import ATTENTION_EXAMPLES
from tests.conformance.examples_compute import COMPUTE_EXAMPLES
from tests.conformance.model import PathExample

EXAMPLES: dict[str, PathExample] = {e.path: e for e in (*COMPUTE_EXAMPLES, *ATTENTION_EXAMPLES)}
