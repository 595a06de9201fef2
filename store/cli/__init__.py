"""The ``profstore`` command line: one module per group of verbs, registered in ``main``."""
