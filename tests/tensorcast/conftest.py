"""The ingested corpus store (``perfdb_store``) is tests/conftest.py's: one ingest for the
whole suite, on the session's backend."""
