"""The statement check behind ``profstore sql``: one read statement, or a refusal.

This is the first of two locks (the second is the read-only connection), so it errs on
the side of refusing: anything it cannot recognise as a read is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
      | (?P<string>'(?:[^']|'')*'?)
      | (?P<quoted>"(?:[^"]|"")*"?|`[^`]*`?)
      | (?P<word>[A-Za-z_][A-Za-z_0-9$]*)
      | (?P<other>.)""",
    re.S | re.X,
)

READ_STARTS = frozenset({"SELECT", "WITH", "VALUES", "EXPLAIN", "PRAGMA"})
QUERY_STARTS = frozenset({"SELECT", "VALUES"})
STATEMENT_WORDS = frozenset({"SELECT", "VALUES", "INSERT", "UPDATE", "DELETE", "REPLACE",
                             "MERGE"})
WRITE_WORDS = frozenset({
    "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "DROP", "CREATE", "ALTER", "ATTACH",
    "DETACH", "VACUUM", "REINDEX", "TRUNCATE", "GRANT", "REVOKE", "COPY", "CALL",
})
EXPLAIN_WORDS = frozenset({"QUERY", "PLAN", "ANALYZE", "ANALYSE", "VERBOSE"})
PRAGMAS_WITH_ARGUMENT = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
})
WRITING_PRAGMAS = frozenset({"optimize", "wal_checkpoint", "incremental_vacuum",
                             "shrink_memory"})


class ReadOnlyViolation(ValueError):
    """The statement is not a single read; the message says why."""


@dataclass(frozen=True)
class Token:
    kind: str
    text: str

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


def tokens(sql: str) -> list[Token]:
    """Significant tokens: comments and whitespace dropped, strings kept whole."""
    return [Token(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(sql)
            if m.lastgroup not in ("space", "comment")]


def check_read_only(sql: str) -> None:
    """Raise ``ReadOnlyViolation`` unless ``sql`` is one SELECT / WITH … SELECT / VALUES /
    EXPLAIN of those / read PRAGMA statement."""
    statements = _split(tokens(sql))
    if not statements:
        raise ReadOnlyViolation("empty statement")
    if len(statements) > 1:
        raise ReadOnlyViolation(f"one statement at a time, got {len(statements)}")
    _check_statement(statements[0])


def _split(toks: list[Token]) -> list[list[Token]]:
    statements: list[list[Token]] = [[]]
    for tok in toks:
        if tok.text == ";":
            statements.append([])
        else:
            statements[-1].append(tok)
    return [s for s in statements if s]


def _check_statement(toks: list[Token]) -> None:
    first = toks[0].upper
    if first not in READ_STARTS:
        raise ReadOnlyViolation(f"{toks[0].text.upper()} statements are not allowed")
    if first == "PRAGMA":
        _check_pragma(toks[1:])
        return
    if first == "EXPLAIN":
        _check_explained(toks[1:])
        return
    forbidden = sorted({t.upper for t in toks} & WRITE_WORDS)
    if forbidden:
        raise ReadOnlyViolation(f"{forbidden[0]} is a write")
    if first == "WITH":
        main = _top_level_statement_word(toks[1:])
        if main not in QUERY_STARTS:
            raise ReadOnlyViolation(f"WITH … {main or 'nothing'} is not a query")


def _check_explained(toks: list[Token]) -> None:
    rest = list(toks)
    while rest and (rest[0].upper in EXPLAIN_WORDS or rest[0].text == "("):
        skip = _matching_close(rest) if rest[0].text == "(" else 0
        rest = rest[skip + 1:]
    if not rest or rest[0].upper not in QUERY_STARTS | {"WITH"}:
        raise ReadOnlyViolation("EXPLAIN is allowed only for a query")
    _check_statement(rest)


def _matching_close(toks: list[Token]) -> int:
    depth = 0
    for i, tok in enumerate(toks):
        depth += {"(": 1, ")": -1}.get(tok.text, 0)
        if depth == 0:
            return i
    return len(toks) - 1


def _top_level_statement_word(toks: list[Token]) -> str:
    """The statement keyword after a WITH clause's common table expressions."""
    depth = 0
    for tok in toks:
        depth += {"(": 1, ")": -1}.get(tok.text, 0)
        if depth == 0 and tok.upper in STATEMENT_WORDS:
            return tok.upper
    return ""


def _check_pragma(toks: list[Token]) -> None:
    words = [t for t in toks if t.kind in ("word", "quoted")]
    if not words:
        raise ReadOnlyViolation("PRAGMA without a name")
    if any(t.text == "=" for t in toks):
        raise ReadOnlyViolation("PRAGMA … = value sets a pragma")
    names = [t.text.strip('"`').lower() for t in toks if t.kind in ("word", "quoted")]
    dotted = len(toks) > 2 and toks[1].text == "."
    name = names[1] if dotted and len(names) > 1 else names[0]
    if name in WRITING_PRAGMAS:
        raise ReadOnlyViolation(f"PRAGMA {name} writes")
    if any(t.text == "(" for t in toks) and name not in PRAGMAS_WITH_ARGUMENT:
        raise ReadOnlyViolation(f"PRAGMA {name}(…) sets a pragma")
