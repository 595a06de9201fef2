"""Naming an ingested version: by its alias (``v0.18``) or its directory name."""

from __future__ import annotations

from profstore.storage import schema as t
from sqlalchemy import Connection, Row, or_, select


def find_profile(conn: Connection, version: str) -> Row | None:
    """The ``profile_set`` row a version name denotes (the oldest, should two match)."""
    p = t.profile_set.c
    return conn.execute(select(t.profile_set).where(
        or_(p.alias == version, p.directory == version)).order_by(p.id)).first()


def known_aliases(conn: Connection) -> list[str]:
    """Every ingested version's alias, in ingest order."""
    p = t.profile_set.c
    return list(conn.execute(select(p.alias).order_by(p.id)).scalars())
