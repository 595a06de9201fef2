"""Robustness tests: fuzzed parsers, concurrent readers during an ingest, killed ingests.

This module holds what the fuzz tests share: one Hypothesis settings object (fixed
seed, bounded examples, no example database, so CI runs are repeatable) and the text
mutations applied to real rows, YAML documents and descriptors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from profstore.ingest.csvfile import LFS_MARKER

FUZZ = settings(
    derandomize=True,
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""Repeatable and bounded: the same examples on every run, a few seconds per property."""

HUGE_INT = "9" * 5000
"""Longer than Python's default int-from-text limit (4300 digits): ``int()`` refuses it."""

TOKENS: tuple[str, ...] = (
    '"', '""', "'", ",", ";", ",,", ";;", "nan", "NaN", "-nan", "inf", "-inf", "Infinity",
    "1e400", "-1", "-0.0", "0", "0x10", "1_000", "()", "(1,)", "[]", "{}", " ", "\t", "\r",
    "\\", "é", "中文", "\u2028", "\u00a0", "\x00", "\ufeff", "\U0001f642",
    "99999999999999999999999", HUGE_INT, "-" + HUGE_INT, "DT_BF16", "FRACTAL_NZ", "INT8",
    "MIX_AIC", "true", "null", "~", ": ", "- ", "&a ", "*a", "!!binary ", "!!python/name:os",
    "? ", "<<: ", "{a: 1}", "[1, 2]", "#", "%", "@", "`",
)
"""What the mutations inject: quotes, separators, non-numbers, huge and negative numbers,
unicode (including a line separator, NUL and a BOM), YAML syntax and tags."""

Draw = Callable[[st.SearchStrategy], object]


def _position(draw: Draw, text: str) -> int:
    return draw(st.integers(0, len(text)))


def _delete(draw: Draw, text: str) -> str:
    start = _position(draw, text)
    return text[:start] + text[start + draw(st.integers(1, 8)):]


def _duplicate(draw: Draw, text: str) -> str:
    start = _position(draw, text)
    end = start + draw(st.integers(1, 12))
    return text[:end] + text[start:end] + text[end:]


def _insert(draw: Draw, text: str) -> str:
    at = _position(draw, text)
    token = draw(st.sampled_from(TOKENS) | st.text(max_size=4))
    return text[:at] + token + text[at:]


def _swap_cells(draw: Draw, text: str) -> str:
    cells = text.split(",")
    i, j = draw(st.integers(0, len(cells) - 1)), draw(st.integers(0, len(cells) - 1))
    cells[i], cells[j] = cells[j], cells[i]
    return ",".join(cells)


def _replace_cell(draw: Draw, text: str) -> str:
    cells = text.split(",")
    cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(TOKENS))
    return ",".join(cells)


NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
NUMBER_TOKENS = ("nan", "-1", "-0", "0", "inf", "1e400", "1.5", "99999999999999999999999",
                 HUGE_INT, "", "٣")


def _replace_number(draw: Draw, text: str) -> str:
    """A number (a dimension, a latency, a count) replaced by a hostile one."""
    spans = [m.span() for m in NUMBER.finditer(text)]
    if not spans:
        return text
    start, end = draw(st.sampled_from(spans))
    return text[:start] + draw(st.sampled_from(NUMBER_TOKENS)) + text[end:]


MUTATIONS = (_delete, _duplicate, _insert, _swap_cells, _replace_cell, _replace_number)


@st.composite
def mutated(draw: Draw, seeds: Sequence[str], max_steps: int = 4) -> str:
    """One of ``seeds`` after 0 to ``max_steps`` random edits (0 keeps real inputs in play)."""
    text = draw(st.sampled_from(list(seeds)))
    for _ in range(draw(st.integers(0, max_steps))):
        text = draw(st.sampled_from(MUTATIONS))(draw, text)
    return text


JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(TOKENS)
    | st.text(max_size=6)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(("shape", "dtype", "format", "values", "op", "x"))
                      | st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
"""Arbitrary JSON/YAML-able values, biased toward the descriptor's own key names."""


def _paths(tree: object, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) into a JSON-like tree, the root included."""
    found = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            found += _paths(value, (*prefix, i))
    return found


def _edit(tree: object, path: tuple, action: str, value: object) -> object:
    """A copy of ``tree`` with the node at ``path`` replaced, deleted or given a sibling."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = dict(tree) if isinstance(tree, dict) else list(tree)
    if rest:
        copy[head] = _edit(copy[head], rest, action, value)
    elif action == "delete":
        del copy[head]
    elif action == "add" and isinstance(copy, list):
        copy.insert(head, value)
    else:
        copy[head] = value
    return copy


@st.composite
def mutated_tree(draw: Draw, seeds: Sequence[object], max_steps: int = 3,
                 values: st.SearchStrategy = JSON_VALUES) -> object:
    """One of ``seeds`` (JSON-like) after 0 to ``max_steps`` edits: a node replaced by one
    of ``values``, deleted, or a new list item or key added."""
    tree = draw(st.sampled_from(list(seeds)))
    for _ in range(draw(st.integers(0, max_steps))):
        path = draw(st.sampled_from(_paths(tree)))
        action = draw(st.sampled_from(("replace", "delete", "add")))
        if action == "delete" and not path:
            continue
        if action == "add" and isinstance(tree, dict) and not path:
            tree = {**tree, draw(st.text(max_size=8)): draw(values)}
            continue
        tree = _edit(tree, path, action, draw(values))
    return tree


def physical_lines(text: str) -> list[str]:
    """Lines under any ending convention: ``\\r\\n``, ``\\n`` and a lone ``\\r`` (old Mac)."""
    return re.split(r"\r\n|\r|\n", text)


def expected_data_lines(raw: bytes) -> list[int]:
    """The 1-based numbers of a file's data lines, counted independently of the reader:
    non-blank lines after the first non-blank one (a Git LFS pointer has no header, so
    every non-blank line of a readable pointer counts; a NUL byte makes a file unreadable)."""
    try:
        text, readable = raw.decode("utf-8-sig"), b"\x00" not in raw
    except UnicodeDecodeError:
        text, readable = raw.decode("utf-8-sig", "replace"), False
    lines = physical_lines(text)
    nonblank = [i for i, line in enumerate(lines, start=1) if line.strip()]
    if not nonblank:
        return []
    if readable and lines[nonblank[0] - 1].startswith(LFS_MARKER):
        return nonblank
    return nonblank[1:]


@st.composite
def csv_files(draw: Draw, header: str, seeds: Sequence[str], header_steps: int = 1,
              max_lines: int = 6) -> bytes:
    """A file: a (possibly mutated) header, mutated/blank lines, mixed line breaks, an
    optional BOM, optional missing last line break, optional raw bytes appended."""
    lines = [draw(mutated([header], max_steps=header_steps))]
    for _ in range(draw(st.integers(0, max_lines))):
        lines.append(draw(mutated(seeds) | st.sampled_from(["", "   ", "\t", ",,,"])))
    breaks = [draw(st.sampled_from(["\n", "\r\n"])) for _ in lines]
    text = "".join(line + brk for line, brk in zip(lines, breaks))
    if draw(st.booleans()):
        text = text[: -len(breaks[-1])]
    raw = text.encode("utf-8")
    if draw(st.integers(0, 9)) == 0:
        raw = b"\xef\xbb\xbf" + raw
    if draw(st.integers(0, 9)) == 0:
        raw += draw(st.binary(max_size=12))
    return raw
