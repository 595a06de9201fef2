"""The read-only SQL door behind ``profstore sql``: one read statement, a time limit,
nothing else.

SQLite decides what a statement does, so SQLite is asked: an authorizer
(``set_authorizer``) sees every action of the statement as it is prepared and allows
only reads (``SELECT``, column reads, read pragmas, a recursive CTE) and the functions on
``READ_FUNCTIONS``; everything else (writes, ``ATTACH``, ``BEGIN``, ``fts3_tokenizer``,
``load_extension``, ``readfile``/``writefile``, any function not on the list) is denied
before it runs. ``SQLITE_LIMIT_LENGTH`` caps any string or blob (``zeroblob(5e8)``), and
a progress handler stops a statement past the time limit. PostgreSQL (see
docs/adr/0105-sql-door-on-postgresql.md): the statement must start with a query keyword and
is sent with the extended protocol (prepared), so the server refuses a second statement
(``SELECT 1; COMMIT; …``) whatever the path; it runs in a read-only transaction under
``SET LOCAL statement_timeout``, which the one statement cannot end or reset
(``set_config`` is refused); a superuser's statement runs as the predefined role
``pg_read_all_data`` (it reads every table, and cannot read server files, signal other
sessions or run programs). The connection itself is the second lock: read-only.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI's parser reads DEFAULT_SECONDS: --help imports no SQLAlchemy
    from sqlalchemy import Connection

DEFAULT_SECONDS = 30.0
MAX_VALUE_BYTES = 10_000_000
"""Longest string or blob a statement may build (SQLite's default allows a gigabyte)."""
PROGRESS_OPCODES = 10_000
"""How often (in virtual-machine steps) the time limit is checked: well under 1 ms."""
_READ_FUNCTION_NAMES = """
abs acos acosh asin asinh atan atan2 atanh avg ceil ceiling changes char coalesce concat
concat_ws cos cosh count cume_dist date datetime degrees dense_rank exp first_value floor
format glob group_concat hex ifnull iif instr json json_array json_array_length json_each
json_extract json_group_array json_group_object json_insert json_object json_patch
json_quote json_remove json_replace json_set json_tree json_type json_valid julianday lag
last_insert_rowid last_value lead length like likelihood likely ln log log10 log2 lower
ltrim max min mod nth_value ntile nullif octet_length percent_rank pi pow power printf
quote radians random rank replace round row_number rtrim sign sin sinh soundex sqlite_version
sqrt string_agg strftime substr substring sum tan tanh time timediff total total_changes
trim trunc typeof unhex unicode unixepoch unlikely upper zeroblob -> ->>
"""
READ_FUNCTIONS = frozenset(_READ_FUNCTION_NAMES.split())
"""SQLite's core, date, math, JSON and window functions: pure computations on values."""
PRAGMAS_WITH_ARGUMENT = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
})
WRITING_PRAGMAS = frozenset({"optimize", "wal_checkpoint", "incremental_vacuum",
                             "shrink_memory"})
QUERY_WORDS = frozenset({"SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW"})
POSTGRES_REFUSED_FUNCTIONS = ("set_config",)
"""Functions a PostgreSQL statement may not name: ``set_config('role', …)`` would leave the
reading role, ``set_config('statement_timeout', …)`` the time limit."""
READER_ROLE = "pg_read_all_data"
"""The role a superuser's statement runs as (PostgreSQL 14+)."""
_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ,
                           sqlite3.SQLITE_RECURSIVE})
_ACTION_NAMES = {value: name.removeprefix("SQLITE_") for name, value in vars(sqlite3).items()
                 if name.startswith("SQLITE_") and isinstance(value, int)
                 and name not in ("SQLITE_OK", "SQLITE_DENY", "SQLITE_IGNORE")}
_LEADING = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/|\()*([A-Za-z]*)", re.S)


class ReadOnlyViolation(ValueError):
    """The statement is not a single read; the message says why."""


class StatementTimeout(RuntimeError):
    """The statement ran past its time limit and was stopped."""


@dataclass
class Limits:
    seconds: float = DEFAULT_SECONDS
    max_value_bytes: int = MAX_VALUE_BYTES


@dataclass
class _Authorizer:
    """The SQLite authorizer; ``denied`` keeps the first refusal's reason."""

    denied: str | None = None
    deadline: float = field(default=float("inf"))

    def __call__(self, action: int, arg1: str | None, arg2: str | None, _db: str | None,
                 _trigger: str | None) -> int:
        reason = _refusal(action, arg1, arg2)
        if reason is None:
            return sqlite3.SQLITE_OK
        self.denied = self.denied or reason
        return sqlite3.SQLITE_DENY

    def progress(self) -> int:
        return int(time.monotonic() > self.deadline)


def _refusal(action: int, arg1: str | None, arg2: str | None) -> str | None:
    if action in _READ_ACTIONS:
        return None
    if action == sqlite3.SQLITE_FUNCTION:
        name = (arg2 or "").lower()
        return None if name in READ_FUNCTIONS else f"function {name}() is not allowed"
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in WRITING_PRAGMAS:
            return f"PRAGMA {name} writes"
        if arg2 is not None and name not in PRAGMAS_WITH_ARGUMENT:
            return f"PRAGMA {name} with a value sets a pragma"
        return None
    what = _ACTION_NAMES.get(action, f"action {action}").replace("_", " ")
    return f"{what}{' ' + arg1 if arg1 else ''} is not a read"


def check_statement(sql: str, dialect: str) -> None:
    """What is decided before the database sees the text: a statement at all, and on
    PostgreSQL (no authorizer) a query keyword first."""
    match = _LEADING.match(sql)
    word = match.group(1).upper() if match else ""
    if not word:
        raise ReadOnlyViolation("empty statement")
    if dialect == "sqlite":
        return
    if word not in QUERY_WORDS:
        raise ReadOnlyViolation(f"{word} statements are not allowed")
    plain = sql.lower().replace('"', "")
    for name in POSTGRES_REFUSED_FUNCTIONS:
        if re.search(rf"\b{name}\b", plain):
            raise ReadOnlyViolation(f"function {name}() is not allowed")


@contextmanager
def guarded(conn: Connection, limits: Limits) -> Iterator[None]:
    """Run the block's statement under the door; its refusals become ``ReadOnlyViolation``
    and a statement past the limit ``StatementTimeout``, each with a one-line reason."""
    if conn.dialect.name != "sqlite":
        with _postgres_door(conn, limits), _translated(None, limits):
            yield
        return
    raw = conn.connection.dbapi_connection
    if not isinstance(raw, sqlite3.Connection):
        raise TypeError("the SQL door needs the sqlite3 driver's connection")
    conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar()  # schema loaded first
    authorizer = _Authorizer(deadline=time.monotonic() + limits.seconds)
    raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.max_value_bytes)
    raw.set_authorizer(authorizer)
    raw.set_progress_handler(authorizer.progress, PROGRESS_OPCODES)
    try:
        with _translated(authorizer, limits):
            yield
    finally:
        raw.set_authorizer(None)
        raw.set_progress_handler(None, 0)


@contextmanager
def _postgres_door(conn: Connection, limits: Limits) -> Iterator[None]:
    """A read-only transaction with a time limit, a role without superuser powers, and every
    statement prepared (one statement per call; restored afterwards)."""
    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
    conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(limits.seconds * 1000)}")
    if conn.exec_driver_sql("SELECT current_setting('is_superuser')").scalar() == "on":
        version = conn.dialect.server_version_info or (0,)
        if version < (14,):
            raise ReadOnlyViolation("a superuser's statements are refused before PostgreSQL 14 "
                                    f"(no {READER_ROLE} role); connect as a reading role")
        conn.exec_driver_sql(f"SET LOCAL ROLE {READER_ROLE}")
    raw = conn.connection.dbapi_connection
    before = getattr(raw, "prepare_threshold", None)
    raw.prepare_threshold = 0  # type: ignore[union-attr]
    try:
        yield
    finally:
        raw.prepare_threshold = before  # type: ignore[union-attr]


@contextmanager
def _translated(authorizer: _Authorizer | None, limits: Limits) -> Iterator[None]:
    from sqlalchemy.exc import DBAPIError  # imported by the caller's engine already

    try:
        yield
    except DBAPIError as exc:
        message = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        if authorizer is not None and authorizer.denied:
            raise ReadOnlyViolation(authorizer.denied) from None
        if "one statement at a time" in message or "multiple commands" in message:
            raise ReadOnlyViolation("one statement at a time") from None
        if message == "interrupted" or "statement timeout" in message:
            raise StatementTimeout(f"statement stopped after {limits.seconds:g} s "
                                   "(--timeout SECONDS raises the limit)") from None
        if getattr(exc.orig, "sqlstate", None) in ("25006", "42501"):  # read-only; no privilege
            raise ReadOnlyViolation(message) from None
        raise


@dataclass(frozen=True)
class ReadResult:
    """What one statement through the door read: its column names, up to ``max_rows``
    rows, and whether it had more."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    more: bool


def read_statement(conn: Connection, sql: str, params: Mapping[str, Any], limits: Limits,
                   max_rows: int) -> ReadResult:
    """Run one read statement (``:name`` parameters) under the door; raises
    ``ReadOnlyViolation`` or ``StatementTimeout`` with a one-line reason."""
    from sqlalchemy import text

    check_statement(sql, conn.dialect.name)
    with guarded(conn, limits):
        result = conn.execute(text(sql), dict(params))
        columns = list(result.keys())
        fetched = result.fetchmany(max_rows + 1) if result.returns_rows else []
    return ReadResult(columns, [tuple(r) for r in fetched[:max_rows]], len(fetched) > max_rows)
