"""The CSV cells behind a matched row, read back by (file, line) for debug output."""

from __future__ import annotations

from typing import Any

from profstore import schema as t
from profstore.shapes import Shape, parse_shape_cell
from profstore.statements import Statement
from sqlalchemy import Connection, bindparam, select


def row_input_shapes(conn: Connection, profile_id: int, file_name: str,
                     line_no: int) -> tuple[Shape, ...] | None:
    """The present input shapes of one stored row, as the CSV spells them (a FRACTAL_NZ
    weight keeps its 4-D layout); None when no row of the profile has that file and line."""
    s, f = t.sample.c, t.kernel_file.c
    text = conn.execute(
        select(s.input_shapes).join(t.kernel_file, f.id == s.kernel_file_id).where(
            s.profile_id == profile_id, f.file_name == file_name, s.line_no == line_no)
    ).scalar()
    if text is None:
        return None
    return tuple(shape for shape in parse_shape_cell(text) if shape is not None)


_KERNEL_FORMATS = Statement(
    select(t.sample_table.c.input_formats, t.sample_table.c.output_formats).distinct().where(
        t.sample_table.c.profile_id == bindparam("profile"),
        t.sample_table.c.kernel_type == bindparam("kernel")))
"""Built once: the first format inference of a Store would otherwise compile it (ms)."""


def kernel_formats(engine: Any, profile_id: int, kernel: str) -> frozenset[str]:
    """Every memory format a kernel's stored rows name, inputs and outputs. ``engine`` as
    for ``Statement.rows`` (a lookup's snapshot runs it on its own cursor)."""
    found: set[str] = set()
    for inputs, outputs in _KERNEL_FORMATS.rows(engine, profile=profile_id, kernel=kernel):
        for cell in (inputs, outputs):
            found.update(part.strip().upper() for part in (cell or "").strip('"').split(";")
                         if part.strip())
    return frozenset(found)
