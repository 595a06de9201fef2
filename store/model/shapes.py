"""Shape arithmetic shared by the CSV side (ingest) and the target side (lookup).

Kept in one place so that both sides restore FRACTAL_NZ layouts, strip a leading
batch 1 and spell shapes the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

Shape = tuple[int, ...]

_SHAPE = re.compile(r"\s*-?[0-9]+\s*(?:,\s*-?[0-9]+\s*)*")


class ShapeParseError(ValueError):
    """A profiler shape cell that is not a ``;``-separated list of ``,``-separated ints."""


def parse_shape_cell(text: str) -> tuple[Shape | None, ...]:
    """Parse a profiler shape cell: ``"a,b;c,d;;e"`` → ``((a, b), (c, d), None, (e,))``.

    The profiler wraps the cell in literal quotes, which are removed. An empty slot stays
    ``None`` at its position (positions are argument positions); ``()`` is a scalar.
    """
    body = text.strip().strip('"').strip()
    if body == "":
        return ()
    try:
        return tuple(map(_parse_one_shape, body.split(";")))
    except ShapeParseError as exc:
        raise ShapeParseError(f"{exc} in {text!r:.120}") from None


@lru_cache(maxsize=65536)
def _parse_one_shape(part: str) -> Shape | None:
    """One shape of a cell (cached: the same shapes recur across rows and files)."""
    part = part.strip()
    if part == "":
        return None
    if part == "()":
        return ()
    if not _SHAPE.fullmatch(part):
        raise ShapeParseError(f"unparsable shape {part!r:.80}")
    try:
        dims = tuple(map(int, part.split(",")))
    except ValueError as exc:  # more digits than int() converts
        raise ShapeParseError(f"dimension too long in shape {part[:40]!r}…") from exc
    if min(dims) < 0:
        raise ShapeParseError(f"negative dimension in shape {part!r}")
    return dims


@lru_cache(maxsize=4096)
def parse_list_cell(text: str) -> tuple[str, ...]:
    """Split a ``;``-separated dtype or format cell, keeping empty slots as ``""``."""
    body = text.strip().strip('"').strip()
    if body == "":
        return ()
    return tuple(part.strip() for part in body.split(";"))


FRACTAL_NZ = "FRACTAL_NZ"


def restore_fractal_nz(shape: Shape) -> Shape:
    """``(…, H, W, bh, bw)`` → ``(…, H·bw, W·bh)``; shapes of rank < 4 are already logical."""
    if len(shape) < 4:
        return shape
    *lead, h, w, bh, bw = shape
    return (*lead, h * bw, w * bh)


def logical_shape(shape: Shape, fmt: str | None) -> Shape:
    """The logical shape of a tensor stored in memory format ``fmt``: the one place where a
    FRACTAL_NZ layout is restored, for CSV rows (ingest) and leaf tensors (lookup) alike.
    Every other format (and an unstated one) is logical as written."""
    return restore_fractal_nz(shape) if fmt == FRACTAL_NZ else shape


def strip_leading_batch(shape: Shape) -> Shape:
    """Drop one leading dimension of 1 from a shape of rank ≥ 2."""
    if len(shape) >= 2 and shape[0] == 1:
        return shape[1:]
    return shape


def drop_batch_dim(shape: Shape) -> Shape:
    """The shape the interpolation axes read: one leading 1 dropped from rank ≥ 3 only.

    A rank-2 ``[1, H]`` is one token row, not a batch: stripping it would make the hidden
    size the token axis and split one-token rows into a regime of their own.
    """
    return shape[1:] if len(shape) >= 3 and shape[0] == 1 else shape


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def leading_product(shape: Sequence[int]) -> int:
    """Product of every dimension but the last (token rows of an activation)."""
    return math.prod(shape[:-1]) if len(shape) >= 1 else 1


def shape_text(shape: Shape | None) -> str:
    if shape is None:
        return ""
    return _tuple_text(shape if isinstance(shape, tuple) else tuple(shape))


@lru_cache(maxsize=65536)
def _tuple_text(shape: Shape) -> str:
    return ",".join(map(str, shape)) if shape else "()"


def shapes_text(shapes: Iterable[Shape | None]) -> str:
    return ";".join(shape_text(s) for s in shapes)


_SHAPE_TEXT = re.compile(r"^\s*(?:\((?P<paren>.*)\)|\[(?P<bracket>.*)\]|(?P<bare>[^()\[\]]*))\s*$")


def parse_shape_text(text: str) -> tuple[int, ...]:
    """Parse a shape written as text: ``"(2, 4, 7168)"``, ``"[2,4]"``, ``"()"``, ``"2,4"``.

    A single trailing comma is allowed (``"(16,)"``); empty brackets are a scalar.
    Anything else (negative or non-integer dimensions, stray brackets, empty text)
    raises ``ValueError``.
    """
    if not isinstance(text, str):
        raise ValueError(f"shape text must be a string, got {text!r}")
    match = _SHAPE_TEXT.match(text)
    if match is None:
        raise ValueError(f"invalid shape text {text!r}")
    body = next(group for group in match.groups() if group is not None)
    if not body.strip():
        if match.group("bare") is not None:
            raise ValueError(f"invalid shape text {text!r}: empty")
        return ()
    parts = [part.strip() for part in body.split(",")]
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    for part in parts:
        if not re.fullmatch(r"[0-9]+", part):
            raise ValueError(f"invalid shape text {text!r}: dimension {part!r}")
    return tuple(int(part) for part in parts)
