"""The regime page (its picture, the hold-out errors beside its points) and the version
overview (small multiples of every path's kernels), with links into the tables."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response
from profstore.api import Store
from profstore.evaluation.overview import overview_png as draw_overview
from profstore.evaluation.overview import version_overview
from profstore.evaluation.plot import PlotError, RegimeChoice, RegimeFigure, choose_regime
from profstore.paths.registry import path_named
from profstore.presentation.text_table import format_cell
from profstore.web import pages
from profstore.web.pages import overview_url, query_url, regime_url, table_url
from profstore.web.state import WebState

REGIME_PARAMS = ("version", "kernel", "path", "regime_key")


def _regime_args(request: Any) -> tuple[str, ...]:
    missing = [name for name in ("version", "kernel") if not request.args.get(name)]
    if missing:
        raise PlotError(f"missing parameter {missing[0]!r}: a regime page needs version, "
                        "kernel, path and regime_key (follow a regime_key link in regimes)")
    return tuple(request.args.get(name) or "" for name in REGIME_PARAMS)


def _draw(state: WebState, store: Store, version: str, kernel: str, path: str,
          regime_key: str) -> tuple[RegimeChoice, RegimeFigure]:
    if store.profile(version) is None:
        raise PlotError(f"unknown version {version!r} (ingested: {', '.join(store.versions())})")
    choice = choose_regime(store, version, kernel, path or None, regime_key or None)
    return choice, state.figure(store, version, choice)


async def _figure(state: WebState, request: Any) -> tuple[str, RegimeChoice, RegimeFigure]:
    args = _regime_args(request)
    choice, figure = await state.run(lambda store: _draw(state, store, *args))
    return args[0], choice, figure


async def regime_png(state: WebState, datasette: Any, request: Any) -> Response:
    try:
        _, _, figure = await _figure(state, request)
    except ValueError as exc:
        return Response.text(str(exc), status=400)
    return pages.png(figure.png)


async def regime_page(state: WebState, datasette: Any, request: Any) -> Response:
    try:
        version, choice, figure = await _figure(state, request)
    except ValueError as exc:
        return await pages.error(datasette, request, "Regime", str(exc))
    names = list(path_named(choice.path).axis_names)
    db = state.database
    where = {"kernel_type": choice.kernel, "path": choice.path, "regime_key": choice.regime_key}
    context = {
        "version": version, "choice": choice, "summary": figure.summary,
        "image_url": regime_url(version, choice.kernel, choice.path, choice.regime_key,
                                image=True),
        "axis_names": names[:len(figure.points[0].axes)] if figure.points else names,
        "points": [_point_row(p) for p in figure.points],
        "links": [
            ("the points of this regime, with their CSV lines",
             query_url(datasette, db, "regime_points", version=version, kernel=choice.kernel,
                       path=choice.path, regime_key=choice.regime_key)),
            ("its duplicate coordinates", table_url(datasette, db, "duplicates",
                                                    version=version, **where)),
            ("every regime of this kernel", query_url(datasette, db, "kernel_regimes",
                                                     kernel=choice.kernel, version=version)),
            (f"the {version} overview", overview_url(version)),
        ],
    }
    return await pages.page(datasette, request, "profstore_regime.html", context)


def _point_row(point: Any) -> dict[str, Any]:
    return {"axes": [format_cell(a) for a in point.axes], "rows": str(point.rows),
            "truth": format_cell(point.truth_us), "predicted": format_cell(point.predicted_us),
            "ape": _percent(point.ape), "nn": format_cell(point.nn_us),
            "nn_ape": _percent(point.nn_ape),
            "outcome": "hull boundary" if point.boundary else (point.method or point.reason
                                                               or "-")}


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


async def overview_png(state: WebState, datasette: Any, request: Any) -> Response:
    version = request.args.get("version") or ""
    try:
        body = await state.run(lambda store: draw_overview(version_overview(store, version)))
    except ValueError as exc:
        return Response.text(str(exc), status=400)
    return pages.png(body)


async def overview_page(state: WebState, datasette: Any, request: Any) -> Response:
    version = request.args.get("version")
    versions = await state.run(lambda store: store.versions())
    context: dict[str, Any] = {"versions": [(v, overview_url(v)) for v in versions],
                               "version": version}
    if version:
        try:
            overview = await state.run(lambda store: version_overview(store, version))
        except ValueError as exc:
            return await pages.error(datasette, request, "Version overview", str(exc))
        context.update(image_url=overview_url(version, image=True),
                       paths=[_path_rows(datasette, state.database, version, p)
                              for p in overview.paths],
                       rejected=overview.rejected,
                       rejected_url=table_url(datasette, state.database, "rejected_row"),
                       refusals_url=query_url(datasette, state.database, "refusals_by_reason",
                                              version=version))
    return await pages.page(datasette, request, "profstore_overview.html", context)


def _path_rows(datasette: Any, db: str, version: str, path: Any) -> dict[str, Any]:
    rows = [{"kernel": k.kernel, "points": k.points, "regimes": k.regimes, "refused": k.refused,
             "duplicates": k.duplicate_coordinates,
             "regimes_url": query_url(datasette, db, "kernel_regimes", kernel=k.kernel,
                                      version=version),
             "duplicates_url": table_url(datasette, db, "duplicates", version=version,
                                         kernel_type=k.kernel, path=path.path)}
            for k in path.kernels]
    return {"path": path.path, "kernels": rows, "points": path.total("points")}
