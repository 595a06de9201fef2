"""The Datasette instance of ``profstore serve``: one SQLite file, read-only, with the
metadata shipped in this package, the canned queries of ``profstore.storage`` and the
profstore plugin."""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from profstore.storage.canned_queries import canned_queries_metadata

SETTINGS = {
    # The duplicates view ranks every point of a version: seconds on the corpus, not ms.
    "sql_time_limit_ms": 15000,
    "facet_time_limit_ms": 1500,
    "default_page_size": 50,
    "allow_download": False,
}
TEMPLATES = Path(__file__).resolve().parent / "templates"


class WebUnavailable(RuntimeError):
    """The optional web extra is not installed."""


@dataclass(frozen=True)
class ServeOptions:
    """What ``profstore serve`` serves. ``live``: open with ``mode=ro`` and follow a
    concurrent ingest; otherwise ``immutable=1`` (no locking, no change detection)."""

    path: Path
    live: bool = False

    @property
    def name(self) -> str:
        """The database's name in Datasette's URLs (the file name without its suffix)."""
        return self.path.stem


def load_metadata(database: str) -> dict[str, Any]:
    """The shipped metadata with its database block under ``database``."""
    text = importlib.resources.files("profstore.web").joinpath("metadata.yaml").read_text(
        encoding="utf-8")
    document = yaml.safe_load(text)
    block = {**document.pop("database"), "queries": canned_queries_metadata()}
    document["description_html"] = document["description_html"].replace(
        "{database}", database)
    return {**document, "databases": {database: block}}


def require_datasette() -> Any:
    """The datasette module, or a one-line explanation of how to get it."""
    try:
        import datasette.app
    except ImportError as exc:
        raise WebUnavailable("the web view needs Datasette; install the extra: "
                             "pip install 'profstore[web]'") from exc
    return datasette.app


def build_datasette(options: ServeOptions) -> tuple[Any, Any]:
    """A Datasette on ``options.path`` with the profstore plugin registered, and the
    plugin's state (the caller runs ``invoke_startup`` and closes the state)."""
    app = require_datasette()
    from datasette.plugins import pm
    from profstore.web.plugin import PLUGIN_NAME, ProfstorePlugin
    from profstore.web.state import WebState

    path = str(options.path.resolve())
    files, immutables = ([path], []) if options.live else ([], [path])
    ds = app.Datasette(files, immutables=immutables, metadata=load_metadata(options.name),
                       settings=SETTINGS, template_dir=str(TEMPLATES), crossdb=False)
    if options.name not in ds.databases:
        raise WebUnavailable(f"Datasette named the database {list(ds.databases)}, "
                             f"not {options.name!r}")
    old = pm.get_plugin(PLUGIN_NAME)
    if old is not None:
        pm.unregister(old)
    state = WebState(options.path.resolve(), options.name)
    pm.register(ProfstorePlugin(state), name=PLUGIN_NAME)
    return ds, state
