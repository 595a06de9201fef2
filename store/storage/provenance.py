"""The CSV cells behind a matched row, read back by (file, line) for debug output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from profstore.model.shapes import Shape, parse_shape_cell
from profstore.storage import schema as t
from profstore.storage.statements import Statement
from sqlalchemy import Connection, bindparam, select


def input_shapes_of(text: str) -> tuple[Shape, ...]:
    """A stored ``input_shapes`` cell as shapes (absent inputs left out)."""
    return tuple(shape for shape in parse_shape_cell(text) if shape is not None)


_ROW_INPUT_SHAPES = Statement(
    select(t.sample_table.c.input_shapes)
    .select_from(t.sample_table.join(t.kernel_file,
                                     t.kernel_file.c.id == t.sample_table.c.kernel_file_id))
    .where(t.kernel_file.c.profile_id == bindparam("profile"),
           t.kernel_file.c.file_name == bindparam("file"),
           t.sample_table.c.line_no == bindparam("line")))


def row_input_shapes_cell(engine: Any, profile_id: int, file_name: str,
                          line_no: int) -> str | None:
    """The ``input_shapes`` cell of one stored row of a profile's CSV file, by its line
    (an index lookup since migration 0007), or None when no such row is stored.
    ``engine`` as for ``Statement.rows``."""
    found = _ROW_INPUT_SHAPES.rows(engine, profile=profile_id, file=file_name, line=line_no)
    return str(found[0][0]) if found else None


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


@dataclass(frozen=True)
class StoredRow:
    """Where a row an answer used is stored: ``sample`` or ``comm_sample``, and its id."""

    table: str
    id: int


def stored_row(conn: Connection, profile_id: int, file_name: Any,
               line_no: Any) -> StoredRow | None:
    """The stored row of a CSV file and line: the version's sample there, else the first
    communication row there (the HCCL rows belong to their own profile); None without."""
    s, k, c = t.sample.c, t.kernel_file.c, t.comm_sample.c
    found = conn.execute(select(s.id).join(t.kernel_file, k.id == s.kernel_file_id).where(
        s.profile_id == profile_id, k.file_name == file_name, s.line_no == line_no)).scalar()
    if found is not None:
        return StoredRow("sample", found)
    found = conn.execute(select(c.id).join(t.kernel_file, k.id == c.kernel_file_id).where(
        k.file_name == file_name, c.line_no == line_no).order_by(c.id)).scalar()
    return StoredRow("comm_sample", found) if found is not None else None
