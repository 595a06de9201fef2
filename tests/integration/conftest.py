"""The real corpus fixtures (``perfdb_path``, ``perfdb_store``) live in tests/conftest.py:
one ingest per session, shared by every test folder, on the session's backend."""
