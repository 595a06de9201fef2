"""The web view of a store (``profstore serve``): Datasette on the SQLite file, read-only,
with shipped metadata and canned queries and a plugin for the profstore pages. Needs the
optional extra ``profstore[web]``; nothing else in profstore imports this package."""
