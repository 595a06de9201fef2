"""The names code outside storage gives a database handle and a database failure.

Only storage, ingest and the migrations import SQLAlchemy (an import-linter contract in
pyproject.toml); a signature elsewhere that takes an engine or a connection, or a handler
that catches the driver's errors, names them from here."""

from __future__ import annotations

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

__all__ = ["Connection", "DatabaseError", "Engine"]

DatabaseError = SQLAlchemyError
"""Any failure the database or its driver reported (SQLAlchemy's base exception)."""
