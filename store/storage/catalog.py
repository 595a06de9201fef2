"""What the database says of its versions: the ``profile_set`` rows (named by alias or
directory), which HCCL profile a version's communication reads, and a version's stored
interpolation policies."""

from __future__ import annotations

from dataclasses import dataclass, fields

from profstore.storage import schema as t
from sqlalchemy import Connection, or_, select


@dataclass(frozen=True)
class StoredVersion:
    """One ``profile_set`` row: an ingested version directory (vLLM-Ascend or HCCL)."""

    id: int
    alias: str
    device: str
    framework: str
    directory: str
    source_path: str
    content_hash: str
    ingested_at: str
    files: int
    rows_read: int
    rows_accepted: int
    rows_rejected: int
    mapping_document: str | None
    mapping_problems: str | None


_VERSION_COLUMNS = tuple(getattr(t.profile_set.c, f.name) for f in fields(StoredVersion))


def find_profile(conn: Connection, version: str) -> StoredVersion | None:
    """The version a name denotes, by alias or directory (the oldest, should two match)."""
    p = t.profile_set.c
    row = conn.execute(select(*_VERSION_COLUMNS).where(
        or_(p.alias == version, p.directory == version)).order_by(p.id)).first()
    return None if row is None else StoredVersion(*row)


def profile_by_id(conn: Connection, profile_id: int) -> StoredVersion:
    """The version with this id (``LookupError`` when there is none)."""
    row = conn.execute(select(*_VERSION_COLUMNS).where(t.profile_set.c.id == profile_id)).first()
    if row is None:
        raise LookupError(f"no profile_set row with id {profile_id}")
    return StoredVersion(*row)


def all_versions(conn: Connection) -> list[StoredVersion]:
    """Every ingested version, in ingest order."""
    return [StoredVersion(*row) for row in conn.execute(
        select(*_VERSION_COLUMNS).order_by(t.profile_set.c.id))]


def known_aliases(conn: Connection) -> list[str]:
    """Every ingested version's alias, in ingest order."""
    p = t.profile_set.c
    return list(conn.execute(select(p.alias).order_by(p.id)).scalars())


def latest_operator_alias(conn: Connection) -> str | None:
    """The alias of the version ingested last that is not an HCCL set; None without one."""
    p = t.profile_set.c
    return conn.execute(select(p.alias).where(p.framework != "hccl")
                        .order_by(p.id.desc())).scalar()


def hccl_profile_id(conn: Connection, device: str, directory: str) -> int | None:
    """The HCCL profile of one device ingested from a directory of this name."""
    p = t.profile_set.c
    found = conn.execute(select(p.id).where(
        p.framework == "hccl", p.device == device, p.directory == directory)).first()
    return found[0] if found else None


def has_comm_samples(conn: Connection, profile_id: int) -> bool:
    """Whether the profile holds communication rows of its own."""
    c = t.comm_sample.c
    return conn.execute(select(c.id).where(c.profile_id == profile_id).limit(1)).first() \
        is not None


@dataclass(frozen=True)
class StoredPolicy:
    """One ``interpolation_policy`` row of a version (None: the mapping left it unset)."""

    kernel_type: str
    max_interpolation_dim: int | None
    generic_axis: str
    axis_transform: str | None
    prefer_profiling_rows: bool
    core_envelope_ratio: float | None
    require_semantic_unique: bool


def interpolation_policies(conn: Connection, profile_id: int) -> list[StoredPolicy]:
    """The version's stored interpolation policies, by kernel type."""
    c = t.interpolation_policy.c
    return [StoredPolicy(*row) for row in conn.execute(
        select(*(getattr(c, f.name) for f in fields(StoredPolicy)))
        .where(c.profile_id == profile_id).order_by(c.kernel_type))]
