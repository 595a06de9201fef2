"""Inspection verbs: versions, kernels, regimes, duplicates, rejected, sql.

Each reads through a read-only engine and prints a table (or ``--json``); ``regimes`` and
``duplicates`` read the SQL views of the same names, so what the CLI shows is what an
engineer gets in the ``sqlite3`` shell.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import asdict
from typing import Any

from profstore.cli.common import (
    CliError,
    profile_row,
    read_engine,
)
from profstore.cli.output import emit, print_json, print_table
from profstore.paths.registry import ALL_PATHS
from profstore.presentation.text_table import Column
from profstore.storage.accounting import (
    kernel_files,
    refusal_counts,
    rejected_by_reason_and_file,
    rejected_rows,
)
from profstore.storage.catalog import all_versions
from profstore.storage.handles import Connection
from profstore.storage.sql_door import (
    Limits,
    ReadOnlyViolation,
    StatementTimeout,
    read_statement,
)
from profstore.storage.views import (
    AXES,
    DuplicateCoordinate,
    RegimeSummary,
    duplicate_coordinates,
    regime_summaries,
)

AXIS_NAMES = {p.name: p.axis_names for p in ALL_PATHS}


VERSION_COLUMNS = [
    Column("alias", "ALIAS"), Column("directory", "DIRECTORY"), Column("device", "DEVICE"),
    Column("framework", "FRAMEWORK"), Column("files", "FILES", True),
    Column("rows_read", "READ", True), Column("rows_accepted", "ACCEPTED", True),
    Column("rows_rejected", "REJECTED", True), Column("ingested_at", "INGESTED"),
    Column("content_hash", "HASH", clip=13),
]


def versions(args: argparse.Namespace) -> int:
    with read_engine(args) as engine, engine.connect() as conn:
        rows = [{c.key: getattr(v, c.key) for c in VERSION_COLUMNS} for v in all_versions(conn)]
    emit(rows, VERSION_COLUMNS, args.json, empty="no versions ingested")
    return 0


KERNEL_COLUMNS = [
    Column("kernel_type", "KERNEL"), Column("file", "FILE"), Column("rows_read", "READ", True),
    Column("rows_accepted", "ACCEPTED", True), Column("rows_rejected", "REJECTED", True),
    Column("refusal", "REFUSAL", clip=60),
]


def kernels(args: argparse.Namespace) -> int:
    with read_engine(args) as engine, engine.connect() as conn:
        profile = profile_row(conn, args.version)
        rows = [asdict(f) for f in kernel_files(conn, profile.id)]
    emit(rows, KERNEL_COLUMNS, args.json, empty="no kernel files")
    return 0


REGIME_COLUMNS = [
    Column("kernel", "KERNEL"), Column("path", "PATH"), Column("points", "POINTS", True),
    Column("latency_columns", "COLUMNS", True), Column("shown", "AXES"),
    Column("regime", "REGIME", clip=90),
]


def regimes(args: argparse.Namespace) -> int:
    with read_engine(args) as engine, engine.connect() as conn:
        profile = profile_row(conn, args.version)
        found = regime_summaries(conn, profile.alias, args.kernel, args.path)
    rows = [_regime(r) for r in found]
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


def _regime(row: RegimeSummary) -> dict[str, Any]:
    names = AXIS_NAMES.get(row.path, AXES)
    ranges = [(names[i] if i < len(names) else axis, found)
              for i, (axis, found) in enumerate(zip(AXES, row.axes)) if found is not None]
    axes = [{"name": name, "min": found.min, "max": found.max} for name, found in ranges]
    shown = " ".join(f"{name}={_span(found.min, found.max)}" for name, found in ranges)
    return {"kernel": row.kernel_type, "path": row.path, "regime": row.regime_key,
            "points": row.points, "latency_columns": row.latency_columns,
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
    with read_engine(args) as engine, engine.connect() as conn:
        profile = profile_row(conn, args.version)
        found = duplicate_coordinates(conn, profile.alias, args.kernel)
    _emit_shown([_duplicate(r) for r in found], DUPLICATE_COLUMNS, args.json,
                "no duplicate coordinates")
    return 0


def _duplicate(r: DuplicateCoordinate) -> dict[str, Any]:
    coordinate = list(r.coordinate)
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
    return [asdict(c) for c in rejected_by_reason_and_file(conn, profile_id)]


def _reject_samples(conn: Connection, profile_id: int, limit: int) -> list[dict[str, Any]]:
    return [asdict(r) for r in rejected_rows(conn, profile_id, limit)]


def _path_refusals(conn: Connection, profile_id: int) -> list[dict[str, Any]]:
    """Counts by kernel, path and reason code; the stored reason is ``code: message``."""
    counts: Counter[tuple[str, str, str]] = Counter()
    examples: dict[tuple[str, str, str], str] = {}
    for row in refusal_counts(conn, profile_id):
        code, _, message = row.reason.partition(": ")
        key = (row.kernel, row.path, code)
        counts[key] += row.count
        examples.setdefault(key, message or row.reason)
    return [{"kernel": k, "path": p, "reason": c, "count": counts[(k, p, c)],
             "example": examples[(k, p, c)]}
            for (k, p, c) in sorted(counts, key=lambda key: (-counts[key], key))]


def sql(args: argparse.Namespace) -> int:
    params = dict(_param(p) for p in args.param)
    with read_engine(args) as engine, engine.connect() as conn:
        try:
            found = read_statement(conn, args.query, params, Limits(seconds=args.timeout),
                                   args.max_rows)
        except ReadOnlyViolation as exc:
            raise CliError(f"profstore sql is read-only: {exc}") from None
        except StatementTimeout as exc:
            raise CliError(str(exc)) from None
    names = found.columns
    rows = [dict(zip(names, r)) for r in found.rows]
    if args.json:
        print_json(rows)
    else:
        columns = [Column(n, n, _numeric(rows, n), clip=80) for n in names]
        print_table(rows, columns, empty="(no rows)")
    if found.more:
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
