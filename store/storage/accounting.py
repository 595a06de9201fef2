"""What ingest kept, refused and rejected in one version, counted: its kernel files, the
points and regimes per kernel and path, the path refusals, the duplicate coordinates and
the rejected rows."""

from __future__ import annotations

from dataclasses import dataclass

from profstore.storage import schema as t
from sqlalchemy import Connection, func, select


@dataclass(frozen=True)
class KernelFile:
    """One CSV file of a version and its row accounting (``refusal``: why the whole file
    was refused; None when it was read)."""

    kernel_type: str
    file: str
    rows_read: int
    rows_accepted: int
    rows_rejected: int
    refusal: str | None


def kernel_files(conn: Connection, profile_id: int) -> list[KernelFile]:
    """The version's CSV files, by kernel type."""
    k = t.kernel_file.c
    return [KernelFile(*row) for row in conn.execute(
        select(k.kernel_type, k.file_name, k.rows_read, k.rows_accepted, k.rows_rejected,
               k.refusal).where(k.profile_id == profile_id).order_by(k.kernel_type))]


def kernels_with_files(conn: Connection, profile_id: int) -> set[str]:
    """The kernel types the version has a CSV of."""
    k = t.kernel_file.c
    return set(conn.execute(select(k.kernel_type).where(k.profile_id == profile_id)).scalars())


@dataclass(frozen=True)
class KernelPathCount:
    """The sample points one kernel has on one path, and in how many regimes."""

    kernel: str
    path: str
    points: int
    regimes: int


def kernel_path_counts(conn: Connection, profile_id: int) -> list[KernelPathCount]:
    """Per kernel and path with points: its point and regime counts."""
    sp = t.sample_point.c
    return [KernelPathCount(*row) for row in conn.execute(
        select(sp.kernel_type, sp.path, func.count(), func.count(sp.regime_key.distinct()))
        .where(sp.profile_id == profile_id).group_by(sp.kernel_type, sp.path))]


def points_per_path(conn: Connection, profile_id: int) -> dict[str, int]:
    """Sample points per path (paths without any left out)."""
    sp = t.sample_point.c
    return dict(conn.execute(select(sp.path, func.count()).where(
        sp.profile_id == profile_id).group_by(sp.path)).tuples().all())


@dataclass(frozen=True)
class RefusalCount:
    """Samples one path refused for one kernel with one stored reason (``code: message``)."""

    kernel: str
    path: str
    reason: str
    count: int


def refusal_counts(conn: Connection, profile_id: int) -> list[RefusalCount]:
    """The version's path refusals, counted by kernel, path and stored reason."""
    pr = t.path_refusal.c
    return [RefusalCount(*row) for row in conn.execute(
        select(pr.kernel_type, pr.path, pr.reason, func.count())
        .where(pr.profile_id == profile_id).group_by(pr.kernel_type, pr.path, pr.reason))]


def duplicate_coordinate_counts(conn: Connection, profile_id: int) -> dict[tuple[str, str], int]:
    """Per (kernel, path): coordinates (regime, axes, latency column) measured twice or more."""
    sp = t.sample_point.c
    coordinate = select(sp.kernel_type, sp.path).where(sp.profile_id == profile_id).group_by(
        sp.kernel_type, sp.path, sp.regime_key, sp.axis_0, sp.axis_1, sp.axis_2,
        sp.latency_column).having(func.count() > 1).subquery()
    c = coordinate.c
    return {(kernel, path): n for kernel, path, n in conn.execute(
        select(c.kernel_type, c.path, func.count()).group_by(c.kernel_type, c.path))}


def rejected_by_reason(conn: Connection, profile_id: int) -> dict[str, int]:
    """Rows ingest rejected, per reason code."""
    r = t.rejected_row.c
    return {reason: n for reason, n in conn.execute(
        select(r.reason_code, func.count()).where(r.profile_id == profile_id)
        .group_by(r.reason_code))}


@dataclass(frozen=True)
class RejectedCount:
    reason_code: str
    file: str
    count: int


def rejected_by_reason_and_file(conn: Connection, profile_id: int) -> list[RejectedCount]:
    """Rejected rows per reason code and file, the most first."""
    r = t.rejected_row.c
    n = func.count().label("count")
    return [RejectedCount(*row) for row in conn.execute(
        select(r.reason_code, r.file_name, n).where(r.profile_id == profile_id)
        .group_by(r.reason_code, r.file_name).order_by(n.desc(), r.reason_code, r.file_name))]


@dataclass(frozen=True)
class RejectedRow:
    """One row ingest rejected: where it was, why, and its text as read."""

    file: str
    line: int
    reason_code: str
    reason: str
    raw_text: str


def rejected_rows(conn: Connection, profile_id: int, limit: int) -> list[RejectedRow]:
    """The first ``limit`` rejected rows, by file and line."""
    r = t.rejected_row.c
    return [RejectedRow(*row) for row in conn.execute(
        select(r.file_name, r.line_no, r.reason_code, r.reason, r.raw_text)
        .where(r.profile_id == profile_id).order_by(r.file_name, r.line_no, r.id).limit(limit))]
