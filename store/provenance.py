"""The CSV cells behind a matched row, read back by (file, line) for debug output."""

from __future__ import annotations

from profstore import schema as t
from profstore.shapes import Shape, parse_shape_cell
from sqlalchemy import Connection, select


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


def kernel_formats(conn: Connection, profile_id: int, kernel: str) -> frozenset[str]:
    """Every memory format a kernel's stored rows name, inputs and outputs."""
    s = t.sample.c
    found: set[str] = set()
    for inputs, outputs in conn.execute(
            select(s.input_formats, s.output_formats).distinct().where(
                s.profile_id == profile_id, s.kernel_type == kernel)):
        for cell in (inputs, outputs):
            found.update(part.strip().upper() for part in (cell or "").strip('"').split(";")
                         if part.strip())
    return frozenset(found)
