"""The database: its schema, engines and URLs, the hot SQL statements, regime slices as
stored and read back, read snapshots and the catalog of ingested versions."""
