"""PostgreSQL-only tests (run by the ``--backend postgresql`` pass) and database-URL
hygiene tests that need no server."""
