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
from profstore.storage.catalog import latest_operator_alias
from profstore.storage.provenance import StoredRow, stored_row
from profstore.web import render
from profstore.web.state import WebState

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
        rows = [_linked(row, stored_row(conn, profile.id, row.get("file"), row.get("line")))
                for row in matched]
    return Explained(
        latency="-" if result.latency_us is None else f"{format_cell(result.latency_us)} us",
        source=result.source.value if result.source else "-",
        reason=result.reason.value if result.reason else "-",
        sections=[(title, body) for title, body in sections if title != ROWS_USED or not rows],
        rows=rows, json=to_json(result.as_dict(), indent=2))


def _linked(row: dict[str, Any], stored: StoredRow | None) -> dict[str, Any]:
    """The row's cells and where it is stored: ("sample" | "comm_sample", id) or None."""
    cells = {k: format_cell(row.get(k)) if k != "axes" else
             ", ".join(format_cell(a) for a in row.get("axes") or []) for k in ROW_FIELDS}
    return {**cells, "table": None if stored is None else (stored.table, stored.id)}


def _default_version(store: Store) -> str:
    with store.engine.connect() as conn:
        return latest_operator_alias(conn) or ""


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
