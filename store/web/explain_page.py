"""The explain page: a leaf descriptor pasted into a form, answered by ``Store.lookup`` and
shown as ``profstore explain`` shows it (``presentation.explain``), with the rows the answer
used linked to their rows in the sample (or comm_sample) table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from datasette.utils.asgi import Response
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.presentation.explain import ROWS_USED, explain_sections
from profstore.presentation.text_table import format_cell, to_json
from profstore.storage import schema as t
from profstore.web import render
from profstore.web.state import WebState
from sqlalchemy import select
from sqlalchemy.engine import Connection

EXAMPLE = ('{"op": "tensor_cast.rms_norm.default", "args": [{"shape": [28, 7168], "dtype": '
           '"bfloat16"}, {"shape": [7168], "dtype": "bfloat16"}, 1e-06], "outputs": '
           '[{"shape": [28, 7168], "dtype": "bfloat16"}]}')
ROW_FIELDS = ("file", "line", "axes", "latency_us", "latency_column", "weight", "merged_rows",
              "merged_latency_us")


@dataclass
class Explained:
    """One answered descriptor, ready for the template."""

    latency: str
    source: str
    reason: str
    sections: list[tuple[str, list[str]]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    json: str = ""


def explain(store: Store, version: str, text: str, interpolation: bool) -> Explained:
    """Raises ValueError with the descriptor's or the version's problem in words."""
    leaf = LeafOp.from_json(text)
    profile = store.profile(version)
    if profile is None:
        raise ValueError(f"unknown version {version!r} (ingested: {', '.join(store.versions())})")
    result = store.lookup(leaf, version, interpolation)
    sections = explain_sections(leaf, version, profile.mapping.entry(leaf.op), result)
    matched = result.details.get("matched_rows") or []
    with store.engine.connect() as conn:
        rows = [_linked(conn, profile.id, row) for row in matched]
    return Explained(
        latency="-" if result.latency_us is None else f"{format_cell(result.latency_us)} us",
        source=result.source.value if result.source else "-",
        reason=result.reason.value if result.reason else "-",
        sections=[(title, body) for title, body in sections if title != ROWS_USED or not rows],
        rows=rows, json=to_json(result.as_dict(), indent=2))


def _linked(conn: Connection, profile_id: int, row: dict[str, Any]) -> dict[str, Any]:
    """The row's cells and where it is stored: ("sample" | "comm_sample", id) or None."""
    cells = {k: format_cell(row.get(k)) if k != "axes" else
             ", ".join(format_cell(a) for a in row.get("axes") or []) for k in ROW_FIELDS}
    return {**cells, "table": _stored_at(conn, profile_id, row.get("file"), row.get("line"))}


def _stored_at(conn: Connection, profile_id: int, file: Any,
               line: Any) -> tuple[str, int] | None:
    s, k, c = t.sample.c, t.kernel_file.c, t.comm_sample.c
    found = conn.execute(select(s.id).join(t.kernel_file, k.id == s.kernel_file_id).where(
        s.profile_id == profile_id, k.file_name == file, s.line_no == line)).scalar()
    if found is not None:
        return ("sample", found)
    found = conn.execute(select(c.id).join(t.kernel_file, k.id == c.kernel_file_id).where(
        k.file_name == file, c.line_no == line).order_by(c.id)).scalar()
    return ("comm_sample", found) if found is not None else None


def _default_version(store: Store) -> str:
    p = t.profile_set.c
    with store.engine.connect() as conn:
        found = conn.execute(select(p.alias).where(p.framework != "hccl")
                             .order_by(p.id.desc())).scalar()
    return found or ""


async def explain_page(state: WebState, datasette: Any, request: Any) -> Response:
    text = (request.args.get("descriptor") or "").strip()
    interpolation = request.args.get("exact_only") != "on"
    versions = await state.run(lambda store: store.versions())
    version = request.args.get("version") or await state.run(_default_version)
    context: dict[str, Any] = {"versions": versions, "version": version, "descriptor": text,
                               "exact_only": not interpolation, "example": EXAMPLE}
    status = 200
    if text:
        try:
            answer = await state.run(lambda store: explain(store, version, text, interpolation))
        except ValueError as exc:
            context["error"], status = str(exc), 400
        else:
            context["answer"] = answer
            context["row_links"] = [
                datasette.urls.row(state.database, row["table"][0], str(row["table"][1]))
                if row["table"] else None for row in answer.rows]
    return await render.page(datasette, request, "profstore_explain.html", context, status)
