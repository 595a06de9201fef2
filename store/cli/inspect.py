"""Inspection verbs: versions, kernels, regimes, duplicates, rejected, sql.

Each reads through a read-only engine and prints a table (or ``--json``); ``regimes`` and
``duplicates`` read the SQL views of the same names, so what the CLI shows is what an
engineer gets in the ``sqlite3`` shell.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

from profstore.cli.common import (
    CliError,
    profile_row,
    read_engine,
)
from profstore.cli.output import emit, print_json, print_table
from profstore.cli.sqlguard import (
    Limits,
    ReadOnlyViolation,
    StatementTimeout,
    check_statement,
    guarded,
)
from profstore.paths.registry import ALL_PATHS
from profstore.presentation.text_table import Column
from profstore.storage import schema as t
from sqlalchemy import Connection, column, func, select, table, text

AXES = ("axis_0", "axis_1", "axis_2")
REGIMES_VIEW = table("regimes", *[column(n) for n in (
    "version", "kernel_type", "path", "regime_key", "points", "latency_columns",
    *[f"{a}_{end}" for a in AXES for end in ("min", "max")])])
DUPLICATES_VIEW = table("duplicates", *[column(n) for n in (
    "version", "kernel_type", "path", "regime_key", *AXES, "latency_column",
    "rows_at_coordinate", "latency_min", "latency_median", "latency_max", "first_line")])
AXIS_NAMES = {p.name: p.axis_names for p in ALL_PATHS}


VERSION_COLUMNS = [
    Column("alias", "ALIAS"), Column("directory", "DIRECTORY"), Column("device", "DEVICE"),
    Column("framework", "FRAMEWORK"), Column("files", "FILES", True),
    Column("rows_read", "READ", True), Column("rows_accepted", "ACCEPTED", True),
    Column("rows_rejected", "REJECTED", True), Column("ingested_at", "INGESTED"),
    Column("content_hash", "HASH", clip=13),
]


def versions(args: argparse.Namespace) -> int:
    p = t.profile_set.c
    fields = [p.alias, p.directory, p.device, p.framework, p.files, p.rows_read,
              p.rows_accepted, p.rows_rejected, p.ingested_at, p.content_hash]
    with read_engine(args) as engine, engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(select(*fields).order_by(p.id))]
    emit(rows, VERSION_COLUMNS, args.json, empty="no versions ingested")
    return 0


KERNEL_COLUMNS = [
    Column("kernel_type", "KERNEL"), Column("file", "FILE"), Column("rows_read", "READ", True),
    Column("rows_accepted", "ACCEPTED", True), Column("rows_rejected", "REJECTED", True),
    Column("refusal", "REFUSAL", clip=60),
]


def kernels(args: argparse.Namespace) -> int:
    k = t.kernel_file.c
    fields = [k.kernel_type, k.file_name.label("file"), k.rows_read, k.rows_accepted,
              k.rows_rejected, k.refusal]
    with read_engine(args) as engine, engine.connect() as conn:
        profile = profile_row(conn, args.version)
        query = select(*fields).where(k.profile_id == profile.id).order_by(k.kernel_type)
        rows = [dict(r._mapping) for r in conn.execute(query)]
    emit(rows, KERNEL_COLUMNS, args.json, empty="no kernel files")
    return 0


REGIME_COLUMNS = [
    Column("kernel", "KERNEL"), Column("path", "PATH"), Column("points", "POINTS", True),
    Column("latency_columns", "COLUMNS", True), Column("shown", "AXES"),
    Column("regime", "REGIME", clip=90),
]


def regimes(args: argparse.Namespace) -> int:
    v = REGIMES_VIEW.c
    with read_engine(args) as engine, engine.connect() as conn:
        profile = profile_row(conn, args.version)
        query = select(REGIMES_VIEW).where(v.version == profile.alias)
        if args.kernel:
            query = query.where(v.kernel_type == args.kernel)
        if args.path:
            query = query.where(v.path == args.path)
        found = conn.execute(query.order_by(v.kernel_type, v.path, v.regime_key)).all()
    rows = [_regime(r._mapping) for r in found]
    _emit_shown(rows, REGIME_COLUMNS, args.json, "no regimes")
    return 0


def _emit_shown(rows: list[dict[str, Any]], columns: list[Column], as_json: bool,
                empty: str) -> None:
    """Like ``emit``; the ``shown`` key is the table's rendering of structured fields and
    stays out of the JSON."""
    if as_json:
        print_json([{k: v for k, v in r.items() if k != "shown"} for r in rows])
    else:
        print_table(rows, columns, empty=empty)


def _regime(row: Any) -> dict[str, Any]:
    names = AXIS_NAMES.get(row["path"], AXES)
    axes = [
        {"name": names[i] if i < len(names) else axis, "min": row[f"{axis}_min"],
         "max": row[f"{axis}_max"]}
        for i, axis in enumerate(AXES) if row[f"{axis}_min"] is not None
    ]
    shown = " ".join(f"{a['name']}={_span(a['min'], a['max'])}" for a in axes)
    return {"kernel": row["kernel_type"], "path": row["path"], "regime": row["regime_key"],
            "points": row["points"], "latency_columns": row["latency_columns"],
            "axes": axes, "shown": shown or "-"}


def _span(low: float, high: float) -> str:
    def show(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else f"{x:.6g}"
    return show(low) if low == high else f"{show(low)}..{show(high)}"


DUPLICATE_COLUMNS = [
    Column("kernel", "KERNEL"), Column("path", "PATH"), Column("shown", "COORDINATE"),
    Column("count", "COUNT", True), Column("latency_min", "MIN", True),
    Column("latency_median", "MEDIAN", True), Column("latency_max", "MAX", True),
    Column("first_line", "LINE", True), Column("latency_column", "LATENCY COLUMN"),
    Column("regime", "REGIME", clip=70),
]


def duplicates(args: argparse.Namespace) -> int:
    v = DUPLICATES_VIEW.c
    with read_engine(args) as engine, engine.connect() as conn:
        profile = profile_row(conn, args.version)
        query = select(DUPLICATES_VIEW).where(v.version == profile.alias)
        if args.kernel:
            query = query.where(v.kernel_type == args.kernel)
        order = (v.kernel_type, v.path, v.regime_key, v.axis_0, v.axis_1, v.axis_2,
                 v.latency_column)
        found = conn.execute(query.order_by(*order)).all()
    _emit_shown([_duplicate(r) for r in found], DUPLICATE_COLUMNS, args.json,
                "no duplicate coordinates")
    return 0


def _duplicate(r: Any) -> dict[str, Any]:
    coordinate = [a for a in (r.axis_0, r.axis_1, r.axis_2) if a is not None]
    names = AXIS_NAMES.get(r.path, AXES)
    shown = " ".join(f"{names[i] if i < len(names) else AXES[i]}={_span(a, a)}"
                     for i, a in enumerate(coordinate))
    return {
        "kernel": r.kernel_type, "path": r.path, "regime": r.regime_key,
        "coordinate": coordinate, "latency_column": r.latency_column,
        "count": r.rows_at_coordinate, "latency_min": r.latency_min,
        "latency_median": r.latency_median, "latency_max": r.latency_max,
        "first_line": r.first_line, "shown": shown or "-",
    }


COUNT_COLUMNS = [Column("reason_code", "REASON"), Column("file", "FILE"),
                 Column("count", "COUNT", True)]
SAMPLE_COLUMNS = [Column("file", "FILE"), Column("line", "LINE", True),
                  Column("reason_code", "REASON"), Column("reason", "DETAIL", clip=60),
                  Column("raw_text", "RAW", clip=80)]
REFUSAL_COLUMNS = [Column("kernel", "KERNEL"), Column("path", "PATH"),
                   Column("reason", "REASON"), Column("count", "COUNT", True),
                   Column("example", "EXAMPLE", clip=80)]


def rejected(args: argparse.Namespace) -> int:
    with read_engine(args) as engine, engine.connect() as conn:
        profile = profile_row(conn, args.version)
        report = {"counts": _reject_counts(conn, profile.id),
                  "samples": _reject_samples(conn, profile.id, args.limit),
                  "path_refusals": _path_refusals(conn, profile.id)}
    if args.json:
        print_json(report)
        return 0
    print_table(report["counts"], COUNT_COLUMNS, title="rejected rows by reason and file:")
    print()
    print_table(report["samples"], SAMPLE_COLUMNS,
                title=f"sample rejected rows (up to {args.limit}):")
    print()
    print_table(report["path_refusals"], REFUSAL_COLUMNS,
                title="rows refused by a path (still samples for other paths):")
    return 0


def _reject_counts(conn: Connection, profile_id: int) -> list[dict[str, Any]]:
    r = t.rejected_row.c
    n = func.count().label("count")
    query = (select(r.reason_code, r.file_name.label("file"), n)
             .where(r.profile_id == profile_id)
             .group_by(r.reason_code, r.file_name)
             .order_by(n.desc(), r.reason_code, r.file_name))
    return [dict(row._mapping) for row in conn.execute(query)]


def _reject_samples(conn: Connection, profile_id: int, limit: int) -> list[dict[str, Any]]:
    r = t.rejected_row.c
    query = (select(r.file_name.label("file"), r.line_no.label("line"), r.reason_code,
                    r.reason, r.raw_text)
             .where(r.profile_id == profile_id)
             .order_by(r.file_name, r.line_no, r.id).limit(limit))
    return [dict(row._mapping) for row in conn.execute(query)]


def _path_refusals(conn: Connection, profile_id: int) -> list[dict[str, Any]]:
    """Counts by kernel, path and reason code; the stored reason is ``code: message``."""
    pr = t.path_refusal.c
    query = (select(pr.kernel_type, pr.path, pr.reason, func.count().label("n"))
             .where(pr.profile_id == profile_id)
             .group_by(pr.kernel_type, pr.path, pr.reason))
    counts: Counter[tuple[str, str, str]] = Counter()
    examples: dict[tuple[str, str, str], str] = {}
    for row in conn.execute(query):
        code, _, message = row.reason.partition(": ")
        key = (row.kernel_type, row.path, code)
        counts[key] += row.n
        examples.setdefault(key, message or row.reason)
    return [{"kernel": k, "path": p, "reason": c, "count": counts[(k, p, c)],
             "example": examples[(k, p, c)]}
            for (k, p, c) in sorted(counts, key=lambda key: (-counts[key], key))]


def sql(args: argparse.Namespace) -> int:
    params = dict(_param(p) for p in args.param)
    with read_engine(args) as engine, engine.connect() as conn:
        try:
            check_statement(args.query, conn.dialect.name)
            with guarded(conn, Limits(seconds=args.timeout)):
                result = conn.execute(text(args.query), params)
                names = list(result.keys())
                fetched = result.fetchmany(args.max_rows + 1) if result.returns_rows else []
        except ReadOnlyViolation as exc:
            raise CliError(f"profstore sql is read-only: {exc}") from None
        except StatementTimeout as exc:
            raise CliError(str(exc)) from None
    rows = [dict(zip(names, r)) for r in fetched[:args.max_rows]]
    if args.json:
        print_json(rows)
    else:
        columns = [Column(n, n, _numeric(rows, n), clip=80) for n in names]
        print_table(rows, columns, empty="(no rows)")
    if len(fetched) > args.max_rows:
        print(f"profstore: output stopped at {args.max_rows} rows (--max-rows N shows more)",
              file=sys.stderr)
    return 0


def _numeric(rows: list[dict[str, Any]], name: str) -> bool:
    values = [r[name] for r in rows if r[name] is not None]
    return bool(values) and all(isinstance(v, (int, float)) for v in values)


def _param(spec: str) -> tuple[str, str]:
    name, sep, value = spec.partition("=")
    if not sep or not name.strip().isidentifier():
        raise CliError(f"--param {spec!r}: expected NAME=VALUE")
    return name.strip(), value
