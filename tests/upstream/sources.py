"""Upstream's data-source construction, answered by profstore.

TensorCast's suites build a fixture directory (CSV files and an ``op_mapping.yaml``) and
then construct ``ProfilingDataSource(data_dir, device_profile=None, parallel_config=None)``
and ``InterpolatingDataSource(base)``. The plugin (``conftest.py``) puts the two functions
below in those names' place before the suites are imported, so every construction becomes
"ingest the directory into a temporary store, return a ``ProfstoreDataSource``".

Constructor arguments, one by one:

- ``data_dir`` (upstream: the version directory it reads CSVs from lazily) -> ingested
  once, at construction, into a fresh SQLite store as one vLLM version directory: device
  from the mapping's ``device`` header (else ``UPSTREAM_FIXTURE``), directory name and
  alias from the folder name. Communication CSVs inside it (no ``communication_data_ref``)
  are that version's communication data, as upstream reads them. A directory inside the
  export's own ``profiling_database/data/`` (Git LFS pointers there) is read from the same
  place under ``../shared/perfdb``, where the corpus's CSVs are; that store is ingested
  once per session and shared.
- ``device_profile`` (upstream: only its ``comm_grid``, an analytic communication grid
  used when no communication CSV answers) -> not used: profstore answers communication from
  measured rows only and leaves the analytic fallback to TensorCast.
- ``parallel_config`` (upstream: ``expert_parallel_size`` and ``tensor_parallel_size``) ->
  ``ProfstoreDataSource(ep_size=..., tp_size=...)``.
- ``ProfilingDataSource(...)`` itself (upstream: exact lookups only) ->
  ``ProfstoreDataSource(..., interpolation=False)``.
- ``InterpolatingDataSource(base)`` (upstream: a wrapper adding interpolation over
  ``base``) -> ``ProfstoreDataSource`` over the same store with ``interpolation=True``;
  ``.base`` keeps the exact-only source, as upstream's wrapper keeps its base.
- Both report misses in TensorCast's own codes (``miss_codes="upstream"``, table in
  ``store/tensorcast/miss_codes.py``): the suites assert upstream's codes, and profstore's
  own stays in ``last_result.reason``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from profstore.api import Store
from profstore.ingest.discover import MAPPING_FILE, VLLM, VersionSource
from profstore.ingest.loader import ingest_version
from profstore.storage.engines import make_engine, upgrade
from profstore.tensorcast import ProfstoreDataSource

DEFAULT_DEVICE = "UPSTREAM_FIXTURE"
EXPORT_DATA = PurePosixPath("tensor_cast/performance_model/profiling_database/data")


def corpus_directory(data_dir: Path, export: Path, corpus: Path) -> Path:
    """``data_dir`` itself, or for a folder of the export's LFS data its corpus twin."""
    try:
        relative = data_dir.resolve().relative_to((export / EXPORT_DATA).resolve())
    except ValueError:
        return data_dir
    return corpus / relative


class FixtureStores:
    """Temporary stores for one test session: a schema template migrated once, copied per
    construction; every source opened during a test is closed after it (``close_all``)."""

    def __init__(self) -> None:
        self.root: Path | None = None
        self.template: Path | None = None
        self.count = 0
        self.opened: list[ProfstoreDataSource] = []
        self.stores: list[Store] = []
        self.shared: dict[Path, tuple[Store, str]] = {}
        self.export: Path | None = None
        self.corpus: Path | None = None

    def _new_database(self) -> Path:
        if self.root is None or self.template is None:
            self.root = Path(tempfile.mkdtemp(prefix="profstore-upstream-"))
            self.template = self.root / "template.db"
            engine = make_engine(self.template)
            upgrade(engine)
            engine.dispose()
        self.count += 1
        path = self.root / f"store-{self.count}.db"
        shutil.copyfile(self.template, path)
        return path

    def open(self, data_dir: Path) -> tuple[Store, str, bool]:
        """A store holding ``data_dir``, its version alias, and whether the caller owns it
        (corpus stores are shared by the session)."""
        if self.export is None or self.corpus is None:
            return (*self.ingest(data_dir), True)
        source = corpus_directory(data_dir, self.export, self.corpus)
        if source == data_dir:
            return (*self.ingest(data_dir), True)
        if source not in self.shared:
            self.shared[source] = self.ingest(source)
        return (*self.shared[source], False)

    def ingest(self, data_dir: Path) -> tuple[Store, str]:
        """A store holding ``data_dir`` as one version, and that version's alias."""
        path = self._new_database()
        engine = make_engine(path)
        try:
            source = VersionSource(VLLM, _device(data_dir), data_dir.name, data_dir)
            summary = ingest_version(engine, source)
        finally:
            engine.dispose()
        return Store.open(path), summary.alias

    def track(self, source: ProfstoreDataSource, owns_store: bool = True
              ) -> ProfstoreDataSource:
        self.opened.append(source)
        if owns_store:
            self.stores.append(source.store)
        return source

    def close_all(self) -> None:
        self.opened.clear()
        while self.stores:
            self.stores.pop().close()

    def remove(self) -> None:
        self.close_all()
        for store, _ in self.shared.values():
            store.close()
        self.shared.clear()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = self.template = None


STORES = FixtureStores()


def _device(data_dir: Path) -> str:
    mapping = data_dir / MAPPING_FILE
    try:
        header = yaml.safe_load(mapping.read_text(encoding="utf-8")) if mapping.is_file() else {}
    except yaml.YAMLError:
        header = {}
    device = header.get("device") if isinstance(header, dict) else None
    return str(device) if device else DEFAULT_DEVICE


def profiling_data_source(data_dir: str | Path, device_profile: Any = None,
                          parallel_config: Any = None) -> ProfstoreDataSource:
    """``ProfilingDataSource(data_dir, device_profile, parallel_config)``: exact only."""
    store, alias, owned = STORES.open(Path(data_dir))
    source = ProfstoreDataSource(
        store, alias, interpolation=False, miss_codes="upstream",
        ep_size=getattr(parallel_config, "expert_parallel_size", None),
        tp_size=getattr(parallel_config, "tensor_parallel_size", None))
    source.data_dir = Path(data_dir)
    return STORES.track(source, owns_store=owned)


def interpolating_data_source(base: ProfstoreDataSource) -> ProfstoreDataSource:
    """``InterpolatingDataSource(base)``: the same store and context, with interpolation."""
    source = ProfstoreDataSource(base.store, base.version, interpolation=True,
                                 ep_size=base.context.ep_size, tp_size=base.context.tp_size,
                                 miss_codes="upstream")
    source.base = base
    return STORES.track(source, owns_store=False)
